//! `prefetch-dot`: a pipelined tensor-core `dot` loop reads each stage in `K` slices, the first
//! slice of the next stage while the last slice of this one multiplies.
//!
//! It runs after `pipeline-dot`, whose loops read their operands from shared memory at the head
//! of each iteration: `async_wait`, `barrier`, the copies ahead, `local_load` of both operands,
//! then the `dot`. Every warp then issues its copies and all of its `ldmatrix`es before its first
//! `mma`, and the tensor cores idle while it does (about 95 instructions of copy addresses and 16
//! `ldmatrix` per iteration for a 128 × 128 × 32 tile on 4 warps). Split along `K` into slices of
//! one `mma` step (16 for f16/bf16, 8 for tf32), the loop becomes
//!
//! ```text
//! async_wait {pending = P}; barrier                      (moved out of the body's head)
//! %a0, %b0 = local_load {offset = 0} of stage %read0     slice 0 of the first stage
//! for iv … carrying (%acc, …, %read, …, %a0, %b0) {
//!   … the copies ahead (issued first: the whole iteration to arrive) …
//!   %a1, %b1 = local_load {offset = 1 · kstep} %buf, %read       slice 1 read …
//!   %acc = dot %a0, %b0, %acc                                    … while slice 0 multiplies
//!   … slice j + 1 read, slice j multiplied, up to j = n − 2 …
//!   … the stage counters …
//!   async_wait {pending = P}; barrier                    (was at the head of the next iteration)
//!   %a0', %b0' = local_load {offset = 0} %buf, %read'    slice 0 of the next stage
//!   %acc' = dot %a(n−1), %b(n−1), %acc                   the last slice covers the barrier
//!   yield %acc', …, %read', …, %a0', %b0'
//! }
//! ```
//!
//! The wait and the barrier that opened iteration `i + 1` now close iteration `i`, with only the
//! reads of slice 0 of stage `read'` (which they make visible) and the last `mma`s after them, so
//! the order of every shared-memory write and read is the one `pipeline-dot` proved: the copies
//! of iteration `i` still follow the barrier of iteration `i − 1`, and every read of stage `read`
//! precedes the barrier after which it is overwritten. The first iteration's barrier is before the
//! loop. After the last iteration the carried slices are read from a stage of zero-filled copies
//! and unused. The sum over `K` keeps its order (slice by slice, as one `dot` lowers).
//!
//! **Not in the default pipeline.** On the H100 it did not pay (docs/DECISIONS.md,
//! "Matrix products"): ptxas already interleaves the `mma`s with the copies and `ldmatrix`es once they are in
//! one block, the tensor pipe stayed 63–67% active with or without it, and the 128 × 128 × 32
//! GEMM ran 0–3% slower at 4096³ (up to 5% faster with 128 × 64 blocks). It stays, with its golden
//! test, for the targets where the `ldmatrix` latency before the first `mma` is not hidden by
//! another program (measure before turning it on: add it after `pipeline-dot` in
//! `pipeline::GPU_PASSES`).
//!
//! A loop qualifies when its body starts with `async_wait`, `barrier`, holds no nested loop or
//! branch, and has `dot`s with an mma result whose operands are whole-stage `local_load`s used
//! only by that `dot`, from stages the loop carries, whose accumulator is carried and whose result
//! is only yielded as that carried value.

use tile_core::ir::{BlockId, DType, Function, OpId, OpKind, Type, ValueDef, ValueId};

use super::pipeline_loads::for_loops;

/// Runs the pass.
pub fn run(f: &mut Function) {
    for l in for_loops(f) {
        if let Some(plan) = plan(f, l) {
            prefetch(f, l, &plan);
        }
    }
}

/// A `dot` to split.
struct SplitDot {
    dot: OpId,
    /// The `local_load`s of `A` and `B`.
    loads: [OpId; 2],
    /// Slices along `K`.
    slices: u32,
    /// `K` per slice.
    kstep: u32,
}

/// What the pass does to one loop.
struct Plan {
    body: BlockId,
    pending: u32,
    dots: Vec<SplitDot>,
}

/// The body's block-argument index of `v`, when it is one of `body`'s carried values (not `iv`).
fn carried_index(f: &Function, body: BlockId, v: ValueId) -> Option<usize> {
    match f.values[v.index()].def {
        ValueDef::BlockArg(b, i) if b == body && i > 0 => Some(i as usize),
        _ => None,
    }
}

