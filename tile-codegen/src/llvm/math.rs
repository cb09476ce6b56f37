//! Lowering of `cast` and of the math functions ([`MathFn`]).
//!
//! **Casts** follow the IR's definition (and the interpreter's `cast`): integers widen by sign
//! extension and narrow by truncation, booleans widen by zero extension (`true` is 1 or 1.0),
//! integers become floats rounded to nearest (`sitofp`; to `f16`/`bf16` through `f32`, as the
//! interpreter rounds twice), floats become integers truncated toward zero, saturated, NaN → 0
//! (`llvm.fptosi.sat`), `f32` narrows to `f16`/`bf16` rounding to nearest even (two elements per
//! `cvt.rn.f16x2.f32` / `cvt.rn.bf16x2.f32`), half-precision widens exactly (`bf16` by a 16-bit
//! shift, which LLVM folds into the unpacking of loaded pairs), `f16` ↔ `bf16` goes through `f32`,
//! and a number becomes `i1` by `!= 0` (`fcmp une`, so NaN is true).
//!
//! **Math functions** take `f32` (and `abs` integers: `llvm.abs` without poison, so `|MIN| = MIN`).
//! The hardware's approximate instructions are used where the IR allows it:
//!
//! | function | lowering |
//! |---|---|
//! | `exp2` | `ex2.approx.ftz.f32`: results below 2⁻¹²⁶ (subnormal) are 0 |
//! | `log2` | `lg2.approx.f32` (not `ftz`) |
//! | `exp` | `ex2.approx.ftz.f32(x · log2 e)` with the rounding error of the product fed back (below); subnormal results may be 0 |
//! | `log` | `lg2.approx.f32(x) · ln 2`; for `|x − 1| < 0.3` the series of `2 atanh((x−1)/(x+1))` (below) |
//! | `sqrt` | `sqrt.rn.f32` (IEEE) |
//! | `rsqrt` | `rsqrt.approx.f32` |
//! | `floor`, `ceil`, `abs`, `fma` | `cvt.rmi.f32.f32`, `cvt.rpi.f32.f32`, `abs.f32`, `fma.rn.f32` |
//! | `pow(a, b)` | `ex2.approx.f32(b · lg2.approx.f32(a))` exactly: NaN for `a < 0`, 0 for `a = 0 < b` |
//! | `sigmoid` | `rcp.approx.ftz(1 + exp(−x))`, `exp` as below but `ex2.approx.ftz`: 0 at −∞, 1 at +∞ |
//! | `tanh`, `erf`, `gelu` | formulas below (never `tanh.approx.f32`, whose error is about 5e-4) |
//! | `sin`, `cos` | `|x|` reduced by `j = rint(|x|·2/π)` and π/2 in three `f32` parts (three FMAs), Taylor polynomials of degree 9 and 10 on `[−π/4, π/4]`, chosen and signed by the quadrant `j mod 4` (never `sin.approx.f32`, whose error grows away from `[−π, π]`) |
//!
//! The composite functions are written once, generically over [`FloatOps`]: the LLVM emitter
//! implements it with instructions, and the unit tests implement it with plain `f32` arithmetic,
//! so the measured error bounds below are those of the exact operation sequence the GPU runs. The
//! tests model the hardware's approximations as the correctly rounded result moved by −1, 0 or +1
//! times its documented worst case (`ex2.approx`: relative 2⁻²², `rcp.approx`: 1 ulp), every
//! combination; "worst case" below is the largest error over those, "exact" the one with none.
//! "H200" is the error measured on the GPU over every `f32` of the range (every third one for
//! `exp` and `sigmoid`).
//!
//! Inside `tanh`, `erf` and `sigmoid` there is no IEEE division (`div.rn.f32`/`rcp.rn.f32`, a
//! long instruction sequence with a slow path) and the exponential's argument is bounded or its
//! subnormal results do not matter, so they use `ex2.approx.ftz.f32` and `rcp.approx.ftz.f32`,
//! one MUFU instruction each (the non-`ftz` forms scale around it: 3 more instructions). `exp` and
//! `exp2` flush too: their subnormal results (`e^x` for `x < −87.3`, `2^x` for `x < −126`) are 0
//! (`exp` may keep a result just below 2⁻¹²⁶, where its last multiply rounds there),
//! as with Triton's `tl.exp`/`tl.exp2` and CUDA's `exp2f` under `-ftz`. Those 3 instructions were
//! a third of the floating-point work of an attention loop's online softmax, and a value below
//! 1.2e-38 is lost in any sum with a normal value (a softmax's) and in any conversion to f16.
//! Inside `tanh`, `erf` and `sigmoid` flushing changes no result: `2^p` is subnormal only where
//! the function is already 0, ±1 or 1 to `f32`
//! precision, except that `sigmoid` is 0 instead of a subnormal below about −87.3. The sign of
//! `tanh` and `erf` is applied with PTX's `copysign.f32` (inline asm: LLVM 19 expands
//! `llvm.copysign` into six instructions, ptxas makes one `LOP3` of this).
//!
//! - **exp**: `p = x · L₁` (`L₁` = log₂e rounded to `f32`) loses up to half an ulp of `p`, which
//!   for `|x|` near 80 is a relative error of about 3e-6 in the result. The residual
//!   `r = fma(x, L₁, −p) + x · L₂` (`L₂` = log₂e − L₁) is computed exactly enough and applied as
//!   `2^p · c` with `c = min(|1 + r · ln 2|, 2)`. `min.f32` returns its other operand for NaN, so
//!   where the residual is not finite (`x = ±∞`, where it is NaN, or `|x| > 2.3e38`, where `p`
//!   overflows) `c` is 2 and `2^p` (0 or ∞) decides; otherwise `|r| < 2⁻¹⁵` and `c` is the
//!   correction. This replaces clamping `x` to `[−110, 89]` (two selects). Measured: relative
//!   error over `[−87, 88]` 1.7e-7 exact, 4.0e-7 worst case, 2.5e-7 on the H200.
//! - **sigmoid**: `1 / (1 + e^{−x})` with `e^{−x}` as in `exp` (`p = x · (−L₁)`, the residual
//!   `x·L₁ + p + x·L₂` by two FMAs with the sign folded into the constants), then
//!   `rcp(fma(2^p, c, 1))`. Measured: relative error over `[−80, 80]` 1.8e-7 exact, 5.3e-7 worst
//!   case, 2.9e-7 on the H200.
//! - **tanh**: for `|x| < 0.4`, `|x| + |x|³ · g(x²)` with `g` a degree-2 polynomial (weighted
//!   minimax fit of `(tanh √s − √s) / s^{3/2}` on `s ∈ [0, 0.16]` for the relative error of
//!   `tanh`, by linear programming on mpmath values, the coefficients rounded to `f32` one at a
//!   time from the constant term with the rest refitted; fit error 1.2e-7); otherwise
//!   `1 − 2 · rcp(2^{|x| · 2log₂e} + 1)`, with the plain `ex2` (the argument's rounding is a
//!   relative error of 2⁻²⁴·|p|·ln 2 in `e^{2|x|}`, below 1e-7 in the result, whose error is
//!   `2/(e^{2|x|}+1)` times it). It reaches 1 exactly once `2^p` is large (|x| ≳ 9) and stays 1
//!   through ∞ (`rcp(∞) = 0`). Then the sign of `x`; NaN propagates. Measured: max abs error
//!   9.0e-8 exact, 2.2e-7 worst case, 1.2e-7 on the H200; relative error for `0 < |x| < 0.4`
//!   1.7e-7 (H200 1.7e-7), for `0 < |x| < 1` 1.7e-7 exact, 5.7e-7 worst case, 2.4e-7 on the H200.
//! - **erf**: for `|x| < 0.5`, `|x| · h(x²)` with `h` a cubic (the same kind of fit, of
//!   `erf(√s) / √s` on `s ∈ [0, 0.25]`, fit error 1.6e-7 relative; its constant term is 2 ulp
//!   below 2/√π); otherwise `1 − 2^{P(|x|)}` with `P` a quintic fitted to `log₂ erfc` on
//!   `[0.5, 4]`, weighted for the absolute error of `erf` (which is `erfc · ln 2` times the
//!   error of `P`, so the fit may loosen as `erfc` falls): no `exp(−x²)` and no division, one
//!   `ex2` fed by six FMAs. `P`'s leading coefficient is negative and `P < −26` on `[4, ∞)`
//!   (`P(∞) = −∞`), so the result is exactly 1 from `|x| ≈ 3.9` on with no clamp. Then the
//!   sign of `x`; NaN propagates. Measured: max abs error 2.3e-7 exact, 3.3e-7 worst case,
//!   2.6e-7 on the H200; relative error for `0 < |x| < 0.5` 2.6e-7 (H200 2.7e-7), for
//!   `0 < |x| < 1` 4.0e-7 exact, 6.0e-7 worst case, 5.0e-7 on the H200.
//! - **gelu**: `x · Φ(x)` as `max(x, 0) − a · 2^{Q(a)}` with `a = min(|x|, 14)` and `Q` a
//!   degree-6 fit of `log₂ Φ(−a)` on `[0, 6]` (`Φ(−a) = 1 − Φ(a)`, so both signs are one
//!   expression: `x − a·Φ(−a)` for `x ≥ 0`, `−a·Φ(−a)` below), weighted for the absolute error of
//!   `Φ`, with `Q` held below `log₂ Φ(−a) + 0.5` on `[6, 14]`; `Q(14) ≈ −163`, so past the
//!   clamp `2^Q` flushes to 0 and the result is `max(x, 0)` exactly (`+∞` at `+∞`, 0 at `−∞`,
//!   and `∞ · 0` never happens). `max` is `max.NaN.f32`, so NaN propagates. One `ex2` fed by six
//!   FMAs, two min/max and one FMA: 10 SASS instructions, against 17 for
//!   `w + w · erf(x / √2)` (`w = x / 2`: two multiplies, erf, one FMA). Measured (test
//!   `gelu_errors`, against libm's `erfc` in `f64`, over `[−16, 16]`), the formula's and beside
//!   it the erf formula's: `|error| / |x|` 2.0e-7 exact, 2.8e-7 worst case (1.5e-7, 2.1e-7);
//!   relative error for `x > 0` 3.2e-7, 5.0e-7 (1.9e-7, 2.6e-7); for `−3 < x < 0` 4.7e-5
//!   (4.7e-5); for `−6 < x < −3`, where `Φ` is below 1.4e-3, 8.4e-2, where the erf formula's
//!   `1 + erf` cancels to 100%; largest absolute error 5.1e-7 (5.6e-7). On the H100 (test
//!   `gpu_gelu`, 42,000 points of `[−20, 20]` and `[−370, 370]`) `|error| / |x|` 1.9e-7.
//!
//! - **log**: `lg2.approx`'s error is absolute near 1 (2⁻²²·⁶), a large relative error of the
//!   result there (a uniform `u` near 1 in `randn`'s `sqrt(−2 log u)` would be off by 1e-4),
//!   so `|x − 1| < 0.3` takes `2t + t³·L(t²)`, `t = (x − 1)·rcp(x + 1)`, Taylor coefficients of
//!   `2 atanh t`. Measured on the models (worst case, the reciprocal 1 ulp off), relative error 3.1e-7 for
//!   `|x − 1| < 0.3`, and 4.1e-7 just outside it, where `lg2.approx` still decides (it was
//!   unbounded near 1 before).
//! - **sin, cos**: measured on the exact model (no approximate instruction is involved), max
//!   absolute error 6.8e-8 over `[−100, 100]` and 6.5e-8 over `[−10⁵, 10⁵]`, relative error of
//!   `sin` below 0.5 5.9e-8. Beyond about 10⁵ the reduction's three parts no longer hold `j·π/2`
//!   exactly enough and the error grows with `|x|`; ±∞ and NaN give NaN.
//!
//! These bounds are well inside the ones promised for the IR's math functions (`tanh`, `erf`:
//! absolute error ≤ 2e-6; `exp`, `sigmoid`: relative error ≤ 2e-6 over the ranges above). The
//! previous forms (a degree-4 and a degree-6 polynomial near 0, and for large `|x|` the
//! compensated `exp` with IEEE division, and Abramowitz & Stegun 7.1.26 for `erf`) measured
//! 9e-8 (`tanh`) and 1.8e-7 (`erf`) absolute, at two to three times the cost. Cost per element,
//! in PTX instructions (test `math_instruction_counts` in `tests/llvm.rs`) and in SASS
//! instructions for sm_90a in a kernel of 8 elements per thread (ptxas 12.9; including about 2
//! per element of loads, stores and addresses), before → after:
//!
//! | function | PTX | SASS |
//! |---|---|---|
//! | `exp` | 11 → 9 | 13.1 → 12.1 |
//! | `tanh` | 31 → 14 | 39.0 (2 MUFU, + the division's slow path) → 14.2 (2 MUFU) |
//! | `erf` | 39 → 17 | 48.0 (2 MUFU, + the division's slow path) → 16.2 (1 MUFU) |
//! | `sigmoid` | 14 → 9 | 27.5 (2 MUFU, + the reciprocal's slow path) → 10.1 (2 MUFU) |
//!
//! On an H200, `y = GELU(x + bias)` on 16384×4096 (example `fused_bias_gelu`, fused) went in bf16
//! from 0.130 to 0.080 ms with erf (49% → 80% of the copy bandwidth) and from 0.122 to 0.083 ms
//! with tanh (52% → 77%); in f32 from 90–93% to 95–96%.

