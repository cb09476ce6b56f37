//! `load` and `store` (with their `evict` cache hint), and the pointer and mask arguments they
//! share with the atomics.

use quote::ToTokens;
use syn::Expr;
use tile_core::ir::{ConstValue, DType, Elem, Evict, OpKind, Type, ValueId};

use super::args::{each_named, named_word, split_named};
use crate::frontend::typing::joint_shape;
use crate::frontend::walker::{err, unreachable_ptr, Lowering, Val};

impl Lowering {
    /// `load(ptrs[, mask[, other]][, evict = …])`.
    pub(super) fn load(&mut self, args: &[&Expr], c: &syn::ExprCall) -> syn::Result<Val> {
        let what = "1 to 3 arguments (pointers, mask, other)";
        let (args, evict) = evict_arg(args, "load", 1..=3, what, c)?;
        let (pid, pty, d) = self.pointer_arg(args[0], "load")?;
        let mut operands = vec![pid];
        if args.len() >= 2 {
            let m = self.mask(args[1], &pty)?;
            let other = if args.len() == 3 {
                self.expr(args[2])?
            } else if d == DType::I1 {
                // Masked-off bools read `false`.
                Val::V(self.push(
                    OpKind::Constant(ConstValue::Int(0)),
                    vec![],
                    Type::scalar(DType::I1),
                ))
            } else {
                Val::Int(0)
            };
            let other_at: &dyn ToTokens = if args.len() == 3 { args[2] } else { c };
            if let Some(t) = self.ty(other) {
                if t.elem != Elem::Scalar(d) {
                    return Err(err(
                        other_at,
                        format!("`other` is `{}`, the loaded elements are `{d}`", t.elem),
                    ));
                }
            }
            let o = self.materialize(other, d, &pty.shape, other_at)?;
            operands.push(m);
            operands.push(o);
        } else if args.len() == 3 {
            return Err(err(c, "`other` needs a mask"));
        }
        Ok(Val::V(self.push(
            OpKind::Load { vec: 1, evict },
            operands,
            pty.with_elem(Elem::Scalar(d)),
        )))
    }

    /// `store(ptrs, values[, mask][, evict = …])`.
    pub(super) fn store(&mut self, args: &[&Expr], c: &syn::ExprCall) -> syn::Result<Val> {
        let what = "2 or 3 arguments (pointers, values, mask)";
        let (args, evict) = evict_arg(args, "store", 2..=3, what, c)?;
        let (pid, pty, d) = self.pointer_arg(args[0], "store")?;
        let v = self.expr(args[1])?;
        if let Some(t) = self.ty(v) {
            if t.elem != Elem::Scalar(d) {
                return Err(err(
                    args[1],
                    format!("cannot store `{}` values through `Ptr<{d}>`", t.elem),
                ));
            }
            if joint_shape(&t.shape, &pty.shape).as_deref() != Some(&pty.shape[..]) {
                return Err(err(
                    args[1],
                    format!(
                        "the values have shape {:?}, the pointers {:?}",
                        t.shape, pty.shape
                    ),
                ));
            }
        }
        let val = self.materialize(v, d, &pty.shape, args[1])?;
        let mut operands = vec![pid, val];
        if args.len() == 3 {
            operands.push(self.mask(args[2], &pty)?);
        }
        self.f.push_op(
            self.block,
            OpKind::Store { vec: 1, evict },
            operands,
            vec![],
        );
        Ok(Val::Int(0))
    }

    /// Lowers the pointer argument of `load`, `store` or an atomic: its value, type and pointee type.
    pub(super) fn pointer_arg(
        &mut self,
        e: &Expr,
        func: &str,
    ) -> syn::Result<(ValueId, Type, DType)> {
        let p = self.expr(e)?;
        match (p, self.ty(p)) {
            (Val::V(id), Some(t)) => match t.elem.pointee() {
                Some(d) => Ok((id, t, d)),
                None => Err(err(
                    e,
                    format!(
                        "the first argument of `{func}` must be a pointer or a tile of pointers"
                    ),
                )),
            },
            _ => Err(err(
                e,
                format!("the first argument of `{func}` must be a pointer or a tile of pointers"),
            )),
        }
    }

    /// Lowers a mask argument for pointers of type `pty`: a bool or a mask of the same shape.
    pub(super) fn mask(&mut self, m: &Expr, pty: &Type) -> syn::Result<ValueId> {
        let v = self.expr(m)?;
        let t = self
            .ty(v)
            .filter(|t| t.elem == Elem::Scalar(DType::I1))
            .ok_or_else(|| {
                err(
                    m,
                    "a mask must be a bool or a tile of bools (a comparison such as `offs < n`)",
                )
            })?;
        if joint_shape(&t.shape, &pty.shape).as_deref() != Some(&pty.shape[..]) {
            return Err(err(
                m,
                format!(
                    "the mask has shape {:?} but the pointer tile has shape {:?}",
                    t.shape, pty.shape
                ),
            ));
        }
        let Val::V(id) = v else { unreachable_ptr() };
        self.broadcast(id, &pty.shape, m)
    }
}

/// `load`'s or `store`'s positional arguments (`count` of them, which `what` describes) and its
/// one named argument, `evict = normal | first | last` (normal when absent).
fn evict_arg<'a>(
    args: &[&'a Expr],
    name: &str,
    count: std::ops::RangeInclusive<usize>,
    what: &str,
    c: &syn::ExprCall,
) -> syn::Result<(Vec<&'a Expr>, Evict)> {
    let (pos, named) = split_named(args)?;
    let mut evict = Evict::Normal;
    let unknown = format!("`{name}`'s one named argument is `evict` (`evict = first`)");
    each_named(&named, &["evict"], &unknown, |_, n| {
        evict = named_word(n, &Evict::ALL, Evict::name)?;
        Ok(())
    })?;
    if !count.contains(&pos.len()) {
        return Err(err(
            c,
            format!(
                "`{name}` takes {what} and optionally `evict = …`, found {}",
                pos.len()
            ),
        ));
    }
    Ok((pos, evict))
}
