//! `load` and `store` (with their `evict` cache hint, and `mask` and `other` by position or by
//! name), and the pointer and mask arguments they share with the atomics.

use quote::ToTokens;
use syn::Expr;
use tile_core::ir::{ConstValue, DType, Elem, Evict, OpKind, Type, ValueId};

use super::args::{bind_args, check_count, named_word};
use crate::frontend::typing::joint_shape;
use crate::frontend::walker::{err, unreachable_ptr, Lowering, Val};

impl Lowering {
    /// `load(ptrs[, mask[, other]][, evict = …])`; `mask` and `other` may be named
    /// (`load(p, mask = m, other = 0.0)`).
    pub(super) fn load(&mut self, args: &[&Expr], c: &syn::ExprCall) -> syn::Result<Val> {
        let mut evict = Evict::Normal;
        let (count, bound) = bind_args(
            "load",
            args,
            &["ptrs", "mask", "other"],
            1,
            &["evict"],
            |_, n| {
                evict = named_word(n, &Evict::ALL, Evict::name)?;
                Ok(())
            },
        )?;
        check_count(
            c,
            "load",
            count,
            1..=3,
            "1 to 3 arguments (pointers, mask, other; `mask` and `other` also by name) and optionally `evict = …`",
        )?;
        let (ptrs, mask, other) = (
            bound[0].unwrap_or_else(|| unreachable_arg()),
            bound[1],
            bound[2],
        );
        let (pid, pty, d) = self.pointer_arg(ptrs, "load")?;
        let mut operands = vec![pid];
        match (mask, other) {
            (Some(mask), _) => {
                let m = self.mask(mask, &pty)?;
                let value = match other {
                    Some(o) => self.expr(o)?,
                    // Masked-off bools read `false`.
                    None if d == DType::I1 => Val::V(self.push(
                        OpKind::Constant(ConstValue::Int(0)),
                        vec![],
                        Type::scalar(DType::I1),
                    )),
                    None => Val::Int(0),
                };
                let other_at: &dyn ToTokens = match other {
                    Some(o) => o,
                    None => c,
                };
                if let Some(t) = self.ty(value) {
                    if t.elem != Elem::Scalar(d) {
                        return Err(err(
                            other_at,
                            format!(
                                "`other` is `{}`, the loaded elements are `{d}`; write {}",
                                t.elem,
                                conversion(other_at, d)
                            ),
                        ));
                    }
                }
                let o = self.materialize(value, d, &pty.shape, other_at)?;
                operands.push(m);
                operands.push(o);
            }
            (None, Some(o)) => {
                return Err(err(
                    o,
                    "`other` needs a mask: `load(ptrs, mask, other)` or `load(ptrs, mask = m, other = v)`",
                ))
            }
            (None, None) => {}
        }
        Ok(Val::V(self.push(
            OpKind::Load { vec: 1, evict },
            operands,
            pty.with_elem(Elem::Scalar(d)),
        )))
    }

    /// `store(ptrs, values[, mask][, evict = …])`; `mask` may be named (`mask = m`).
    pub(super) fn store(&mut self, args: &[&Expr], c: &syn::ExprCall) -> syn::Result<Val> {
        let mut evict = Evict::Normal;
        let (count, bound) = bind_args(
            "store",
            args,
            &["ptrs", "values", "mask"],
            2,
            &["evict"],
            |_, n| {
                evict = named_word(n, &Evict::ALL, Evict::name)?;
                Ok(())
            },
        )?;
        check_count(
            c,
            "store",
            count,
            2..=3,
            "2 or 3 arguments (pointers, values, mask; `mask` also by name) and optionally `evict = …`",
        )?;
        let (ptrs, values, mask) = match bound[..] {
            [Some(p), Some(v), m] => (p, v, m),
            _ => unreachable_arg(),
        };
        let (pid, pty, d) = self.pointer_arg(ptrs, "store")?;
        let v = self.expr(values)?;
        if let Some(t) = self.ty(v) {
            if t.elem != Elem::Scalar(d) {
                return Err(err(
                    values,
                    format!(
                        "cannot store `{}` values through `Ptr<{d}>`; write {} (tile converts explicitly, where Triton converts on store)",
                        t.elem,
                        conversion(values, d)
                    ),
                ));
            }
            if joint_shape(&t.shape, &pty.shape).as_deref() != Some(&pty.shape[..]) {
                return Err(err(
                    values,
                    format!(
                        "the values have shape {:?}, the pointers {:?}",
                        t.shape, pty.shape
                    ),
                ));
            }
        }
        let val = self.materialize(v, d, &pty.shape, values)?;
        let mut operands = vec![pid, val];
        if let Some(m) = mask {
            operands.push(self.mask(m, &pty)?);
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

/// How a message shows the conversion of the value written `e` to `d`: `` `acc as f16` `` for
/// a name, `` `(v * 2.0) as f16` `` for a short expression without brackets, `` `(…) as f16` ``
/// for anything else (calls and brackets would print with stray spaces).
pub(super) fn conversion(e: &dyn ToTokens, d: DType) -> String {
    use proc_macro2::TokenTree;
    let target = if d == DType::I1 { "bool" } else { d.name() };
    let tokens = e.to_token_stream();
    let flat: Vec<TokenTree> = tokens.clone().into_iter().collect();
    match &flat[..] {
        [TokenTree::Ident(name)] => format!("`{name} as {target}`"),
        _ if flat.len() <= 7 && !flat.iter().any(|t| matches!(t, TokenTree::Group(_))) => {
            format!("`({tokens}) as {target}`")
        }
        _ => format!("`(…) as {target}`"),
    }
}

/// Where the count of positional arguments was checked just before.
#[cold]
fn unreachable_arg() -> ! {
    unreachable!("the count of arguments was checked just before")
}