use inkwell::types::BasicType;
use inkwell::values::{BasicValueEnum, FloatValue};
use inkwell::{FloatPredicate, IntPredicate};
use tile_core::ir::{DType, Elem, MathFn, OpData};

use super::lower::{bug, dtype, float, int, Lowerer, OrBug, OrLlvm, Result};

/// π/2 as the sum of three `f32`s (each the rounding of what the previous ones leave), for the
/// argument reduction of `sin` and `cos`.
const PIO2: [f32; 3] = [1.570_796_4, -4.371_139e-8, -1.715_124_5e-15];
/// 2/π rounded to `f32`.
const TWO_OVER_PI: f32 = 0.636_619_75;
/// `sin r = r + r³ · S(r²)` on `|r| ≤ π/4`: the Taylor coefficients −1/3!, 1/5!, −1/7!, 1/9!
/// rounded to `f32` (the first omitted term is below 2⁻²⁸ of the result there).
const SIN_S: [f32; 4] = [
    -0.166_666_67,
    0.008_333_334,
    -0.000_198_412_7,
    2.755_731_9e-6,
];
/// `cos r = 1 + r² · C(r²)` on `|r| ≤ π/4`: −1/2!, 1/4!, −1/6!, 1/8!, −1/10! rounded to `f32`.
const COS_C: [f32; 5] = [
    -0.5,
    0.041_666_668,
    -0.001_388_888_9,
    2.480_158_8e-5,
    -2.755_732e-7,
];

