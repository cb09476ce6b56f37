//! Register pressure: how many 32-bit registers per thread a module's GPU-level IR keeps live
//! at once, estimated before LLVM and ptxas run. ptxas decides whether a kernel fits (the build's
//! spill check, `pipeline::spill`); this estimate says *where* a kernel that does not fit holds
//! the most, so that the error points at those tokens.
//!
//! The estimate is a liveness sweep over the ops in program order. A value is live from its
//! definition up to its last use; one defined outside a loop and used inside stays live to the
//! loop's end, and a loop's carried values live through the whole loop. Each live value holds
//! one register per distinct element its thread keeps (a layout's broadcast copies share one),
//! two for 64-bit elements and pointers, half for 16-bit floats (two share a register) and a
//! quarter for a boolean (a predicate bit). Two kinds of value cost a few registers whatever
//! their size: uniform ones (constants, splats, a `program_id`, scalars) and *indices* —
//! integers and pointers computed only from `arange`, uniform values, `+`, `-`, `*` and integer
//! conversions — whose elements differ from one another by constants that the code generator
//! folds into immediate offsets. Shared-memory buffers hold no registers.
//!
//! It is rough: on the 856 modules of `tile-fuzz corpus` (the repository's `#[tile_kernel]`
//! items) it is within 16 registers of what `ptxas -v` reports for 615 and within 32 for 766;
//! it counts up to 147 too many where LLVM interleaves a `dot`'s operand loads with its MMAs,
//! and up to 91 too few on unaligned variants (a predicate and an address per element). `tile-fuzz pressure` prints it
//! for dumped modules and `scripts/register_calibration.py` sets it beside ptxas's count.
//! [`limit`] is what a thread may hold with the kernel's warps.

use tile_core::ir::{BinOp, DType, Elem, Function, OpId, OpKind, ValueDef, ValueId};
use tile_core::Target;

/// Registers a thread needs beyond the live values the sweep counts (thread and block indices,
/// loop counters, addresses in flight).
pub const OVERHEAD: u64 = 16;

/// Registers one thread may use when a program runs `num_warps` warps alone on an SM: the
/// register file ([`Target::REGISTERS_PER_SM`]) split between its threads (allocated in units
/// of 8), at most [`Target::MAX_REGISTERS_PER_THREAD`].
pub fn limit(num_warps: u32) -> u64 {
    let threads = 32 * u64::from(num_warps.max(1));
    ((Target::REGISTERS_PER_SM / threads) / 8 * 8).min(Target::MAX_REGISTERS_PER_THREAD)
}

/// The peak of a module's live registers per thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pressure {
    /// Registers per thread at the peak, [`OVERHEAD`] included.
    pub registers: u64,
    /// The op at which the peak is reached (where a spanned error points).
    pub at: Option<OpId>,
}

/// Where each op sits in program order, and how far its nested regions reach.
struct Order {
    /// Position of each op ([`Function::walk`] order), by op index.
    pos: Vec<usize>,
    /// The position of the last op nested in each op (its own position when it has none).
    end: Vec<usize>,
    /// The innermost loop (`for` or `while`) around each op, by op index.
    loop_of: Vec<Option<OpId>>,
    /// The op whose region holds each block, by block index (`None`: the body's).
    owner: Vec<Option<OpId>>,
    /// The ops in program order.
    ops: Vec<OpId>,
}

fn order(f: &Function) -> Order {
    let ops = f.walk();
    let n = f.ops.len();
    let mut pos = vec![usize::MAX; n];
    for (i, &op) in ops.iter().enumerate() {
        pos[op.index()] = i;
    }
    let mut end: Vec<usize> = pos.clone();
    let mut loop_of = vec![None; n];
    // Which op owns each block (the entry block: none).
    let mut owner = vec![None; f.blocks.len()];
    for &p in &ops {
        for &r in &f.op(p).regions {
            for &b in &f.regions[r.index()].blocks {
                owner[b.index()] = Some(p);
            }
        }
    }
    let parents: Vec<Option<OpId>> = (0..n)
        .map(|i| owner.get(f.ops[i].block.index()).copied().flatten())
        .collect();
    // Parents come before their nested ops, so one backwards pass folds every op's end into
    // its parent's, and one forward pass hands each op its innermost loop.
    for &op in ops.iter().rev() {
        if let Some(p) = parents[op.index()] {
            let e = end[op.index()];
            if e != usize::MAX && e > end[p.index()] {
                end[p.index()] = e;
            }
        }
    }
    for &op in &ops {
        loop_of[op.index()] = parents[op.index()].and_then(|p| {
            if f.op(p).kind.is_loop() {
                Some(p)
            } else {
                loop_of[p.index()]
            }
        });
    }
    Order {
        pos,
        end,
        loop_of,
        owner,
        ops,
    }
}

