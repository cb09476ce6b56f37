//! `pipeline-loads`: in a loop whose body multiplies tiles with `dot` or scans them (`scan`,
//! `associative_scan`: long chains of dependent arithmetic per thread) and stores nothing, each
//! tile load whose address and mask depend only on the induction variable and on values from
//! outside the loop is issued one iteration ahead: a prologue loads iteration `lb`'s tile before
//! the loop, the loop carries the loaded tile, and the body first loads iteration `i + step`'s
//! tile (masked off past the upper bound, so it never touches memory the loop would not) and then
//! works on the carried one. The global-memory latency of the next tile overlaps this
//! iteration's `dot` or scan (two stages, in registers). Loops with a tensor-core `dot` are left
//! to `pipeline-dot`, which fills a shared-memory ring with `cp.async` instead. Other loops keep
//! their loads where they are: a loop that only streams (a reduction over chunks) has enough
//! independent loads in flight without the extra registers.
//!
//! It runs on tile-level IR, first in the GPU pipeline, so the interpreter runs the loop as
//! written; `assign-layouts` then treats the carried tiles like any carried value.

use std::collections::{HashMap, HashSet};

use tile_core::ir::{CmpPred, DType, Function, OpId, OpKind, Type, ValueDef, ValueId};

use super::edit::masked_load;

/// Runs the pass; with `num_stages = 1` (no pipelining, as in Triton) it leaves the kernel alone.
pub fn run(f: &mut Function) {
    if f.num_stages == 1 {
        return;
    }
    for l in for_loops(f) {
        pipeline(f, l);
    }
}

/// Every `for` op of the kernel, outer before inner.
pub(crate) fn for_loops(f: &Function) -> Vec<OpId> {
    f.walk()
        .into_iter()
        .filter(|&op| matches!(f.op(op).kind, OpKind::For))
        .collect()
}

/// Pipelines the loads of the loop `l` where the rules of the module documentation allow.
fn pipeline(f: &mut Function, l: OpId) {
    let Some(&region) = f.op(l).regions.first() else {
        return;
    };
    let body = f.regions[region.index()].blocks[0];
    let ops = f.blocks[body.index()].ops.clone();
    let has_dot = ops.iter().any(|&o| {
        matches!(
            f.op(o).kind,
            OpKind::Dot { .. } | OpKind::Scan { .. } | OpKind::AssociativeScan { .. }
        )
    });
    // Only the body's own ops, none of which writes memory (a nested loop or branch could).
    let plain = ops.iter().all(|&o| {
        use tile_core::ir::Effect;
        matches!(
            f.op(o).kind.effect(),
            Effect::Pure | Effect::Read | Effect::Sync | Effect::Terminator
        )
    });
    if !has_dot || !plain {
        return;
    }

    // A tensor-core `dot`'s tiles go through `pipeline-dot`'s shared-memory ring instead.
    let tensor_core = ops
        .iter()
        .any(|&o| super::accelerate_dot::mma_layout_of(f, o).is_some());
    if tensor_core {
        return;
    }
    let iv = f.blocks[body.index()].args[0];
    let in_body: HashSet<OpId> = ops.iter().copied().collect();
    let loads: Vec<OpId> = ops
        .iter()
        .copied()
        .filter(|&o| {
            matches!(f.op(o).kind, OpKind::Load { .. }) && f.ty(f.op(o).results[0]).is_tensor()
        })
        .collect();
    for load in loads {
        // The body ops the load depends on, in body order; none may read a carried value or
        // another load.
        let Some(slice) = backward_slice(f, load, &in_body, iv, body) else {
            continue;
        };
        let (lb, ub, step) = {
            let d = f.op(l);
            (d.operands[0], d.operands[1], d.operands[2])
        };
        // Prologue: the slice with iv = lb, before the loop.
        let outer = f.op(l).block;
        let at = f.blocks[outer.index()]
            .ops
            .iter()
            .position(|&o| o == l)
            .unwrap_or(0);
        let (first, _) = clone_masked_load(f, &slice, load, iv, lb, ub, outer, at);
        // The loop carries the tile.
        let ty = f.ty(f.op(load).results[0]).clone();
        f.ops[l.index()].operands.push(first);
        let carried = f.add_block_arg(body, ty.clone());
        f.add_result(l, ty);
        let old = f.op(load).results[0];
        // The body: iv_next = iv + step, then the next tile, first thing.
        let next_iv = f.insert_op(
            body,
            0,
            OpKind::Binary(tile_core::ir::BinOp::Add),
            vec![iv, step],
            vec![Type::scalar(DType::I32)],
        );
        let next_iv = f.op(next_iv).results[0];
        let (next, _) = clone_masked_load(f, &slice, load, iv, next_iv, ub, body, 1);
        // Uses of the old load (all in the body) read the carried tile; the yield passes the
        // next.
        f.replace_all_uses(old, carried);
        if let Some(&y) = f.blocks[body.index()].ops.last() {
            if matches!(f.op(y).kind, OpKind::Yield) {
                f.ops[y.index()].operands.push(next);
            }
        }
        f.detach(load);
    }
}

