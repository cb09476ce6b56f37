//! `prefetch-rows`: in a `while` loop that reads tiles and writes results (a persistent row
//! loop: a softmax or a norm over the rows `pid, pid + programs, …`), each tile load of the
//! body is issued one iteration ahead, so that the next row's global-memory latency overlaps
//! this row's reductions and stores. A prologue before the loop loads the first iteration's
//! tile; the loop carries the loaded tile; the body first computes the next iteration's carried
//! values and condition (copies of the ops that yield them and of the condition region), loads
//! the next tile masked off where that condition is false (so no memory the loop would not read
//! is touched), then works on the carried one. Two stages, in registers.
//!
//! Moving a load of iteration `i + 1` above the stores of iteration `i` is correct only if they
//! never touch the same memory. Triton's pipeliner assumes it; here it is proved: the loaded
//! buffer is a parameter the kernel never writes through, and every written parameter reaches
//! the kernel as the launch's `&mut` borrow, which no other argument can alias. A kernel that
//! turns loaded integers into pointers (`int_to_ptr`) is left alone, and so is a load whose
//! pointer does not derive from parameters alone.
//!
//! The pass runs only when the kernel asks for pipelining (`num_stages ≥ 2`, as Triton's
//! `tl.range(…, num_stages = …)` does), on loops whose body holds no nested region, no atomic,
//! barrier or tensor-core op, and whose condition is pure; and only while a thread keeps at
//! most [`MAX_PREFETCHED`] prefetched elements (the extra registers). It runs on tile-level IR,
//! early in the GPU pipeline, so the interpreter runs the loop as written.

use std::collections::{HashMap, HashSet};

use tile_core::ir::{BlockId, Effect, Function, OpId, OpKind, ValueDef, ValueId};

use super::edit::{clone_into, masked_load, renamed};
use crate::frontend::{pointer_params, written_params};

/// The most elements a thread holds in prefetched tiles of one loop.
pub const MAX_PREFETCHED: u64 = 32;

/// Runs the pass.
pub fn run(f: &mut Function) {
    for (w, loads) in plan(f) {
        for load in loads {
            prefetch(f, w, load);
        }
    }
}

/// Whether the pass changes `f` (the loops and loads it would prefetch exist).
pub fn applies(f: &Function) -> bool {
    !plan(f).is_empty()
}

/// Each `while` loop with the loads of its body to prefetch.
fn plan(f: &Function) -> Vec<(OpId, Vec<OpId>)> {
    if f.num_stages < 2
        || f.walk()
            .iter()
            .any(|&o| matches!(f.op(o).kind, OpKind::IntToPtr))
    {
        return Vec::new();
    }
    let written = written_params(f);
    let threads = 32 * u64::from(f.num_warps.max(1));
    let mut out = Vec::new();
    for w in f.walk() {
        if !matches!(f.op(w).kind, OpKind::While) {
            continue;
        }
        let Some(shape) = Shape::of(f, w) else {
            continue;
        };
        if shape.next_ops(f, w).is_none() {
            continue;
        }
        let mut budget = MAX_PREFETCHED;
        let mut loads = Vec::new();
        for &o in &f.blocks[shape.body.index()].ops {
            if !matches!(f.op(o).kind, OpKind::Load { .. }) {
                continue;
            }
            let ty = f.ty(f.op(o).results[0]);
            if !ty.is_tensor() {
                continue;
            }
            let per_thread = ty.numel().div_ceil(threads);
            let params = pointer_params(f, std::iter::once(f.op(o).operands[0]));
            let read_only =
                params.iter().any(|&p| p) && params.iter().zip(&written).all(|(&p, &w)| !(p && w));
            if per_thread > budget || !read_only || shape.slice(f, o).is_none() {
                continue;
            }
            budget -= per_thread;
            loads.push(o);
        }
        if !loads.is_empty() {
            out.push((w, loads));
        }
    }
    out
}

/// The parts of a `while` loop the pass works with.
struct Shape {
    cond: BlockId,
    body: BlockId,
}

impl Shape {
    /// The loop's blocks, if the loop is one the pass takes (see the module documentation).
    fn of(f: &Function, w: OpId) -> Option<Shape> {
        let d = f.op(w);
        let [c, b] = d.regions[..] else { return None };
        let (cond, body) = match (
            &f.regions[c.index()].blocks[..],
            &f.regions[b.index()].blocks[..],
        ) {
            (&[cond], &[body]) => (cond, body),
            _ => return None,
        };
        let ok_cond = f.blocks[cond.index()].ops.iter().all(|&o| {
            let d = f.op(o);
            d.regions.is_empty() && matches!(d.kind.effect(), Effect::Pure | Effect::Terminator)
        });
        let ok_body = f.blocks[body.index()].ops.iter().all(|&o| {
            let d = f.op(o);
            d.regions.is_empty()
                && !matches!(
                    d.kind,
                    OpKind::Dot { .. } | OpKind::Scan { .. } | OpKind::AssociativeScan { .. }
                )
                && match d.kind.effect() {
                    Effect::Pure | Effect::Read | Effect::Terminator => true,
                    Effect::Write => matches!(d.kind, OpKind::Store { .. }),
                    Effect::Atomic | Effect::Sync => false,
                }
        });
        (ok_cond && ok_body).then_some(Shape { cond, body })
    }

