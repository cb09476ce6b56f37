//! `induction`: values a loop carries and advances by a loop-invariant amount each iteration —
//! Triton's `a_ptrs += BLOCK_K * stride_ak`, `offs_k += BLOCK_K`, `k_rem -= BLOCK_K` — are
//! rewritten as functions of the induction variable, so that the loop's loads depend on `iv`
//! and on values from outside the loop only, which is what `pipeline-dot` and `pipeline-loads`
//! pipeline.
//!
//! A carried value `c` (initial value `x`) qualifies when what the body yields for it is `c`
//! advanced by a chain of loop-invariant steps: `addptr c, d`, `add c, d` / `add d, c`,
//! `sub c, d` (integers only: carried floats accumulate rounding and stay as they are), each
//! link used once. Loop-invariant means defined outside the loop, or computed in the body by pure
//! ops from such values (those ops move before the loop; divisions and remainders, which may
//! trap on a zero divisor the loop never reaches, never do). With `n = (iv − lb) / step` the
//! iteration's number,
//!
//! ```text
//! c  ↦  x + n·d₁ ± n·d₂ …   (addptr x, n·d for pointers)
//! ```
//!
//! at the head of the body, in place of `c`; a step that is a splat of a scalar is multiplied as
//! that scalar (`splat(n·s)`), in 64 bits for a pointer's offset, so that the address is exactly
//! the one the carried pointer would hold. The loop's result for `c`, where it is used after the
//! loop, becomes the same expression at the trip count. `c` is then carried no longer (the
//! chain is left to `dce`).

use std::collections::{HashMap, HashSet};

use tile_core::ir::{
    BinOp, BlockId, CmpPred, ConstValue, DType, Effect, Function, OpId, OpKind, Type, ValueDef,
    ValueId,
};

use super::edit::{use_counts, Builder};

/// Runs the pass.
pub fn run(f: &mut Function) {
    for l in super::pipeline_loads::for_loops(f) {
        rewrite_loop(f, l);
    }
}

/// One link of a carried value's advance: `sign · d` (`addptr` links are all `+`).
#[derive(Clone, Copy)]
struct Link {
    step: ValueId,
    negate: bool,
}

/// What a carried value becomes.
struct Advance {
    /// Its index among the loop's carried values.
    index: usize,
    links: Vec<Link>,
    pointer: bool,
}

/// The integer constant `v` holds, if it is one.
fn const_int(f: &Function, v: ValueId) -> Option<i64> {
    match f.op(f.def_op(v)?).kind {
        OpKind::Constant(ConstValue::Int(c)) => Some(c),
        _ => None,
    }
}

/// Whether `v` has the same value in every iteration of the loop whose body is `body`: defined
/// outside it, or by a pure, non-trapping body op (no regions) of such values.
fn invariant(
    f: &Function,
    v: ValueId,
    body: BlockId,
    in_body: &HashSet<OpId>,
    memo: &mut HashMap<ValueId, bool>,
) -> bool {
    if let Some(&m) = memo.get(&v) {
        return m;
    }
    let r = match f.values[v.index()].def {
        ValueDef::BlockArg(b, _) => b != body,
        ValueDef::OpResult(op, _) if !in_body.contains(&op) => true,
        ValueDef::OpResult(op, _) => {
            let d = f.op(op);
            let traps = matches!(d.kind, OpKind::Binary(BinOp::Div | BinOp::Rem))
                && const_int(f, d.operands[1]).is_none_or(|c| c == 0);
            d.kind.effect() == Effect::Pure
                && d.regions.is_empty()
                && !traps
                && d.operands
                    .clone()
                    .into_iter()
                    .all(|o| invariant(f, o, body, in_body, memo))
        }
    };
    memo.insert(v, r);
    r
}

/// The body ops that compute the invariant `v`, into `out`.
fn computation(f: &Function, v: ValueId, in_body: &HashSet<OpId>, out: &mut HashSet<OpId>) {
    if let Some(op) = f.def_op(v).filter(|o| in_body.contains(o)) {
        if out.insert(op) {
            for &o in &f.op(op).operands {
                computation(f, o, in_body, out);
            }
        }
    }
}

