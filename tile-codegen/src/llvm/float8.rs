//! Conversions between `f32` and the 8-bit float types, bit for bit as `tile_core::float8`
//! defines them (round to nearest even, saturated to the largest finite value, NaN to `0x7f`).
//!
//! An 8-bit float is held in an `i8` register as its bits. Targets with the conversion
//! instructions (sm_89 and later: [`Target::has_f8_convert`]) use them: `cvt.rn.satfinite.
//! {e4m3x2,e5m2x2}.f32` rounds two `f32` at once, `cvt.rn.f16x2.e4m3x2` widens E4M3 exactly.
//! Elsewhere the same results come from integer and `f32` arithmetic:
//!
//! - **widening**: E5M2 is the top byte of the `f16` of the same value, so it is a shift on every
//!   target. E4M3's exponent and mantissa fields are placed in `f32`'s (`(b & 0x7f) << 20`) and
//!   the result scaled by 2¹²⁰ (the difference of the biases), which is exact for normal and
//!   subnormal values alike; `0x7f` becomes NaN and the sign is or-ed in.
//! - **narrowing**: `|x|` is clamped to the largest finite value (`min.f32`, which keeps the
//!   bound for NaN), then rounded: below the smallest normal by `cvt.rni` of `|x|` scaled to
//!   units of the smallest subnormal; above it by rounding `f32`'s bits to nearest even at the
//!   format's mantissa width and re-biasing the exponent. A NaN input gives `0x7f`.

use inkwell::values::{FloatValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};
use tile_core::ir::DType;
use tile_core::Target;

use super::lower::{bug, float, int, Lowerer, OrLlvm, Result};

/// The format's mantissa bits, exponent bias and largest finite value.
fn format(d: DType) -> (u32, u32, f32) {
    match d {
        DType::F8E4M3 => (3, 7, 448.0),
        DType::F8E5M2 => (2, 15, 57344.0),
        _ => bug(format_args!("an 8-bit float type, found `{d}`")),
    }
}

