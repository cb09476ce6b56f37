//! The 8-bit float types `f8e4m3` and `f8e5m2` (the OCP FP8 formats NVIDIA's tensor cores read),
//! as host values: what a buffer of them holds, and the one definition of their conversions that
//! the interpreter runs and the GPU lowering reproduces bit for bit.
//!
//! | | `f8e4m3` | `f8e5m2` |
//! |---|---|---|
//! | exponent bits, bias | 4, 7 | 5, 15 |
//! | mantissa bits | 3 | 2 |
//! | largest finite | 448 | 57344 |
//! | smallest normal, subnormal | 2⁻⁶, 2⁻⁹ | 2⁻¹⁴, 2⁻¹⁶ |
//! | infinities | none | `0x7c`, `0xfc` |
//! | NaN | `0x7f`, `0xff` | exponent all ones, mantissa ≠ 0 |
//!
//! **From `f32`** (`x as f8e4m3` in a kernel, [`f8e4m3::from_f32`] here): round to nearest, ties to
//! even, then saturate: a result beyond the largest finite value, infinities included, becomes
//! the largest finite value of its sign (PTX's `cvt.rn.satfinite`, CUDA's `__NV_SATFINITE`). A
//! NaN becomes `0x7f` whatever its sign. Every other source type converts through `f32`: exactly
//! from `f16`, `bf16` and the 8-bit floats, with a first rounding from `f64` and from integers
//! wider than 24 bits.
//!
//! **To `f32`** is exact; every 8-bit float is also exactly an `f16` and a `bf16`.

use std::fmt;

/// The bit patterns of `x`'s nearest `f8` in the format with `mant` mantissa bits and exponent
/// bias `bias`, saturated to `max_bits` (the largest finite pattern), sign excluded; `x ≥ 0`,
/// not NaN.
fn encode_magnitude(x: f32, mant: u32, bias: u32, max_bits: u32) -> u32 {
    let max = decode_magnitude(max_bits, mant, bias);
    let x = x.min(max);
    // Below the smallest normal the grid is uniform: steps of 2^(1 - bias - mant).
    let min_normal = f32::from_bits((128 - bias) << 23);
    if x < min_normal {
        // Exact: a power-of-two scaling of an f32 that stays normal or exact.
        let scaled = x * f32::from_bits((127 + bias + mant - 1) << 23);
        return scaled.round_ties_even() as u32;
    }
    // Normal: keep `mant` of f32's 23 mantissa bits, rounding to nearest even on the bits; a
    // carry moves into the exponent as it should, and never past `max`, which is on the grid.
    let u = x.to_bits();
    let drop = 23 - mant;
    let rounded = (u + (1 << (drop - 1)) - 1 + ((u >> drop) & 1)) >> drop;
    rounded - ((127 - bias) << mant)
}

/// The value of a sign-less pattern (`bits < 0x80`), finite.
fn decode_magnitude(bits: u32, mant: u32, bias: u32) -> f32 {
    // Placing exponent and mantissa in f32's fields and scaling by 2^(127 - bias) gives normal
    // and subnormal values alike (f32 subnormals scale exactly).
    let placed = f32::from_bits(bits << (23 - mant));
    placed * f32::from_bits((127 + 127 - bias) << 23)
}

