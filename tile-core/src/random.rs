//! A pure-Rust reference of Triton 3.6's counter-based random numbers (`triton.language.random`:
//! `tl.philox`, `tl.randint4x`, `tl.randint`, `tl.rand`, `tl.rand4x`),
//! written so that tile's `rand`/`randint` can produce the same stream, bit for bit, for
//! the same seed and offsets.
//!
//! # What Triton computes
//!
//! Read from `python/triton/language/random.py` of the Triton 3.6.0 wheel, and checked against the
//! TTIR, PTX and SASS that Triton 3.6.0 emits for `sm_80`/`sm_90`:
//!
//! - **Generator.** Philox-4x32 with 10 rounds (`N_ROUNDS_DEFAULT`), the Random123 generator: in
//!   each round the words `(c0, c1, c2, c3)` with key `(k0, k1)` become
//!   `(hi(B*c2) ^ c1 ^ k0, lo(B*c2), hi(A*c0) ^ c3 ^ k1, lo(A*c0))` with `A = 0xD2511F53`,
//!   `B = 0xCD9E8D57`; then the key is raised by `(0x9E3779B9, 0xBB67AE85)` (mod 2^32). `hi` is
//!   `tl.umulhi`, which lowers to `mul.hi.u32`; `lo` is a wrapping `mul.lo`.
//! - **Key.** The seed is cast to `uint64` (`seed.to(tl.uint64)`: sign-extending for signed types,
//!   zero-extending for unsigned ones); `k0` is its low 32 bits and `k1` its high 32 bits. A Python
//!   `int` seed is passed as `i32` when it lies in `[-2^31, 2^31)`, `i64` up to `2^63`, `u64` above
//!   (and the value 1 becomes a constexpr `i32`), so for every Python-int seed the key is simply
//!   the seed's two's-complement value mod 2^64: `-1` gives `k0 = k1 = 0xFFFFFFFF`.
//! - **Counter.** `c0` is the offset truncated to 32 bits. If the offset tensor is 64-bit
//!   (`int64`/`uint64`), `c1` is its high 32 bits; for a 32-bit offset (`int32`/`uint32`) `c1` is 0
//!   whatever the sign (a negative `int32` offset is *not* sign-extended). `c2 = c3 = 0`.
//! - **`randint`** is word 0 of `randint4x`; **`rand`** is `uint_to_uniform_float(word 0)`.
//! - **`uint_to_uniform_float`** (32-bit): reinterpret as `i32`, map negatives `x` to `-x - 1`
//!   (that is `!x`), so the value is in `[0, 2^31 - 1]`; convert to `f32` (round to nearest even)
//!   and multiply in `f32` by the literal `4.6566127342e-10`, which rounds to the `f32`
//!   `0x2FFFFFFF` = `2^-31 * (1 - 2^-24)`. The largest result is `1 - 2^-24`, so the range is
//!   `[0, 1)`. (Triton's variant for 64-bit words, and Philox-4x64 for 64-bit counters, serve only
//!   `tl.philox` called with 64-bit counters, which tile does not offer.)
//!
//! Everything here is exact: integer operations, one `i32` → `f32` conversion to nearest and one
//! `f32` multiply. The kernel language's `rand`/`randint` build the same sequence of IR ops
//! (`frontend/builtins/random.rs`), so the interpreter and the GPU give these values bit for bit; the
//! tests of the language compare them with this module, and this module is checked against
//! Random123's known answers and against rows printed by Triton 3.6's own interpreter. [`randn`]
//! is Triton's Box–Muller on the same words; its `log` and `cos` are not libdevice's, so it agrees
//! with Triton's `tl.randn` within a few 1e-7, not bit for bit.

/// Number of Philox rounds Triton uses by default (`N_ROUNDS_DEFAULT` in `random.py`).
pub const PHILOX_ROUNDS: u32 = 10;

