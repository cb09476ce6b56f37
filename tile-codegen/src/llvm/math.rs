//! Lowering of `cast` and of the math functions ([`MathFn`]).
//!
//! **Casts** follow the IR's definition (and the interpreter's `cast`): integers widen by sign
//! extension and narrow by truncation, booleans widen by zero extension (`true` is 1 or 1.0),
//! integers become floats rounded to nearest (`sitofp`; to `f16`/`bf16` through `f32`, as the
//! interpreter rounds twice), floats become integers truncated toward zero, saturated, NaN → 0
//! (`llvm.fptosi.sat`), `f32` narrows to `f16`/`bf16` rounding to nearest even (`cvt.rn.f16.f32`,
//! `cvt.rn.bf16.f32`), half-precision widens exactly, `f16` ↔ `bf16` goes through `f32`, and a
//! number becomes `i1` by `!= 0` (`fcmp une`, so NaN is true).
//!
//! **Math functions** take `f32` (and `abs` integers: `llvm.abs` without poison, so `|MIN| = MIN`).
//! The hardware's approximate instructions are used where the IR allows it:
//!
//! | function | lowering |
//! |---|---|
//! | `exp2`, `log2` | `ex2.approx.f32`, `lg2.approx.f32` (not `ftz`) |
//! | `exp` | `ex2.approx.f32(x · log2 e)` with the rounding error of the product fed back (below) |
//! | `log` | `lg2.approx.f32(x) · ln 2` |
//! | `sqrt` | `sqrt.rn.f32` (IEEE) |
//! | `rsqrt` | `rsqrt.approx.f32` |
//! | `floor`, `ceil`, `abs`, `fma` | `cvt.rmi.f32.f32`, `cvt.rpi.f32.f32`, `abs.f32`, `fma.rn.f32` |
//! | `pow(a, b)` | `ex2.approx.f32(b · lg2.approx.f32(a))` exactly: NaN for `a < 0`, 0 for `a = 0 < b` |
//! | `sigmoid` | `1 / (1 + exp(−x))`, IEEE division: 0 at −∞, 1 at +∞ |
//! | `tanh`, `erf` | formulas below (never `tanh.approx.f32`, whose error is about 5e-4) |
//!
//! The composite functions are written once, generically over [`FloatOps`]: the LLVM emitter
//! implements it with instructions, and the unit tests implement it with plain `f32` arithmetic,
//! so the measured error bounds below are those of the exact operation sequence the GPU runs
//! (except that the tests model `ex2.approx`/`lg2.approx` by correctly rounded functions; the
//! hardware adds its own error of a few ulp).
//!
//! - **exp**: `p = x · L₁` (`L₁` = log₂e rounded to `f32`) loses up to half an ulp of `p`, which
//!   for `|x|` near 80 is a relative error of about 3e-6 in the result. The residual
//!   `r = fma(x, L₁, −p) + x · L₂` (`L₂` = log₂e − L₁) is computed exactly enough and applied as
//!   `2^p · (1 + r · ln 2)`. `x` is first clamped to `[−110, 89]` (beyond which the result is 0
//!   or ∞ anyway) with NaN-preserving selects, so the residual stays small and finite. Measured:
//!   relative error below 1.7e-7 over `[−87, 88]` with an exact `ex2`.
//! - **tanh**: for `|x| < 0.6`, `x + x³ · g(x²)` with `g` a degree-4 near-minimax polynomial
//!   (Chebyshev fit of `(tanh √s − √s) / s^{3/2}` on `s ∈ [0, 0.36]`, computed with mpmath's
//!   `chebyfit` at 40 digits; fit error 3e-8 in `g`, ≤ 1.2e-8 relative in `tanh`); otherwise
//!   `sign(x) · (1 − 2 / (exp(2|x|) + 1))`, which reaches ±1 exactly once `exp(2|x|)` is large
//!   (|x| ≳ 9) and stays ±1 through ∞. NaN propagates. Measured: max abs error 8.9e-8, relative
//!   error below 1.7e-7 for `0 < |x| < 1`.
//! - **erf**: for `|x| < 1`, `x · h(x²)` with `h` a degree-6 near-minimax polynomial (Chebyshev fit
//!   of `erf(√s) / √s` on `s ∈ [0, 1]`, fit error 1.3e-9); otherwise Abramowitz & Stegun 7.1.26,
//!   `1 − (a₁t + a₂t² + a₃t³ + a₄t⁴ + a₅t⁵) · exp(−x²)` with `t = 1 / (1 + p·|x|)`, whose own
//!   error is below 1.5e-7 for all `x ≥ 0`, then the sign of `x`. It is ±1 from `|x| ≈ 3.9` on;
//!   NaN propagates. Measured: max abs error 1.8e-7, relative error below 1.7e-7 for `0 < |x| < 1`.

