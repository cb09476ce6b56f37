//! Rules of the matrix products: `dot` (rule 22) and the Hopper `warp_group_dot` with its
//! `warp_group_wait` (rule 28).

use super::{Op, Verifier};
use crate::ir::ops::Precision;
use crate::ir::types::{DType, DotOperandLayout, Elem, Layout, SharedLayout, Type};

impl Verifier<'_> {
    /// Rule 22: `dot`.
    pub(super) fn dot(&mut self, o: &Op<'_>, precision: &Precision) {
        let ops = o.ops;
        if !self.takes(o, &[3]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let (a, b, acc) = (
            self.ty(ops[0]).clone(),
            self.ty(ops[1]).clone(),
            self.ty(ops[2]).clone(),
        );
        if a.shape.len() != 2 || b.shape.len() != 2 {
            return self.err(o.id, "`dot` multiplies two 2-D tiles".into());
        }
        if a.shape[1] != b.shape[0] {
            self.err(
                o.id,
                format!(
                    "inner dimensions differ: `{a}` is {}×{}, `{b}` is {}×{}",
                    a.shape[0], a.shape[1], b.shape[0], b.shape[1]
                ),
            );
        }
        let f8 = a.dtype().is_some_and(DType::is_f8) && b.dtype().is_some_and(DType::is_f8);
        if !(f8
            || a.elem == b.elem
                && matches!(
                    a.dtype(),
                    Some(DType::F32 | DType::F16 | DType::BF16 | DType::I8)
                ))
        {
            self.err(o.id,
                format!(
                    "`dot` takes two tiles of one float type (f32, f16 or bf16), two 8-bit float tiles (f8e4m3, f8e5m2, mixed or not) or two `i8` tiles, found `{}` and `{}`",
                    a.elem, b.elem
                ),
            );
        }
        let acc_elem = if a.dtype() == Some(DType::I8) {
            DType::I32
        } else {
            DType::F32
        };
        let want_ty = Type {
            elem: Elem::Scalar(acc_elem),
            shape: vec![a.shape[0], b.shape[1]],
            layout: ty.layout.clone(),
        };
        if ty != want_ty || acc != want_ty {
            self.err(
                o.id,
                format!("the accumulator and the result must be `{want_ty}`"),
            );
        }
        let tf32 = *precision == Precision::Tf32;
        if tf32 && a.dtype() != Some(DType::F32) {
            self.err(
                o.id,
                format!(
                    "`precision = tf32` applies to f32 operands, found `{}`",
                    a.elem
                ),
            );
        }
        if let Some(parent @ Layout::Mma(_)) = &ty.layout {
            let k_width = match a.dtype() {
                Some(DType::F16 | DType::BF16) => 2,
                Some(DType::F32) if tf32 => 1,
                Some(d) if d.is_byte_operand() => 4,
                _ => {
                    return self.err(o.id,
                        format!(
                            "a tensor-core `dot` takes f16, bf16, i8, f8e4m3, f8e5m2, or f32 with `precision = tf32`, found `{}`",
                            a.elem
                        ),
                    );
                }
            };
            for (i, t) in [(0u32, &a), (1, &b)] {
                let want = Layout::DotOperand(DotOperandLayout {
                    op_idx: i,
                    parent: Box::new(parent.clone()),
                    k_width,
                });
                if t.layout.as_ref() != Some(&want) {
                    self.err(
                        o.id,
                        format!("operand {i} of a tensor-core `dot` must be in the layout {want}"),
                    );
                }
            }
        }
    }

    /// Rule 28: `warp_group_dot`.
    pub(super) fn warp_group_dot(&mut self, o: &Op<'_>, trans_a: bool, trans_b: bool) {
        let ops = o.ops;
        let res = o.res.clone();
        if !self.takes(o, &[4, 5]) {
            return;
        }
        let t: Vec<Type> = ops.iter().map(|&v| self.ty(v).clone()).collect();
        let shared_a = t.len() == 5;
        if shared_a {
            self.stage_operands(o.id, &t[0], &t[1], "warp_group_dot");
        }
        let (a, b, acc) = if shared_a {
            (&t[0], &t[2], &t[4])
        } else {
            (&t[0], &t[1], &t[3])
        };
        self.stage_operands(o.id, b, &t[t.len() - 2], "warp_group_dot");
        // The operands' `M × K` and `K × N`: a stage's last two extents, a register tile's two.
        let mk: Vec<u32> = match &a.shape[usize::from(shared_a)..] {
            &[r, c] if trans_a && shared_a => vec![c, r],
            rc => rc.to_vec(),
        };
        let kn: Vec<u32> = match b.shape.get(1..) {
            Some(&[r, c]) if trans_b => vec![c, r],
            Some(rc) => rc.to_vec(),
            None => Vec::new(),
        };
        let sixteen = matches!(a.dtype(), Some(DType::F16 | DType::BF16)) && a.dtype() == b.dtype();
        // 8-bit floats (either kind, mixed or not) and `i8` are read K-major only.
        let f8 = a.dtype().is_some_and(DType::is_f8) && b.dtype().is_some_and(DType::is_f8);
        let s8 = a.dtype() == Some(DType::I8) && b.dtype() == Some(DType::I8);
        let byte = f8 || s8;
        let shapes = mk.len() == 2
            && kn.len() == 2
            && acc.shape.len() == 2
            && mk[1] == kn[0]
            && acc.shape[..] == [mk[0], kn[1]];
        let wgmma_layout = |buf: &Type| match (&buf.layout, buf.dtype()) {
            (Some(Layout::Shared(l)), Some(d)) if buf.shape.len() == 3 => {
                *l == SharedLayout::wgmma(buf.shape[2], d.size_bytes())
            }
            _ => false,
        };
        let acc_elem = if s8 { DType::I32 } else { DType::F32 };
        let acc_ok = acc.dtype() == Some(acc_elem)
            && matches!(&acc.layout, Some(Layout::Mma(m)) if m.version == 3);
        if !((sixteen || byte) && shapes) {
            return self.err(o.id,
                format!("`warp_group_dot` multiplies an f16 or bf16 `M × K` operand by a `K × N` stage of the same type, 8-bit float operands, or `i8` ones, into `M × N`, not `{a}` by `{b}` into `{acc}`"),
            );
        }
        if byte && (trans_a || !trans_b) {
            return self.err(
                o.id,
                "`warp_group_dot` reads 8-bit operands K-major only: `trans_b` and no `trans_a`"
                    .into(),
            );
        }
        if !((!shared_a || wgmma_layout(a)) && wgmma_layout(b)) {
            self.err(
                o.id,
                format!(
                    "`warp_group_dot` reads buffers in their `wgmma` layouts, not `{a}` and `{b}`"
                ),
            );
        }
        if trans_a && !shared_a {
            self.err(
                o.id,
                "`trans_a` reads `A` transposed from a stage; a register `A` has no such form"
                    .to_string(),
            );
        }
        if !shared_a {
            let want = acc.layout.clone().map(|parent| {
                Layout::DotOperand(DotOperandLayout {
                    op_idx: 0,
                    parent: Box::new(parent),
                    k_width: if byte { 4 } else { 2 },
                })
            });
            if a.layout != want {
                self.err(
                    o.id,
                    format!("a register `A` of `warp_group_dot` is in the `A` operand layout of the accumulator's, not `{a}`"),
                );
            }
        }
        if !acc_ok {
            self.err(o.id,
                format!("the accumulator of `warp_group_dot` is {acc_elem} in an mma layout of version 3, not `{acc}`"),
            );
        }
        if res.is_some_and(|r| r != *acc) {
            self.err(
                o.id,
                "`warp_group_dot` yields its accumulator's type".into(),
            );
        }
    }

    /// Rule 28: `warp_group_wait`.
    pub(super) fn warp_group_wait(&mut self, o: &Op<'_>) {
        let ops = o.ops;
        let res = o.res.clone();
        if !self.takes(o, &[1]) {
            return;
        }
        let acc = self.ty(ops[0]).clone();
        if !matches!(&acc.layout, Some(Layout::Mma(m)) if m.version == 3) {
            self.err(o.id,
                format!("`warp_group_wait` takes an accumulator in an mma layout of version 3, not `{acc}`"),
            );
        }
        if res.is_some_and(|r| r != acc) {
            self.err(o.id, "`warp_group_wait` yields its operand's type".into());
        }
    }
}
