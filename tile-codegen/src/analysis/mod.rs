//! Analyses of GPU-level IR: facts that passes and the LLVM back end both read, computed from
//! the IR without changing it. Passes ask them while they transform; the pipeline computes them
//! once more on each final GPU-level kernel and hands the results ([`Analyses`]) to the lowering,
//! so that the back end depends on this module, not on the passes.
//!
//! - [`axis_info`]: contiguity, divisibility and constancy of every value (`assign-layouts`,
//!   `vectorize`, and the lowering's address sharing and compares);
//! - [`shared_alloc`]: where each user of shared memory has its bytes (liveness: users never live
//!   at once share bytes), with the scratch bytes per op the back end gives it ([`ScratchBytes`]);
//! - [`descriptors`]: the tensor descriptors the launch describes and the ones a module copies
//!   with the tensor memory accelerator (for the kernel's static metadata);
//! - [`implied`]: plain pointer loads of a `dot` loop that read exactly the box of a 2-D array,
//!   which the Hopper copy path takes as descriptor accesses (on tile-level IR);
//! - [`barriers`]: the ops that lack a `barrier` before them (`insert-barriers` inserts them; the
//!   lowering refuses a kernel that still lacks one).

pub mod axis_info;
pub mod barriers;
pub mod descriptors;
pub mod implied;
pub mod shared_alloc;

pub use shared_alloc::ScratchBytes;

use tile_core::ir::{Function, OpId};

use axis_info::AxisInfo;
use shared_alloc::Allocation;

/// What the LLVM lowering reads about one GPU-level kernel, computed before it runs.
#[derive(Clone, Debug)]
pub struct Analyses {
    /// The kernel's shared memory, or the op at which it could not be known, and why (the
    /// lowering reports it there).
    pub shared: Result<SharedMemory, (OpId, String)>,
    /// Contiguity, divisibility and constancy of every value, indexed by value id.
    pub axis: Vec<AxisInfo>,
}

/// Where each user of shared memory has its bytes, and which ops' accesses are left unordered.
#[derive(Clone, Debug)]
pub struct SharedMemory {
    /// The allocation.
    pub alloc: Allocation,
    /// The ops that lack a barrier before them, in program order: none once `insert-barriers`
    /// has run.
    pub unordered: Vec<OpId>,
}

impl Analyses {
    /// The analyses of `f`, with the back end's scratch bytes per op (`scratch`).
    pub fn of(f: &Function, scratch: ScratchBytes) -> Analyses {
        let shared = Allocation::of(f, scratch).and_then(|alloc| {
            let unordered = barriers::missing(f, &alloc)
                .map_err(|(op, e)| (op, format!("internal error: {e}")))?;
            Ok(SharedMemory { alloc, unordered })
        });
        Analyses {
            shared,
            axis: axis_info::analyze(f),
        }
    }
}