/// log₂e rounded to `f32`.
const LOG2E_HI: f32 = std::f32::consts::LOG2_E;
/// log₂e − [`LOG2E_HI`], rounded to `f32`.
const LOG2E_LO: f32 = 1.925963e-8;
/// ln 2 rounded to `f32`.
const LN2: f32 = std::f32::consts::LN_2;
/// 2·log₂e rounded to `f32` (exactly twice [`LOG2E_HI`]).
const TWO_LOG2E: f32 = 2.0 * LOG2E_HI;

/// `tanh` uses the polynomial below this `|x|`.
const TANH_SMALL: f32 = 0.4;
/// `g(s) ≈ (tanh √s − √s) / s^{3/2}` on `[0, 0.16]`, constant term first.
const TANH_G: [f32; 3] = [-0.33331883, 0.13277641, -0.047794703];

/// `erf` uses the polynomial below this `|x|`.
const ERF_SMALL: f32 = 0.5;
/// `h(s) ≈ erf(√s) / √s` on `[0, 0.25]`, constant term first. The constant term is the fit's, 2 ulp
/// below `2/√π` (the Taylor coefficient): the fit trades it against the others.
#[allow(clippy::approx_constant)]
const ERF_H: [f32; 4] = [1.128379, -0.37610734, 0.112464495, -0.024422063];
/// `P(a) ≈ log₂ erfc(a)` on `[0.5, 4]`, constant term first, fitted for the absolute error of
/// `1 − 2^P`. Its leading coefficient is negative and `P < −26` on `[4, ∞)`, so `1 − 2^P` is
/// exactly 1 there with no clamp.
const ERF_P: [f32; 6] = [
    -0.00040006734,
    -1.6254766,
    -0.92397904,
    -0.14287879,
    0.026739897,
    -0.002420828,
];

/// `gelu` clamps `|x|` to this before its polynomial: `Q(14) ≈ −163`, so `2^Q` flushes to 0 and
/// the result is `max(x, 0)` exactly, and the product `|x| · 2^Q` is never `∞ · 0`.
const GELU_CLAMP: f32 = 14.0;
/// `Q(a) ≈ log₂ Φ(−a)` (`Φ` the standard normal distribution function) on `[0, 6]`, constant term
/// first: a minimax fit of the absolute error of `2^Q` (weighted by `Φ(−a)`), by linear
/// programming on mpmath values, with `Q ≤ log₂ Φ(−a) + 0.5` imposed on `[6, 14]` so that the
/// tail stays below the function it replaces; the coefficients rounded to `f32` one at a time
/// from the constant term with the rest refitted.
const GELU_Q: [f32; 7] = [
    -0.999_999_76,
    -1.151_120_9,
    -0.459_062_5,
    -0.052_961_707,
    0.007_751_874_6,
    -0.000_658_403_7,
    1.934_453_4e-5,
];

/// The `f32` operations the composite math functions are written in. Every arithmetic operation
/// rounds once, as IEEE-754 defines it; `ex2`, `ex2_ftz` and `rcp_ftz` are the hardware's
/// approximations.
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
    /// `a · b + c`, rounded once.
    fn fma(&self, a: Self::V, b: Self::V, c: Self::V) -> Result<Self::V>;
    /// `−a`.
    fn neg(&self, a: Self::V) -> Result<Self::V>;
    /// `|a|`.
    fn abs(&self, a: Self::V) -> Result<Self::V>;
    /// The smaller of `a` and `b`; the other one when one is NaN (`min.f32`).
    fn min(&self, a: Self::V, b: Self::V) -> Result<Self::V>;
    /// The larger of `a` and `b`, NaN when either is NaN, `+0` above `−0` (`max.NaN.f32`).
    fn max_nan(&self, a: Self::V, b: Self::V) -> Result<Self::V>;
    /// `|mag|` with the sign of `sign`.
    fn copysign(&self, mag: Self::V, sign: Self::V) -> Result<Self::V>;
    /// `2^a` (`ex2.approx.f32`).
    fn ex2(&self, a: Self::V) -> Result<Self::V>;
    /// `2^a`, subnormal arguments and results flushed to zero (`ex2.approx.ftz.f32`).
    fn ex2_ftz(&self, a: Self::V) -> Result<Self::V>;
    /// `lg2.approx.f32` (absolute error about 2⁻²² near 1, relative elsewhere).
    fn lg2(&self, a: Self::V) -> Result<Self::V>;
    /// `1 / a`, subnormal arguments and results flushed to zero (`rcp.approx.ftz.f32`).
    fn rcp_ftz(&self, a: Self::V) -> Result<Self::V>;
    /// `if a < b { then } else { other }`: `other` when either is NaN.
    fn select_lt(&self, a: Self::V, b: Self::V, then: Self::V, other: Self::V) -> Result<Self::V>;
    /// Round to the nearest integer, ties to even (`cvt.rni.f32.f32`).
    fn rint(&self, a: Self::V) -> Result<Self::V>;
    /// Round toward −∞ (`cvt.rmi.f32.f32`).
    fn floor(&self, a: Self::V) -> Result<Self::V>;
}

/// `c[0] + s·(c[1] + s·(c[2] + …))` by Horner's rule with fused multiply-adds.
fn horner<O: FloatOps>(o: &O, s: O::V, c: &[f32]) -> Result<O::V> {
    let mut rev = c.iter().rev();
    let mut acc = o.constant(*rev.next().or_bug("a coefficient"))?;
    for &k in rev {
        acc = o.fma(acc, s, o.constant(k)?)?;
    }
    Ok(acc)
}

/// `|1 + r·k|`, the factor that corrects `2^p` for the residual of its exponent (`r·k` with
/// `k = ±ln 2`, the sign matching how `r` was computed), or 2 where `r` is not finite (the
/// argument was infinite, or `p` overflowed), which leaves `2^p` at 0 or ∞ (see the module
/// documentation).
fn exp_correction<O: FloatOps>(o: &O, r: O::V, k: f32) -> Result<O::V> {
    let c = o.fma(r, o.constant(k)?, o.constant(1.0)?)?;
    o.min(o.abs(c)?, o.constant(2.0)?)
}

/// `e^x` (see the module documentation).
pub(super) fn exp<O: FloatOps>(o: &O, x: O::V) -> Result<O::V> {
    let l1 = o.constant(LOG2E_HI)?;
    let p = o.mul(x, l1)?;
    let r = o.fma(x, l1, o.neg(p)?)?;
    let r = o.fma(x, o.constant(LOG2E_LO)?, r)?;
    // `c` is within 2⁻¹⁴ of 1 wherever `2^p` is finite and nonzero, so flushing `2^p` (below
    // 2⁻¹²⁶) flushes the subnormal results; the multiply may still round one just below 2⁻¹²⁶.
    o.mul(o.ex2_ftz(p)?, exp_correction(o, r, LN2)?)
}

/// `1 / (1 + e^−x)` (see the module documentation).
pub(super) fn sigmoid<O: FloatOps>(o: &O, x: O::V) -> Result<O::V> {
    // p = −x·log₂e rounded; −(the residual) = x·L₁ + p + x·L₂, with no negation to spend.
    let p = o.mul(x, o.constant(-LOG2E_HI)?)?;
    let r = o.fma(x, o.constant(LOG2E_HI)?, p)?;
    let r = o.fma(x, o.constant(LOG2E_LO)?, r)?;
    let c = exp_correction(o, r, -LN2)?;
    o.rcp_ftz(o.fma(o.ex2_ftz(p)?, c, o.constant(1.0)?)?)
}

