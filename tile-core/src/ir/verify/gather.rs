//! The rule of `gather` (rule 32): elements picked along an axis by an index tensor.

use super::{Op, Verifier};
use crate::ir::types::{DType, Elem, Type};

impl Verifier<'_> {
    /// Rule 32: `gather`.
    pub(super) fn gather(&mut self, o: &Op<'_>, axis: &u32) {
        let ops = o.ops;
        if !self.takes(o, &[2]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let (src, index) = (self.ty(ops[0]).clone(), self.ty(ops[1]).clone());
        if !src.is_tensor() || (*axis as usize) >= src.shape.len() {
            return self.err(o.id, format!("axis {axis} is out of range for `{src}`"));
        }
        if !index.is_tensor() || index.elem != Elem::Scalar(DType::I32) {
            return self.err(
                o.id,
                format!("the index must be an `i32` tensor, not `{index}`"),
            );
        }
        let fits = index.shape.len() == src.shape.len()
            && index
                .shape
                .iter()
                .zip(&src.shape)
                .enumerate()
                .all(|(d, (i, s))| d == *axis as usize || i == s);
        if !fits {
            self.err(
                o.id,
                format!(
                    "the index `{index}` must have the rank of `{src}` and its extents off axis {axis}"
                ),
            );
        }
        if ty.elem != src.elem || ty.shape != index.shape {
            let want = Type::tensor(src.elem, index.shape.clone());
            self.err(o.id, format!("the result must be `{want}` (layout aside)"));
        }
        if ty.layout != index.layout {
            self.err(o.id, "the result has the index's layout".into());
        }
    }
}
