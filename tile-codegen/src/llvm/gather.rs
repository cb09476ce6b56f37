//! `gather {axis}`: elements of a source tensor picked along `axis` by an `i32` index tensor,
//! each index taken modulo the source's extent `n` along `axis` (its low bits, `n` being a power
//! of two), so every read is inside the source whatever the index holds.
//!
//! The general path works for every pair of layouts: the source goes to a scratch shared array
//! at row-major indices (each element written once, by its owner), a barrier, and each slot of
//! the result (the index's layout) reads the source at its own coordinates with the one along
//! `axis` replaced by its index's low bits.
//!
//! When the source and the index share one layout and shape, and each thread holds the whole
//! extent of `axis` in its own registers (no lane or warp spans it) with `n` at most
//! [`MAX_IN_REGISTERS`], each slot instead picks among the thread's registers of its line by a
//! tree of `n − 1` selects on the index bits: no shared memory and no barrier.

use inkwell::values::BasicValueEnum;
use tile_core::ir::{InDim, OpData, Type};
use tile_core::Target;

use super::layout::Distribution;
use super::lower::{int, Lowerer, OrLlvm, Result};

/// The longest axis the in-register path selects along; a longer one costs more selects per
/// element than the trip through shared memory costs instructions.
const MAX_IN_REGISTERS: u64 = 8;

impl<'ctx> Lowerer<'_, 'ctx> {
    /// Lowers `gather {axis} %src, %index`.
    pub(super) fn gather(&mut self, data: &OpData, axis: u32) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let src_ty = self.operand_type(data, 0);
        let ty = self.result_type(data);
        let src = self.tensor_distribution(src_ty);
        let dist = self.tensor_distribution(ty);
        let vals = self.operand(data, 0).to_vec();
        let index = self.operand(data, 1).to_vec();
        let d = axis as usize;
        let n = src.extent(d);
        let i32_ty = self.context.i32_type();
        let c = |x: u64| i32_ty.const_int(x, false);
        if let Some(lines) = register_lines(src_ty, ty, d) {
            let mut out = Vec::with_capacity(index.len());
            for (k, line) in lines.iter().enumerate() {
                let mut cands: Vec<BasicValueEnum<'ctx>> = line.iter().map(|&r| vals[r]).collect();
                let x = int(index[k]);
                let mut bit = 0;
                while cands.len() > 1 {
                    let b = &self.builder;
                    let shifted = b.build_right_shift(x, c(bit), false, "").llvm()?;
                    let low = b.build_and(shifted, c(1), "").llvm()?;
                    let set = b
                        .build_int_compare(inkwell::IntPredicate::NE, low, c(0), "")
                        .llvm()?;
                    cands = cands
                        .chunks(2)
                        .map(|p| b.build_select(set, p[1], p[0], "").llvm())
                        .collect::<Result<_>>()?;
                    bit += 1;
                }
                out.push(cands[0]);
            }
            return Ok(out);
        }
        let (smem, mem_ty) =
            self.tensor_to_shared(&src, ty.elem, &vals, Target::STATIC_SHARED_BYTES)?;
        let t = self.thread_coords(&dist)?;
        let mut out = Vec::with_capacity(index.len());
        for (k, &x) in index.iter().enumerate() {
            let mut at = c(0);
            for e in 0..dist.rank() {
                let coord = if e == d {
                    // The index's low bits: inside `0..n` whatever it holds.
                    self.builder.build_and(int(x), c(n - 1), "").llvm()?
                } else {
                    self.index_along(&dist, &t, e, k)?
                };
                let b = &self.builder;
                let scaled = b.build_int_nsw_mul(at, c(src.extent(e)), "").llvm()?;
                at = b.build_int_nsw_add(scaled, coord, "").llvm()?;
            }
            let v = self.shared_load(smem, mem_ty, at)?;
            out.push(self.register_from_memory(v, ty.elem)?);
        }
        Ok(out)
    }
}

/// For the in-register path (see the module documentation): per slot of the result, the
/// registers of the source that hold its line along `d`, in order of their coordinate along it;
/// `None` where the path does not apply.
fn register_lines(src_ty: &Type, ty: &Type, d: usize) -> Option<Vec<Vec<usize>>> {
    if src_ty.shape != ty.shape || src_ty.layout != ty.layout {
        return None;
    }
    let dist = Distribution::of(src_ty).ok()?;
    let n = dist.extent(d);
    if n > MAX_IN_REGISTERS {
        return None;
    }
    // No lane or warp moves along `d`: the thread's part of every index is 0 there.
    let ll = dist.linear();
    let along = ll.dim_bit(d, 0) * (n - 1);
    if [InDim::Lane, InDim::Warp]
        .iter()
        .any(|&i| ll.bases(i).iter().any(|&b| b & along != 0))
    {
        return None;
    }
    (0..dist.elems_per_thread())
        .map(|k| {
            let mut offset = dist.reg_offset(k);
            (0..n)
                .map(|v| {
                    offset[d] = v;
                    dist.reg_at(&offset)
                })
                .collect()
        })
        .collect()
}

/// The shared memory `gather {axis}` of `src` into `result` needs, in bytes: none on the
/// in-register path, else the source in its memory form.
pub(super) fn scratch_bytes(src: &Type, result: &Type, axis: u32) -> u64 {
    if register_lines(src, result, axis as usize).is_some() {
        return 0;
    }
    src.numel() * super::shared::memory_bytes(src.elem)
}