/// The ops of `body` that `load` depends on (itself last), in body order; `None` when it depends
/// on a block argument other than `iv` or on another load.
pub(crate) fn backward_slice(
    f: &Function,
    load: OpId,
    in_body: &HashSet<OpId>,
    iv: ValueId,
    body: tile_core::ir::BlockId,
) -> Option<Vec<OpId>> {
    backward_slice_with(f, load, in_body, iv, body, false)
}

/// [`backward_slice`], where `through_loads` lets the slice hold other loads (the page numbers
/// of a block table that address the tile) under the same rule: none of them depends on a value
/// the loop carries either.
pub(crate) fn backward_slice_with(
    f: &Function,
    load: OpId,
    in_body: &HashSet<OpId>,
    iv: ValueId,
    body: tile_core::ir::BlockId,
    through_loads: bool,
) -> Option<Vec<OpId>> {
    let mut need: HashSet<OpId> = HashSet::new();
    let mut stack = vec![load];
    while let Some(op) = stack.pop() {
        if !need.insert(op) {
            continue;
        }
        for &v in &f.op(op).operands {
            match f.values[v.index()].def {
                ValueDef::BlockArg(b, _) if b == body && v != iv => return None,
                ValueDef::BlockArg(..) => {}
                ValueDef::OpResult(d, _) => {
                    if in_body.contains(&d) {
                        if d != load
                            && !through_loads
                            && matches!(f.op(d).kind, OpKind::Load { .. })
                        {
                            return None;
                        }
                        stack.push(d);
                    }
                }
            }
        }
    }
    Some(
        f.blocks[body.index()]
            .ops
            .iter()
            .copied()
            .filter(|o| need.contains(o))
            .collect(),
    )
}

/// Clones `slice` (ending with `load`) into `block` at `at` with `iv` replaced by `new_iv`, the
/// load masked by `new_iv < ub` as well; returns the loaded tile and the position after the
/// inserted ops.
#[allow(clippy::too_many_arguments)]
fn clone_masked_load(
    f: &mut Function,
    slice: &[OpId],
    load: OpId,
    iv: ValueId,
    new_iv: ValueId,
    ub: ValueId,
    block: tile_core::ir::BlockId,
    mut at: usize,
) -> (ValueId, usize) {
    let mut map: HashMap<ValueId, ValueId> = HashMap::new();
    map.insert(iv, new_iv);
    let inside = |f: &mut Function, at: &mut usize| {
        let op = f.insert_op(
            block,
            *at,
            OpKind::Cmp(CmpPred::Lt),
            vec![new_iv, ub],
            vec![Type::scalar(DType::I1)],
        );
        *at += 1;
        f.op(op).results[0]
    };
    let v = masked_load(f, slice, load, &mut map, inside, block, &mut at);
    (v, at)
}