/// Philox-4x32 key increment for `k0` (Triton `PHILOX_KEY_A`, Random123 `PHILOX_W32_0`: golden ratio).
pub const PHILOX_KEY_A: u32 = 0x9E37_79B9;
/// Philox-4x32 key increment for `k1` (Triton `PHILOX_KEY_B`, Random123 `PHILOX_W32_1`: sqrt(3) - 1).
pub const PHILOX_KEY_B: u32 = 0xBB67_AE85;
/// Philox-4x32 multiplier applied to `c0` (Triton `PHILOX_ROUND_A`, Random123 `PHILOX_M4x32_0`).
pub const PHILOX_ROUND_A: u32 = 0xD251_1F53;
/// Philox-4x32 multiplier applied to `c2` (Triton `PHILOX_ROUND_B`, Random123 `PHILOX_M4x32_1`).
pub const PHILOX_ROUND_B: u32 = 0xCD9E_8D57;

/// The `f32` that Triton's literal `4.6566127342e-10` becomes: `2^-31 * (1 - 2^-24)`, bits
/// `0x2FFFFFFF`. Scale of the 32-bit [`uint_to_uniform_float`].
pub const UNIFORM_SCALE_32: f32 = f32::from_bits(0x2FFF_FFFF);

/// How a 32-bit signed seed enters the key: Triton's `seed.to(tl.uint64)` sign-extends it.
/// (A `u32` seed is zero-extended instead: pass `seed as u64`.)
pub const fn seed_from_i32(seed: i32) -> u64 {
    seed as i64 as u64
}

/// How a 32-bit offset (signed or not) enters the counter: its bit pattern goes to `c0` and
/// `c1 = 0`, i.e. it is zero-extended, never sign-extended. (A 64-bit offset: pass `offset as u64`.)
pub const fn offset_from_i32(offset: i32) -> u64 {
    offset as u32 as u64
}

/// The Philox key `[k0, k1]` for a seed already widened to 64 bits as Triton does
/// (see [`seed_from_i32`]): `[low 32 bits, high 32 bits]`.
pub const fn seed_key(seed: u64) -> [u32; 2] {
    [seed as u32, (seed >> 32) as u32]
}

/// The Philox counter `[c0, c1, c2, c3]` of `randint4x` for an offset widened to 64 bits
/// (see [`offset_from_i32`]): `[low 32 bits, high 32 bits, 0, 0]`.
pub const fn offset_counter(offset: u64) -> [u32; 4] {
    [offset as u32, (offset >> 32) as u32, 0, 0]
}

/// High 32 bits of the 64-bit product (`tl.umulhi` on `u32`, PTX `mul.hi.u32`).
#[inline]
const fn umulhi32(a: u32, b: u32) -> u32 {
    ((a as u64 * b as u64) >> 32) as u32
}

/// Philox-4x32 with `rounds` rounds on counter `c` and key `k`, exactly as Triton's `philox_impl`
/// applies it (which is also Random123's `philox4x32_R`: round with the current key, then raise
/// the key; the raise after the last round is unused).
pub const fn philox4x32(c: [u32; 4], k: [u32; 2], rounds: u32) -> [u32; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = c;
    let [mut k0, mut k1] = k;
    let mut i = 0;
    while i < rounds {
        let (old0, old2) = (c0, c2);
        c0 = umulhi32(PHILOX_ROUND_B, old2) ^ c1 ^ k0;
        c2 = umulhi32(PHILOX_ROUND_A, old0) ^ c3 ^ k1;
        c1 = PHILOX_ROUND_B.wrapping_mul(old2);
        c3 = PHILOX_ROUND_A.wrapping_mul(old0);
        k0 = k0.wrapping_add(PHILOX_KEY_A);
        k1 = k1.wrapping_add(PHILOX_KEY_B);
        i += 1;
    }
    [c0, c1, c2, c3]
}

/// `tl.philox(seed, c0, c1, c2, c3, n_rounds)` with 32-bit counters: key = [`seed_key`]`(seed)`.
pub const fn philox(seed: u64, c: [u32; 4], rounds: u32) -> [u32; 4] {
    philox4x32(c, seed_key(seed), rounds)
}