use inkwell::types::BasicType;
use inkwell::values::{BasicValueEnum, FloatValue};
use inkwell::{FloatPredicate, IntPredicate};
use tile_core::ir::{DType, MathFn, OpData};

use super::lower::{dtype, float, int, Lowerer, OrLlvm, Result};

/// log₂e rounded to `f32`.
const LOG2E_HI: f32 = std::f32::consts::LOG2_E;
/// log₂e − [`LOG2E_HI`], rounded to `f32`.
const LOG2E_LO: f32 = 1.925963e-8;
/// ln 2 rounded to `f32`.
const LN2: f32 = std::f32::consts::LN_2;
/// `exp` clamps its argument to `[EXP_MIN_ARG, EXP_MAX_ARG]`: `e^89` overflows `f32` and
/// `e^−110` is below half the smallest subnormal, so the clamp changes no result.
const EXP_MAX_ARG: f32 = 89.0;
/// See [`EXP_MAX_ARG`].
const EXP_MIN_ARG: f32 = -110.0;

/// `tanh` uses the polynomial below this `|x|`.
const TANH_SMALL: f32 = 0.6;
/// `g(s) ≈ (tanh √s − √s) / s^{3/2}` on `[0, 0.36]`, constant term first.
const TANH_G: [f32; 5] = [
    -0.3333333,
    0.13332915,
    -0.05387395,
    0.02111096,
    -0.0062691197,
];

/// `erf` uses the polynomial below this `|x|`.
const ERF_SMALL: f32 = 1.0;
/// `h(s) ≈ erf(√s) / √s` on `[0, 1]`, constant term first. The constant term is the fit's, one
/// ulp below `2/√π` (the Taylor coefficient): the fit trades it against the others.
#[allow(clippy::approx_constant)]
const ERF_H: [f32; 7] = [
    1.1283791,
    -0.37612626,
    0.11283594,
    -0.026854211,
    0.0051890872,
    -0.00080168643,
    7.875875e-5,
];
/// Abramowitz & Stegun 7.1.26: `p`.
const AS_P: f32 = 0.3275911;
/// Abramowitz & Stegun 7.1.26: `a₁ … a₅`.
const AS_A: [f32; 5] = [0.2548296, -0.28449672, 1.4214138, -1.4531521, 1.0614054];

/// The `f32` operations the composite math functions are written in. Every operation rounds
/// once, as IEEE-754 defines it; `ex2`/`lg2` are the hardware approximations on the GPU.
pub(super) trait FloatOps {
    /// A value.
    type V: Copy;
    /// A constant.
    fn constant(&self, x: f32) -> Result<Self::V>;
    /// `a + b`.
    fn add(&self, a: Self::V, b: Self::V) -> Result<Self::V>;
    /// `a − b`.
    fn sub(&self, a: Self::V, b: Self::V) -> Result<Self::V>;
    /// `a · b`.
    fn mul(&self, a: Self::V, b: Self::V) -> Result<Self::V>;
    /// `a / b`, correctly rounded.
    fn div(&self, a: Self::V, b: Self::V) -> Result<Self::V>;
    /// `a · b + c`, rounded once.
    fn fma(&self, a: Self::V, b: Self::V, c: Self::V) -> Result<Self::V>;
    /// `−a`.
    fn neg(&self, a: Self::V) -> Result<Self::V>;
    /// `|a|`.
    fn abs(&self, a: Self::V) -> Result<Self::V>;
    /// `|mag|` with the sign of `sign`.
    fn copysign(&self, mag: Self::V, sign: Self::V) -> Result<Self::V>;
    /// `2^a` (`ex2.approx.f32`).
    fn ex2(&self, a: Self::V) -> Result<Self::V>;
    /// `if a < b { then } else { other }`: `other` when either is NaN.
    fn select_lt(&self, a: Self::V, b: Self::V, then: Self::V, other: Self::V) -> Result<Self::V>;
}

