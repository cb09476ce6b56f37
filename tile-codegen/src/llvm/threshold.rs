//! `rand(seed, offsets) > p` as one integer compare per element.
//!
//! `rand` is Triton's `uint_to_uniform_float` of a Philox word `x` (see `tile_core::random`): the
//! word folded to `y = x ^ (x >> 31)` (arithmetic shift: negative words become `!x`), converted to
//! `f32` and multiplied by `c = 2^-31 · (1 − 2^-24)`. Dropout compares it with a probability `p`
//! held by the whole program. Per element that is a shift, a `xor`, a conversion, a multiply and a
//! float compare; this module turns it into a subtraction and an unsigned compare against two
//! integers computed once from `p`, the same truth value for every word and every `p`:
//!
//! 1. For `y ≥ 1`, `fl(fl(y) · c)` is the float just below `A = fl(y) / 2^31` (`A · (1 − 2^-24)`
//!    lies between half an ulp and one ulp below `A`, or exactly one ulp below a power of two), and
//!    `fl(0 · c) = 0`. So for `p ≥ 0` (and `p = −0`), `rand > p` ⟺ `A > succ(p)` ⟺
//!    `fl(y) > Q` with `Q = succ(p) · 2^31` (exact: a power of two), `succ` the next float up.
//! 2. `fl` rounds to nearest even and is monotone, so `fl(y) > Q` ⟺ `y > T` with
//!    `T = max { y : fl(y) ≤ Q }`: `floor(Q)` below `2^24` (every integer exact), and above it
//!    `Q + s/2` (`s` the spacing above `Q`; the tie rounds down to `Q` when its last mantissa bit
//!    is even) less 1 when that bit is odd; `2^31 − 1` once `Q ≥ 2^31`.
//! 3. `y > T` over the raw word: non-negative words `x ∈ [T + 1, 2^31)`, negative ones `!x > T`
//!    ⟺ `x < 2^32 − 1 − T`; together one interval, so `(x − (T + 1)) mod 2^32 < 2^32 − 2T − 2`.
//! 4. Edges: `p < 0` (to `−∞`) keeps every element (an `or` with that predicate: the interval
//!    would need `2^32` values); `p ≥ 1`, `+∞` and NaN keep none (`T = 2^31 − 1`: an empty
//!    interval).
//!
//! [`threshold`] is these steps on the CPU, tested against `uint_to_uniform_float(x) > p` around
//! every boundary; [`Lowerer::uniform_above`] emits the same steps as LLVM IR once per `p` and
//! block, and recognizes the conversion in the operands of a float compare, as the lowering of
//! `rand` and `rand4x` builds it (`icmp slt x, 0`, `xor x, -1`, `select`, `sitofp`, `fmul` by `c`).

use inkwell::types::BasicTypeEnum;
use inkwell::values::{
    AsValueRef, BasicValue, BasicValueEnum, FloatValue, InstructionOpcode, InstructionValue,
    IntValue,
};
use inkwell::{FloatPredicate, IntPredicate};
use tile_core::random::UNIFORM_SCALE_32;

use super::lower::{Lowerer, OrBug, OrLlvm, Result};

/// `(all, t)` for the probability `p`: `uint_to_uniform_float(x) > p` ⟺
/// `all || x.wrapping_sub(t + 1) < 0u32.wrapping_sub(2 * (t + 1))` (see the module documentation;
/// the LLVM in [`Lowerer::uniform_above`] follows these steps one for one).
#[cfg(test)]
fn threshold(p: f32) -> (bool, u32) {
    let all = p < 0.0;
    // Unordered (NaN) or at least 1, as `fcmp uge`.
    let never = p.is_nan() || p >= 1.0;
    let succ = f32::from_bits((p.to_bits() & 0x7FFF_FFFF) + 1);
    let q = succ * 2_147_483_648.0;
    // `fptoui`: exact below 2^32 (q ≤ 2^31 when p < 1).
    let qi = q as u32;
    let next = f32::from_bits(q.to_bits() + 1) as u32;
    let big = qi
        .wrapping_add(next.wrapping_sub(qi) >> 1)
        .wrapping_sub(q.to_bits() & 1);
    let t = if q < 16_777_216.0 { qi } else { big };
    let t = t.min(0x7FFF_FFFF);
    let t = if never { 0x7FFF_FFFF } else { t };
    (all, t)
}

