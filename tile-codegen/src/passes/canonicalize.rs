//! `canonicalize`: local simplifications that keep the meaning exactly.
//!
//! - binary ops and comparisons of two scalar constants fold to a constant (integer arithmetic
//!   wraps as the ops do; float folding in f32 arithmetic) — by the interpreter's own
//!   `fold_binary`/`fold_cmp`, so folding and execution cannot disagree;
//! - `x + 0`, `x - 0`, `x * 1`, `x / 1` (integers; for floats only `x * 1.0` and `x / 1.0`, since
//!   `-0.0 + 0.0` is not `-0.0`) become `x`, also when the constant is splatted;
//! - `acc + dot(a, b)` (either order; `acc += dot(a, b)` in a kernel), where the `dot` starts
//!   from zero and the sum is its only use, becomes `dot(a, b, acc)`: the accumulator goes into
//!   the tensor-core (or FMA) chain instead of a second tile of registers and an addition per
//!   element. Triton folds the same; the sum is then rounded once per product step instead of
//!   once at the end, the difference every `dot` with an accumulator already has;
//! - `splat` of a constant stays (the LLVM lowering folds it); unused results are left to `dce`.

use tile_core::interp;
use tile_core::ir::{BinOp, ConstValue, Function, OpId, OpKind, ValueId};

use super::edit::use_counts;

fn is(c: Option<ConstValue>, int: i64, float: f64) -> bool {
    match c {
        Some(ConstValue::Int(i)) => i == int,
        Some(ConstValue::Float(x)) => x == float && x.is_sign_positive(),
        None => false,
    }
}

/// The `dot` that defines `v` from a zero accumulator, used only once (by the sum at hand), if
/// there is one.
fn zero_dot(
    f: &Function,
    v: ValueId,
    uses: &std::collections::HashMap<ValueId, usize>,
) -> Option<OpId> {
    let d = f.def_op(v)?;
    let op = f.op(d);
    let zero = is(f.constant_of(op.operands.get(2).copied()?), 0, 0.0);
    (matches!(op.kind, OpKind::Dot { .. }) && zero && uses.get(&v).copied() == Some(1)).then_some(d)
}

/// Runs the simplifications once over the kernel.
pub fn run(f: &mut Function) {
    let uses = use_counts(f);
    for op in f.walk() {
        let d = f.op(op).clone();
        let result = match d.results.first() {
            Some(&r) => r,
            None => continue,
        };
        let ty = f.ty(result).clone();
        match d.kind {
            OpKind::Binary(BinOp::Add)
                if ty.is_tensor()
                    && d.operands.iter().any(|&v| zero_dot(f, v, &uses).is_some()) =>
            {
                let (x, y) = (d.operands[0], d.operands[1]);
                let (dot, acc) = match zero_dot(f, y, &uses) {
                    Some(dot) => (dot, x),
                    None => (zero_dot(f, x, &uses).unwrap_or(op), y),
                };
                if dot == op || f.ty(acc) != &ty || f.op(dot).block != d.block {
                    continue;
                }
                // The `dot` moves to the sum's place (its accumulator may be defined after it)
                // and takes the accumulator.
                f.ops[dot.index()].operands[2] = acc;
                let block = d.block;
                f.blocks[block.index()].ops.retain(|&o| o != dot);
                if let Some(at) = f.blocks[block.index()].ops.iter().position(|&o| o == op) {
                    f.blocks[block.index()].ops.insert(at, dot);
                    f.ops[dot.index()].block = block;
                }
                let dot_result = f.op(dot).results[0];
                f.replace_all_uses(result, dot_result);
                f.detach(op);
            }
            OpKind::Binary(b) => {
                let (x, y) = (d.operands[0], d.operands[1]);
                let (cx, cy) = (f.constant_of(x), f.constant_of(y));
                if !ty.is_tensor() {
                    if let (Some(a), Some(c), Some(dt)) = (cx, cy, ty.dtype()) {
                        if let Some(v) = interp::fold_binary(b, a, c, dt) {
                            f.ops[op.index()].kind = OpKind::Constant(v);
                            f.ops[op.index()].operands.clear();
                            continue;
                        }
                    }
                }
                let is_int = ty.dtype().is_some_and(|t| t.is_int());
                let identity = match b {
                    BinOp::Add => {
                        if is_int && is(cy, 0, f64::NAN) {
                            Some(x)
                        } else if is_int && is(cx, 0, f64::NAN) {
                            Some(y)
                        } else {
                            None
                        }
                    }
                    BinOp::Sub if is_int && is(cy, 0, f64::NAN) => Some(x),
                    BinOp::Mul if is(cy, 1, 1.0) => Some(x),
                    BinOp::Mul if is(cx, 1, 1.0) => Some(y),
                    BinOp::Div if is(cy, 1, 1.0) => Some(x),
                    _ => None,
                };
                if let Some(keep) = identity {
                    f.replace_all_uses(result, keep);
                    f.detach(op);
                }
            }
            OpKind::Cmp(p) if !ty.is_tensor() => {
                let operand_type = f.ty(d.operands[0]).dtype();
                let (a, c) = (f.constant_of(d.operands[0]), f.constant_of(d.operands[1]));
                if let (Some(a), Some(c), Some(dt)) = (a, c, operand_type) {
                    let v = interp::fold_cmp(p, a, c, dt);
                    f.ops[op.index()].kind = OpKind::Constant(ConstValue::Int(v as i64));
                    f.ops[op.index()].operands.clear();
                }
            }
            _ => {}
        }
    }
}