/// `c[0] + s·(c[1] + s·(c[2] + …))` by Horner's rule with fused multiply-adds.
fn horner<O: FloatOps>(o: &O, s: O::V, c: &[f32]) -> Result<O::V> {
    let mut rev = c.iter().rev();
    let mut acc = o.constant(*rev.next().ok_or("an empty polynomial")?)?;
    for &k in rev {
        acc = o.fma(acc, s, o.constant(k)?)?;
    }
    Ok(acc)
}

/// `e^x` (see the module documentation).
pub(super) fn exp<O: FloatOps>(o: &O, x: O::V) -> Result<O::V> {
    let hi = o.constant(EXP_MAX_ARG)?;
    let lo = o.constant(EXP_MIN_ARG)?;
    // Clamps that keep NaN (a comparison with NaN is false).
    let x = o.select_lt(hi, x, hi, x)?;
    let x = o.select_lt(x, lo, lo, x)?;
    let l1 = o.constant(LOG2E_HI)?;
    let p = o.mul(x, l1)?;
    let r = o.fma(x, l1, o.neg(p)?)?;
    let r = o.fma(x, o.constant(LOG2E_LO)?, r)?;
    let c = o.fma(r, o.constant(LN2)?, o.constant(1.0)?)?;
    o.mul(o.ex2(p)?, c)
}

/// `1 / (1 + e^−x)`.
pub(super) fn sigmoid<O: FloatOps>(o: &O, x: O::V) -> Result<O::V> {
    let one = o.constant(1.0)?;
    let e = exp(o, o.neg(x)?)?;
    o.div(one, o.add(one, e)?)
}

/// `tanh x` (see the module documentation).
///
/// Both branches work on `|x|` and the sign is applied last, so `tanh(−0) = −0`.
pub(super) fn tanh<O: FloatOps>(o: &O, x: O::V) -> Result<O::V> {
    let a = o.abs(x)?;
    let s = o.mul(a, a)?;
    let g = horner(o, s, &TANH_G)?;
    let small = o.fma(o.mul(a, s)?, g, a)?;
    let one = o.constant(1.0)?;
    let e = exp(o, o.add(a, a)?)?;
    let q = o.div(o.constant(2.0)?, o.add(e, one)?)?;
    let large = o.sub(one, q)?;
    let r = o.select_lt(a, o.constant(TANH_SMALL)?, small, large)?;
    o.copysign(r, x)
}

/// `erf x` (see the module documentation).
///
/// Both branches work on `|x|` and the sign is applied last, so `erf(−0) = −0`.
pub(super) fn erf<O: FloatOps>(o: &O, x: O::V) -> Result<O::V> {
    let a = o.abs(x)?;
    let s = o.mul(a, a)?;
    let small = o.mul(a, horner(o, s, &ERF_H)?)?;
    let one = o.constant(1.0)?;
    let t = o.div(one, o.fma(a, o.constant(AS_P)?, one)?)?;
    let poly = o.mul(horner(o, t, &AS_A)?, t)?;
    let e = exp(o, o.neg(s)?)?;
    let large = o.fma(o.neg(poly)?, e, one)?;
    let r = o.select_lt(a, o.constant(ERF_SMALL)?, small, large)?;
    o.copysign(r, x)
}

/// [`FloatOps`] as LLVM instructions on `float` values, without fast-math flags (so LLVM keeps
/// every rounding step).
struct Emit<'l, 'a, 'ctx>(&'l Lowerer<'a, 'ctx>);