impl<'ctx> Lowerer<'_, 'ctx> {
    /// `x > p` where `x` is `uint_to_uniform_float` of a word as the lowering of `rand` builds it:
    /// the word's interval test (see the module documentation); `None` where `x` is anything else.
    pub(super) fn uniform_above(
        &self,
        x: FloatValue<'ctx>,
        p: FloatValue<'ctx>,
    ) -> Result<Option<IntValue<'ctx>>> {
        let Some(word) = uniform_word(x) else {
            return Ok(None);
        };
        let (all, t1, bound) = self.threshold_values(p)?;
        let b = &self.builder;
        let off = b.build_int_sub(word, t1, "").llvm()?;
        let inside = b
            .build_int_compare(IntPredicate::ULT, off, bound, "")
            .llvm()?;
        Ok(Some(b.build_or(inside, all, "").llvm()?))
    }

    /// `(all, t + 1, 2^32 − 2(t + 1))` for `p`, built once per `p` and block (as
    /// [`threshold`]).
    fn threshold_values(
        &self,
        p: FloatValue<'ctx>,
    ) -> Result<(IntValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>)> {
        let block = self.builder.get_insert_block().or_bug("an insertion block");
        let key = (block, p);
        if let Some(&v) = self.thresholds.borrow().get(&key) {
            return Ok(v);
        }
        let b = &self.builder;
        let (f32_ty, i32_ty) = (self.context.f32_type(), self.context.i32_type());
        let c = |v: u64| i32_ty.const_int(v, false);
        let fc = |v: f64| f32_ty.const_float(v);
        let all = b
            .build_float_compare(FloatPredicate::OLT, p, fc(0.0), "")
            .llvm()?;
        // Unordered: NaN keeps nothing.
        let never = b
            .build_float_compare(FloatPredicate::UGE, p, fc(1.0), "")
            .llvm()?;
        let bits = b.build_bit_cast(p, i32_ty, "").llvm()?.into_int_value();
        let mag = b.build_and(bits, c(0x7FFF_FFFF), "").llvm()?;
        let succ = b.build_int_add(mag, c(1), "").llvm()?;
        let succ = b
            .build_bit_cast(succ, f32_ty, "")
            .llvm()?
            .into_float_value();
        let q = b.build_float_mul(succ, fc(2_147_483_648.0), "").llvm()?;
        let qi = b.build_float_to_unsigned_int(q, i32_ty, "").llvm()?;
        let qbits = b.build_bit_cast(q, i32_ty, "").llvm()?.into_int_value();
        let next = b.build_int_add(qbits, c(1), "").llvm()?;
        let next = b
            .build_bit_cast(next, f32_ty, "")
            .llvm()?
            .into_float_value();
        let next = b.build_float_to_unsigned_int(next, i32_ty, "").llvm()?;
        let half = b.build_int_sub(next, qi, "").llvm()?;
        let half = b.build_right_shift(half, c(1), false, "").llvm()?;
        let odd = b.build_and(qbits, c(1), "").llvm()?;
        let big = b.build_int_add(qi, half, "").llvm()?;
        let big = b.build_int_sub(big, odd, "").llvm()?;
        let small = b
            .build_float_compare(FloatPredicate::OLT, q, fc(16_777_216.0), "")
            .llvm()?;
        let t = b.build_select(small, qi, big, "").llvm()?.into_int_value();
        let ty: BasicTypeEnum = i32_ty.into();
        let t = self
            .intrinsic("llvm.umin", &[ty], &[t.into(), c(0x7FFF_FFFF).into()])?
            .into_int_value();
        let t = b
            .build_select(never, c(0x7FFF_FFFF), t, "")
            .llvm()?
            .into_int_value();
        let t1 = b.build_int_add(t, c(1), "").llvm()?;
        let bound = b.build_int_sub(c(0), t1, "").llvm()?;
        let bound = b.build_int_sub(bound, t1, "").llvm()?;
        let v = (all, t1, bound);
        self.thresholds.borrow_mut().insert(key, v);
        Ok(v)
    }
}