/// `tanh x` (see the module documentation).
///
/// Both branches work on `|x|` and the sign is applied last, so `tanh(−0) = −0`.
pub(super) fn tanh<O: FloatOps>(o: &O, x: O::V) -> Result<O::V> {
    let a = o.abs(x)?;
    let s = o.mul(a, a)?;
    let small = o.fma(o.mul(a, s)?, horner(o, s, &TANH_G)?, a)?;
    let one = o.constant(1.0)?;
    let e = o.ex2_ftz(o.mul(a, o.constant(TWO_LOG2E)?)?)?;
    let q = o.rcp_ftz(o.add(e, one)?)?;
    let large = o.fma(o.constant(-2.0)?, q, one)?;
    let r = o.select_lt(a, o.constant(TANH_SMALL)?, small, large)?;
    o.copysign(r, x)
}

/// `erf x` (see the module documentation).
///
/// Both branches work on `|x|` and the sign is applied last, so `erf(−0) = −0`.
pub(super) fn erf<O: FloatOps>(o: &O, x: O::V) -> Result<O::V> {
    let a = o.abs(x)?;
    let small = o.mul(a, horner(o, o.mul(a, a)?, &ERF_H)?)?;
    let large = o.sub(o.constant(1.0)?, o.ex2_ftz(horner(o, a, &ERF_P)?)?)?;
    let r = o.select_lt(a, o.constant(ERF_SMALL)?, small, large)?;
    o.copysign(r, x)
}

/// The exact GELU `x · Φ(x)` (see the module documentation): `max(x, 0) − a · 2^{Q(a)}` with
/// `a = min(|x|, 14)`, one FMA.
pub(super) fn gelu<O: FloatOps>(o: &O, x: O::V) -> Result<O::V> {
    let a = o.min(o.abs(x)?, o.constant(GELU_CLAMP)?)?;
    let h = o.ex2_ftz(horner(o, a, &GELU_Q)?)?;
    o.fma(o.neg(a)?, h, o.max_nan(x, o.constant(0.0)?)?)
}

/// Where `log` uses the series instead of `lg2.approx`: `|x − 1|` below this.
const LOG_NEAR_ONE: f32 = 0.3;
/// `log x = 2t + t³ · L(t²)` with `t = (x − 1)/(x + 1)`: 2/3, 2/5, 2/7, 2/9 (the series of
/// `2 atanh t`; on `|x − 1| < 0.3`, `|t| < 0.18` and the first omitted term is below 2⁻²⁸ of
/// the result).
const LOG_L: [f32; 4] = [0.666_666_7, 0.4, 0.285_714_3, 0.222_222_22];

/// `ln x`: `lg2.approx(x) · ln 2`, except near 1, where `lg2.approx`'s error is absolute
/// (about 2⁻²²) and would be a large relative error of a result near 0: there the series of
/// `2 atanh((x − 1)/(x + 1))` (`x − 1` is exact, the reciprocal `rcp.approx.ftz`).
pub(super) fn log<O: FloatOps>(o: &O, x: O::V) -> Result<O::V> {
    let one = o.constant(1.0)?;
    let far = o.mul(o.lg2(x)?, o.constant(LN2)?)?;
    let d = o.sub(x, one)?;
    let t = o.mul(d, o.rcp_ftz(o.add(x, one)?)?)?;
    let s = o.mul(t, t)?;
    let two_t = o.add(t, t)?;
    let near = o.fma(o.mul(t, s)?, horner(o, s, &LOG_L)?, two_t)?;
    o.select_lt(o.abs(d)?, o.constant(LOG_NEAR_ONE)?, near, far)
}

/// `sin x` (`cosine = false`) or `cos x` (`true`), see the module documentation: on `a = |x|`,
/// `j = rint(a · 2/π)`, `r = a − j·π/2` by three FMAs (π/2 in three parts), then the sine or
/// cosine polynomial of `r` by the quadrant `j mod 4` (one quadrant later for the cosine), and for
/// the sine times ±1 by the sign of `x` (so `sin −0 = −0`). NaN and ±∞ give NaN.
pub(super) fn sin_cos<O: FloatOps>(o: &O, x: O::V, cosine: bool) -> Result<O::V> {
    let a = o.abs(x)?;
    let j = o.rint(o.mul(a, o.constant(TWO_OVER_PI)?)?)?;
    let mut r = a;
    for c in PIO2 {
        r = o.fma(j, o.constant(-c)?, r)?;
    }
    let s = o.mul(r, r)?;
    let sin_r = o.fma(o.mul(r, s)?, horner(o, s, &SIN_S)?, r)?;
    let cos_r = o.fma(s, horner(o, s, &COS_C)?, o.constant(1.0)?)?;
    // The quadrant j mod 4 in {0, 1, 2, 3} (exact: j is an integer below 2^24 wherever the
    // result means anything), one more for the cosine (cos a = sin(a + π/2)).
    let q = o.fma(o.floor(o.mul(j, o.constant(0.25)?)?)?, o.constant(-4.0)?, j)?;
    let q = if cosine {
        let q1 = o.add(q, o.constant(1.0)?)?;
        o.select_lt(q1, o.constant(3.5)?, q1, o.constant(0.0)?)?
    } else {
        q
    };
    // Odd quadrants take the other polynomial; quadrants 2 and 3 the opposite sign.
    let odd = o.fma(o.floor(o.mul(q, o.constant(0.5)?)?)?, o.constant(-2.0)?, q)?;
    let v = o.select_lt(odd, o.constant(0.5)?, sin_r, cos_r)?;
    let v = o.select_lt(q, o.constant(1.5)?, v, o.neg(v)?)?;
    if cosine {
        Ok(v)
    } else {
        // sin x = sin|x| · (±1 by the sign of x, so that sin −0 = −0); exact.
        o.mul(v, o.copysign(o.constant(1.0)?, x)?)
    }
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
        Ok(float(l.intrinsic(name, &types, &args)?))
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
    fn fma(&self, a: Self::V, b: Self::V, c: Self::V) -> Result<Self::V> {
        self.call("llvm.fma", &[a, b, c])
    }
    fn neg(&self, a: Self::V) -> Result<Self::V> {
        self.0.builder.build_float_neg(a, "").llvm()
    }
    fn abs(&self, a: Self::V) -> Result<Self::V> {
        self.call("llvm.fabs", &[a])
    }
    fn min(&self, a: Self::V, b: Self::V) -> Result<Self::V> {
        self.call("llvm.minnum", &[a, b])
    }
    fn max_nan(&self, a: Self::V, b: Self::V) -> Result<Self::V> {
        self.call("llvm.maximum", &[a, b])
    }
    fn copysign(&self, mag: Self::V, sign: Self::V) -> Result<Self::V> {
        // PTX's `copysign.f32 d, a, b` gives `b` the sign of `a`: one LOP3 in SASS, where LLVM 19
        // expands `llvm.copysign` into six PTX instructions (three in SASS).
        self.0.f32_asm2("copysign.f32 $0, $1, $2;", sign, mag)
    }
    fn ex2(&self, a: Self::V) -> Result<Self::V> {
        self.call("llvm.nvvm.ex2.approx.f", &[a])
    }
    fn ex2_ftz(&self, a: Self::V) -> Result<Self::V> {
        self.call("llvm.nvvm.ex2.approx.ftz.f", &[a])
    }
    fn lg2(&self, a: Self::V) -> Result<Self::V> {
        self.call("llvm.nvvm.lg2.approx.f", &[a])
    }
    fn rcp_ftz(&self, a: Self::V) -> Result<Self::V> {
        self.call("llvm.nvvm.rcp.approx.ftz.f", &[a])
    }
    fn rint(&self, a: Self::V) -> Result<Self::V> {
        self.call("llvm.rint", &[a])
    }
    fn floor(&self, a: Self::V) -> Result<Self::V> {
        self.call("llvm.floor", &[a])
    }
    fn select_lt(&self, a: Self::V, b: Self::V, then: Self::V, other: Self::V) -> Result<Self::V> {
        let bld = &self.0.builder;
        let c = bld
            .build_float_compare(FloatPredicate::OLT, a, b, "")
            .llvm()?;
        Ok(float(bld.build_select(c, then, other, "").llvm()?))
    }
}