impl<'ctx> Emit<'_, '_, 'ctx> {
    fn call(&self, name: &str, args: &[FloatValue<'ctx>]) -> Result<FloatValue<'ctx>> {
        let l = self.0;
        let ty = l.context.f32_type().as_basic_type_enum();
        // The NVVM intrinsics are not overloaded; the generic ones are overloaded on `float`.
        let types = if name.starts_with("llvm.nvvm.") {
            Vec::new()
        } else {
            vec![ty]
        };
        let args: Vec<_> = args.iter().map(|&a| a.into()).collect();
        float(l.intrinsic(name, &types, &args)?)
    }
}

impl<'ctx> FloatOps for Emit<'_, '_, 'ctx> {
    type V = FloatValue<'ctx>;

    fn constant(&self, x: f32) -> Result<Self::V> {
        Ok(self.0.context.f32_type().const_float(f64::from(x)))
    }
    fn add(&self, a: Self::V, b: Self::V) -> Result<Self::V> {
        self.0.builder.build_float_add(a, b, "").llvm()
    }
    fn sub(&self, a: Self::V, b: Self::V) -> Result<Self::V> {
        self.0.builder.build_float_sub(a, b, "").llvm()
    }
    fn mul(&self, a: Self::V, b: Self::V) -> Result<Self::V> {
        self.0.builder.build_float_mul(a, b, "").llvm()
    }
    fn div(&self, a: Self::V, b: Self::V) -> Result<Self::V> {
        self.0.builder.build_float_div(a, b, "").llvm()
    }
    fn fma(&self, a: Self::V, b: Self::V, c: Self::V) -> Result<Self::V> {
        self.call("llvm.fma", &[a, b, c])
    }
    fn neg(&self, a: Self::V) -> Result<Self::V> {
        self.0.builder.build_float_neg(a, "").llvm()
    }
    fn abs(&self, a: Self::V) -> Result<Self::V> {
        self.call("llvm.fabs", &[a])
    }
    fn copysign(&self, mag: Self::V, sign: Self::V) -> Result<Self::V> {
        self.call("llvm.copysign", &[mag, sign])
    }
    fn ex2(&self, a: Self::V) -> Result<Self::V> {
        self.call("llvm.nvvm.ex2.approx.f", &[a])
    }
    fn select_lt(&self, a: Self::V, b: Self::V, then: Self::V, other: Self::V) -> Result<Self::V> {
        let bld = &self.0.builder;
        let c = bld
            .build_float_compare(FloatPredicate::OLT, a, b, "")
            .llvm()?;
        float(bld.build_select(c, then, other, "").llvm()?)
    }
}

impl<'ctx> Lowerer<'_, 'ctx> {
    /// A math function op: slot by slot over its 1 to 3 operands of one type.
    pub(super) fn math_op(&self, m: MathFn, data: &OpData) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let d = dtype(self.result_type(data)?)?;
        let args = (0..m.arity())
            .map(|i| self.operand(data, i))
            .collect::<Result<Vec<_>>>()?;
        let n = args.first().map_or(0, |a| a.len());
        if args.iter().any(|a| a.len() != n) {
            return Err("operands hold different numbers of elements".into());
        }
        (0..n)
            .map(|k| {
                let slot: Vec<BasicValueEnum<'ctx>> = args.iter().map(|a| a[k]).collect();
                self.math(m, d, &slot)
            })
            .collect()
    }

