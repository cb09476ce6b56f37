//! `gather`: elements of a tile picked along an axis by an `i32` tile of indices (Triton's
//! `tl.gather`), written `gather(src, index, axis)` or `src.gather(index, axis)`.

use syn::Expr;
use tile_core::ir::{DType, Elem, OpKind, Type};

use crate::frontend::walker::{err, unreachable_ptr, Lowering, Val};

impl Lowering {
    /// `x.gather(index, axis)` as written: checks the count, then [`Lowering::gather`].
    pub(super) fn gather_method(&mut self, mc: &syn::ExprMethodCall, e: &Expr) -> syn::Result<Val> {
        if mc.args.len() != 2 {
            return Err(err(
                e,
                "`.gather(index, axis)` takes 2 arguments (the index tile and the axis)",
            ));
        }
        self.gather(&mc.receiver, &mc.args[0], &mc.args[1])
    }

    /// `gather(src, index, axis)`: the tile of `index`'s shape whose element at `i` is `src` at
    /// `i` with its coordinate along `axis` replaced by `index[i]` modulo the extent of `axis`
    /// in `src` (an index outside `0..n` wraps: `-1` reads the last element). `index` is an
    /// `i32` tile of `src`'s rank with `src`'s extents on the other dimension; `axis` is a
    /// compile-time integer.
    pub(super) fn gather(
        &mut self,
        src_expr: &Expr,
        index_expr: &Expr,
        axis_expr: &Expr,
    ) -> syn::Result<Val> {
        let sv = self.expr(src_expr)?;
        let Some(st) = self.ty(sv).filter(|t| t.is_tensor()) else {
            return Err(err(
                src_expr,
                "`gather` picks from a tile; this is a scalar",
            ));
        };
        let iv = self.expr(index_expr)?;
        let it = match self.ty(iv) {
            Some(t) if t.is_tensor() && t.elem == Elem::Scalar(DType::I32) => t,
            Some(t) => {
                return Err(err(
                    index_expr,
                    format!("the index of `gather` is an `i32` tile, found `{t}`"),
                ))
            }
            None => {
                return Err(err(
                    index_expr,
                    "the index of `gather` is an `i32` tile, found a number",
                ))
            }
        };
        let av = self.expr(axis_expr)?;
        let axis = self.const_arg(av, axis_expr, "the axis of `gather`")?;
        let rank = st.shape.len();
        if axis < 0 || axis as usize >= rank {
            return Err(err(
                axis_expr,
                format!(
                    "axis {axis} is out of range for a tile of rank {rank} (0 ..= {})",
                    rank - 1
                ),
            ));
        }
        let a = axis as usize;
        let fits =
            it.shape.len() == rank && (0..rank).all(|d| d == a || it.shape[d] == st.shape[d]);
        if !fits {
            return Err(err(
                index_expr,
                format!(
                    "the index of `gather` along axis {a} has the source's rank and, off that \
                     axis, its extents: the source is `{st}`, the index `{it}`"
                ),
            ));
        }
        let (Val::V(s), Val::V(i)) = (sv, iv) else {
            unreachable_ptr()
        };
        Ok(Val::V(self.push(
            OpKind::Gather { axis: axis as u32 },
            vec![s, i],
            Type::tensor(st.elem, it.shape.clone()),
        )))
    }
}