macro_rules! float8 {
    ($(#[$doc:meta])* $name:ident, mant = $mant:expr, bias = $bias:expr, max = $max:expr,
     nan = |$b:ident| $is_nan:expr, inf = $inf:expr) => {
        $(#[$doc])*
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
        #[repr(transparent)]
        pub struct $name(u8);

        impl $name {
            /// The largest finite value.
            pub const MAX: $name = $name($max);
            /// Zero.
            pub const ZERO: $name = $name(0);

            /// The value with these bits.
            pub const fn from_bits(bits: u8) -> $name {
                $name(bits)
            }

            /// Its bits.
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// The nearest value to `x`, ties to even, saturated to ±[`Self::MAX`] (module docs).
            pub fn from_f32(x: f32) -> $name {
                if x.is_nan() {
                    return $name(0x7f);
                }
                let sign = if x.is_sign_negative() { 0x80 } else { 0 };
                let m = encode_magnitude(x.abs(), $mant, $bias, $max);
                $name(sign | m as u8)
            }

            /// `x` rounded to `f32` first, then as [`Self::from_f32`].
            pub fn from_f64(x: f64) -> $name {
                $name::from_f32(x as f32)
            }

            /// The exact value.
            pub fn to_f32(self) -> f32 {
                let $b = self.0 & 0x7f;
                let mag = if $is_nan {
                    f32::NAN
                } else if Some($b) == $inf {
                    f32::INFINITY
                } else {
                    decode_magnitude(u32::from($b), $mant, $bias)
                };
                if self.0 & 0x80 != 0 {
                    -mag
                } else {
                    mag
                }
            }

            /// The exact value.
            pub fn to_f64(self) -> f64 {
                f64::from(self.to_f32())
            }

            /// Whether this is a NaN pattern.
            pub fn is_nan(self) -> bool {
                let $b = self.0 & 0x7f;
                $is_nan
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.to_f32())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.to_f32(), f)
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &$name) -> Option<std::cmp::Ordering> {
                self.to_f32().partial_cmp(&other.to_f32())
            }
        }

        impl From<$name> for f32 {
            fn from(x: $name) -> f32 {
                x.to_f32()
            }
        }
    };
}

float8!(
    /// An 8-bit float, E4M3: 4 exponent bits (bias 7), 3 mantissa bits, no infinities, largest
    /// finite 448.
    f8e4m3, mant = 3, bias = 7, max = 0x7e, nan = |b| b == 0x7f, inf = None::<u8>
);

