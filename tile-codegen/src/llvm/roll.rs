//! `roll`: a tensor rotated along one dimension, element `j` taking element `(j − shift) mod n`.
//!
//! A rotation by half the extent (`n / 2`, what rotary embeddings use) flips the top bit of the
//! index along the dimension. When one bit of the layout's linear map selects exactly that bit
//! (see `layout`), the rotation is that bit flipped:
//! - a register bit: the thread's own registers swap;
//! - a lane bit: each register comes from lane `lane ^ m` (`shfl.sync.bfly`), 16-bit elements two
//!   to a 32-bit shuffle;
//! - a warp bit: through shared memory, as any other shift.
//!
//! Any other rotation goes through shared memory like `convert_layout`: every element written once
//! at its row-major index, a barrier, every slot read from the index it rotates from.

use inkwell::types::BasicTypeEnum;
use inkwell::values::BasicValueEnum;
use tile_core::ir::{DType, Elem, InDim, OpData, Type};
use tile_core::Target;

use super::layout::Distribution;
use super::lower::{bug, int, register_type, Lowerer, OrLlvm, Result};

/// Where the top bit of the index along a dimension lives, for a rotation by half.
enum HalfBit {
    /// In the thread's own slots: slot `k` takes slot `perm[k]`.
    Slots(Vec<usize>),
    /// In the lane id: slot `k` takes the same slot of lane `lane ^ mask`.
    Lanes(u64),
}