impl<'ctx> Lowerer<'_, 'ctx> {
    /// Whether this kernel's target converts 8-bit floats in hardware.
    fn f8_hardware(&self) -> bool {
        self.f.target.is_some_and(Target::has_f8_convert)
    }

    /// The exact `f32` value of the 8-bit float `v` (an `i8`) of type `d`.
    pub(super) fn f8_to_f32(&self, d: DType, v: IntValue<'ctx>) -> Result<FloatValue<'ctx>> {
        let b = &self.builder;
        let ctx = self.context;
        let (i16_ty, i32_ty, f32_ty) = (ctx.i16_type(), ctx.i32_type(), ctx.f32_type());
        if d == DType::F8E5M2 {
            let wide = b.build_int_z_extend(v, i16_ty, "").llvm()?;
            let top = b
                .build_left_shift(wide, i16_ty.const_int(8, false), "")
                .llvm()?;
            let h = b.build_bit_cast(top, ctx.f16_type(), "").llvm()?;
            return b.build_float_ext(float(h), f32_ty, "").llvm();
        }
        if self.f8_hardware() {
            let wide = b.build_int_z_extend(v, i16_ty, "").llvm()?;
            let pair = self.pure_asm(
                "cvt.rn.f16x2.e4m3x2 $0, $1;",
                "=r,h",
                i32_ty.into(),
                &[wide.into()],
            )?;
            let low = b.build_int_truncate(int(pair), i16_ty, "").llvm()?;
            let h = b.build_bit_cast(low, ctx.f16_type(), "").llvm()?;
            return b.build_float_ext(float(h), f32_ty, "").llvm();
        }
        let (mant, bias, _) = format(d);
        let byte = b.build_int_z_extend(v, i32_ty, "").llvm()?;
        let mag = b
            .build_and(byte, i32_ty.const_int(0x7f, false), "")
            .llvm()?;
        let placed = b
            .build_left_shift(mag, i32_ty.const_int(u64::from(23 - mant), false), "")
            .llvm()?;
        let placed = float(b.build_bit_cast(placed, f32_ty, "").llvm()?);
        let scale = f32::from_bits((254 - bias) << 23);
        let value = b
            .build_float_mul(placed, f32_ty.const_float(f64::from(scale)), "")
            .llvm()?;
        let is_nan = b
            .build_int_compare(IntPredicate::EQ, mag, i32_ty.const_int(0x7f, false), "")
            .llvm()?;
        let value = b
            .build_select(is_nan, f32_ty.const_float(f64::NAN), value, "")
            .llvm()?;
        let sign = b
            .build_and(byte, i32_ty.const_int(0x80, false), "")
            .llvm()?;
        let sign = b
            .build_left_shift(sign, i32_ty.const_int(24, false), "")
            .llvm()?;
        let bits = int(b.build_bit_cast(value, i32_ty, "").llvm()?);
        let bits = b.build_or(bits, sign, "").llvm()?;
        Ok(float(b.build_bit_cast(bits, f32_ty, "").llvm()?))
    }

    /// The exact `f16` value of the 8-bit float `v` (an `i8`) of type `d`: what a target whose
    /// tensor cores do not take 8-bit floats multiplies. E5M2 is the top byte of its `f16`;
    /// E4M3's magnitude bits are placed in `f16`'s fields (`(b & 0x7f) << 7`) and scaled by 2⁸
    /// (the difference of the biases; exact for normal and subnormal values), `0x7f` becomes
    /// NaN, and the sign is or-ed in first — fewer instructions than through `f32`.
    pub(super) fn f8_to_f16(&self, d: DType, v: IntValue<'ctx>) -> Result<FloatValue<'ctx>> {
        let b = &self.builder;
        let ctx = self.context;
        let (i16_ty, f16_ty) = (ctx.i16_type(), ctx.f16_type());
        let k = |n: u64| i16_ty.const_int(n, false);
        let wide = b.build_int_z_extend(v, i16_ty, "").llvm()?;
        if d == DType::F8E5M2 {
            let top = b.build_left_shift(wide, k(8), "").llvm()?;
            return Ok(float(b.build_bit_cast(top, f16_ty, "").llvm()?));
        }
        if self.f8_hardware() {
            let pair = self.pure_asm(
                "cvt.rn.f16x2.e4m3x2 $0, $1;",
                "=r,h",
                ctx.i32_type().into(),
                &[wide.into()],
            )?;
            let low = b.build_int_truncate(int(pair), i16_ty, "").llvm()?;
            return Ok(float(b.build_bit_cast(low, f16_ty, "").llvm()?));
        }
        let mag = b.build_and(wide, k(0x7f), "").llvm()?;
        let placed = b.build_left_shift(mag, k(7), "").llvm()?;
        let sign = b.build_and(wide, k(0x80), "").llvm()?;
        let sign = b.build_left_shift(sign, k(8), "").llvm()?;
        let bits = b.build_or(placed, sign, "").llvm()?;
        let h = float(b.build_bit_cast(bits, f16_ty, "").llvm()?);
        let value = b.build_float_mul(h, f16_ty.const_float(256.0), "").llvm()?;
        let is_nan = b
            .build_int_compare(IntPredicate::EQ, mag, k(0x7f), "")
            .llvm()?;
        Ok(float(
            b.build_select(is_nan, f16_ty.const_float(f64::NAN), value, "")
                .llvm()?,
        ))
    }

    /// `x` rounded to the 8-bit float type `d` (its bits, an `i8`).
    pub(super) fn f8_from_f32(&self, d: DType, x: FloatValue<'ctx>) -> Result<IntValue<'ctx>> {
        if self.f8_hardware() {
            let zero = self.context.f32_type().const_zero();
            let pair = self.f8_pair_from_f32(d, x, zero)?;
            return Ok(pair[0]);
        }
        let b = &self.builder;
        let ctx = self.context;
        let (i32_ty, f32_ty) = (ctx.i32_type(), ctx.f32_type());
        let (mant, bias, max) = format(d);
        let k = |n: u64| i32_ty.const_int(n, false);
        let bits = int(b.build_bit_cast(x, i32_ty, "").llvm()?);
        let sign = b.build_right_shift(bits, k(31), false, "").llvm()?;
        let sign = b.build_left_shift(sign, k(7), "").llvm()?;
        let abs = float(self.intrinsic("llvm.fabs", &[f32_ty.into()], &[x.into()])?);
        // `minnum` returns the bound for NaN; the select below restores NaN.
        let a = float(self.intrinsic(
            "llvm.minnum",
            &[f32_ty.into()],
            &[abs.into(), f32_ty.const_float(f64::from(max)).into()],
        )?);
        // Subnormal range: a multiple of the smallest subnormal, rounded to nearest even.
        let scale = f32::from_bits((127 + bias + mant - 1) << 23);
        let scaled = b
            .build_float_mul(a, f32_ty.const_float(f64::from(scale)), "")
            .llvm()?;
        let rounded = float(self.intrinsic("llvm.rint", &[f32_ty.into()], &[scaled.into()])?);
        let q_sub = b.build_float_to_unsigned_int(rounded, i32_ty, "").llvm()?;
        // Normal range: f32's bits rounded to `mant` mantissa bits, exponent re-biased.
        let drop = u64::from(23 - mant);
        let u = int(b.build_bit_cast(a, i32_ty, "").llvm()?);
        let odd = b.build_right_shift(u, k(drop), false, "").llvm()?;
        let odd = b.build_and(odd, k(1), "").llvm()?;
        let up = b.build_int_add(u, k((1 << (drop - 1)) - 1), "").llvm()?;
        let up = b.build_int_add(up, odd, "").llvm()?;
        let q = b.build_right_shift(up, k(drop), false, "").llvm()?;
        let q_norm = b
            .build_int_sub(q, k(u64::from((127 - bias) << mant)), "")
            .llvm()?;
        let min_normal = f32::from_bits((128 - bias) << 23);
        let sub = b
            .build_float_compare(
                FloatPredicate::OLT,
                a,
                f32_ty.const_float(f64::from(min_normal)),
                "",
            )
            .llvm()?;
        let m = int(b.build_select(sub, q_sub, q_norm, "").llvm()?);
        let m = b.build_or(m, sign, "").llvm()?;
        let is_nan = b
            .build_float_compare(FloatPredicate::UNO, x, x, "")
            .llvm()?;
        let m = int(b.build_select(is_nan, k(0x7f), m, "").llvm()?);
        b.build_int_truncate(m, ctx.i8_type(), "").llvm()
    }

    /// `lo` and `hi` rounded to `d` by one `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` (targets with
    /// [`Target::has_f8_convert`]): the bits of `lo`, then of `hi`.
    pub(super) fn f8_pair_from_f32(
        &self,
        d: DType,
        lo: FloatValue<'ctx>,
        hi: FloatValue<'ctx>,
    ) -> Result<[IntValue<'ctx>; 2]> {
        let b = &self.builder;
        let ctx = self.context;
        let name = if d == DType::F8E5M2 {
            "e5m2x2"
        } else {
            "e4m3x2"
        };
        // The first source operand goes to the upper byte.
        let pair = int(self.pure_asm(
            &format!("cvt.rn.satfinite.{name}.f32 $0, $1, $2;"),
            "=h,f,f",
            ctx.i16_type().into(),
            &[hi.into(), lo.into()],
        )?);
        let low = b.build_int_truncate(pair, ctx.i8_type(), "").llvm()?;
        let high = b
            .build_right_shift(pair, ctx.i16_type().const_int(8, false), false, "")
            .llvm()?;
        let high = b.build_int_truncate(high, ctx.i8_type(), "").llvm()?;
        Ok([low, high])
    }

    /// Whether `f32 → d` conversions of this kernel go two at a time.
    pub(super) fn f8_pairs(&self, d: DType) -> bool {
        d.is_f8() && self.f8_hardware()
    }
}
