//! The compile-cost budget: a deterministic estimate of how long LLVM will take on a kernel,
//! so that whatever the front end accepts also compiles in about two seconds, and anything
//! more is a spanned error that names the limit instead of a build that takes minutes.
//!
//! The GPU lowering unrolls every tile op over the elements one thread holds, so a module's
//! machine code, and LLVM's time on it, grow with the sum over its ops of the elements per
//! thread they touch, each weighted by what LLVM makes of one element: 1 for float arithmetic,
//! 4 for integer arithmetic (its known-bits analyses are the slow part), 3 for pointer
//! offsets, about 12 per load instruction and 9 per store (alias analysis; a vectorized access
//! is one instruction for several elements), 15 to 45 for `exp`, `log`, `tanh`, `erf`, `sin` and
//! `cos` (polynomials and range reduction), and 16 to 21 per operand element for reductions,
//! scans and rolls (shuffles and shared memory), 10 per source and result element for a
//! `gather`. Splats, broadcasts and constants cost nothing
//! per element. A `dot` costs its result's elements per thread times its depth `K` on the FMA
//! chain, and times `3 · K / 16` on `mma.sync` (`K / 16` with `wgmma`). Loop bodies count once
//! (they are not unrolled).
//!
//! A kernel's cost is the sum over the LLVM modules it builds, each from its own GPU-level IR:
//! every specialization once per variant (aligned arguments, unaligned, …) and target. Before
//! any GPU-level work, the tile-level IR gives a rougher estimate, and a kernel over twice the
//! budget by it is refused at once. The weights were fitted so that kernels of many copies of
//! one op, at the limit, all compile in 1.1–1.8 s (`scripts/compile_cost_families.py` rebuilds and
//! times them): `tile-fuzz replay` prints a case's cost beside its compile time, and
//! `tile-fuzz corpus` does so for every kernel in the repository.

use tile_core::ir::{DType, Elem, Function, InDim, MathFn, OpKind, Precision, ValueId};

/// The most [`cost`] a kernel's LLVM modules may add up to: about two seconds of compilation
/// for a release build of the macro on a two-core machine (the modules build in parallel; a
/// unit is 7–9 µs of the machine's time there).
pub const MAX_COMPILE_COST: u64 = 225_000;

/// Per element of a `convert_layout` that moves runs of columns as vectors (see
/// `llvm::converts_by_vectors`).
const CONVERT_VECTOR_WEIGHT: u64 = 2;

/// The estimated cost of compiling one LLVM module from `f`: its GPU-level IR, or (a rougher
/// estimate, with every access scalar) its optimized tile-level IR.
pub fn cost(f: &Function) -> u64 {
    op_costs(f).into_iter().fold(0u64, u64::saturating_add)
}