float8!(
    /// An 8-bit float, E5M2: 5 exponent bits (bias 15), 2 mantissa bits, IEEE infinities and
    /// NaNs, largest finite 57344 (the top byte of the `f16` with the same value).
    f8e5m2, mant = 2, bias = 15, max = 0x7b, nan = |b| b > 0x7c, inf = Some(0x7cu8)
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pattern decodes to the value its fields say, computed here independently.
    #[test]
    fn decode_every_pattern() {
        for bits in 0..=255u8 {
            let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
            let (e, m) = (i32::from((bits >> 3) & 15), f64::from(bits & 7));
            let v = f8e4m3::from_bits(bits).to_f64();
            if bits & 0x7f == 0x7f {
                assert!(v.is_nan());
            } else if e == 0 {
                assert_eq!(v, sign * m / 8.0 * 2f64.powi(-6));
            } else {
                assert_eq!(v, sign * (1.0 + m / 8.0) * 2f64.powi(e - 7));
            }
            let (e, m) = (i32::from((bits >> 2) & 31), f64::from(bits & 3));
            let v = f8e5m2::from_bits(bits).to_f64();
            if e == 31 && m != 0.0 {
                assert!(v.is_nan());
            } else if e == 31 {
                assert_eq!(v, sign * f64::INFINITY);
            } else if e == 0 {
                assert_eq!(v, sign * m / 4.0 * 2f64.powi(-14));
            } else {
                assert_eq!(v, sign * (1.0 + m / 4.0) * 2f64.powi(e - 15));
            }
            // E5M2 is the top byte of f16.
            let h = half::f16::from_bits(u16::from(bits) << 8).to_f64();
            assert!(h == v || (h.is_nan() && v.is_nan()));
        }
    }

    /// `from_f32` is the nearest pattern (ties to the even mantissa), by brute force over every
    /// finite pattern, at the patterns, at the midpoints between neighbours and just beside them.
    #[test]
    fn encode_is_nearest_even() {
        fn check(values: &[(u8, f64)], enc: impl Fn(f32) -> u8, max: f64) {
            // Rounding never changes the sign: the candidates are the patterns of x's sign.
            let nearest = |x: f64| -> u8 {
                let negative = x.is_sign_negative();
                let x = x.clamp(-max, max);
                let mut best: Option<(u8, f64)> = None;
                for &(b, v) in values.iter().filter(|(b, _)| (b & 0x80 != 0) == negative) {
                    let d = (v - x).abs();
                    let better = match best {
                        None => true,
                        Some((bb, bd)) => d < bd || (d == bd && b & 1 == 0 && bb & 1 == 1),
                    };
                    if better {
                        best = Some((b, d));
                    }
                }
                best.map_or(0, |(b, _)| b)
            };
            let mut probes = Vec::new();
            for &(_, v) in values {
                probes.push(v);
                for &(_, w) in values {
                    if w > v && (w - v) <= v.abs().max(w.abs()) {
                        let mid = (v + w) / 2.0;
                        probes.extend([mid, mid * (1.0 + 1e-6), mid * (1.0 - 1e-6)]);
                    }
                }
            }
            for x in probes {
                let x32 = x as f32;
                if f64::from(x32) != x {
                    continue;
                }
                let got = enc(x32);
                assert_eq!(got, nearest(x), "{x}");
            }
        }
        let e4: Vec<(u8, f64)> = (0..=255u8)
            .map(|b| (b, f8e4m3::from_bits(b).to_f64()))
            .filter(|(_, v)| v.is_finite())
            .collect();
        check(&e4, |x| f8e4m3::from_f32(x).to_bits(), 448.0);
        let e5: Vec<(u8, f64)> = (0..=255u8)
            .map(|b| (b, f8e5m2::from_bits(b).to_f64()))
            .filter(|(_, v)| v.is_finite())
            .collect();
        check(&e5, |x| f8e5m2::from_f32(x).to_bits(), 57344.0);
    }

    /// Known answers: saturation, infinities, NaN, signed zero, the subnormal edge.
    #[test]
    fn known_answers() {
        let e4 = |x: f32| f8e4m3::from_f32(x).to_bits();
        let e5 = |x: f32| f8e5m2::from_f32(x).to_bits();
        assert_eq!(e4(448.0), 0x7e);
        assert_eq!(e4(464.0), 0x7e);
        assert_eq!(e4(1e30), 0x7e);
        assert_eq!(e4(f32::INFINITY), 0x7e);
        assert_eq!(e4(f32::NEG_INFINITY), 0xfe);
        assert_eq!(e4(f32::NAN), 0x7f);
        assert_eq!(e4(-f32::NAN), 0x7f);
        assert_eq!(e4(-0.0), 0x80);
        assert_eq!(e4(2f32.powi(-9)), 0x01);
        assert_eq!(e4(2f32.powi(-10)), 0x00); // a tie, to even
        assert_eq!(e4(3.0 * 2f32.powi(-10)), 0x02); // a tie, to even
        assert_eq!(e4(2f32.powi(-6) * 0.9999), 0x08); // rounds up into the normals
        assert_eq!(e4(1.0), 0x38);
        assert_eq!(e4(1.0625), 0x38); // a tie, to even
        assert_eq!(e4(1.1875), 0x3a); // a tie, to even (up)
        assert_eq!(e5(57344.0), 0x7b);
        assert_eq!(e5(61440.0), 0x7b);
        assert_eq!(e5(f32::INFINITY), 0x7b);
        assert_eq!(e5(f32::NAN), 0x7f);
        assert_eq!(e5(1.0), 0x3c);
        assert_eq!(e5(2f32.powi(-16)), 0x01);
        assert_eq!(e5(2f32.powi(-17)), 0x00);
        assert_eq!(f8e4m3::MAX.to_f32(), 448.0);
        assert_eq!(f8e5m2::MAX.to_f32(), 57344.0);
        assert!(f8e5m2::from_bits(0x7c).to_f32().is_infinite());
    }
}