    /// One math function of scalars of type `d`.
    fn math(
        &self,
        m: MathFn,
        d: DType,
        args: &[BasicValueEnum<'ctx>],
    ) -> Result<BasicValueEnum<'ctx>> {
        let arg = |i: usize| {
            args.get(i)
                .copied()
                .ok_or_else(|| format!("`{}` is missing operand #{i}", m.name()))
        };
        let refuse = || Err(format!("`{}` does not take `{d}`", m.name()));
        match d {
            DType::I32 | DType::I64 => match m {
                MathFn::Abs => {
                    let x = int(arg(0)?)?;
                    let no_poison = self.context.bool_type().const_zero();
                    self.intrinsic(
                        "llvm.abs",
                        &[x.get_type().into()],
                        &[x.into(), no_poison.into()],
                    )
                }
                MathFn::Exp
                | MathFn::Exp2
                | MathFn::Log
                | MathFn::Log2
                | MathFn::Sqrt
                | MathFn::Rsqrt
                | MathFn::Erf
                | MathFn::Tanh
                | MathFn::Sigmoid
                | MathFn::Floor
                | MathFn::Ceil
                | MathFn::Pow
                | MathFn::Fma => refuse(),
            },
            DType::F32 => {
                let x = float(arg(0)?)?;
                let o = Emit(self);
                let v = match m {
                    MathFn::Exp => exp(&o, x)?,
                    MathFn::Exp2 => o.ex2(x)?,
                    MathFn::Log => {
                        o.mul(o.call("llvm.nvvm.lg2.approx.f", &[x])?, o.constant(LN2)?)?
                    }
                    MathFn::Log2 => o.call("llvm.nvvm.lg2.approx.f", &[x])?,
                    MathFn::Sqrt => o.call("llvm.sqrt", &[x])?,
                    MathFn::Rsqrt => o.call("llvm.nvvm.rsqrt.approx.f", &[x])?,
                    MathFn::Erf => erf(&o, x)?,
                    MathFn::Tanh => tanh(&o, x)?,
                    MathFn::Sigmoid => sigmoid(&o, x)?,
                    MathFn::Abs => o.abs(x)?,
                    MathFn::Floor => o.call("llvm.floor", &[x])?,
                    MathFn::Ceil => o.call("llvm.ceil", &[x])?,
                    MathFn::Pow => {
                        let lg = o.call("llvm.nvvm.lg2.approx.f", &[x])?;
                        o.ex2(o.mul(float(arg(1)?)?, lg)?)?
                    }
                    MathFn::Fma => o.fma(x, float(arg(1)?)?, float(arg(2)?)?)?,
                };
                Ok(v.into())
            }
            DType::I1 | DType::F16 | DType::BF16 => refuse(),
        }
    }

