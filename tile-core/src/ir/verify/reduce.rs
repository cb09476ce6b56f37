//! Rules of the ops that combine elements along an axis: `reduce` (rule 16), `scan` (rule 27)
//! and `associative_scan` (rule 36).

use super::{Op, Verifier};
use crate::ir::ops::OpKind;
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

    /// Rule 36: `associative_scan` (its region: arguments, ops and `yield`).
    pub(super) fn associative_scan(&mut self, o: &Op<'_>, axis: &u32) {
        let f = self.f;
        let data = o.data;
        let Some(&first) = o.ops.first() else {
            return self.err(
                o.id,
                "`associative_scan` takes 1 or more operand(s), found 0".into(),
            );
        };
        let a = self.ty(first).clone();
        if !a.is_tensor() || (*axis as usize) >= a.shape.len() {
            return self.err(o.id, format!("axis {axis} is out of range for `{a}`"));
        }
        let types: Vec<Type> = o.ops.iter().map(|&v| self.ty(v).clone()).collect();
        for t in &types {
            if t.shape != a.shape || t.layout != a.layout {
                self.err(
                    o.id,
                    format!("the scanned tiles must have one shape and layout: `{a}` and `{t}`"),
                );
            }
            if !t.dtype().is_some_and(DType::is_arith) {
                self.err(
                    o.id,
                    format!(
                        "associative scans take 32- or 64-bit integers or f32, found `{}`",
                        t.elem
                    ),
                );
            }
        }
        let results: Vec<Type> = data.results.iter().map(|&r| f.ty(r).clone()).collect();
        if results != types {
            self.err(
                o.id,
                "the results of `associative_scan` must have the types of its operands".into(),
            );
        }
        let Some(&body) = data
            .regions
            .first()
            .and_then(|r| f.regions[r.index()].blocks.first())
        else {
            return;
        };
        let scalars: Vec<Type> = types
            .iter()
            .map(|t| Type::scalar(t.dtype().unwrap_or(DType::I32)))
            .collect();
        let args: Vec<Type> = f.blocks[body.index()]
            .args
            .iter()
            .map(|&x| f.ty(x).clone())
            .collect();
        if args.len() != 2 * scalars.len()
            || args[..scalars.len()] != scalars[..]
            || args[scalars.len()..] != scalars[..]
        {
            self.err(
                o.id,
                "the combiner's arguments must be two tuples of scalars, one of each operand's element type"
                    .into(),
            );
        }
        for &inner in &f.blocks[body.index()].ops {
            let d = f.op(inner);
            let element_wise = d.kind.fits_combiner();
            if !element_wise {
                self.err(
                    o.id,
                    format!(
                        "a combiner holds element-wise ops on scalars only, found `{}`",
                        d.kind.name()
                    ),
                );
            }
            let all_scalar = d.operands.iter().chain(&d.results).all(|&v| {
                v.index() < f.values.len()
                    && !f.ty(v).is_tensor()
                    && f.ty(v).elem.pointee().is_none()
            });
            if !all_scalar {
                self.err(
                    o.id,
                    format!(
                        "a combiner's ops take and give scalar numbers only (`{}`)",
                        d.kind.name()
                    ),
                );
            }
        }
        match f.blocks[body.index()].ops.last().map(|&x| f.op(x)) {
            Some(y) if matches!(y.kind, OpKind::Yield) => {
                let yielded: Vec<Type> = y.operands.iter().map(|&v| f.ty(v).clone()).collect();
                if yielded != scalars {
                    self.err(
                        o.id,
                        "the combiner must yield one scalar of each operand's element type".into(),
                    );
                }
            }
            _ => self.err(o.id, "the combiner must end with `yield`".into()),
        }
    }
}
