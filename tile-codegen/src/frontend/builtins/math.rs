//! Element-wise functions: the math functions ([`MathFn`], written as functions or methods),
//! `min`, `max`, `umulhi`, `cdiv` and `select`.

use quote::ToTokens;
use syn::Expr;
use tile_core::ir::{BinOp, DType, Elem, MathFn, OpKind, Type};

use super::Builtin;
use crate::frontend::walker::{err, unreachable_ptr, Lowering, Val};

impl Lowering {
    /// `select(mask, a, b)`.
    pub(super) fn select(&mut self, args: &[&Expr], c: &syn::ExprCall) -> syn::Result<Val> {
        let cv = self.expr(args[0])?;
        let a = self.expr(args[1])?;
        let b = self.expr(args[2])?;
        let cty = self
            .ty(cv)
            .filter(|t| t.elem == Elem::Scalar(DType::I1))
            .ok_or_else(|| {
                err(
                    args[0],
                    "the first argument of `select` must be a bool or a mask",
                )
            })?;
        // Shape and element type as for a binary op on (a, b), then the mask joins.
        let probe = self.common(a, b, c)?;
        let shape = self.joint(&cty.shape, &probe.1, c)?;
        let Val::V(cid) = cv else { unreachable_ptr() };
        let cid = self.broadcast(cid, &shape, args[0])?;
        let a = self.materialize(a, probe.0, &shape, args[1])?;
        let b = self.materialize(b, probe.0, &shape, args[2])?;
        Ok(Val::V(self.push(
            OpKind::Select,
            vec![cid, a, b],
            Type::tensor(Elem::Scalar(probe.0), shape),
        )))
    }

    /// `min(a, b)` or `max(a, b)` (`which`), folded for two compile-time integers.
    pub(super) fn min_max(
        &mut self,
        which: Builtin,
        args: &[&Expr],
        c: &syn::ExprCall,
    ) -> syn::Result<Val> {
        let a = self.expr(args[0])?;
        let b = self.expr(args[1])?;
        if let (Val::Int(x), Val::Int(y)) = (a, b) {
            return Ok(Val::Int(if which == Builtin::Min {
                x.min(y)
            } else {
                x.max(y)
            }));
        }
        let (d, shape) = self.common(a, b, c)?;
        if d == DType::I1 {
            return Err(err(
                c,
                format!("`{}` is not defined on bools", which.name()),
            ));
        }
        let x = self.materialize(a, d, &shape, args[0])?;
        let y = self.materialize(b, d, &shape, args[1])?;
        let op = if which == Builtin::Min {
            BinOp::Min
        } else {
            BinOp::Max
        };
        Ok(Val::V(self.push(
            OpKind::Binary(op),
            vec![x, y],
            Type::tensor(Elem::Scalar(d), shape),
        )))
    }

    /// `umulhi(a, b)`.
    pub(super) fn umulhi(&mut self, args: &[&Expr], c: &syn::ExprCall) -> syn::Result<Val> {
        let a = self.expr(args[0])?;
        let b = self.expr(args[1])?;
        let (d, shape) = self.common(a, b, c)?;
        if d != DType::I32 {
            return Err(err(c, format!("`umulhi` takes i32, found `{d}`")));
        }
        let x = self.materialize(a, d, &shape, args[0])?;
        let y = self.materialize(b, d, &shape, args[1])?;
        Ok(Val::V(self.push(
            OpKind::Binary(BinOp::UMulHi),
            vec![x, y],
            Type::tensor(Elem::Scalar(d), shape),
        )))
    }

    /// `cdiv(a, b)`: `(a + b - 1) / b` on integers, as Triton's `tl.cdiv` computes it (so the
    /// ceiling of `a / b` for `a >= 0` and `b > 0`). Two compile-time integers fold with checked
    /// arithmetic; a compile-time divisor of 0 is an error whatever the dividend, and a
    /// compile-time divisor's `b - 1` is folded into one addition.
    /// `multiple_of(x, d)` and `max_contiguous(x, c)`: a `hint` op on the integer tile `x`.
    pub(super) fn hint(&mut self, b: Builtin, args: &[&Expr]) -> syn::Result<Val> {
        let name = b.name();
        let x = self.expr(args[0])?;
        let (id, t) = match (x, self.ty(x)) {
            (Val::V(id), Some(t))
                if t.is_tensor() && matches!(t.elem, Elem::Scalar(DType::I32 | DType::I64)) =>
            {
                (id, t)
            }
            (_, t) => {
                let found = t.map_or("a literal".to_string(), |t| format!("`{t}`"));
                return Err(err(
                    args[0],
                    format!("`{name}` takes an integer tile (`i32` or `i64`), found {found}"),
                ));
            }
        };
        let v = self.expr(args[1])?;
        let n = self.const_arg(v, args[1], &format!("the value of `{name}`"))?;
        let n = u32::try_from(n)
            .ok()
            .filter(|n| n.is_power_of_two())
            .ok_or_else(|| {
                err(
                    args[1],
                    format!("the value of `{name}` is a power of two from 1 to 2^31, found {n}"),
                )
            })?;
        let kind = match b {
            Builtin::MultipleOf => OpKind::Hint {
                multiple_of: n,
                contiguous: 1,
            },
            _ => OpKind::Hint {
                multiple_of: 1,
                contiguous: n,
            },
        };
        Ok(Val::V(self.push(kind, vec![id], t)))
    }