/// How many times each value is used by ops in `f`'s program.
fn uses(f: &Function, v: ValueId) -> usize {
    f.walk()
        .into_iter()
        .map(|o| f.op(o).operands.iter().filter(|&&x| x == v).count())
        .sum()
}

/// The plan for `l`, if it qualifies (see the module documentation).
fn plan(f: &Function, l: OpId) -> Option<Plan> {
    let region = *f.op(l).regions.first()?;
    let body = f.regions[region.index()].blocks[0];
    let ops = &f.blocks[body.index()].ops;
    let OpKind::AsyncWait { pending } = f.op(*ops.first()?).kind else {
        return None;
    };
    if !matches!(f.op(*ops.get(1)?).kind, OpKind::Barrier) {
        return None;
    }
    if ops
        .iter()
        .any(|&o| matches!(f.op(o).kind, OpKind::For | OpKind::While | OpKind::If))
    {
        return None;
    }
    let y = *ops.last()?;
    if !matches!(f.op(y).kind, OpKind::Yield) {
        return None;
    }
    let yielded = &f.op(y).operands;
    let mut dots = Vec::new();
    for &d in ops {
        let data = f.op(d);
        if !matches!(data.kind, OpKind::Dot { .. }) || data.operands.len() != 3 {
            continue;
        }
        if !matches!(
            f.ty(data.results[0]).layout,
            Some(tile_core::ir::Layout::Mma(_))
        ) {
            continue;
        }
        // The accumulator is carried, and the result only yielded as its next value.
        let Some(acc_arg) = carried_index(f, body, data.operands[2]) else {
            continue;
        };
        let r = data.results[0];
        if yielded.get(acc_arg - 1) != Some(&r) || uses(f, r) != 1 {
            continue;
        }
        let mut loads = [d; 2];
        let mut ok = true;
        for (i, &v) in data.operands[..2].iter().enumerate() {
            let ld = f.def_op(v).filter(|&o| f.op(o).block == body);
            let whole = ld.is_some_and(|o| {
                f.op(o).kind
                    == OpKind::LocalLoad {
                        offset: [0, 0],
                        trans: false,
                    }
                    && carried_index(f, body, f.op(o).operands[1]).is_some()
            });
            match ld {
                Some(o) if whole && uses(f, v) == 1 => loads[i] = o,
                _ => ok = false,
            }
        }
        let aty = f.ty(data.operands[0]);
        let kstep = match aty.dtype() {
            Some(DType::F16 | DType::BF16) => 16,
            Some(DType::F32) => 8,
            _ => 0,
        };
        let k = aty.shape.get(1).copied().unwrap_or(0);
        if !ok || kstep == 0 || k == 0 || k % kstep != 0 {
            continue;
        }
        dots.push(SplitDot {
            dot: d,
            loads,
            slices: k / kstep,
            kstep,
        });
    }
    (!dots.is_empty()).then_some(Plan {
        body,
        pending,
        dots,
    })
}

/// The type of slice `j`'s operand `i` (`A`: `M × kstep`, `B`: `kstep × N`) and its offset.
fn slice(f: &Function, load: OpId, i: usize, j: u32, kstep: u32) -> (Type, [u32; 2]) {
    let mut ty = f.ty(f.op(load).results[0]).clone();
    let k_dim = if i == 0 { 1 } else { 0 };
    ty.shape[k_dim] = kstep;
    let mut offset = [0, 0];
    offset[k_dim] = j * kstep;
    (ty, offset)
}

/// Inserts an op into `block` at `*at` and moves `*at` past it.
fn insert(
    f: &mut Function,
    block: BlockId,
    at: &mut usize,
    kind: OpKind,
    operands: Vec<ValueId>,
    tys: Vec<Type>,
) -> OpId {
    let op = f.insert_op(block, *at, kind, operands, tys);
    *at += 1;
    op
}

/// Inserts into `block` at `*at` the read of K slice `j` of operand `i`'s stage `stage` (the
/// buffer and tile of the whole-stage `local_load` `ld`); its value.
#[allow(clippy::too_many_arguments)]
fn load_slice(
    f: &mut Function,
    block: BlockId,
    at: &mut usize,
    ld: OpId,
    i: usize,
    j: u32,
    kstep: u32,
    stage: ValueId,
) -> ValueId {
    let buf = f.op(ld).operands[0];
    let (ty, offset) = slice(f, ld, i, j, kstep);
    let op = insert(
        f,
        block,
        at,
        OpKind::LocalLoad {
            offset,
            trans: false,
        },
        vec![buf, stage],
        vec![ty],
    );
    f.op(op).results[0]
}

