//! Lowering of `dot` without tensor cores: both operands go through shared memory (as `f32`), and
//! each thread computes the elements of the result it holds with one fused multiply-add per `k`,
//! in order from `k = 0` — exactly the IR's definition, so the GPU agrees with the interpreter bit
//! for bit.
//!
//! Steps: a barrier (an earlier use of the arrays may still be read), every element of `a`
//! (`M × K`) and `b` (`K × N`) written once at its row-major index (see
//! `Lowerer::store_tensor`), a barrier, then a loop over `k` carrying the thread's accumulators:
//! per iteration one load of `a[m][k]` per row the thread holds and one of `b[k][n]` per column,
//! then one `fma` per element held. The arrays take `4 · (M·K + K·N)` bytes of the 48 KiB a program
//! may declare; a later lowering (mma/wgmma) replaces this one without changing the op.

use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, IntValue};
use tile_core::ir::OpData;

use super::lower::{float, Lowerer, OrLlvm, Result};

impl<'ctx> Lowerer<'_, 'ctx> {
    /// `dot %a, %b, %acc`: the result's elements this thread holds.
    pub(super) fn dot(&mut self, data: &OpData) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let f = self.f;
        let ty = |i: usize| -> Result<&tile_core::ir::Type> {
            Ok(f.ty(*data.operands.get(i).ok_or("`dot` takes 3 operands")?))
        };
        let (aty, bty) = (ty(0)?, ty(1)?);
        let rty = self.result_type(data)?;
        let (m, k, n) = (
            u64::from(aty.shape[0]),
            u64::from(aty.shape[1]),
            u64::from(bty.shape[1]),
        );
        let f32_ty: BasicTypeEnum<'ctx> = self.context.f32_type().into();
        let sa = self.shared_array(f32_ty, m * k)?;
        let sb = self.shared_array(f32_ty, k * n)?;
        let (da, db) = (
            self.tensor_distribution(aty)?,
            self.tensor_distribution(bty)?,
        );
        let (va, vb) = (
            self.operand(data, 0)?.to_vec(),
            self.operand(data, 1)?.to_vec(),
        );
        self.barrier()?;
        self.store_tensor(sa, f32_ty, &da, &va, Self::widen)?;
        self.store_tensor(sb, f32_ty, &db, &vb, Self::widen)?;
        self.barrier()?;

        // The rows and columns this thread holds, each with its index, and per element of the
        // result which row and column it is.
        let dst = self.tensor_distribution(rty)?;
        let t = self.thread_coords(&dst)?;
        let mut rows: Vec<(u64, IntValue<'ctx>)> = Vec::new();
        let mut cols: Vec<(u64, IntValue<'ctx>)> = Vec::new();
        let mut at = Vec::with_capacity(dst.elems_per_thread());
        for slot in 0..dst.elems_per_thread() {
            let s = dst.slot(slot);
            let (rk, ck) = (dst.slot_offset(0, s[0]), dst.slot_offset(1, s[1]));
            let r = match rows.iter().position(|&(o, _)| o == rk) {
                Some(i) => i,
                None => {
                    rows.push((rk, self.index_along(&dst, &t, 0, slot)?));
                    rows.len() - 1
                }
            };
            let c = match cols.iter().position(|&(o, _)| o == ck) {
                Some(i) => i,
                None => {
                    cols.push((ck, self.index_along(&dst, &t, 1, slot)?));
                    cols.len() - 1
                }
            };
            at.push((r, c));
        }
        let i32_ty = self.context.i32_type();
        let c = |x: u64| i32_ty.const_int(x, false);
        let b = &self.builder;
        let mut row_base = Vec::with_capacity(rows.len());
        for &(_, r) in &rows {
            row_base.push(b.build_int_nsw_mul(r, c(k), "").llvm()?);
        }
        let acc = self.operand(data, 2)?.to_vec();
        let trips = self.context.i64_type().const_int(k, false);
        self.counted_loop(trips, acc, |me, kk, acc| {
            let b = &me.builder;
            let kk = b.build_int_truncate(kk, i32_ty, "").llvm()?;
            let mut a_vals = Vec::with_capacity(row_base.len());
            for &base in &row_base {
                let i = b.build_int_nsw_add(base, kk, "").llvm()?;
                a_vals.push(me.shared_load(sa, f32_ty, i)?);
            }
            let b = &me.builder;
            let b_row = b.build_int_nsw_mul(kk, c(n), "").llvm()?;
            let mut b_vals = Vec::with_capacity(cols.len());
            for &(_, col) in &cols {
                let i = me.builder.build_int_nsw_add(b_row, col, "").llvm()?;
                b_vals.push(me.shared_load(sb, f32_ty, i)?);
            }
            let mut next = Vec::with_capacity(acc.len());
            for (&(r, col), &s) in at.iter().zip(&acc) {
                let args: [BasicMetadataValueEnum; 3] =
                    [a_vals[r].into(), b_vals[col].into(), s.into()];
                next.push(me.intrinsic("llvm.fma", &[f32_ty], &args)?);
            }
            Ok(next)
        })
    }

    /// An `f32`, `f16` or `bf16` element as `f32` (exact).
    fn widen(
        &self,
        v: BasicValueEnum<'ctx>,
        f32_ty: BasicTypeEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let x = float(v)?;
        if x.get_type() == f32_ty.into_float_type() {
            return Ok(v);
        }
        Ok(self
            .builder
            .build_float_ext(x, f32_ty.into_float_type(), "")
            .llvm()?
            .into())
    }
}
