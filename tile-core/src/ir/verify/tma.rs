//! The rule of Hopper's barrier objects and tensor-memory-accelerator copies (rule 35):
//! `mbarrier_init`, `mbarrier_expect`, `mbarrier_wait`, `mbarrier_inval` and `tma_load`.

use super::{Op, Verifier};
use crate::ir::types::{DType, Elem, Layout, Type};
use crate::ir::OpId;

impl Verifier<'_> {
    /// Rule 35: operand `i` is a barrier buffer, `smem<S x 1 x 2 x i64>` (16 bytes a stage,
    /// the barrier object in the first 8).
    fn barrier_buffer(&mut self, op: OpId, ty: &Type, what: &str) {
        let ok = ty.is_shared()
            && ty.elem == Elem::Scalar(DType::I64)
            && ty.shape.len() == 3
            && ty.shape[1..] == [1, 2];
        if !ok {
            self.err(
                op,
                format!("`{what}` needs a barrier buffer `smem<S x 1 x 2 x i64>`, found `{ty}`"),
            );
        }
    }

    /// Rule 35: `mbarrier_init` and `mbarrier_inval`.
    pub(super) fn mbarrier_whole(&mut self, o: &Op<'_>) {
        if !self.takes(o, &[1]) {
            return;
        }
        let bars = self.ty(o.ops[0]).clone();
        self.barrier_buffer(o.id, &bars, o.data.kind.name());
    }

    /// Rule 35: `mbarrier_expect` (`%bars, %stage, %pred`, `bytes` > 0) and `mbarrier_wait`
    /// (`%bars, %stage, %phase`).
    pub(super) fn mbarrier_stage(&mut self, o: &Op<'_>, bytes: Option<u32>) {
        if !self.takes(o, &[3]) {
            return;
        }
        let what = o.data.kind.name();
        let (bars, stage, last) = (
            self.ty(o.ops[0]).clone(),
            self.ty(o.ops[1]).clone(),
            self.ty(o.ops[2]).clone(),
        );
        self.barrier_buffer(o.id, &bars, what);
        self.scalar_operand(o.id, &stage, DType::I32, what, "stage");
        match bytes {
            Some(b) => {
                self.scalar_operand(o.id, &last, DType::I1, what, "predicate");
                if b == 0 {
                    self.err(o.id, "`mbarrier_expect` announces no bytes".into());
                }
            }
            None => self.scalar_operand(o.id, &last, DType::I32, what, "phase"),
        }
    }

    /// Rule 35: `tma_load {slot} %buf, %stage, %bars, %pred, %row, %col`.
    pub(super) fn tma_load(&mut self, o: &Op<'_>, slot: u32) {
        if !self.takes(o, &[6]) {
            return;
        }
        let tys: Vec<Type> = o.ops.iter().map(|&v| self.ty(v).clone()).collect();
        self.stage_operands(o.id, &tys[0], &tys[1], "tma_load");
        self.barrier_buffer(o.id, &tys[2], "tma_load");
        self.scalar_operand(o.id, &tys[3], DType::I1, "tma_load", "predicate");
        for t in &tys[4..] {
            self.scalar_operand(o.id, t, DType::I32, "tma_load", "coordinate");
        }
        let buf = &tys[0];
        let bytes = match buf.dtype() {
            Some(DType::F16 | DType::BF16) => 2,
            Some(d) if d.is_f8() => 1,
            _ => 0,
        };
        let copyable = bytes > 0
            && matches!(&buf.layout, Some(Layout::Shared(s))
                if matches!(s.block_cols(u64::from(buf.shape.get(2).copied().unwrap_or(0))) * bytes, 32 | 64 | 128));
        if !copyable {
            self.err(
                o.id,
                format!(
                    "`tma_load` copies 16-bit or 8-bit float tiles into column blocks of 32, 64 or 128 bytes, not into `{buf}`"
                ),
            );
        }
        if slot >= self.f.desc_slots {
            self.err(
                o.id,
                format!(
                    "`tma_load` copies through descriptor {slot}, but the kernel has {}",
                    self.f.desc_slots
                ),
            );
        }
    }
}