/// Each op's share of [`cost`], in program order (the order of [`Function::locs`]).
pub fn op_costs(f: &Function) -> Vec<u64> {
    let threads = 32 * u64::from(f.num_warps.max(1));
    let per_thread = |n: u64| n.div_ceil(threads).max(1);
    f.walk()
        .into_iter()
        .map(|op| {
            let d = f.op(op);
            let out: u64 = d
                .results
                .iter()
                .map(|&r| per_thread(f.ty(r).numel()))
                .sum::<u64>()
                .max(1);
            let first_in = || {
                d.operands
                    .first()
                    .map_or(1, |&v| per_thread(f.ty(v).numel()))
            };
            let int_like = || {
                d.operands
                    .iter()
                    .chain(&d.results)
                    .any(|&v| match f.ty(v).elem {
                        Elem::Ptr(_) => true,
                        Elem::Scalar(t) => t.is_int() && t != DType::I1,
                    })
            };
            // Memory accesses: one instruction per `vec` elements (the GPU level's vectorized
            // accesses), plus a register move per element.
            let access = |per: u64, vec: u32, w: u64| {
                per.div_ceil(u64::from(vec.max(1)))
                    .saturating_mul(w)
                    .saturating_add(per)
            };
            let in_at = |i: usize| {
                d.operands
                    .get(i)
                    .map_or(1, |&v| per_thread(f.ty(v).numel()))
            };
            let (per, weight) = match &d.kind {
                OpKind::Dot { precision } => {
                    let a = f.ty(d.operands[0]);
                    let k = u64::from(a.shape.get(1).copied().unwrap_or(1));
                    let tensor_cores = matches!(a.elem, Elem::Scalar(DType::F16 | DType::BF16))
                        || *precision == Precision::Tf32;
                    if tensor_cores {
                        (out, 3 * k.div_ceil(16))
                    } else {
                        (out, k)
                    }
                }
                // One asynchronous instruction per 16 of K for the whole accumulator.
                OpKind::WarpGroupDot { .. } => {
                    let k = u64::from(f.ty(d.operands[0]).shape.get(1).copied().unwrap_or(1));
                    (out, k.div_ceil(16))
                }
                OpKind::Binary(_) | OpKind::Unary(_) | OpKind::Cmp(_) | OpKind::Select => {
                    (out, if int_like() { 4 } else { 1 })
                }
                // A `getelementptr`, which LLVM folds into the address.
                OpKind::AddPtr => (out, 3),
                OpKind::Math(m) => (out, math_weight(*m)),
                OpKind::Load { vec, .. } => (access(out, *vec, 12), 1),
                OpKind::Store { vec, .. } => (access(in_at(0), *vec, 9), 1),
                // Expanded into an address and a mask per element (or one copy on Hopper).
                OpKind::DescLoad { .. } => (access(out, 1, 12), 2),
                OpKind::DescStore { .. } => {
                    let v = d.operands.len() - 1;
                    (access(in_at(v), 1, 9), 2)
                }
                OpKind::AsyncCopy { vec } => (access(in_at(2), *vec, 8), 1),
                // ldmatrix: eight 16-bit elements per lane and instruction.
                OpKind::LocalLoad { .. } => (access(out, 8, 8), 1),
                OpKind::AtomicRmw { .. } | OpKind::AtomicCas { .. } => (out, 6),
                OpKind::Cast => (out, 3),
                // No instruction, or one move between register kinds.
                OpKind::Bitcast | OpKind::IntToPtr => (out, 1),
                OpKind::Reduce { axis, .. } => {
                    (reduce_cost(f, d.operands[0], *axis, first_in()), 1)
                }
                OpKind::Scan { .. } => (first_in(), 16),
                // Each tile's shuffles and scratch, and the combiner's ops emitted once per
                // element and again per step across lanes and warps (about twice in all).
                OpKind::AssociativeScan { .. } => {
                    let combiner = d.regions.first().map_or(0, |&r| {
                        f.regions[r.index()]
                            .blocks
                            .iter()
                            .map(|&b| f.blocks[b.index()].ops.len() as u64)
                            .sum()
                    });
                    (
                        first_in().saturating_mul(d.operands.len() as u64),
                        16u64.saturating_add(combiner.saturating_mul(2)),
                    )
                }
                OpKind::Roll { .. } => (first_in(), 21),
                // The source stored to shared memory, then an address and a load per result
                // element (as a `convert_layout` with the index's arithmetic on top).
                OpKind::Gather { .. } => (first_in().saturating_add(out), 10),
                // Through shared memory: a store, a barrier and a load per element; runs of
                // columns moved as vectors through a swizzled tile, a fraction of that.
                OpKind::ConvertLayout => {
                    let vector = d.operands.first().is_some_and(|&v| {
                        crate::llvm::converts_by_vectors(f.ty(v), f.ty(d.results[0]))
                    });
                    (out, if vector { CONVERT_VECTOR_WEIGHT } else { 8 })
                }
                // The same register for every element, or no code per element.
                OpKind::Splat
                | OpKind::Hint { .. }
                | OpKind::Broadcast
                | OpKind::ExpandDims { .. }
                | OpKind::Trans
                | OpKind::Reshape
                | OpKind::Interleave
                | OpKind::Deinterleave
                | OpKind::Constant(_)
                | OpKind::LocalAlloc
                | OpKind::For
                | OpKind::While
                | OpKind::If
                | OpKind::DebugBarrier
                | OpKind::Yield
                | OpKind::Return
                | OpKind::WarpGroupWait { .. } => (1, 1),
                // An index per element, or one instruction.
                OpKind::Arange { .. }
                | OpKind::ProgramId { .. }
                | OpKind::NumPrograms { .. }
                | OpKind::AsyncCommit
                | OpKind::AsyncWait { .. }
                | OpKind::Barrier
                | OpKind::FenceAsyncShared
                | OpKind::MbarrierInit
                | OpKind::MbarrierExpect { .. }
                | OpKind::TmaLoad { .. }
                | OpKind::MbarrierWait
                | OpKind::MbarrierInval => (out, 1),
            };
            per.saturating_mul(weight)
        })
        .collect()
}

/// A reduction of `v` along `axis`: two units per element the thread holds (the combines),
/// then per result register two per shuffle stage (a lane bit along the axis) and, when warps
/// span the axis, 75 for the round through shared memory (measured: that round, not the
/// shuffles, is what LLVM is slow on). At the tile level, with no layout yet, 20 per element.
fn reduce_cost(f: &Function, v: ValueId, axis: u32, per_in: u64) -> u64 {
    const SHUFFLE: u64 = 2;
    const ACROSS_WARPS: u64 = 75;
    let ty = f.ty(v);
    let linear = ty.layout.as_ref().and_then(|l| l.linear(&ty.shape).ok());
    let Some(l) = linear else {
        return per_in.saturating_mul(20);
    };
    let axis = axis as usize;
    let Some(&extent) = l.shape.get(axis) else {
        return per_in;
    };
    // The row-major index bits of the axis's coordinate.
    let low = l.dim_bit(axis, 0);
    let mask = low.saturating_mul(u64::from(extent)).saturating_sub(low);
    let along = |d: InDim| l.bases(d).iter().filter(|&&b| b & mask != 0).count();
    let regs = l.regs() as u64;
    let per_out = regs >> along(InDim::Reg);
    let stages = along(InDim::Lane) as u64;
    let warps = if along(InDim::Warp) > 0 {
        ACROSS_WARPS
    } else {
        0
    };
    regs.saturating_mul(2)
        .saturating_add(per_out.saturating_mul(stages * SHUFFLE + warps))
}

/// What one element of `m` costs, in units of one float add.
fn math_weight(m: MathFn) -> u64 {
    match m {
        MathFn::Sin | MathFn::Cos => 45,
        MathFn::Log | MathFn::Tanh => 27,
        MathFn::Erf => 25,
        MathFn::Gelu => 16,
        MathFn::Exp | MathFn::Sigmoid => 15,
        MathFn::Pow => 3,
        MathFn::Log2 | MathFn::Abs => 2,
        MathFn::Exp2
        | MathFn::Sqrt
        | MathFn::Rsqrt
        | MathFn::Floor
        | MathFn::Ceil
        | MathFn::Fma => 1,
    }
}