/// The chain of invariant links from `carried` to `yielded`, if `yielded` is `carried` advanced
/// by one.
fn chain(
    f: &Function,
    carried: ValueId,
    yielded: ValueId,
    body: BlockId,
    in_body: &HashSet<OpId>,
    uses: &HashMap<ValueId, usize>,
    memo: &mut HashMap<ValueId, bool>,
) -> Option<Vec<Link>> {
    let mut links = Vec::new();
    let mut v = yielded;
    while v != carried {
        // Every intermediate link is used by the next one only (the yield, for the last).
        if uses.get(&v).copied() != Some(1) {
            return None;
        }
        let op = f.def_op(v).filter(|o| in_body.contains(o))?;
        let d = f.op(op);
        let int = f.ty(v).dtype().is_some_and(|t| t.is_int());
        let (prev, step, negate) = match d.kind {
            OpKind::AddPtr => (d.operands[0], d.operands[1], false),
            OpKind::Binary(BinOp::Add) if int => {
                if invariant(f, d.operands[1], body, in_body, memo) {
                    (d.operands[0], d.operands[1], false)
                } else {
                    (d.operands[1], d.operands[0], false)
                }
            }
            OpKind::Binary(BinOp::Sub) if int => (d.operands[0], d.operands[1], true),
            _ => return None,
        };
        if !invariant(f, step, body, in_body, memo) {
            return None;
        }
        links.push(Link { step, negate });
        v = prev;
    }
    (!links.is_empty()).then_some(links)
}

impl Builder {
    fn bin(&mut self, f: &mut Function, b: BinOp, x: ValueId, y: ValueId) -> ValueId {
        let ty = f.ty(x).clone();
        self.val(f, OpKind::Binary(b), vec![x, y], ty)
    }

    /// `x` as a scalar of type `d`.
    fn widen(&mut self, f: &mut Function, x: ValueId, d: DType) -> ValueId {
        if f.ty(x).dtype() == Some(d) {
            return x;
        }
        self.val(f, OpKind::Cast, vec![x], Type::scalar(d))
    }

    /// `n · step`, of `step`'s type (a splat step multiplied as its scalar, in 64 bits where
    /// `wide`).
    fn times(&mut self, f: &mut Function, n: ValueId, step: ValueId, wide: bool) -> ValueId {
        let ty = f.ty(step).clone();
        let splat_of = f
            .def_op(step)
            .filter(|&o| matches!(f.op(o).kind, OpKind::Splat))
            .map(|o| f.op(o).operands[0]);
        let scalar = if ty.is_tensor() { splat_of } else { Some(step) };
        match scalar {
            Some(s) => {
                let d = if wide {
                    DType::I64
                } else {
                    f.ty(s).dtype().unwrap_or(DType::I32)
                };
                let s = self.widen(f, s, d);
                let n = self.widen(f, n, d);
                let m = self.bin(f, BinOp::Mul, n, s);
                if ty.is_tensor() {
                    self.val(f, OpKind::Splat, vec![m], ty.with_elem(f.ty(m).elem))
                } else {
                    m
                }
            }
            None => {
                let d = ty.dtype().unwrap_or(DType::I32);
                let n = self.widen(f, n, d);
                let n = self.val(f, OpKind::Splat, vec![n], ty);
                self.bin(f, BinOp::Mul, n, step)
            }
        }
    }

    /// The carried value after `n` iterations from `x`.
    fn advanced(&mut self, f: &mut Function, x: ValueId, n: ValueId, a: &Advance) -> ValueId {
        let mut v = x;
        for link in &a.links {
            let by = self.times(f, n, link.step, a.pointer);
            v = if a.pointer {
                let ty = f.ty(v).clone();
                self.val(f, OpKind::AddPtr, vec![v, by], ty)
            } else if link.negate {
                self.bin(f, BinOp::Sub, v, by)
            } else {
                self.bin(f, BinOp::Add, v, by)
            };
        }
        v
    }
}