impl<'ctx> Lowerer<'_, 'ctx> {
    /// A math function op: slot by slot over its 1 to 3 operands of one type.
    pub(super) fn math_op(&self, m: MathFn, data: &OpData) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let d = dtype(self.result_type(data));
        let args = (0..m.arity())
            .map(|i| self.operand(data, i))
            .collect::<Vec<_>>();
        let n = args.first().map_or(0, |a| a.len());
        if args.iter().any(|a| a.len() != n) {
            bug("operands holding the same number of registers");
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
                .unwrap_or_else(|| bug(format_args!("an operand {i} of `{}`", m.name())))
        };
        let refuse = || bug(format_args!("operands `{}` takes, found `{d}`", m.name()));
        match d {
            DType::I32 | DType::I64 => match m {
                MathFn::Abs => {
                    let x = int(arg(0));
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
                | MathFn::Sin
                | MathFn::Cos
                | MathFn::Sigmoid
                | MathFn::Gelu
                | MathFn::Floor
                | MathFn::Ceil
                | MathFn::Pow
                | MathFn::Fma => refuse(),
            },
            DType::F32 => {
                let x = float(arg(0));
                let o = Emit(self);
                let fast = self.f.fast_math;
                let v = match m {
                    // `math = fast`: Triton's `tl.exp`, the product's rounding not fed back.
                    MathFn::Exp if fast => o.ex2_ftz(o.mul(x, o.constant(LOG2E_HI)?)?)?,
                    MathFn::Exp => exp(&o, x)?,
                    MathFn::Exp2 => o.ex2_ftz(x)?,
                    MathFn::Log => log(&o, x)?,
                    MathFn::Log2 => o.call("llvm.nvvm.lg2.approx.f", &[x])?,
                    MathFn::Sqrt if fast => o.call("llvm.nvvm.sqrt.approx.ftz.f", &[x])?,
                    MathFn::Sqrt => o.call("llvm.sqrt", &[x])?,
                    MathFn::Rsqrt => o.call("llvm.nvvm.rsqrt.approx.f", &[x])?,
                    MathFn::Erf => erf(&o, x)?,
                    MathFn::Tanh => tanh(&o, x)?,
                    MathFn::Sin => sin_cos(&o, x, false)?,
                    MathFn::Cos => sin_cos(&o, x, true)?,
                    MathFn::Sigmoid => sigmoid(&o, x)?,
                    MathFn::Gelu => gelu(&o, x)?,
                    MathFn::Abs => o.abs(x)?,
                    MathFn::Floor => o.call("llvm.floor", &[x])?,
                    MathFn::Ceil => o.call("llvm.ceil", &[x])?,
                    MathFn::Pow => {
                        let lg = o.call("llvm.nvvm.lg2.approx.f", &[x])?;
                        o.ex2(o.mul(float(arg(1)), lg)?)?
                    }
                    MathFn::Fma => o.fma(x, float(arg(1)), float(arg(2)))?,
                };
                Ok(v.into())
            }
            // The functions with an IEEE instruction in double precision (the verifier's rule).
            DType::F64 => {
                let x = arg(0);
                let name = match m {
                    MathFn::Sqrt => "llvm.sqrt",
                    MathFn::Abs => "llvm.fabs",
                    MathFn::Floor => "llvm.floor",
                    MathFn::Ceil => "llvm.ceil",
                    MathFn::Fma => "llvm.fma",
                    _ => return refuse(),
                };
                let operands: Vec<_> = args.iter().map(|&a| a.into()).collect();
                self.intrinsic(name, &[x.get_type()], &operands)
            }
            DType::I1
            | DType::I8
            | DType::I16
            | DType::U8
            | DType::U32
            | DType::U64
            | DType::F16
            | DType::BF16
            | DType::F8E4M3
            | DType::F8E5M2 => refuse(),
        }
    }

    /// `cast`: slot by slot from the operand's element type to the result's.
    pub(super) fn cast_op(&self, data: &OpData) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let to = dtype(self.result_type(data));
        let from = dtype(self.operand_type(data, 0));
        let vals = self.operand(data, 0);
        if from == DType::F32 && self.f8_pairs(to) && vals.len() >= 2 {
            // Two at a time: `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32`.
            let mut out = Vec::with_capacity(vals.len());
            for pair in vals.chunks(2) {
                match *pair {
                    [lo, hi] => out.extend(
                        self.f8_pair_from_f32(to, float(lo), float(hi))?
                            .map(BasicValueEnum::from),
                    ),
                    [x] => out.push(self.cast(from, to, x)?),
                    _ => bug("chunks of one or two"),
                }
            }
            return Ok(out);
        }
        if from == DType::F32 && matches!(to, DType::F16 | DType::BF16) && vals.len() >= 2 {
            // Two at a time: `cvt.rn.{bf16x2,f16x2}.f32` rounds a pair in one instruction (LLVM 19
            // splits `fptrunc <2 x float>` into two scalar conversions), each element rounded
            // exactly as the scalar conversion would.
            let (half, cvt) = if to == DType::BF16 {
                (self.context.bf16_type(), "cvt.rn.bf16x2.f32 $0, $1, $2;")
            } else {
                (self.context.f16_type(), "cvt.rn.f16x2.f32 $0, $1, $2;")
            };
            let i32_ty = self.context.i32_type();
            let mut out = Vec::with_capacity(vals.len());
            for pair in vals.chunks(2) {
                let [lo, hi] = pair else {
                    out.push(self.cast(from, to, pair[0])?);
                    continue;
                };
                // The first source operand goes to the upper half, the element at lane 1.
                let word = self.pure_asm(cvt, "=r,f,f", i32_ty.into(), &[*hi, *lo])?;
                let b = &self.builder;
                let v = b.build_bit_cast(word, half.vec_type(2), "").llvm()?;
                let v = v.into_vector_value();
                for i in 0..2 {
                    out.push(
                        b.build_extract_element(v, i32_ty.const_int(i, false), "")
                            .llvm()?,
                    );
                }
            }
            return Ok(out);
        }
        vals.iter().map(|&v| self.cast(from, to, v)).collect()
    }

    /// One element converted from `from` to `to` (see the module documentation).
    fn cast(
        &self,
        from: DType,
        to: DType,
        v: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        use DType::{BF16, F16, F32, F64, I1};
        let b = &self.builder;
        let ctx = self.context;
        let f32_ty = ctx.f32_type();
        let int_ty = |d: DType| super::lower::register_type(ctx, Elem::Scalar(d)).into_int_type();
        let half_ty = |d: DType| {
            if d == BF16 {
                ctx.bf16_type()
            } else {
                ctx.f16_type()
            }
        };
        // Integers other than booleans.
        let num = |d: DType| d.is_int() && d != I1;
        Ok(match (from, to) {
            _ if from == to => v,
            // The 8-bit floats go through `f32`: exactly from them, rounded once to them from
            // `f32` (and from the exact `f16`/`bf16`), twice from `f64` and wide integers.
            (f, t) if t.is_f8() => {
                let x = float(self.cast(f, F32, v)?);
                self.f8_from_f32(t, x)?.into()
            }
            (f, t) if f.is_f8() => {
                let x = self.f8_to_f32(f, int(v))?;
                self.cast(F32, t, x.into())?
            }
            // `f64`: integers convert to it and from it directly (rounded once, or truncated
            // and saturated), floats narrow to `f32` by one rounding and below it through `f32`.
            (f, F64) if f.is_unsigned() => b
                .build_unsigned_int_to_float(int(v), ctx.f64_type(), "")
                .llvm()?
                .into(),
            (f, F64) if num(f) => b
                .build_signed_int_to_float(int(v), ctx.f64_type(), "")
                .llvm()?
                .into(),
            (F16 | BF16 | F32, F64) => {
                let x = float(self.cast(from, F32, v)?);
                b.build_float_ext(x, ctx.f64_type(), "").llvm()?.into()
            }
            (F64, F32) => b.build_float_trunc(float(v), f32_ty, "").llvm()?.into(),
            (F64, F16 | BF16) => {
                let x = b.build_float_trunc(float(v), f32_ty, "").llvm()?;
                self.cast(F32, to, x.into())?
            }
            (F64, I1) => {
                let x = float(v);
                b.build_float_compare(FloatPredicate::UNE, x, x.get_type().const_zero(), "")
                    .llvm()?
                    .into()
            }
            (F64, t) if num(t) => {
                let name = if t.is_unsigned() {
                    "llvm.fptoui.sat"
                } else {
                    "llvm.fptosi.sat"
                };
                self.intrinsic(
                    name,
                    &[int_ty(t).into(), ctx.f64_type().into()],
                    &[v.into()],
                )?
            }
            (f, I1) if num(f) => {
                let x = int(v);
                b.build_int_compare(IntPredicate::NE, x, x.get_type().const_zero(), "")
                    .llvm()?
                    .into()
            }
            (F16 | BF16 | F32, I1) => {
                let x = float(v);
                b.build_float_compare(FloatPredicate::UNE, x, x.get_type().const_zero(), "")
                    .llvm()?
                    .into()
            }
            // Widening extends as the source's signedness says (a boolean by zeros); narrowing
            // keeps the low bits; between types of one width the bits stay.
            (f, t) if f.is_int() && num(t) => {
                let (fw, tw) = (f.int_bits().unwrap_or(0), t.int_bits().unwrap_or(0));
                if tw > fw && f.is_unsigned() {
                    b.build_int_z_extend(int(v), int_ty(t), "").llvm()?.into()
                } else if tw > fw {
                    b.build_int_s_extend(int(v), int_ty(t), "").llvm()?.into()
                } else if tw < fw {
                    b.build_int_truncate(int(v), int_ty(t), "").llvm()?.into()
                } else {
                    v
                }
            }
            (f, F32) if f.is_unsigned() => b
                .build_unsigned_int_to_float(int(v), f32_ty, "")
                .llvm()?
                .into(),
            (f, F32) if num(f) => b
                .build_signed_int_to_float(int(v), f32_ty, "")
                .llvm()?
                .into(),
            (f, F16 | BF16) if f.is_int() => {
                let x = float(self.cast(from, F32, v)?);
                b.build_float_trunc(x, half_ty(to), "").llvm()?.into()
            }
            (F16 | BF16 | F32, t) if num(t) => {
                let x = self.cast(from, F32, v)?;
                let name = if t.is_unsigned() {
                    "llvm.fptoui.sat"
                } else {
                    "llvm.fptosi.sat"
                };
                self.intrinsic(name, &[int_ty(t).into(), f32_ty.into()], &[x.into()])?
            }
            (F32, F16 | BF16) => b
                .build_float_trunc(float(v), half_ty(to), "")
                .llvm()?
                .into(),
            // A bf16 is the top half of the f32 with the same value: widening is a shift, written
            // as integer ops so that LLVM folds the unpacking of a loaded pair of bf16 into it
            // (the high element becomes `word & 0xffff0000`, one instruction instead of a byte
            // permute and a shift).
            (BF16, F32) => {
                let bits = b
                    .build_bit_cast(float(v), ctx.i16_type(), "")
                    .llvm()?
                    .into_int_value();
                let wide = b.build_int_z_extend(bits, ctx.i32_type(), "").llvm()?;
                let top = b
                    .build_left_shift(wide, ctx.i32_type().const_int(16, false), "")
                    .llvm()?;
                b.build_bit_cast(top, f32_ty, "").llvm()?
            }
            (F16, F32) => b.build_float_ext(float(v), f32_ty, "").llvm()?.into(),
            (F16, BF16) | (BF16, F16) => {
                let x = float(self.cast(from, F32, v)?);
                b.build_float_trunc(x, half_ty(to), "").llvm()?.into()
            }
            (f, t) => bug(format_args!(
                "a cast the verifier allows, found `{f}` to `{t}`"
            )),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`FloatOps`] in plain `f32`: the same operation sequence as the GPU. The hardware's
    /// approximations are the correctly rounded results moved by `err` times their documented
    /// worst case (`ex2.approx`: a relative error of 2⁻²², `rcp.approx`: 1 ulp), so that running
    /// with `err` = −1, 0 and 1 brackets what the GPU can do.
    #[derive(Clone, Copy)]
    struct Model {
        /// The error of `ex2` in units of 2⁻²² (relative).
        ex2_err: f64,
        /// The error of `rcp` in ulps.
        rcp_err: i32,
    }

    /// Flushes a subnormal to a zero of its sign.
    fn ftz(x: f32) -> f32 {
        if x.is_subnormal() {
            0f32.copysign(x)
        } else {
            x
        }
    }

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
        fn fma(&self, a: f32, b: f32, c: f32) -> Result<f32> {
            Ok(a.mul_add(b, c))
        }
        fn neg(&self, a: f32) -> Result<f32> {
            Ok(-a)
        }
        fn abs(&self, a: f32) -> Result<f32> {
            Ok(a.abs())
        }
        fn min(&self, a: f32, b: f32) -> Result<f32> {
            Ok(a.min(b))
        }
        fn max_nan(&self, a: f32, b: f32) -> Result<f32> {
            Ok(if a.is_nan() || b.is_nan() {
                f32::NAN
            } else if a == b {
                // ±0: +0 is the larger.
                if a.is_sign_positive() {
                    a
                } else {
                    b
                }
            } else {
                a.max(b)
            })
        }
        fn copysign(&self, mag: f32, sign: f32) -> Result<f32> {
            Ok(mag.copysign(sign))
        }
        fn ex2(&self, a: f32) -> Result<f32> {
            let y = f64::from(a).exp2();
            Ok((y * (1.0 + self.ex2_err * 2f64.powi(-22))) as f32)
        }
        fn ex2_ftz(&self, a: f32) -> Result<f32> {
            Ok(ftz(self.ex2(ftz(a))?))
        }
        fn lg2(&self, a: f32) -> Result<f32> {
            // The documented absolute error, 2^-22.6, in the direction of the model's `ex2`.
            let y = f64::from(a).log2();
            Ok((y + self.ex2_err * 2f64.powf(-22.6)) as f32)
        }
        fn rcp_ftz(&self, a: f32) -> Result<f32> {
            let y = 1.0 / ftz(a);
            // One ulp toward or away from zero (a no-op on 0, ∞ and NaN), except that the
            // reciprocal of a power of two is exact (on the H200, `sigmoid` reaches 1).
            let y = if y == 0.0 || !y.is_finite() || y.to_bits() & 0x007f_ffff == 0 {
                y
            } else {
                f32::from_bits(y.to_bits().wrapping_add_signed(self.rcp_err))
            };
            Ok(ftz(y))
        }
        fn select_lt(&self, a: f32, b: f32, then: f32, other: f32) -> Result<f32> {
            Ok(if a < b { then } else { other })
        }
        fn rint(&self, a: f32) -> Result<f32> {
            Ok(a.round_ties_even())
        }
        fn floor(&self, a: f32) -> Result<f32> {
            Ok(a.floor())
        }
    }

    /// The hardware models: every combination of `ex2` and `rcp` errors of −1, 0 and +1 times
    /// their worst case; [`EXACT`] is the one with none.
    const MODELS: [Model; 9] = {
        let mut m = [Model {
            ex2_err: 0.0,
            rcp_err: 0,
        }; 9];
        let mut i = 0;
        while i < 9 {
            m[i] = Model {
                ex2_err: (i % 3) as f64 - 1.0,
                rcp_err: (i / 3) as i32 - 1,
            };
            i += 1;
        }
        m
    };
    /// The model with correctly rounded `ex2` and `rcp`.
    const EXACT: Model = MODELS[4];

    /// `g(x)` on the exact model.
    fn run(g: fn(&Model, f32) -> Result<f32>, x: f32) -> f32 {
        run_on(&EXACT, g, x)
    }

    fn run_on(m: &Model, g: fn(&Model, f32) -> Result<f32>, x: f32) -> f32 {
        g(m, x).expect("f32 arithmetic does not fail")
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

    /// The largest errors of one function over a grid, on the exact model and over all models.
    #[derive(Default)]
    struct Errors {
        exact: f64,
        worst: f64,
    }

    impl Errors {
        fn add(&mut self, exact: bool, e: f64) {
            if exact {
                self.exact = self.exact.max(e);
            }
            self.worst = self.worst.max(e);
        }
    }

    impl std::fmt::Display for Errors {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(
                f,
                "{:.2e} (hardware worst case {:.2e})",
                self.exact, self.worst
            )
        }
    }

    /// Documents the error bounds of the module documentation; prints the measured maxima, with
    /// correctly rounded `ex2`/`rcp` and with their documented worst cases.
    #[test]
    fn composite_function_errors() {
        let mut tanh_abs = Errors::default();
        let mut erf_abs = Errors::default();
        let mut tanh_rel_poly = Errors::default();
        let mut erf_rel_poly = Errors::default();
        let mut tanh_rel_small = Errors::default();
        let mut erf_rel_small = Errors::default();
        let mut exp_rel = Errors::default();
        let mut sigmoid_rel = Errors::default();
        let rel = |got: f32, want: f64| ((f64::from(got) - want) / want).abs();
        for (i, m) in MODELS.iter().enumerate() {
            let exact = i == 4;
            for x in grid(-12.0, 12.0, 300_000) {
                let xd = f64::from(x);
                let (t, e) = (run_on(m, tanh, x), run_on(m, erf, x));
                let (tr, er) = (xd.tanh(), erf_f64(xd));
                tanh_abs.add(exact, (f64::from(t) - tr).abs());
                erf_abs.add(exact, (f64::from(e) - er).abs());
                if x != 0.0 && x.abs() < 1.0 {
                    tanh_rel_small.add(exact, rel(t, tr));
                    erf_rel_small.add(exact, rel(e, er));
                }
                if x != 0.0 && x.abs() < TANH_SMALL {
                    tanh_rel_poly.add(exact, rel(t, tr));
                }
                if x != 0.0 && x.abs() < ERF_SMALL {
                    erf_rel_poly.add(exact, rel(e, er));
                }
            }
            for x in grid(-87.0, 88.0, 350_000) {
                exp_rel.add(exact, rel(run_on(m, exp, x), f64::from(x).exp()));
            }
            for x in grid(-80.0, 80.0, 200_000) {
                let r = 1.0 / (1.0 + (-f64::from(x)).exp());
                sigmoid_rel.add(exact, rel(run_on(m, sigmoid, x), r));
            }
        }
        println!("tanh: max abs error {tanh_abs}");
        println!("      max rel error for 0 < |x| < {TANH_SMALL} {tanh_rel_poly}, 0 < |x| < 1 {tanh_rel_small}");
        println!("erf:  max abs error {erf_abs}");
        println!("      max rel error for 0 < |x| < {ERF_SMALL} {erf_rel_poly}, 0 < |x| < 1 {erf_rel_small}");
        println!("exp:  max rel error over [-87, 88] {exp_rel}");
        println!("sigmoid: max rel error over [-80, 80] {sigmoid_rel}");
        for (what, e, bound) in [
            ("tanh abs", &tanh_abs, 3e-7),
            ("erf abs", &erf_abs, 4e-7),
            ("tanh rel near 0", &tanh_rel_poly, 2.5e-7),
            ("erf rel near 0", &erf_rel_poly, 3e-7),
            ("tanh rel below 1", &tanh_rel_small, 7e-7),
            ("erf rel below 1", &erf_rel_small, 8e-7),
            ("exp rel", &exp_rel, 5e-7),
            ("sigmoid rel", &sigmoid_rel, 6e-7),
        ] {
            assert!(e.worst <= bound, "{what}: {e}, bound {bound:e}");
        }
    }

    /// `gelu` against `0.5 · x · erfc(−x/√2)` in `f64` (libm's `erfc`, no cancellation for
    /// `x < 0`), on every model: the absolute error scaled by `|x|`, the relative error for
    /// `x > 0` (where `GELU(x) ≥ x/2`) and for `−3 < x < 0`, and the largest absolute error;
    /// beside them the same figures for the erf formula, `w + w · erf(x/√2)` with `w = x/2` (one
    /// FMA), which `gelu` replaces in the examples.
    #[test]
    fn gelu_errors() {
        fn erf_formula(o: &Model, x: f32) -> Result<f32> {
            let w = x * 0.5;
            Ok(w.mul_add(erf(o, x * std::f32::consts::FRAC_1_SQRT_2)?, w))
        }
        let mut figures = Vec::new();
        for g in [gelu as fn(&Model, f32) -> Result<f32>, erf_formula] {
            let [mut scaled, mut rel_pos, mut rel_neg, mut tail, mut abs] =
                [(); 5].map(|_| Errors::default());
            for (i, m) in MODELS.iter().enumerate() {
                let exact = i == 4;
                for x in grid(-16.0, 16.0, 320_000) {
                    if x == 0.0 {
                        continue;
                    }
                    let xd = f64::from(x);
                    let want = 0.5 * xd * libm::erfc(-xd / std::f64::consts::SQRT_2);
                    let e = (f64::from(run_on(m, g, x)) - want).abs();
                    abs.add(exact, e);
                    scaled.add(exact, e / xd.abs());
                    if x > 0.0 {
                        rel_pos.add(exact, e / want.abs());
                    } else if x > -3.0 {
                        rel_neg.add(exact, e / want.abs());
                    } else if x > -6.0 {
                        tail.add(exact, e / want.abs());
                    }
                }
            }
            figures.push([scaled, rel_pos, rel_neg, tail, abs]);
        }
        for (name, [scaled, rel_pos, rel_neg, tail, abs]) in
            ["gelu", "erf formula"].iter().zip(&figures)
        {
            println!("{name}: max |error| / |x| {scaled}");
            println!("      max rel error for x > 0 {rel_pos}, for -3 < x < 0 {rel_neg}");
            println!("      max rel error for -6 < x < -3 {tail}");
            println!("      max abs error over [-16, 16] {abs}");
        }
        let [scaled, rel_pos, rel_neg, tail, abs] = &figures[0];
        for (what, e, bound) in [
            ("gelu |error| / |x|", scaled, 3e-7),
            ("gelu rel x > 0", rel_pos, 5e-7),
            ("gelu rel -3 < x < 0", rel_neg, 1e-4),
            ("gelu rel -6 < x < -3", tail, 0.1),
            ("gelu abs", abs, 6e-7),
        ] {
            assert!(e.worst <= bound, "{what}: {e}, bound {bound:e}");
        }
    }

    #[test]
    fn gelu_special_values() {
        assert_eq!(run(gelu, f32::INFINITY), f32::INFINITY);
        assert_eq!(run(gelu, f32::NEG_INFINITY), 0.0);
        assert!(run(gelu, f32::NAN).is_nan());
        assert_eq!(run(gelu, 0.0), 0.0);
        assert_eq!(run(gelu, -0.0), 0.0);
        // From |x| = 14 on, exactly max(x, 0); just below, 2^Q has flushed to 0 already.
        for x in [13.0, 14.0, 20.0, 1e30, f32::MAX] {
            assert_eq!(run(gelu, x), x);
            assert_eq!(run(gelu, -x), 0.0);
        }
        // Tiny arguments: x/2, to within the polynomial's constant term.
        let y = run(gelu, 1e-30);
        assert!((y / 5e-31 - 1.0).abs() < 1e-6, "{y}");
        // Φ(−5) = 2.8665e-7: the tail is not lost to cancellation (`gelu_errors` bounds it).
        let (x, want) = (-5.0f32, -5.0 * 2.866_515_718_791_939e-7);
        let y = f64::from(run(gelu, x));
        assert!(((y - want) / want).abs() < 0.05, "gelu(-5) = {y}");
    }

    /// Special values: infinities, NaN, signed zeros, and where the functions saturate.
    #[test]
    fn composite_function_special_values() {
        let (inf, max) = (f32::INFINITY, f32::MAX);
        for m in &MODELS {
            let run = |g, x| run_on(m, g, x);
            for (x, want) in [
                (inf, 1.0),
                (-inf, -1.0),
                (9.1, 1.0),
                (-20.0, -1.0),
                (max, 1.0),
                (-max, -1.0),
                (1e-40, 1e-40),
            ] {
                assert_eq!(run(tanh, x), want, "tanh({x})");
            }
            for (x, want) in [
                (inf, 1.0),
                (-inf, -1.0),
                (3.92, 1.0),
                (4.5, 1.0),
                (-100.0, -1.0),
                (max, 1.0),
                (-max, -1.0),
            ] {
                assert_eq!(run(erf, x), want, "erf({x})");
            }
            // Below about −87.3 the flushing reciprocal gives 0 instead of a subnormal.
            for (x, want) in [
                (inf, 1.0),
                (-inf, 0.0),
                (200.0, 1.0),
                (-200.0, 0.0),
                (-87.5, 0.0),
                (max, 1.0),
                (-max, 0.0),
            ] {
                let y = run(sigmoid, x);
                assert!(y == want && y.is_sign_positive(), "sigmoid({x}) = {y}");
            }
            for (x, want) in [
                (inf, inf),
                (-inf, 0.0),
                (100.0, inf),
                (-200.0, 0.0),
                (max, inf),
                (-max, 0.0),
            ] {
                let y = run(exp, x);
                assert!(y == want && y.is_sign_positive(), "exp({x}) = {y}");
            }
            // Subnormal results of `exp` are 0 (the flushing `ex2`), normal ones are kept.
            assert_eq!(run(exp, -100.0), 0.0);
            assert!(run(exp, -87.0) >= f32::MIN_POSITIVE);
            for g in [tanh, erf, exp, sigmoid] {
                assert!(run(g, f32::NAN).is_nan());
            }
        }
        assert_eq!(run(exp, 0.0), 1.0);
        assert_eq!(run(sigmoid, 0.0), 0.5);
        // Odd functions keep the sign of zero.
        assert!(run(tanh, -0.0).is_sign_negative() && run(erf, -0.0).is_sign_negative());
        assert!(run(tanh, 0.0).is_sign_positive() && run(erf, 0.0).is_sign_positive());
    }

    /// The `f64` erf reference agrees with known values.
    fn sin(o: &Model, x: f32) -> Result<f32> {
        sin_cos(o, x, false)
    }

    fn cos(o: &Model, x: f32) -> Result<f32> {
        sin_cos(o, x, true)
    }

    /// `sin` and `cos` against `f64`: absolute error over `[−100, 100]` and over `[−10^5, 10^5]`
    /// (where the three-part reduction still holds), relative error of `sin` near 0.
    #[test]
    fn sin_cos_errors() {
        let (mut near, mut far, mut rel0) = (0f64, 0f64, 0f64);
        let points = grid(-100.0, 100.0, 400_000).chain(grid(-1e5, 1e5, 400_000));
        for x in points {
            let xd = f64::from(x);
            let (s, c) = (run(sin, x), run(cos, x));
            let e = (f64::from(s) - xd.sin())
                .abs()
                .max((f64::from(c) - xd.cos()).abs());
            if x.abs() <= 100.0 {
                near = near.max(e);
            } else {
                far = far.max(e);
            }
            if x != 0.0 && x.abs() < 0.5 {
                rel0 = rel0.max(((f64::from(s) - xd.sin()) / xd.sin()).abs());
            }
        }
        println!("sin/cos max abs error: {near:.2e} on [-100, 100], {far:.2e} on [-1e5, 1e5]; sin relative near 0: {rel0:.2e}");
        assert!(near < 1e-7, "{near}");
        assert!(far < 1e-7, "{far}");
        assert!(rel0 < 2.5e-7, "{rel0}");
    }

    #[test]
    fn sin_cos_special_values() {
        assert_eq!(run(sin, 0.0).to_bits(), 0f32.to_bits());
        assert_eq!(run(sin, -0.0).to_bits(), (-0f32).to_bits());
        assert_eq!(run(cos, 0.0), 1.0);
        assert_eq!(run(cos, -0.0), 1.0);
        for x in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
            assert!(run(sin, x).is_nan() && run(cos, x).is_nan(), "{x}");
        }
        assert_eq!(run(sin, 1e-30), 1e-30);
    }

    /// `log` near 1 (the series) and away from it (`lg2.approx`), on every model.
    #[test]
    fn log_errors() {
        let (mut near, mut far) = (0f64, 0f64);
        for m in &MODELS {
            for x in grid(0.7, 1.3, 200_000).filter(|&x| x > 0.0) {
                let got = f64::from(run_on(m, log, x));
                let want = f64::from(x).ln();
                let e = if want == 0.0 {
                    got.abs()
                } else {
                    ((got - want) / want).abs()
                };
                if (x - 1.0).abs() < LOG_NEAR_ONE {
                    near = near.max(e);
                } else if (f64::from(x) - 1.0).abs() > 0.35 {
                    far = far.max(e);
                }
            }
            for x in grid(2.0, 1e6, 100_000).filter(|&x| x > 2.0) {
                let got = f64::from(run_on(m, log, x));
                far = far.max(((got - f64::from(x).ln()) / f64::from(x).ln()).abs());
            }
        }
        println!("log relative error: {near:.2e} for |x - 1| < 0.3, {far:.2e} elsewhere sampled");
        assert!(near < 4e-7, "{near}");
        // lg2.approx's absolute error over log2 x, as before this series (x = 1.35: 3.7e-7).
        assert!(far < 5e-7, "{far}");
        assert_eq!(run(log, 1.0), 0.0);
        assert_eq!(run(log, 0.0), f32::NEG_INFINITY);
        assert!(run(log, -1.0).is_nan() && run(log, f32::NAN).is_nan());
        assert_eq!(run(log, f32::INFINITY), f32::INFINITY);
    }

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
