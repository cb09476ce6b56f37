//! `insert-barriers`: a `barrier` before every op whose shared-memory accesses may race an
//! earlier op's, and nowhere else.
//!
//! It runs last in the GPU-level pipeline, on the final order of ops. Where a barrier is missing
//! is an analysis ([`crate::analysis::barriers`], over the bytes [`crate::analysis::shared_alloc`]
//! gives each user of shared memory); this pass inserts one before each op it names. Where the
//! analysis fails (an op whose scratch need is unknown, a conflict with a copy still in flight),
//! the pass inserts nothing and the lowering, which asks the same analyses, reports it.

use tile_core::ir::{Function, OpKind};

use crate::analysis::barriers::missing;
use crate::analysis::shared_alloc::{Allocation, ScratchBytes};

/// Runs the pass, with the back end's scratch bytes per op (`scratch`) for the allocation.
pub fn run(f: &mut Function, scratch: ScratchBytes) {
    let Ok(alloc) = Allocation::of(f, scratch) else {
        return;
    };
    let Ok(need) = missing(f, &alloc) else {
        return;
    };
    for op in need {
        let block = f.op(op).block;
        let at = f.blocks[block.index()]
            .ops
            .iter()
            .position(|&o| o == op)
            .unwrap_or(0);
        f.insert_op(block, at, OpKind::Barrier, vec![], vec![]);
    }
}