    /// `cast`: slot by slot from the operand's element type to the result's.
    pub(super) fn cast_op(&self, data: &OpData) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let to = dtype(self.result_type(data)?)?;
        let from = dtype(self.f.ty(*data.operands.first().ok_or("missing operand")?))?;
        self.operand(data, 0)?
            .iter()
            .map(|&v| self.cast(from, to, v))
            .collect()
    }

    /// One element converted from `from` to `to` (see the module documentation).
    fn cast(
        &self,
        from: DType,
        to: DType,
        v: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        use DType::{BF16, F16, F32, I1, I32, I64};
        let b = &self.builder;
        let ctx = self.context;
        let f32_ty = ctx.f32_type();
        let int_ty = |d: DType| match d {
            I64 => ctx.i64_type(),
            I1 | I32 | F16 | BF16 | F32 => ctx.i32_type(),
        };
        let half_ty = |d: DType| match d {
            BF16 => ctx.bf16_type(),
            I1 | I32 | I64 | F16 | F32 => ctx.f16_type(),
        };
        Ok(match (from, to) {
            (I1, I1) | (I32, I32) | (I64, I64) | (F16, F16) | (BF16, BF16) | (F32, F32) => v,
            (I32 | I64, I1) => {
                let x = int(v)?;
                b.build_int_compare(IntPredicate::NE, x, x.get_type().const_zero(), "")
                    .llvm()?
                    .into()
            }
            (F16 | BF16 | F32, I1) => {
                let x = float(v)?;
                b.build_float_compare(FloatPredicate::UNE, x, x.get_type().const_zero(), "")
                    .llvm()?
                    .into()
            }
            (I1, I32 | I64) => b.build_int_z_extend(int(v)?, int_ty(to), "").llvm()?.into(),
            (I32, I64) => b.build_int_s_extend(int(v)?, int_ty(to), "").llvm()?.into(),
            (I64, I32) => b.build_int_truncate(int(v)?, int_ty(to), "").llvm()?.into(),
            (I1, F32) => b
                .build_unsigned_int_to_float(int(v)?, f32_ty, "")
                .llvm()?
                .into(),
            (I32 | I64, F32) => b
                .build_signed_int_to_float(int(v)?, f32_ty, "")
                .llvm()?
                .into(),
            (I1 | I32 | I64, F16 | BF16) => {
                let x = float(self.cast(from, F32, v)?)?;
                b.build_float_trunc(x, half_ty(to), "").llvm()?.into()
            }
            (F16 | BF16 | F32, I32 | I64) => {
                let x = self.cast(from, F32, v)?;
                let ty = int_ty(to);
                self.intrinsic("llvm.fptosi.sat", &[ty.into(), f32_ty.into()], &[x.into()])?
            }
            (F32, F16 | BF16) => b
                .build_float_trunc(float(v)?, half_ty(to), "")
                .llvm()?
                .into(),
            (F16 | BF16, F32) => b.build_float_ext(float(v)?, f32_ty, "").llvm()?.into(),
            (F16, BF16) | (BF16, F16) => {
                let x = float(self.cast(from, F32, v)?)?;
                b.build_float_trunc(x, half_ty(to), "").llvm()?.into()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`FloatOps`] in plain `f32`: the same operation sequence as the GPU, with correctly rounded
    /// `exp2` standing in for `ex2.approx.f32`.
    struct Model;

    impl FloatOps for Model {
        type V = f32;
        fn constant(&self, x: f32) -> Result<f32> {
            Ok(x)
        }
        fn add(&self, a: f32, b: f32) -> Result<f32> {
            Ok(a + b)
        }
        fn sub(&self, a: f32, b: f32) -> Result<f32> {
            Ok(a - b)
        }
        fn mul(&self, a: f32, b: f32) -> Result<f32> {
            Ok(a * b)
        }
        fn div(&self, a: f32, b: f32) -> Result<f32> {
            Ok(a / b)
        }
        fn fma(&self, a: f32, b: f32, c: f32) -> Result<f32> {
            Ok(a.mul_add(b, c))
        }
        fn neg(&self, a: f32) -> Result<f32> {
            Ok(-a)
        }
        fn abs(&self, a: f32) -> Result<f32> {
            Ok(a.abs())
        }
        fn copysign(&self, mag: f32, sign: f32) -> Result<f32> {
            Ok(mag.copysign(sign))
        }
        fn ex2(&self, a: f32) -> Result<f32> {
            Ok(a.exp2())
        }
        fn select_lt(&self, a: f32, b: f32, then: f32, other: f32) -> Result<f32> {
            Ok(if a < b { then } else { other })
        }
    }

    fn run(g: fn(&Model, f32) -> Result<f32>, x: f32) -> f32 {
        g(&Model, x).expect("f32 arithmetic does not fail")
    }

    /// `erf` in `f64` by the series `erf x = 2x/√π · e^{−x²} · Σ (2x²)ⁿ / (1·3·…·(2n+1))`, whose
    /// terms are all positive (no cancellation); `|x| > 6` is ±1 to `f64` precision.
    fn erf_f64(x: f64) -> f64 {
        if x.is_nan() {
            return x;
        }
        if x.abs() > 6.0 {
            return x.signum();
        }
        let two_x2 = 2.0 * x * x;
        let (mut term, mut sum) = (1.0f64, 1.0f64);
        let mut n = 0.0;
        while term > sum * 1e-18 {
            n += 1.0;
            term *= two_x2 / (2.0 * n + 1.0);
            sum += term;
        }
        2.0 * x / std::f64::consts::PI.sqrt() * (-x * x).exp() * sum
    }

    /// A dense grid over `[lo, hi]` plus the points near zero where relative accuracy matters.
    fn grid(lo: f32, hi: f32, n: u32) -> impl Iterator<Item = f32> {
        let step = (hi - lo) / n as f32;
        (0..=n)
            .map(move |i| lo + step * i as f32)
            .chain((-60..=0).flat_map(|e| [2f32.powi(e) * 1.37, -(2f32.powi(e) * 0.71)]))
    }

    /// Documents the error bounds of the module documentation; prints the measured maxima.
    #[test]
    fn composite_function_errors() {
        let mut tanh_abs = 0f64;
        let mut erf_abs = 0f64;
        let mut tanh_rel_small = 0f64;
        let mut erf_rel_small = 0f64;
        for x in grid(-12.0, 12.0, 600_000) {
            let xd = f64::from(x);
            let t = f64::from(run(tanh, x));
            let e = f64::from(run(erf, x));
            let (tr, er) = (xd.tanh(), erf_f64(xd));
            tanh_abs = tanh_abs.max((t - tr).abs());
            erf_abs = erf_abs.max((e - er).abs());
            if x.abs() < 1.0 && x != 0.0 {
                tanh_rel_small = tanh_rel_small.max(((t - tr) / tr).abs());
                erf_rel_small = erf_rel_small.max(((e - er) / er).abs());
            }
        }
        let mut exp_rel = 0f64;
        for x in grid(-87.0, 88.0, 700_000) {
            let r = f64::from(x).exp();
            exp_rel = exp_rel.max(((f64::from(run(exp, x)) - r) / r).abs());
        }
        let mut sigmoid_rel = 0f64;
        for x in grid(-80.0, 80.0, 400_000) {
            let r = 1.0 / (1.0 + (-f64::from(x)).exp());
            sigmoid_rel = sigmoid_rel.max(((f64::from(run(sigmoid, x)) - r) / r).abs());
        }
        println!("tanh: max abs error {tanh_abs:.3e}, max rel error for 0 < |x| < 1 {tanh_rel_small:.3e}");
        println!(
            "erf:  max abs error {erf_abs:.3e}, max rel error for 0 < |x| < 1 {erf_rel_small:.3e}"
        );
        println!("exp:  max rel error over [-87, 88] {exp_rel:.3e}");
        println!("sigmoid: max rel error over [-80, 80] {sigmoid_rel:.3e}");
        assert!(tanh_abs <= 2e-7, "tanh: {tanh_abs:e}");
        assert!(erf_abs <= 2e-7, "erf: {erf_abs:e}");
        assert!(tanh_rel_small <= 2.5e-7, "tanh near 0: {tanh_rel_small:e}");
        assert!(erf_rel_small <= 2.5e-7, "erf near 0: {erf_rel_small:e}");
        assert!(exp_rel <= 2e-7, "exp: {exp_rel:e}");
        assert!(sigmoid_rel <= 3e-7, "sigmoid: {sigmoid_rel:e}");
    }

    /// Special values: infinities, NaN, signed zeros, and where the functions saturate.
    #[test]
    fn composite_function_special_values() {
        let inf = f32::INFINITY;
        for (x, want) in [(inf, 1.0), (-inf, -1.0), (10.5, 1.0), (-20.0, -1.0)] {
            assert_eq!(run(tanh, x), want, "tanh({x})");
        }
        for (x, want) in [(inf, 1.0), (-inf, -1.0), (4.5, 1.0), (-100.0, -1.0)] {
            assert_eq!(run(erf, x), want, "erf({x})");
        }
        for (x, want) in [(inf, 1.0), (-inf, 0.0), (200.0, 1.0), (-200.0, 0.0)] {
            assert_eq!(run(sigmoid, x), want, "sigmoid({x})");
        }
        for (x, want) in [
            (inf, inf),
            (-inf, 0.0),
            (100.0, inf),
            (-200.0, 0.0),
            (0.0, 1.0),
        ] {
            assert_eq!(run(exp, x), want, "exp({x})");
        }
        for g in [tanh, erf, exp, sigmoid] {
            assert!(run(g, f32::NAN).is_nan());
        }
        // Odd functions keep the sign of zero.
        assert!(run(tanh, -0.0).is_sign_negative() && run(erf, -0.0).is_sign_negative());
        assert!(run(tanh, 0.0).is_sign_positive() && run(erf, 0.0).is_sign_positive());
    }

    /// The `f64` erf reference agrees with known values.
    #[test]
    fn erf_reference() {
        for (x, want) in [
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.5, 0.999_999_256_901_627_7),
        ] {
            assert!(
                (erf_f64(x) - want).abs() < 1e-15,
                "erf({x}) = {}",
                erf_f64(x)
            );
        }
    }
}
