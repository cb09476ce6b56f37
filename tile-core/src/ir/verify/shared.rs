//! Rules of the shared-memory ops (rule 25): `local_alloc`, `async_copy`, `local_load`, and the
//! synchronizing ops without operands (`async_commit`, `async_wait`, `barrier`,
//! `fence_async_shared`). The `smem` type itself is checked with the other types (`types.rs`).

use super::{Op, Verifier};
use crate::ir::types::{DType, Elem, Layout, Type};
use crate::ir::OpId;

impl Verifier<'_> {
    /// Rule 25: `local_alloc`.
    pub(super) fn local_alloc(&mut self, o: &Op<'_>) {
        let res = o.res.clone();
        if !self.takes(o, &[0]) {
            return;
        }
        if !res.is_some_and(|t| t.is_shared()) {
            self.err(o.id, "`local_alloc` yields an `smem` buffer".into());
        }
    }

    /// Rule 25: `async_commit`, `async_wait`, `barrier` and `fence_async_shared` take no operands.
    pub(super) fn no_operands(&mut self, o: &Op<'_>) {
        self.takes(o, &[0]);
    }

    /// Rule 25: `async_copy`.
    pub(super) fn async_copy(&mut self, o: &Op<'_>, vec: &u32) {
        let ops = o.ops;
        if !self.takes(o, &[3, 4]) {
            return;
        }
        let (buf, stage, p) = (
            self.ty(ops[0]).clone(),
            self.ty(ops[1]).clone(),
            self.ty(ops[2]).clone(),
        );
        self.stage_operands(o.id, &buf, &stage, "async_copy");
        let tile_ok = buf.is_shared()
            && p.elem == Elem::Ptr(buf.dtype().unwrap_or(DType::I1))
            && p.shape[..] == buf.shape[1..]
            && p.layout.is_some();
        if !tile_ok {
            self.err(
                o.id,
                format!("`async_copy` needs pointers to one stage of `{buf}`, found `{p}`"),
            );
        }
        if ops.len() == 4 {
            self.mask(o.id, ops[3], &p);
        }
        self.vec(o.id, *vec, &p);
        let bytes = buf.dtype().map_or(0, |d| d.size_bytes()) * vec;
        if *vec > 1 && !matches!(bytes, 4 | 8 | 16) {
            self.err(
                o.id,
                format!("`async_copy` copies 4, 8 or 16 bytes at once, not {bytes}"),
            );
        }
    }

    /// Rule 25: `local_load`.
    pub(super) fn local_load(&mut self, o: &Op<'_>, offset: &[u32; 2], trans: bool) {
        let ops = o.ops;
        if !self.takes(o, &[2]) {
            return;
        }
        let (buf, stage) = (self.ty(ops[0]).clone(), self.ty(ops[1]).clone());
        self.stage_operands(o.id, &buf, &stage, "local_load");
        let Some(ty) = o.res.clone() else { return };
        // A whole stage read back into a distributed layout, each thread the elements it holds
        // there (a ring that copies a tile in the layout its consumer uses: no operand form).
        if matches!(ty.layout, Some(Layout::Blocked(_) | Layout::Mma(_))) {
            let whole = buf.is_shared()
                && ty.elem == buf.elem
                && buf.shape.len() == 3
                && ty.shape[..] == buf.shape[1..]
                && *offset == [0, 0]
                && !trans;
            if !whole {
                self.err(o.id,
                    format!("`local_load` into a distributed layout reads a whole stage of `{buf}`, as stored, into a tile of its type, not `{ty}`"),
                );
            }
            return;
        }
        let ok = buf.is_shared()
            && ty.elem == buf.elem
            && ty.shape.len() == 2
            && buf.shape.len() == 3
            && match (&ty.layout, ty.dtype()) {
                (Some(Layout::DotOperand(d)), Some(DType::F16 | DType::BF16)) => d.k_width == 2,
                (Some(Layout::DotOperand(d)), Some(DType::F32)) => d.k_width == 1,
                (Some(Layout::DotOperand(d)), Some(t)) if t.is_byte_operand() => d.k_width == 4,
                _ => false,
            };
        if !ok {
            return self.err(o.id,
                format!("`local_load` reads a window of one stage of `{buf}` into an operand layout (f16/bf16 with k_width 2, f32 with k_width 1, i8 and the 8-bit floats with k_width 4), not `{ty}`"),
            );
        }
        // `i8` reaches the tensor cores K-major only: `A` as stored, `B` transposed.
        let op_idx = match &ty.layout {
            Some(Layout::DotOperand(d)) => d.op_idx,
            _ => 0,
        };
        if ty.dtype() == Some(DType::I8) && trans != (op_idx == 1) {
            return self.err(o.id,
                format!("an `i8` operand is read K-major: `A` as stored, `B` transposed (`local_load {{trans = {trans}}}` into operand {op_idx})"),
            );
        }
        if trans {
            // The whole stage, transposed, into a 16-bit operand (or an 8-bit `B`).
            let bytes_ok = ty.dtype().is_some_and(|d| d.size_bytes() <= 2);
            if !(bytes_ok && *offset == [0, 0] && buf.shape[1..] == [ty.shape[1], ty.shape[0]]) {
                self.err(o.id,
                    format!("`local_load {{trans = true}}` reads a whole stage of `{buf}` transposed into a 16-bit operand (or an `i8` `B`), not `{ty}` at [{}, {}]", offset[0], offset[1]),
                );
            }
            return;
        }
        // One of the tiles of the result's shape that partition the stage.
        let fits = (0..2).all(|d| {
            let (o, n, whole) = (offset[d], ty.shape[d], buf.shape[d + 1]);
            n > 0 && o % n == 0 && o.checked_add(n).is_some_and(|end| end <= whole)
        });
        if !fits {
            self.err(o.id,
                format!(
                    "`local_load` window at [{}, {}] of shape {:?} is not one of the tiles of that shape in a stage of `{buf}`",
                    offset[0], offset[1], ty.shape
                ),
            );
        }
    }

    /// A shared buffer and an `i32` scalar stage.
    pub(super) fn stage_operands(&mut self, op: OpId, buf: &Type, stage: &Type, what: &str) {
        if !buf.is_shared() {
            self.err(
                op,
                format!("operand #0 of `{what}` must be an `smem` buffer, found `{buf}`"),
            );
        }
        self.scalar_operand(op, stage, DType::I32, what, "stage");
    }

    /// An operand (the `name` of `what`) that must be a scalar of type `d`.
    pub(super) fn scalar_operand(&mut self, op: OpId, ty: &Type, d: DType, what: &str, name: &str) {
        if *ty != Type::scalar(d) {
            self.err(
                op,
                format!("the {name} of `{what}` must be an `{d}` scalar, found `{ty}`"),
            );
        }
    }
}
