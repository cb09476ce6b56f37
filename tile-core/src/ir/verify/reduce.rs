//! Rules of the ops that combine elements along an axis: `reduce` (rule 16) and `scan` (rule 27).

use super::{Op, Verifier};
use crate::ir::types::{DType, Type};

impl Verifier<'_> {
    /// Rule 16: `reduce`.
    pub(super) fn reduce(&mut self, o: &Op<'_>, axis: &u32) {
        let ops = o.ops;
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(ops[0]).clone();
        if !a.is_tensor() || (*axis as usize) >= a.shape.len() {
            return self.err(o.id, format!("axis {axis} is out of range for `{a}`"));
        }
        if !a.dtype().is_some_and(DType::is_arith) {
            self.err(
                o.id,
                format!(
                    "reductions take 32- or 64-bit integers or f32, found `{}`",
                    a.elem
                ),
            );
        }
        let mut shape = a.shape.clone();
        shape.remove(*axis as usize);
        if ty.elem != a.elem || ty.shape != shape {
            let want = Type::tensor(a.elem, shape);
            self.err(o.id, format!("the result must be `{want}` (layout aside)"));
        }
        if ty.is_tensor() {
            self.sliced(o.id, &a, *axis, &ty, "the result");
        }
    }

    /// Rule 27: `scan`.
    pub(super) fn scan(&mut self, o: &Op<'_>, axis: &u32) {
        let ops = o.ops;
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(ops[0]).clone();
        if !a.is_tensor() || (*axis as usize) >= a.shape.len() {
            return self.err(o.id, format!("axis {axis} is out of range for `{a}`"));
        }
        if !a.dtype().is_some_and(DType::is_arith) {
            self.err(
                o.id,
                format!(
                    "scans take 32- or 64-bit integers or f32, found `{}`",
                    a.elem
                ),
            );
        }
        if ty != a {
            self.err(o.id, format!("the result must be `{a}`"));
        }
    }
}