/// Rewrites the qualifying carried values of the loop `l`.
fn rewrite_loop(f: &mut Function, l: OpId) {
    let Some(&region) = f.op(l).regions.first() else {
        return;
    };
    let body = f.regions[region.index()].blocks[0];
    let Some(&y) = f.blocks[body.index()].ops.last() else {
        return;
    };
    if !matches!(f.op(y).kind, OpKind::Yield) {
        return;
    }
    let in_body: HashSet<OpId> = f.blocks[body.index()].ops.iter().copied().collect();
    let uses = use_counts(f);
    let mut memo = HashMap::new();
    let args = f.blocks[body.index()].args.clone();
    let yielded = f.op(y).operands.clone();
    let mut advances = Vec::new();
    for (j, (&c, &next)) in args[1..].iter().zip(&yielded).enumerate() {
        let pointer = f.ty(c).elem.pointee().is_some();
        if !pointer && !f.ty(c).dtype().is_some_and(|t| t.is_int()) {
            continue;
        }
        if let Some(links) = chain(f, c, next, body, &in_body, &uses, &mut memo) {
            // Every link's step of one pointer has one offset type.
            let types: HashSet<Option<DType>> =
                links.iter().map(|k| f.ty(k.step).dtype()).collect();
            if pointer && types.len() != 1 {
                continue;
            }
            advances.push(Advance {
                index: j,
                links,
                pointer,
            });
        }
    }
    if advances.is_empty() {
        return;
    }

    // The steps' computations move before the loop, in body order.
    let mut hoist = HashSet::new();
    for a in &advances {
        for k in &a.links {
            computation(f, k.step, &in_body, &mut hoist);
        }
    }
    let outer = f.op(l).block;
    let moved: Vec<OpId> = f.blocks[body.index()]
        .ops
        .iter()
        .copied()
        .filter(|o| hoist.contains(o))
        .collect();
    f.blocks[body.index()].ops.retain(|o| !hoist.contains(o));
    let Some(mut pos) = f.blocks[outer.index()].ops.iter().position(|&o| o == l) else {
        return;
    };
    for op in moved {
        f.blocks[outer.index()].ops.insert(pos, op);
        f.ops[op.index()].block = outer;
        pos += 1;
    }

    // The iteration's number, at the head of the body.
    let (lb, ub, step) = {
        let d = f.op(l);
        (d.operands[0], d.operands[1], d.operands[2])
    };
    let iv = args[0];
    let mut head = Builder { block: body, at: 0 };
    let n = iteration(f, &mut head, iv, lb, step);
    let inits: Vec<ValueId> = f.op(l).operands[3..].to_vec();
    for a in &advances {
        let now = head.advanced(f, inits[a.index], n, a);
        f.replace_all_uses(args[1 + a.index], now);
    }

    // After the loop, results still used: the same at the trip count.
    let uses = use_counts(f);
    let results = f.op(l).results.clone();
    if advances
        .iter()
        .any(|a| uses.get(&results[a.index]).is_some_and(|&u| u > 0))
    {
        let Some(at) = f.blocks[outer.index()].ops.iter().position(|&o| o == l) else {
            return;
        };
        let mut post = Builder {
            block: outer,
            at: at + 1,
        };
        let trips = trip_count(f, &mut post, lb, ub, step);
        for a in &advances {
            if uses.get(&results[a.index]).is_some_and(|&u| u > 0) {
                let end = post.advanced(f, inits[a.index], trips, a);
                f.replace_all_uses(results[a.index], end);
            }
        }
    }

    // The rewritten values are carried no longer (last first, so indices stay valid).
    let mut gone: Vec<usize> = advances.iter().map(|a| a.index).collect();
    gone.sort_unstable();
    for &j in gone.iter().rev() {
        f.remove_carried(l, j);
    }
}

/// `(iv − lb) / step`, simplified where `lb` or `step` is a known constant.
fn iteration(
    f: &mut Function,
    at: &mut Builder,
    iv: ValueId,
    lb: ValueId,
    step: ValueId,
) -> ValueId {
    let from = if const_int(f, lb) == Some(0) {
        iv
    } else {
        at.bin(f, BinOp::Sub, iv, lb)
    };
    if const_int(f, step) == Some(1) {
        from
    } else {
        at.bin(f, BinOp::Div, from, step)
    }
}

/// The loop's trip count: `(ub − lb + step − 1) / step` when `lb < ub`, else 0 (in 64 bits, so
/// that `ub − lb` cannot wrap), as an `i32`.
fn trip_count(
    f: &mut Function,
    at: &mut Builder,
    lb: ValueId,
    ub: ValueId,
    step: ValueId,
) -> ValueId {
    let i64t = DType::I64;
    let (lb64, ub64, step64) = (
        at.widen(f, lb, i64t),
        at.widen(f, ub, i64t),
        at.widen(f, step, i64t),
    );
    let span = at.bin(f, BinOp::Sub, ub64, lb64);
    let one = at.int(f, 1, i64t);
    let round = at.bin(f, BinOp::Sub, step64, one);
    let padded = at.bin(f, BinOp::Add, span, round);
    let trips = at.bin(f, BinOp::Div, padded, step64);
    let trips = at.val(f, OpKind::Cast, vec![trips], Type::scalar(DType::I32));
    let runs = at.val(
        f,
        OpKind::Cmp(CmpPred::Lt),
        vec![lb, ub],
        Type::scalar(DType::I1),
    );
    let zero = at.int(f, 0, DType::I32);
    at.val(
        f,
        OpKind::Select,
        vec![runs, trips, zero],
        Type::scalar(DType::I32),
    )
}