    /// The body ops computing the values the body yields (the next iteration's carried values),
    /// in body order, when all are pure: a value computed from a load is not known ahead.
    fn next_ops(&self, f: &Function, w: OpId) -> Option<Vec<OpId>> {
        let body_ops = &f.blocks[self.body.index()].ops;
        let &y = body_ops.last()?;
        let set: HashSet<OpId> = body_ops.iter().copied().collect();
        let producers: Vec<OpId> = f
            .op(y)
            .operands
            .iter()
            .filter_map(|&v| f.def_op(v))
            .filter(|o| set.contains(o))
            .collect();
        let need = deps(f, &producers, &set, None)?;
        let n = f.op(w).operands.len();
        (f.op(y).operands.len() == n && f.blocks[self.body.index()].args.len() == n).then(|| {
            body_ops
                .iter()
                .copied()
                .filter(|o| need.contains(o))
                .collect()
        })
    }

    /// The body ops `load` depends on (itself last), in body order, when none is another load
    /// or an op with an effect.
    fn slice(&self, f: &Function, load: OpId) -> Option<Vec<OpId>> {
        let body_ops: HashSet<OpId> = f.blocks[self.body.index()].ops.iter().copied().collect();
        let need = deps(f, &[load], &body_ops, Some(load))?;
        Some(
            f.blocks[self.body.index()]
                .ops
                .iter()
                .copied()
                .filter(|o| need.contains(o))
                .collect(),
        )
    }
}

/// The ops of `within` that the ops `from` depend on (themselves included); `None` if one of
/// them is not pure (except `allow`).
fn deps(
    f: &Function,
    from: &[OpId],
    within: &HashSet<OpId>,
    allow: Option<OpId>,
) -> Option<HashSet<OpId>> {
    let mut need: HashSet<OpId> = HashSet::new();
    let mut stack = from.to_vec();
    while let Some(op) = stack.pop() {
        if !need.insert(op) {
            continue;
        }
        if Some(op) != allow && f.op(op).kind.effect() != Effect::Pure {
            return None;
        }
        for &v in &f.op(op).operands {
            if let ValueDef::OpResult(d, _) = f.values[v.index()].def {
                if within.contains(&d) {
                    stack.push(d);
                }
            }
        }
    }
    Some(need)
}

/// Issues `load` (of `w`'s body) one iteration ahead.
fn prefetch(f: &mut Function, w: OpId, load: OpId) {
    let Some(shape) = Shape::of(f, w) else { return };
    let Some(slice) = shape.slice(f, load) else {
        return;
    };
    let body = shape.body;
    let body_args = f.blocks[body.index()].args.clone();
    let cond_args = f.blocks[shape.cond.index()].args.clone();
    let cond_ops = f.blocks[shape.cond.index()].ops.clone();
    let Some((&cond_yield, cond_pure)) = cond_ops.split_last() else {
        return;
    };
    let Some(&cond_value) = f.op(cond_yield).operands.first() else {
        return;
    };
    let Some(&body_yield) = f.blocks[body.index()].ops.last() else {
        return;
    };
    let yielded = f.op(body_yield).operands.clone();
    let inits = f.op(w).operands.clone();
    // The ops computing the next carried values, copied to the top of the body.
    let Some(next_ops) = shape.next_ops(f, w) else {
        return;
    };

    // Prologue, before the loop: the condition and the tile of the first iteration.
    let outer = f.op(w).block;
    let at = f.blocks[outer.index()]
        .ops
        .iter()
        .position(|&o| o == w)
        .unwrap_or(0);
    let mut at0 = at;
    let mut map = bind(&cond_args, &inits);
    clone_into(f, cond_pure, &mut map, outer, &mut at0);
    let first_ok = *map.get(&cond_value).unwrap_or(&cond_value);
    let mut map = bind(&body_args, &inits);
    let first = masked_load(f, &slice, load, &mut map, |_, _| first_ok, outer, &mut at0);

    // The body: the next carried values, the next condition, the next tile, first thing.
    let mut at1 = 0;
    let mut next_map: HashMap<ValueId, ValueId> = HashMap::new();
    clone_into(f, &next_ops, &mut next_map, body, &mut at1);
    let next = renamed(&next_map, &yielded);
    let mut map = bind(&cond_args, &next);
    clone_into(f, cond_pure, &mut map, body, &mut at1);
    let next_ok = *map.get(&cond_value).unwrap_or(&cond_value);
    let mut map = bind(&body_args, &next);
    let ahead = masked_load(f, &slice, load, &mut map, |_, _| next_ok, body, &mut at1);

    // The loop carries the tile: a new operand, argument of both regions, result.
    let ty = f.ty(f.op(load).results[0]).clone();
    f.ops[w.index()].operands.push(first);
    f.add_block_arg(shape.cond, ty.clone());
    let carried = f.add_block_arg(body, ty.clone());
    f.add_result(w, ty);
    // The load's uses are all in the body (nothing defined there is seen outside).
    f.replace_all_uses(f.op(load).results[0], carried);
    f.ops[body_yield.index()].operands.push(ahead);
    f.detach(load);
}

/// The renaming of block arguments `args` to `values`, in order.
fn bind(args: &[ValueId], values: &[ValueId]) -> HashMap<ValueId, ValueId> {
    args.iter().copied().zip(values.iter().copied()).collect()
}