impl<'ctx> Lowerer<'_, 'ctx> {
    /// Lowers `roll {axis, shift}`.
    pub(super) fn roll(
        &mut self,
        data: &OpData,
        axis: u32,
        shift: u32,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let ty = self.result_type(data);
        let dist = self.tensor_distribution(ty);
        let vals = self.operand(data, 0).to_vec();
        let d = axis as usize;
        let n = dist.extent(d);
        if shift == 0 || n == 1 {
            return Ok(vals);
        }
        let elem = ty.elem;
        match half_bit(&dist, d, u64::from(shift)) {
            Some(HalfBit::Slots(perm)) => Ok(perm.iter().map(|&k| vals[k]).collect()),
            Some(HalfBit::Lanes(mask)) => self.shuffle_slots(elem, &vals, mask),
            None => self.roll_through_shared(&dist, d, u64::from(shift), elem, &vals),
        }
    }

    /// Every slot replaced by the same slot of lane `lane ^ mask`; 16-bit elements in pairs.
    fn shuffle_slots(
        &mut self,
        elem: Elem,
        vals: &[BasicValueEnum<'ctx>],
        mask: u64,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let b = &self.builder;
        let i32_ty = self.context.i32_type();
        let d = match elem {
            Elem::Scalar(d) => d,
            Elem::Ptr(_) => DType::I64,
        };
        if matches!(d, DType::F16 | DType::BF16) && vals.len().is_multiple_of(2) {
            let half = register_type(self.context, elem);
            let pair_ty = match half {
                BasicTypeEnum::FloatType(t) => t.vec_type(2),
                _ => bug(format_args!(
                    "a half-precision float register, found `{elem}`"
                )),
            };
            let mut out = Vec::with_capacity(vals.len());
            for pair in vals.chunks(2) {
                let mut v = pair_ty.get_poison();
                for (i, &e) in pair.iter().enumerate() {
                    let lane = i32_ty.const_int(i as u64, false);
                    v = b.build_insert_element(v, e, lane, "").llvm()?;
                }
                let word = b.build_bit_cast(v, i32_ty, "").llvm()?;
                let moved = self.shuffle_xor(DType::I32, word, mask)?;
                let back = b.build_bit_cast(moved, pair_ty, "").llvm()?;
                let back = back.into_vector_value();
                for i in 0..2 {
                    let lane = i32_ty.const_int(i, false);
                    out.push(b.build_extract_element(back, lane, "").llvm()?);
                }
            }
            return Ok(out);
        }
        vals.iter()
            .map(|&v| {
                // Into a shuffleable form (i32, i64 or f32 bits) and back.
                let b = &self.builder;
                match (elem, d) {
                    (Elem::Ptr(_), _) => {
                        let bits = b
                            .build_ptr_to_int(v.into_pointer_value(), self.context.i64_type(), "")
                            .llvm()?;
                        let moved = int(self.shuffle_xor(DType::I64, bits.into(), mask)?);
                        let ptr_ty = v.get_type().into_pointer_type();
                        Ok(self
                            .builder
                            .build_int_to_ptr(moved, ptr_ty, "")
                            .llvm()?
                            .into())
                    }
                    (_, DType::I1 | DType::F16 | DType::BF16) => {
                        let bits = if d == DType::I1 {
                            int(v)
                        } else {
                            b.build_bit_cast(v, self.context.i16_type(), "")
                                .llvm()?
                                .into_int_value()
                        };
                        let wide = b.build_int_z_extend(bits, i32_ty, "").llvm()?;
                        let moved = int(self.shuffle_xor(DType::I32, wide.into(), mask)?);
                        let narrow = self
                            .builder
                            .build_int_truncate(moved, bits.get_type(), "")
                            .llvm()?;
                        if d == DType::I1 {
                            Ok(narrow.into())
                        } else {
                            self.builder
                                .build_bit_cast(narrow, register_type(self.context, elem), "")
                                .llvm()
                        }
                    }
                    _ => self.shuffle_xor(d, v, mask),
                }
            })
            .collect()
    }

    /// The general rotation: through a shared array, as `convert_layout` moves data.
    fn roll_through_shared(
        &mut self,
        dist: &Distribution,
        d: usize,
        shift: u64,
        elem: Elem,
        vals: &[BasicValueEnum<'ctx>],
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let (smem, mem_ty) =
            self.tensor_to_shared(dist, elem, vals, Target::STATIC_SHARED_BYTES)?;
        let i32_ty = self.context.i32_type();
        let c = |x: u64| i32_ty.const_int(x, false);
        let n = dist.extent(d);
        let t = self.thread_coords(dist)?;
        let mut out = Vec::with_capacity(vals.len());
        for k in 0..vals.len() {
            let mut at = c(0);
            for e in 0..dist.rank() {
                let mut x = self.index_along(dist, &t, e, k)?;
                if e == d {
                    // (x − shift) mod n, with n a power of two.
                    let b = &self.builder;
                    let y = b.build_int_nsw_add(x, c(n - shift), "").llvm()?;
                    x = b.build_and(y, c(n - 1), "").llvm()?;
                }
                let b = &self.builder;
                let scaled = b.build_int_nsw_mul(at, c(dist.extent(e)), "").llvm()?;
                at = b.build_int_nsw_add(scaled, x, "").llvm()?;
            }
            let v = self.shared_load(smem, mem_ty, at)?;
            out.push(self.register_from_memory(v, elem)?);
        }
        Ok(out)
    }
}

/// For a rotation by `shift` along `d` of `dist`: where the top bit of the index lives, when the
/// rotation is by half the extent and one register or lane bit selects exactly that bit; `None`
/// otherwise (shared memory).
fn half_bit(dist: &Distribution, d: usize, shift: u64) -> Option<HalfBit> {
    let n = dist.extent(d);
    if 2 * shift != n {
        return None;
    }
    let ll = dist.linear();
    let top = ll.dim_bit(d, n.trailing_zeros() as usize - 1);
    match ll.find_basis(top)? {
        (InDim::Reg, bit) => Some(HalfBit::Slots(
            (0..dist.elems_per_thread())
                .map(|k| k ^ (1 << bit))
                .collect(),
        )),
        (InDim::Lane, bit) => Some(HalfBit::Lanes(1 << bit)),
        (InDim::Warp, _) => None,
    }
}

/// The shared memory `roll {axis, shift}` of a tensor of type `ty` needs, in bytes: none where
/// the rotation is a register permutation or a lane shuffle, else the tensor in its memory form.
pub(super) fn scratch_bytes(ty: &Type, axis: u32, shift: u32) -> Result<u64> {
    let dist = Distribution::of(ty)?;
    let d = axis as usize;
    if d >= dist.rank() {
        bug(format_args!(
            "an axis of `{ty}` (verifier rule 24), not {axis}"
        ));
    }
    if shift == 0 || dist.extent(d) == 1 || half_bit(&dist, d, u64::from(shift)).is_some() {
        return Ok(0);
    }
    Ok(dist.numel() * super::shared::memory_bytes(ty.elem))
}