    pub(super) fn cdiv(&mut self, args: &[&Expr], c: &syn::ExprCall) -> syn::Result<Val> {
        let a = self.expr(args[0])?;
        let b = self.expr(args[1])?;
        if let Val::Int(0) = b {
            return Err(err(
                args[1],
                "`cdiv` divides by zero: this divisor is the compile-time integer 0",
            ));
        }
        if let (Val::Int(x), Val::Int(y)) = (a, b) {
            return x
                .checked_add(y)
                .and_then(|s| s.checked_sub(1))
                .and_then(|s| s.checked_div(y))
                .map(Val::Int)
                .ok_or_else(|| {
                    err(
                        c,
                        format!("`cdiv({x}, {y})` overflows i64 (it computes `(a + b - 1) / b`)"),
                    )
                });
        }
        for (v, at) in [(a, args[0]), (b, args[1])] {
            let found = match (v, self.ty(v)) {
                (Val::Float(_), _) => Some("a float literal".to_string()),
                (_, Some(t)) if !matches!(t.elem, Elem::Scalar(DType::I32 | DType::I64)) => {
                    Some(format!("`{}`", t.elem))
                }
                _ => None,
            };
            if let Some(found) = found {
                return Err(err(
                    at,
                    format!(
                        "`cdiv` takes integers (`i32` or `i64` scalars or tiles), found {found}; for floats write `ceil(a / b)`"
                    ),
                ));
            }
        }
        let (d, shape) = self.common(a, b, c)?;
        let ty = Type::tensor(Elem::Scalar(d), shape.clone());
        let x = self.materialize(a, d, &shape, args[0])?;
        let y = self.materialize(b, d, &shape, args[1])?;
        let sum = match b {
            Val::Int(k) => {
                let bias = k.checked_sub(1).ok_or_else(|| {
                    err(args[1], "this constant overflows i64 in `cdiv`'s `b - 1`")
                })?;
                let bias = self.materialize(Val::Int(bias), d, &shape, args[1])?;
                self.push(OpKind::Binary(BinOp::Add), vec![x, bias], ty.clone())
            }
            _ => {
                let one = self.materialize(Val::Int(1), d, &shape, c)?;
                let s = self.push(OpKind::Binary(BinOp::Add), vec![x, y], ty.clone());
                self.push(OpKind::Binary(BinOp::Sub), vec![s, one], ty.clone())
            }
        };
        Ok(Val::V(self.push(
            OpKind::Binary(BinOp::Div),
            vec![sum, y],
            ty,
        )))
    }

    /// A math function written as a function, `exp(x)`, its count of arguments checked.
    pub(super) fn math_call(
        &mut self,
        m: MathFn,
        args: &[&Expr],
        c: &syn::ExprCall,
    ) -> syn::Result<Val> {
        let vals = args
            .iter()
            .map(|a| self.expr(a))
            .collect::<syn::Result<Vec<_>>>()?;
        self.math(m, &vals, args, c)
    }

    /// A math function written as a method: `x.exp()`, `a.pow(b)`, `a.fma(b, c)`.
    pub(super) fn math_method(
        &mut self,
        m: MathFn,
        mc: &syn::ExprMethodCall,
        e: &Expr,
    ) -> syn::Result<Val> {
        let name = m.name();
        if mc.args.len() + 1 != m.arity() {
            return Err(err(
                e,
                format!(
                    "`.{name}()` takes {} argument(s), found {}",
                    m.arity() - 1,
                    mc.args.len()
                ),
            ));
        }
        let mut exprs: Vec<&Expr> = vec![&mc.receiver];
        exprs.extend(mc.args.iter());
        let vals = exprs
            .iter()
            .map(|a| self.expr(a))
            .collect::<syn::Result<Vec<_>>>()?;
        self.math(m, &vals, &exprs, e)
    }

    /// `exp(x)`, `pow(a, b)`, `fma(a, b, c)`, …: operands share one shape and `f32` (integers
    /// for `abs`); literals adapt.
    fn math(
        &mut self,
        m: MathFn,
        vals: &[Val],
        at: &[&Expr],
        call: &dyn ToTokens,
    ) -> syn::Result<Val> {
        let mut d = None;
        let mut shape: Vec<u32> = Vec::new();
        for (v, e) in vals.iter().zip(at) {
            if let Some(t) = self.ty(*v) {
                let Some(vd) = t.dtype() else {
                    return Err(err(
                        *e,
                        format!("`{}` takes numbers, not pointers", m.name()),
                    ));
                };
                if d.is_some_and(|d| d != vd) {
                    return Err(err(
                        call,
                        "mismatched element types; there are no implicit conversions",
                    ));
                }
                d = Some(vd);
                shape = self.joint(&shape, &t.shape, call)?;
            }
        }
        let d = d.unwrap_or(DType::F32);
        let f64_ok = matches!(
            m,
            MathFn::Sqrt | MathFn::Abs | MathFn::Floor | MathFn::Ceil | MathFn::Fma
        );
        let ok = d == DType::F32
            || (d == DType::F64 && f64_ok)
            || (m == MathFn::Abs && matches!(d, DType::I32 | DType::I64));
        if !ok {
            let hint = if d.is_storage_float() || d == DType::F64 {
                "; convert with `as f32` first"
            } else {
                ""
            };
            return Err(err(
                call,
                format!(
                    "`{}` takes f32{}{}, found `{d}`{hint}",
                    m.name(),
                    if f64_ok { ", f64" } else { "" },
                    if m == MathFn::Abs { ", i32 or i64" } else { "" }
                ),
            ));
        }
        let ops = vals
            .iter()
            .zip(at)
            .map(|(v, e)| self.materialize(*v, d, &shape, *e))
            .collect::<syn::Result<Vec<_>>>()?;
        Ok(Val::V(self.push(
            OpKind::Math(m),
            ops,
            Type::tensor(Elem::Scalar(d), shape),
        )))
    }
}
