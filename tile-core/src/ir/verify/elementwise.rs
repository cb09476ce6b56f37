//! Rules of the ops that make scalars and compute element by element: `constant`, `program_id`,
//! `num_programs`, `arange`, `splat`, the binary and unary ops, `cmp`, `select`, `addptr`, the
//! math functions, `cast`, `bitcast` and `int_to_ptr` (rules 5 to 10, 14 and 15 of the module documentation).

use super::{Op, Verifier};
use crate::ir::ops::{BinOp, ConstValue, MathFn, UnOp};
use crate::ir::types::{DType, Elem, Type};
use crate::ir::{OpId, ValueId};

impl Verifier<'_> {
    /// Rule 6: a scalar constant whose value suits its type.
    pub(super) fn constant(&mut self, o: &Op<'_>, c: &ConstValue) {
        if !self.takes(o, &[0]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        match (ty.elem, c) {
            (_, _) if ty.is_tensor() => self.err(o.id, "a constant is a scalar".into()),
            (Elem::Scalar(DType::I1), ConstValue::Int(0 | 1)) => {}
            (Elem::Scalar(DType::I32), ConstValue::Int(i)) if i32::try_from(*i).is_ok() => {}
            (Elem::Scalar(DType::I64), ConstValue::Int(_)) => {}
            (
                Elem::Scalar(d @ (DType::I8 | DType::I16 | DType::U8 | DType::U32)),
                ConstValue::Int(i),
            ) if d.int_range().is_some_and(|r| r.contains(&i128::from(*i))) => {}
            // A `u64` constant above `i64::MAX` is stored as its two's-complement bits.
            (Elem::Scalar(DType::U64), ConstValue::Int(_)) => {}
            (
                Elem::Scalar(
                    DType::F32
                    | DType::F16
                    | DType::BF16
                    | DType::F64
                    | DType::F8E4M3
                    | DType::F8E5M2,
                ),
                ConstValue::Float(_),
            ) => {}
            (e, c) => self.err(o.id, format!("constant {c} does not fit type `{e}`")),
        }
    }

    /// Rule 7: `program_id` and `num_programs`.
    pub(super) fn grid_index(&mut self, o: &Op<'_>, axis: &u32) {
        let res = o.res.clone();
        if !self.takes(o, &[0]) {
            return;
        }
        if *axis > 2 {
            self.err(o.id, format!("grid axis {axis} is not 0, 1 or 2"));
        }
        if res != Some(Type::scalar(DType::I32)) {
            self.err(o.id, "the result must be `i32`".into());
        }
    }

    /// Rule 8: `arange`.
    pub(super) fn arange(&mut self, o: &Op<'_>, start: &i64, end: &i64) {
        if !self.takes(o, &[0]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        if end <= start {
            self.err(o.id, format!("empty range {start}..{end}"));
        } else if ty.elem != Elem::Scalar(DType::I32)
            || ty.shape.len() != 1
            || ty.shape[0] as i64 != end - start
        {
            self.err(
                o.id,
                format!("the result must be `tensor<{}xi32>`", end - start),
            );
        }
        if i32::try_from(*start).is_err() || i32::try_from(*end).is_err() {
            self.err(o.id, "bounds must fit in i32".into());
        }
    }

    /// Rule 9: `splat`.
    pub(super) fn splat(&mut self, o: &Op<'_>) {
        let ops = o.ops;
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(ops[0]).clone();
        if a.is_tensor() {
            self.err(o.id, "the operand of `splat` must be a scalar".into());
        }
        if !ty.is_tensor() || ty.elem != a.elem {
            self.err(o.id, format!("the result must be a tensor of `{}`", a.elem));
        }
    }

    /// Rule 5: binary arithmetic and bitwise ops.
    pub(super) fn binary(&mut self, o: &Op<'_>, b: &BinOp) {
        let ops = o.ops;
        if !self.takes(o, &[2]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        self.same_types(o.id, &[ops[0], ops[1]], &ty);
        match ty.elem {
            Elem::Ptr(_) => self.err(o.id, format!("`{}` does not take pointers", b.name())),
            Elem::Scalar(d) if *b == crate::ir::BinOp::UMulHi && d != DType::I32 => {
                self.err(o.id, format!("`umulhi` takes i32, found `{d}`"))
            }
            Elem::Scalar(d) if b.is_shift() && !(d.is_int() && d.is_arith()) => self.err(
                o.id,
                format!("`{}` takes 32- or 64-bit integers, found `{d}`", b.name()),
            ),
            Elem::Scalar(d) if b.is_bitwise() && !d.is_int() => self.err(
                o.id,
                format!("`{}` takes integers or booleans, found `{d}`", b.name()),
            ),
            Elem::Scalar(DType::I1) if !b.is_bitwise() => {
                self.err(o.id, format!("`{}` does not take booleans", b.name()))
            }
            Elem::Scalar(d) if !b.is_bitwise() && !d.is_arith() => self.err(
                o.id,
                format!(
                    "`{}` takes 32- or 64-bit integers or f32; cast `{d}` first",
                    b.name()
                ),
            ),
            Elem::Scalar(_) => {}
        }
    }

    /// Rule 5: `neg` and `not`.
    pub(super) fn unary(&mut self, o: &Op<'_>, u: &UnOp) {
        let ops = o.ops;
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        self.same_types(o.id, &[ops[0]], &ty);
        match (u, ty.elem) {
            (_, Elem::Ptr(_)) => self.err(o.id, format!("`{}` does not take pointers", u.name())),
            (UnOp::Neg, Elem::Scalar(DType::I1)) => {
                self.err(o.id, "`neg` does not take booleans".into())
            }
            (UnOp::Neg, Elem::Scalar(d)) if d.is_f8() => self.err(
                o.id,
                format!("`neg` does not take `{d}`; cast it to `f32` first"),
            ),
            (UnOp::Not, Elem::Scalar(d)) if !d.is_int() => self.err(
                o.id,
                format!("`not` takes integers or booleans, found `{d}`"),
            ),
            _ => {}
        }
    }

    /// Rule 5: `cmp`.
    pub(super) fn cmp(&mut self, o: &Op<'_>) {
        let ops = o.ops;
        if !self.takes(o, &[2]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(ops[0]).clone();
        match a.elem.dtype() {
            None => self.err(o.id, "`cmp` does not take pointers".into()),
            Some(d) if d.is_f8() => self.err(
                o.id,
                format!("`cmp` does not take `{d}`; cast it to `f32` first"),
            ),
            Some(_) => {}
        }
        self.same_types(o.id, &[ops[1]], &a);
        if ty != a.with_elem(Elem::Scalar(DType::I1)) {
            self.err(
                o.id,
                format!(
                    "the result must be `{}`",
                    a.with_elem(Elem::Scalar(DType::I1))
                ),
            );
        }
    }

    /// Rule 5: `select`.
    pub(super) fn select(&mut self, o: &Op<'_>) {
        let ops = o.ops;
        if !self.takes(o, &[3]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        self.same_types(o.id, &[ops[1], ops[2]], &ty);
        if *self.ty(ops[0]) != ty.with_elem(Elem::Scalar(DType::I1)) {
            self.err(
                o.id,
                format!(
                    "the condition must be `{}`",
                    ty.with_elem(Elem::Scalar(DType::I1))
                ),
            );
        }
    }

    /// Rule 10: `addptr`.
    pub(super) fn addptr(&mut self, o: &Op<'_>) {
        let ops = o.ops;
        if !self.takes(o, &[2]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let p = self.ty(ops[0]).clone();
        let off = self.ty(ops[1]).clone();
        if p.elem.pointee().is_none() {
            self.err(o.id, "operand #0 of `addptr` must be a pointer".into());
        }
        if !matches!(off.elem, Elem::Scalar(DType::I32 | DType::I64)) {
            self.err(o.id, "the offset of `addptr` must be `i32` or `i64`".into());
        }
        if off.shape != p.shape || off.layout != p.layout {
            self.err(
                o.id,
                "the offset of `addptr` must have the pointer's shape".into(),
            );
        }
        if ty != p {
            self.err(o.id, format!("the result must be `{p}`"));
        }
    }

    /// Rule 14: float math functions.
    pub(super) fn math(&mut self, o: &Op<'_>, m: &MathFn) {
        let ops = o.ops;
        let n = m.arity();
        if !self.takes(o, &[n]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        self.same_types(o.id, ops, &ty);
        let ok = match ty.elem {
            Elem::Scalar(DType::F32) => true,
            Elem::Scalar(DType::I32 | DType::I64) => *m == MathFn::Abs,
            // The functions with an IEEE double-precision instruction.
            Elem::Scalar(DType::F64) => matches!(
                m,
                MathFn::Sqrt | MathFn::Abs | MathFn::Floor | MathFn::Ceil | MathFn::Fma
            ),
            _ => false,
        };
        if !ok {
            self.err(o.id, format!("`{}` does not take `{}`", m.name(), ty.elem));
        }
    }

    /// Rule 15: `cast`.
    pub(super) fn cast(&mut self, o: &Op<'_>) {
        let ops = o.ops;
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(ops[0]).clone();
        if a.elem.dtype().is_none() || ty.elem.dtype().is_none() {
            self.err(o.id, "`cast` converts numbers, not pointers".into());
        }
        if a.shape != ty.shape || a.layout != ty.layout {
            self.err(o.id, format!("`cast` keeps the shape: `{a}` to `{ty}`"));
        }
    }

    /// Rule 15: `bitcast` keeps the shape and the width, between numbers other than booleans.
    pub(super) fn bitcast(&mut self, o: &Op<'_>) {
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(o.ops[0]).clone();
        match (a.dtype(), ty.dtype()) {
            (Some(from), Some(to)) if from != DType::I1 && to != DType::I1 => {
                if from.size_bytes() != to.size_bytes() {
                    self.err(
                        o.id,
                        format!("`bitcast` keeps the width: `{from}` to `{to}`"),
                    );
                }
            }
            _ => self.err(
                o.id,
                "`bitcast` reinterprets numbers, not booleans or pointers".into(),
            ),
        }
        if a.shape != ty.shape || a.layout != ty.layout {
            self.err(o.id, format!("`bitcast` keeps the shape: `{a}` to `{ty}`"));
        }
    }

    /// Rule 15: `int_to_ptr` takes `i64` or `u64` addresses and keeps the shape, giving pointers.
    pub(super) fn int_to_ptr(&mut self, o: &Op<'_>) {
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(o.ops[0]).clone();
        if !matches!(a.elem, Elem::Scalar(DType::I64 | DType::U64)) {
            self.err(
                o.id,
                format!(
                    "`int_to_ptr` takes `i64` or `u64` addresses, not `{}`",
                    a.elem
                ),
            );
        }
        if ty.elem.pointee().is_none() {
            self.err(
                o.id,
                format!("`int_to_ptr` gives pointers, not `{}`", ty.elem),
            );
        }
        if a.shape != ty.shape || a.layout != ty.layout {
            self.err(
                o.id,
                format!("`int_to_ptr` keeps the shape: `{a}` to `{ty}`"),
            );
        }
    }

    /// Rule 29: `hint`.
    pub(super) fn hint(&mut self, o: &Op<'_>, multiple_of: u32, contiguous: u32) {
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(o.ops[0]).clone();
        if !a.dtype().is_some_and(|d| d.is_int() && d != DType::I1) {
            self.err(o.id, format!("`hint` takes integers, found `{a}`"));
        }
        if ty != a {
            self.err(o.id, format!("the result must be `{a}`"));
        }
        if !multiple_of.is_power_of_two() || !contiguous.is_power_of_two() {
            self.err(
                o.id,
                "`multiple_of` and `contiguous` of `hint` are powers of two".into(),
            );
        }
    }

    pub(super) fn same_types(&mut self, op: OpId, vals: &[ValueId], ty: &Type) {
        for &v in vals {
            if self.ty(v) != ty {
                let found = self.ty(v).clone();
                self.err(op, format!("operand type `{found}` differs from `{ty}`"));
                return;
            }
        }
    }
}