/// `tl.randint4x(seed, offset)`: four random words for one offset.
///
/// `seed` is the seed as Triton widens it to `uint64` ([`seed_from_i32`] for an `i32` seed, or
/// the Python int mod 2^64); `offset` is the offset zero-extended from its own width if it is
/// 32-bit ([`offset_from_i32`]), or its 64-bit pattern.
pub const fn randint4x(seed: u64, offset: u64) -> [u32; 4] {
    philox(seed, offset_counter(offset), PHILOX_ROUNDS)
}

/// `tl.randint(seed, offset)`: word 0 of [`randint4x`] (Triton types it `uint32`).
pub const fn randint(seed: u64, offset: u64) -> u32 {
    randint4x(seed, offset)[0]
}

/// Triton's `uint_to_uniform_float` for a 32-bit word: a float in `[0, 1)`.
///
/// `x` as `i32`, negatives mapped to `-x - 1` (= `!x`), converted to `f32` with round-to-nearest
/// and multiplied by [`UNIFORM_SCALE_32`] in `f32`.
pub fn uint_to_uniform_float(x: u32) -> f32 {
    let s = x as i32;
    let s = if s < 0 { !s } else { s };
    s as f32 * UNIFORM_SCALE_32
}

/// `tl.rand(seed, offset)`: `uint_to_uniform_float(randint(seed, offset))`, in `[0, 1)`.
pub fn rand(seed: u64, offset: u64) -> f32 {
    uint_to_uniform_float(randint(seed, offset))
}

/// `tl.rand4x(seed, offset)`: the four words of [`randint4x`] made uniform.
pub fn rand4x(seed: u64, offset: u64) -> [f32; 4] {
    randint4x(seed, offset).map(uint_to_uniform_float)
}