/// Rewrites `l` by `plan` (see the module documentation).
fn prefetch(f: &mut Function, l: OpId, plan: &Plan) {
    let body = plan.body;
    let outer = f.op(l).block;
    let ops = f.blocks[body.index()].ops.clone();
    let (wait, barrier) = (ops[0], ops[1]);
    let y = ops[ops.len() - 1];
    // Before the loop: the first iteration's wait and barrier, and its slices 0.
    let Some(mut at) = f.blocks[outer.index()].ops.iter().position(|&o| o == l) else {
        return;
    };
    let wait_kind = OpKind::AsyncWait {
        pending: plan.pending,
    };
    insert(f, outer, &mut at, wait_kind.clone(), vec![], vec![]);
    insert(f, outer, &mut at, OpKind::Barrier, vec![], vec![]);
    f.detach(wait);
    f.detach(barrier);
    // The body: where the first of the loads was (after the copies ahead, which are issued
    // first so that they have the whole iteration to arrive), slices 1 … n − 1 read, then the
    // dots of slices 0 … n − 2.
    let first_load = plan
        .dots
        .iter()
        .flat_map(|d| d.loads)
        .filter_map(|ld| f.blocks[body.index()].ops.iter().position(|&o| o == ld));
    let mut top = first_load.min().unwrap_or(0);
    let mut last = Vec::new();
    for sd in &plan.dots {
        let mut cur = [ValueId(0); 2];
        for (i, &ld) in sd.loads.iter().enumerate() {
            let arg = carried_index(f, body, f.op(ld).operands[1]).unwrap_or(1);
            let init = f.op(l).operands[2 + arg];
            let init_slice = load_slice(f, outer, &mut at, ld, i, 0, sd.kstep, init);
            f.ops[l.index()].operands.push(init_slice);
            let ty0 = f.ty(init_slice).clone();
            cur[i] = f.add_block_arg(body, ty0.clone());
            f.add_result(l, ty0);
        }
        // Slice j + 1 read, then slice j multiplied, for j = 0 … n − 2: two slices live at most.
        let d = f.op(sd.dot).clone();
        let acc_ty = f.ty(d.results[0]).clone();
        let mut acc = d.operands[2];
        let mut ab = cur;
        for j in 1..sd.slices {
            let mut next = [ValueId(0); 2];
            for (i, &ld) in sd.loads.iter().enumerate() {
                let stage = f.op(ld).operands[1];
                next[i] = load_slice(f, body, &mut top, ld, i, j, sd.kstep, stage);
            }
            let op = insert(
                f,
                body,
                &mut top,
                d.kind.clone(),
                vec![ab[0], ab[1], acc],
                vec![acc_ty.clone()],
            );
            acc = f.op(op).results[0];
            ab = next;
        }
        last.push((sd, ab, acc, acc_ty));
    }
    // The end: the next iteration's wait and barrier, its slices 0, the last slices' dots.
    let mut end = f.blocks[body.index()]
        .ops
        .iter()
        .position(|&o| o == y)
        .unwrap_or(0);
    insert(f, body, &mut end, wait_kind, vec![], vec![]);
    insert(f, body, &mut end, OpKind::Barrier, vec![], vec![]);
    let mut next_slices = Vec::new();
    for (sd, ..) in &last {
        for (i, &ld) in sd.loads.iter().enumerate() {
            let arg = carried_index(f, body, f.op(ld).operands[1]).unwrap_or(1);
            let next_stage = f.op(y).operands[arg - 1];
            let v = load_slice(f, body, &mut end, ld, i, 0, sd.kstep, next_stage);
            next_slices.push(v);
        }
    }
    for (sd, ab, acc, acc_ty) in &last {
        let kind = f.op(sd.dot).kind.clone();
        let op = insert(
            f,
            body,
            &mut end,
            kind,
            vec![ab[0], ab[1], *acc],
            vec![acc_ty.clone()],
        );
        let out = f.op(op).results[0];
        let old = f.op(sd.dot).results[0];
        f.replace_all_uses(old, out);
        f.detach(sd.dot);
        for &ld in &sd.loads {
            f.detach(ld);
        }
    }
    f.ops[y.index()].operands.extend(next_slices);
}