/// The word `w` of `x` = `fmul (sitofp (select (icmp slt w, 0), (xor w, -1), w)), c`, the shape
/// the lowering of `rand` gives `uint_to_uniform_float(w)` (or a select on a constant condition
/// picking it); `None` for any other value.
fn uniform_word(x: FloatValue<'_>) -> Option<IntValue<'_>> {
    let mut mul = x.as_instruction_value()?;
    // Through selects on constant conditions, which the builder leaves in place (`rand4x`'s words
    // picked per register by a compare of constant column indices).
    while mul.get_opcode() == InstructionOpcode::Select {
        let pick = match const_int(operand(mul, 0)?)? {
            0 => 2,
            _ => 1,
        };
        mul = operand(mul, pick)?
            .into_float_value()
            .as_instruction_value()?;
    }
    if mul.get_opcode() != InstructionOpcode::FMul {
        return None;
    }
    let (a, k) = (operand(mul, 0)?, operand(mul, 1)?);
    let scale = |v: BasicValueEnum| {
        v.into_float_value()
            .get_constant()
            .is_some_and(|(c, _)| c == f64::from(UNIFORM_SCALE_32))
    };
    let conv = if a.is_float_value() && scale(k) {
        a
    } else if k.is_float_value() && scale(a) {
        k
    } else {
        return None;
    };
    let conv = conv.into_float_value().as_instruction_value()?;
    if conv.get_opcode() != InstructionOpcode::SIToFP {
        return None;
    }
    let folded = operand(conv, 0)?.into_int_value();
    let sel = folded.as_instruction_value()?;
    if sel.get_opcode() != InstructionOpcode::Select {
        return None;
    }
    let (cond, flipped, w) = (operand(sel, 0)?, operand(sel, 1)?, operand(sel, 2)?);
    let w = w.into_int_value();
    if w.get_type().get_bit_width() != 32 {
        return None;
    }
    // `icmp slt w, 0`.
    let cmp = cond.into_int_value().as_instruction_value()?;
    let negative = cmp.get_opcode() == InstructionOpcode::ICmp
        && cmp.get_icmp_predicate() == Some(IntPredicate::SLT)
        && same(operand(cmp, 0)?, w)
        && const_int(operand(cmp, 1)?) == Some(0);
    // `xor w, -1` (either order).
    let xor = flipped.into_int_value().as_instruction_value()?;
    let (x0, x1) = (operand(xor, 0)?, operand(xor, 1)?);
    let not = xor.get_opcode() == InstructionOpcode::Xor
        && ((same(x0, w) && const_int(x1) == Some(-1))
            || (same(x1, w) && const_int(x0) == Some(-1)));
    (negative && not).then_some(w)
}

/// Operand `i` of `inst` as a value.
fn operand(inst: InstructionValue<'_>, i: u32) -> Option<BasicValueEnum<'_>> {
    inst.get_operand(i)?.value()
}

/// Whether `v` is the integer value `w`.
fn same(v: BasicValueEnum<'_>, w: IntValue<'_>) -> bool {
    v.is_int_value() && v.into_int_value().as_value_ref() == w.as_value_ref()
}

/// The constant of an integer constant (sign-extended).
fn const_int(v: BasicValueEnum<'_>) -> Option<i64> {
    v.is_int_value()
        .then(|| v.into_int_value().get_sign_extended_constant())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::threshold;
    use tile_core::random::uint_to_uniform_float;

    /// The interval test of [`threshold`] for the word `x`.
    fn keep(p: f32, x: u32) -> bool {
        let (all, t) = threshold(p);
        let t1 = t.wrapping_add(1);
        all || x.wrapping_sub(t1) < 0u32.wrapping_sub(t1).wrapping_sub(t1)
    }

    /// Checks words around both ends of `p`'s interval, the extremes, and a spread, in both
    /// halves of the word range.
    fn check(p: f32) {
        let (_, t) = threshold(p);
        let mut xs: Vec<u32> = vec![0, 1, 2, 0x7FFF_FFFE, 0x7FFF_FFFF, 0x8000_0000, u32::MAX];
        for base in [t, u32::MAX - t] {
            for d in 0..=600u32 {
                xs.push(base.wrapping_add(d).wrapping_sub(300));
            }
        }
        let mut s = p.to_bits() | 1;
        for _ in 0..2000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            xs.push(s);
        }
        for x in xs {
            let want = uint_to_uniform_float(x) > p;
            assert_eq!(
                keep(p, x),
                want,
                "p = {p:e} ({:#x}), x = {x:#x}",
                p.to_bits()
            );
        }
    }

    #[test]
    fn interval_test_is_the_float_compare() {
        let mut ps = vec![
            0.0,
            -0.0,
            -1e-30,
            -1.0,
            f32::NEG_INFINITY,
            f32::INFINITY,
            f32::NAN,
            1.0,
            2.0,
            f32::from_bits(1),
            f32::MIN_POSITIVE,
            0.1,
            0.5,
            0.25,
            1.0 / 128.0,
            1.0 / 3.0,
            0.9,
            f32::from_bits(1.0f32.to_bits() - 1),
            f32::from_bits(1.0f32.to_bits() - 2),
            2f32.powi(-7),
            2f32.powi(-8),
            2f32.powi(-31),
            2f32.powi(-32),
        ];
        // Every value `rand` can take near a sweep of probabilities, and its neighbours.
        for i in 1..400u32 {
            let u = uint_to_uniform_float(i.wrapping_mul(5_368_709));
            for d in [-1i32, 0, 1] {
                ps.push(f32::from_bits(u.to_bits().wrapping_add_signed(d)));
            }
        }
        for k in 1..64u32 {
            let u = uint_to_uniform_float((1u32 << 31) - k * 97);
            ps.push(u);
            ps.push(f32::from_bits(u.to_bits() - 1));
        }
        for p in ps {
            check(p);
        }
    }
}