/// `randn(seed, offset)` as tile defines it (Triton's `tl.randn`: Box–Muller on the first two
/// words of [`rand4x`]), in the interpreter's `f32` operations: `sqrt(−2 · ln(max(1e-7, u₀))) ·
/// cos(2π · u₁)`. The interpreter gives these bits; the GPU and Triton agree to the accuracy of
/// their `log` and `cos`.
pub fn randn(seed: u64, offset: u64) -> f32 {
    let u = rand4x(seed, offset);
    let th = std::f32::consts::TAU * u[1];
    (-2.0 * u[0].max(1.0e-7).ln()).sqrt() * libm::cosf(th)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Known-answer vectors from Random123's `tests/kat_vectors` (DEShawResearch/random123,
    // commit 9545ff6413f258be2f04c1d319d99aaef7521150, lines 24-29 and 38-43). Columns there:
    // name, rounds, counter words, key words, expected output.
    /// One known-answer row: rounds, counter, key, expected output.
    type Kat32 = (u32, [u32; 4], [u32; 2], [u32; 4]);

    #[test]
    fn philox4x32_known_answers() {
        let kat: [Kat32; 6] = [
            (
                7,
                [0; 4],
                [0; 2],
                [0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48],
            ),
            (
                7,
                [u32::MAX; 4],
                [u32::MAX; 2],
                [0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662],
            ),
            (
                7,
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0],
                [0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a],
            ),
            (
                10,
                [0; 4],
                [0; 2],
                [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
            ),
            (
                10,
                [u32::MAX; 4],
                [u32::MAX; 2],
                [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
            ),
            (
                10,
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0],
                [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
            ),
        ];
        for (rounds, c, k, want) in kat {
            assert_eq!(
                philox4x32(c, k, rounds),
                want,
                "rounds {rounds} c {c:08x?} k {k:08x?}"
            );
        }
    }

    #[test]
    fn seed_and_offset_split() {
        assert_eq!(seed_from_i32(-1), u64::MAX);
        assert_eq!(seed_key(seed_from_i32(-1)), [u32::MAX, u32::MAX]);
        assert_eq!(seed_key(seed_from_i32(42)), [42, 0]);
        assert_eq!(seed_key((1u64 << 32) + 5), [5, 1]);
        assert_eq!(offset_counter(offset_from_i32(-1)), [u32::MAX, 0, 0, 0]);
        assert_eq!(offset_counter(u64::MAX), [u32::MAX, u32::MAX, 0, 0]);
        assert_eq!(offset_counter((3u64 << 32) | 7), [7, 3, 0, 0]);
        let (seed, off) = ((7u64 << 32) | 11, (5u64 << 32) | 9);
        assert_eq!(randint4x(seed, off), philox4x32([9, 5, 0, 0], [11, 7], 10));
        assert_eq!(randint(seed, off), randint4x(seed, off)[0]);
    }

    // Values produced by Triton 3.6.0 itself, running its `random.py` in its CPU interpreter
    // (TRITON_INTERPRET=1, which executes the same integer and f32 ops with NumPy) on a kernel
    // `tl.randint4x(seed, off0 + tl.arange(0, 4))` / `tl.rand(...)`. `seed` and `off0` were Python
    // ints, so the seeds 0, 1, 42, 2^31-1, -1, -2^31 were typed i32, 2^32+5 i64 and 2^63+3 u64;
    // the offsets from off0 = 0, -5, 2^31-4 were int32 and those from 2^31, 2^32-2, 2^40+3,
    // -2^40 int64. Every third row is kept. Columns: seed mod 2^64, offset as `randint4x` takes it
    // (int32 zero-extended, int64 mod 2^64), the four words, the bits of `rand`.
    #[test]
    fn matches_triton_interpreter() {
        for &(seed, offset, words, rand_bits) in TRITON_GOLDEN {
            assert_eq!(
                randint4x(seed, offset),
                words,
                "seed {seed:#x} offset {offset:#x}"
            );
            assert_eq!(
                rand(seed, offset).to_bits(),
                rand_bits,
                "seed {seed:#x} offset {offset:#x}"
            );
        }
    }

    #[rustfmt::skip]
    const TRITON_GOLDEN: &[(u64, u64, [u32; 4], u32)] = &[
        (0x0, 0x0, [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8], 0x3f4c4fd1),
        (0x0, 0x3, [0xc990ef29, 0x6a4474a6, 0x9ac9134f, 0x6d413e04], 0x3ed9bc42),
        (0x0, 0xfffffffd, [0x461bb0c1, 0x6df7a3ae, 0xe50cc3af, 0x65bebe47], 0x3f0c3761),
        (0x0, 0x7ffffffd, [0x90932e14, 0xdaa17740, 0xf0190798, 0x2a74eeb4], 0x3f5ed9a3),
        (0x0, 0x80000000, [0xbf9c529b, 0xbcbca0df, 0x6c1f0468, 0x2a9544cf], 0x3f00c75a),
        (0x0, 0x80000003, [0x8dce04eb, 0x92cc8808, 0x779de28c, 0x897b9e8c], 0x3f6463f5),
        (0x0, 0x100000000, [0x6ad0c5ec, 0xea236249, 0x73a459f5, 0x074944b3], 0x3f55a18b),
        (0x0, 0x10000000004, [0x3a6acb22, 0x846a665f, 0xd256e8ba, 0xdcf1ce0e], 0x3ee9ab2c),
        (0x0, 0xffffff0000000000, [0x5b06d859, 0x943eade9, 0xfc5094ac, 0x589c808f], 0x3f360db0),
        (0x0, 0xffffff0000000003, [0x1f75db0b, 0x0fd28f1f, 0x64d3fbab, 0x674a469c], 0x3e7baed7),
        (0x1, 0x2, [0x3f55b3f0, 0x8e76cc9d, 0xb68faa8e, 0xebed3676], 0x3efd56cf),
        (0x1, 0xfffffffc, [0x85e24d8d, 0xa81df86d, 0x597f8ba8, 0x5621a927], 0x3f743b64),
        (0x1, 0x7ffffffc, [0x3d5e61ed, 0xdf1f7fdc, 0xb414c2c2, 0xbf695197], 0x3ef57987),
        (0x1, 0x7fffffff, [0x32254c84, 0x8ab3f201, 0xdb6898d0, 0x1fabcd48], 0x3ec89531),
        (0x1, 0x80000002, [0x9598c49a, 0x0eaa70aa, 0x49e82b3d, 0x06f3e4e2], 0x3f54ce76),
        (0x1, 0xffffffff, [0x00790b3f, 0xbbcdb053, 0xf78808c7, 0x69fffa4d], 0x3b72167d),
        (0x1, 0x10000000003, [0x835ca77d, 0x7755e8a6, 0xd0023546, 0xc909e61a], 0x3f7946b0),
        (0x1, 0x10000000006, [0xaffc9eea, 0x19abcab8, 0x7bd9a17c, 0xfc0bf83c], 0x3f2006c1),
        (0x1, 0xffffff0000000002, [0x52c399cc, 0x11213ebe, 0xf62bd416, 0xaf4d58a7], 0x3f258733),
        (0x2a, 0x1, [0xfcdb2127, 0x53ba6cfd, 0x838f5a6e, 0x744e06fb], 0x3cc937b5),
        (0x2a, 0xfffffffb, [0xe2ce77a2, 0x493e1696, 0x1f824b08, 0x51a8214a], 0x3e698c42),
        (0x2a, 0xfffffffe, [0x81b97a34, 0xac88045c, 0x962e881c, 0x41bb3828], 0x3f7c8d0b),
        (0x2a, 0x7ffffffe, [0xd1d419eb, 0xb9f46bd0, 0x6e12d24c, 0xea08eafb], 0x3eb8af97),
        (0x2a, 0x80000001, [0x853fa4f0, 0xf7d89f2c, 0x7dbc6f42, 0xcd99cf69], 0x3f7580b5),
        (0x2a, 0xfffffffe, [0x81b97a34, 0xac88045c, 0x962e881c, 0x41bb3828], 0x3f7c8d0b),
        (0x2a, 0x100000001, [0x220383a8, 0x6880ffbe, 0x93ef3466, 0xda94bb0d], 0x3e880e0e),
        (0x2a, 0x10000000005, [0x19c1eb60, 0x039f57c8, 0x43943bfc, 0xdd95acb0], 0x3e4e0f5a),
        (0x2a, 0xffffff0000000001, [0xfa0aeb77, 0xdc881dbc, 0x011903f0, 0xbb31a2a3], 0x3d3ea290),
        (0x7fffffff, 0x0, [0x57e1fa99, 0x98839838, 0xb79f06b5, 0x95bd838c], 0x3f2fc3f4),
        (0x7fffffff, 0x3, [0xc7bfd054, 0xc1b3ee23, 0xf15eda61, 0xbbb67a11], 0x3ee100be),
        (0x7fffffff, 0xfffffffd, [0x88e1eff7, 0xc99d6f45, 0x40c43cf4, 0x780235f7], 0x3f6e3c1f),
        (0x7fffffff, 0x7ffffffd, [0xc7dee4af, 0x7d6ff6fb, 0xaf7b774a, 0x747a81b8], 0x3ee0846c),
        (0x7fffffff, 0x80000000, [0xf4c70866, 0x9a88a712, 0x7727c51b, 0x019ecb2d], 0x3db38f79),
        (0x7fffffff, 0x80000003, [0x7db0b3a3, 0x1d7abf47, 0xa42f575a, 0x70a28f49], 0x3f7b6166),
        (0x7fffffff, 0x100000000, [0xb21f49af, 0x0d211cf6, 0x26581eb9, 0xa7092748], 0x3f1bc16c),
        (0x7fffffff, 0x10000000004, [0xd74ec12a, 0x8d9075d7, 0x685e0d02, 0x732a29e2], 0x3ea2c4fa),
        (0x7fffffff, 0xffffff0000000000, [0x3de584fe, 0xa00a311c, 0x5cef0179, 0x90fd589b], 0x3ef79613),
        (0x7fffffff, 0xffffff0000000003, [0x2ddfb18c, 0x4f917b25, 0x9eef4d20, 0x98c8bd98], 0x3eb77ec5),
        (0xffffffffffffffff, 0x2, [0x17625282, 0x6f3d8616, 0xe2c154aa, 0x98e39092], 0x3e3b1293),
        (0xffffffffffffffff, 0xfffffffc, [0x244a2d30, 0xca43936f, 0x5419bfb8, 0x119925c0], 0x3e9128b4),
        (0xffffffffffffffff, 0x7ffffffc, [0x3d4bc93e, 0x12c94d50, 0xe34de980, 0xc01e8e94], 0x3ef52f24),
        (0xffffffffffffffff, 0x7fffffff, [0xd6a65d28, 0x8f3c532c, 0xe920a50e, 0xe8b3fab6], 0x3ea5668a),
        (0xffffffffffffffff, 0x80000002, [0xc3a6c463, 0x8bcead05, 0xd18d3db6, 0x521504c2], 0x3ef164ed),
        (0xffffffffffffffff, 0xffffffff, [0xc25672de, 0x7c03af71, 0xc1b7863e, 0x1d02bb96], 0x3ef6a634),
        (0xffffffffffffffff, 0x10000000003, [0xad53eff0, 0x3e667db9, 0x4b2522b5, 0xe8d35a5d], 0x3f25581f),
        (0xffffffffffffffff, 0x10000000006, [0xe17463ad, 0x72dee820, 0x0ceef4a6, 0x88b86556], 0x3e745ce2),
        (0xffffffffffffffff, 0xffffff0000000002, [0xbb799205, 0xd3f3c4b8, 0x1e29ef5b, 0x97bc661c], 0x3f090cdb),
        (0xffffffff80000000, 0x1, [0xc540c9eb, 0x09c956e1, 0xac8db5bf, 0x984ad7f6], 0x3eeafcd7),
        (0xffffffff80000000, 0xfffffffb, [0xde0e423a, 0x9ea06c9c, 0x0f65d827, 0x85677823], 0x3e87c6f6),
        (0xffffffff80000000, 0xfffffffe, [0x9c2c57ba, 0x0f03fa61, 0xe19199bb, 0x849f8f85], 0x3f47a750),
        (0xffffffff80000000, 0x7ffffffe, [0xc70a1c7c, 0x8ed28dfa, 0x48fb5985, 0x3e2021ad], 0x3ee3d78d),
        (0xffffffff80000000, 0x80000001, [0xff63d89d, 0xd7e66876, 0xb0929c0e, 0xc9b54e53], 0x3b9c2761),
        (0xffffffff80000000, 0xfffffffe, [0x9c2c57ba, 0x0f03fa61, 0xe19199bb, 0x849f8f85], 0x3f47a750),
        (0xffffffff80000000, 0x100000001, [0xf6799181, 0xd2ef75e5, 0xa93f0257, 0xbf029dea], 0x3d9866e7),
        (0xffffffff80000000, 0x10000000005, [0x4328b162, 0x789dc07f, 0x90c5ba28, 0x232d0f94], 0x3f065162),
        (0xffffffff80000000, 0xffffff0000000001, [0xca74c3a9, 0x008c1e72, 0x14e9be3f, 0x27b59ecd], 0x3ed62cf0),
        (0x100000005, 0x0, [0x009b863c, 0xa701829e, 0xcdd07445, 0x6fcd431d], 0x3b9b863b),
        (0x100000005, 0x3, [0x2f27c6d5, 0x9f05c5c6, 0x2ca28bcd, 0x599ce552], 0x3ebc9f1a),
        (0x100000005, 0xfffffffd, [0x33c8f138, 0x85b02e3c, 0x9b20a6f1, 0x49db0f70], 0x3ecf23c4),
        (0x100000005, 0x7ffffffd, [0xfbc3d311, 0x582865fd, 0x66c0738c, 0xf9c8e91d], 0x3d07859d),
        (0x100000005, 0x80000000, [0xdaf61825, 0x23701b04, 0x0076247b, 0x7cc02c79], 0x3e94279e),
        (0x100000005, 0x80000003, [0xe3768d80, 0x6b59dbf2, 0xc21d8f19, 0xcdb8c90c], 0x3e644b93),
        (0x100000005, 0x100000000, [0x439730dd, 0xa4a6d026, 0x1cd38f15, 0x7b096ec7], 0x3f072e61),
        (0x100000005, 0x10000000004, [0x83ed8be0, 0xe75090b9, 0x261d59e5, 0x3156b090], 0x3f7824e7),
        (0x100000005, 0xffffff0000000000, [0x4e2ad39c, 0xf8e70dd0, 0xa0d4d140, 0x8f6fbe22], 0x3f1c55a6),
        (0x100000005, 0xffffff0000000003, [0xd186f01c, 0x06b7c987, 0xc9c14865, 0x8858de59], 0x3eb9e43f),
        (0x8000000000000003, 0x2, [0x9f61da50, 0x7677db8d, 0xe7f65c64, 0x1305afb3], 0x3f413c4a),
        (0x8000000000000003, 0xfffffffc, [0x61bdabc5, 0xe36ac35c, 0x953a9785, 0xa12cdf1f], 0x3f437b57),
        (0x8000000000000003, 0x7ffffffc, [0x4173037a, 0xa004ea74, 0xa22b3273, 0x7ba2e7c4], 0x3f02e606),
        (0x8000000000000003, 0x7fffffff, [0x8d9efa8c, 0x358b7786, 0x615fd75a, 0xf0792dbc], 0x3f64c20a),
        (0x8000000000000003, 0x80000002, [0x124d0ff2, 0x8608d523, 0x04c0a8a7, 0x516777d5], 0x3e12687f),
        (0x8000000000000003, 0xffffffff, [0x8c6d7333, 0x713b3ee8, 0x3791fecf, 0x730d3532], 0x3f672519),
        (0x8000000000000003, 0x10000000003, [0x04ebf841, 0x72d23bba, 0xe134f639, 0x3a4592e3], 0x3d1d7f07),
        (0x8000000000000003, 0x10000000006, [0xc3ad7ed7, 0xed789962, 0x9e7da72e, 0x13cb4541], 0x3ef14a04),
        (0x8000000000000003, 0xffffff0000000002, [0x3d4a4edc, 0x4e2c8b16, 0x878fce1f, 0xf0de2240], 0x3ef5293a),
    ];

    #[test]
    fn uniform_float_edges() {
        assert_eq!(uint_to_uniform_float(0), 0.0);
        assert_eq!(uint_to_uniform_float(u32::MAX), 0.0); // -1 -> 0
        let top = 1.0 - f32::EPSILON / 2.0; // 1 - 2^-24
        assert_eq!(uint_to_uniform_float(0x7FFF_FFFF), top);
        assert_eq!(uint_to_uniform_float(0x8000_0000), top);
        assert_eq!(uint_to_uniform_float(1), UNIFORM_SCALE_32);
        // Triton rounds its Python-float literals to f32 (round to nearest): so does `as f32`.
        assert_eq!(UNIFORM_SCALE_32, 4.656_612_734_2e-10_f64 as f32);
    }

    #[test]
    fn rand_in_unit_interval() {
        for seed in [0u64, 1, 42, seed_from_i32(-1), (1 << 32) + 5] {
            for off in (0..100_000u64).chain((1u64 << 31) - 50_000..(1u64 << 31) + 50_000) {
                let u = rand(seed, off);
                assert!((0.0..1.0).contains(&u), "rand({seed}, {off}) = {u}");
                for v in rand4x(seed, off) {
                    assert!((0.0..1.0).contains(&v));
                }
            }
        }
    }
}