/// Registers per thread that value `v` holds while live.
fn weight(f: &Function, v: ValueId, index: &[bool]) -> u64 {
    let ty = f.ty(v);
    if ty.is_shared() {
        return 0;
    }
    let words: f64 = match ty.elem {
        Elem::Ptr(_) => 2.0,
        Elem::Scalar(DType::I64) => 2.0,
        Elem::Scalar(DType::I1) => 0.25,
        Elem::Scalar(DType::F16 | DType::BF16) => 0.5,
        Elem::Scalar(_) => 1.0,
    };
    let distinct = match &ty.layout {
        Some(l) => l
            .linear(&ty.shape)
            .map_or(1, |ll| 1u64 << ll.reg.iter().filter(|&&b| b != 0).count()),
        None => 1,
    };
    if distinct == 1 || index[v.index()] {
        return words.ceil() as u64;
    }
    (distinct as f64 * words).ceil() as u64
}

/// Marks the values that are uniform or indices (see the module documentation).
fn indices(f: &Function, ops: &[OpId]) -> Vec<bool> {
    let mut index = vec![false; f.values.len()];
    for &p in f.params() {
        index[p.index()] = true;
    }
    for &op in ops {
        let d = f.op(op);
        let all_in = d.operands.iter().all(|&o| index[o.index()]);
        let int_like = d.results.iter().all(|&r| match f.ty(r).elem {
            Elem::Ptr(_) => true,
            Elem::Scalar(t) => t.is_int() && t != DType::I1,
        });
        let cheap = match &d.kind {
            OpKind::Constant(_)
            | OpKind::ProgramId { .. }
            | OpKind::NumPrograms { .. }
            | OpKind::Arange { .. }
            | OpKind::Splat => true,
            OpKind::Broadcast | OpKind::ExpandDims { .. } | OpKind::Trans | OpKind::Reshape => {
                all_in
            }
            // A widening integer cast of an index (`offs as i64`) is one too: sign extension
            // of values a constant apart, which the code generator folds alike.
            OpKind::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul)
            | OpKind::AddPtr
            | OpKind::Cast => all_in && int_like,
            _ => false,
        };
        if cheap {
            for &r in &d.results {
                index[r.index()] = true;
            }
        }
    }
    index
}

/// The peak register pressure of `f`, a GPU-level function (see the module documentation).
pub fn pressure(f: &Function) -> Pressure {
    let o = order(f);
    let index = indices(f, &o.ops);
    let n = o.ops.len();
    if n == 0 {
        return Pressure {
            registers: OVERHEAD,
            at: None,
        };
    }
    // Live interval of each value, by position.
    let mut start = vec![usize::MAX; f.values.len()];
    let mut last = vec![0usize; f.values.len()];
    for (i, v) in f.values.iter().enumerate() {
        start[i] = match v.def {
            ValueDef::OpResult(op, _) => {
                let d = f.op(op);
                // A loop's results appear when it ends.
                if matches!(
                    d.kind,
                    OpKind::For | OpKind::While | OpKind::If | OpKind::AssociativeScan { .. }
                ) {
                    o.end[op.index()]
                } else {
                    o.pos[op.index()]
                }
            }
            // Parameters (the entry block's arguments) from the start, others with their op.
            ValueDef::BlockArg(b, _) => o
                .owner
                .get(b.index())
                .copied()
                .flatten()
                .map_or(0, |p| o.pos[p.index()]),
        };
        last[i] = start[i];
    }
    // Carried loop values live through the whole loop.
    for &op in &o.ops {
        if f.op(op).kind.is_loop() {
            for &r in &f.op(op).regions {
                for &b in &f.regions[r.index()].blocks {
                    for &a in &f.blocks[b.index()].args {
                        last[a.index()] = last[a.index()].max(o.end[op.index()]);
                    }
                }
            }
        }
    }
    for &op in &o.ops {
        let at = o.pos[op.index()];
        for &v in &f.op(op).operands {
            let mut end = at;
            // Defined outside a loop around this use: live to the loop's end.
            let mut l = o.loop_of[op.index()];
            while let Some(lp) = l {
                if start[v.index()] <= o.pos[lp.index()] {
                    end = end.max(o.end[lp.index()]);
                }
                l = o.loop_of[lp.index()];
            }
            last[v.index()] = last[v.index()].max(end);
        }
    }
    let mut delta = vec![0i64; n + 1];
    for i in 0..f.values.len() {
        if start[i] == usize::MAX || start[i] >= n {
            continue;
        }
        let w = weight(f, ValueId(i as u32), &index) as i64;
        // Live from its definition up to (not across) its last use: an op's operands that die
        // there hand their registers to its results.
        if last[i] > start[i] {
            delta[start[i]] += w;
            delta[last[i].min(n)] -= w;
        }
    }
    let mut live = 0i64;
    let mut peak = (0i64, None);
    for (i, d) in delta.iter().take(n).enumerate() {
        live += d;
        if live > peak.0 {
            peak = (live, Some(o.ops[i]));
        }
    }
    Pressure {
        registers: peak.0.max(0) as u64 + OVERHEAD,
        at: peak.1,
    }
}
