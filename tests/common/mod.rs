//! Kernels shared by the workspace tests: every example's kernels plus kernels that exercise the
//! rest of the language, and the list of all of them (for the IR and ptxas tests).

#![allow(dead_code)]

#[path = "../../examples/act_and_mul/kernels.rs"]
pub mod act_and_mul;
#[path = "../../examples/elementwise_chains/kernels.rs"]
pub mod elementwise_chains;
#[path = "../../examples/fused_add_mul/kernels.rs"]
pub mod fused_add_mul;
#[path = "../../examples/fused_bias_gelu/kernels.rs"]
pub mod fused_bias_gelu;
#[path = "../../examples/fused_softmax/kernels.rs"]
pub mod fused_softmax;
#[path = "../../examples/qk_norm_rope/kernels.rs"]
pub mod qk_norm_rope;

use tile::prelude::*;

#[tile_kernel]
/// Integer arithmetic: div/rem (with zero divisors), min/max, select, bitwise ops, negation.
pub fn int_ops(a: Ptr<i32, n>, b: Ptr<i32, n>, out: Ptr<i32, n>, n: i32, BLOCK: Const<256>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let x = load(a + offs, mask);
    let y = load(b + offs, mask, 1);
    let q = x / y + x % y;
    let r = select(x > y, min(x, y) * 3, max(x, -y)) ^ (q & 255) | !x;
    store(out + offs, r - offs, mask);
}

#[tile_kernel]
/// 64-bit integers and a scalar i64 argument.
pub fn i64_axpy(a: Ptr<i64, n>, out: Ptr<i64, n>, n: i32, s: i64, BLOCK: Const<512>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let mut v = load(a + offs, mask);
    v *= s;
    v += 7;
    store(out + offs, v, mask);
}

#[tile_kernel(num_warps = 8)]
/// Float clamp with NaN → 0, masks combined with `&&`, scalars by value.
pub fn clamp(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, lo: f32, hi: f32, BLOCK: Const<2048>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n && offs >= 0;
    let v = load(x + offs, mask, -1.5);
    let c = min(max(v, lo), hi);
    store(out + offs, select(v != v, 0.0, c) / 2.0 - -0.25, mask);
}

#[tile_kernel]
/// A small tile with more threads than elements, and a 2-D grid.
pub fn small_tile(
    x: Ptr<f32, { rows * 16 }>,
    out: Ptr<f32, { rows * 16 }>,
    rows: i32,
    BLOCK: Const<16>,
) {
    let row = program_id(1) * num_programs(0) + program_id(0);
    let offs = row * BLOCK + arange(0, BLOCK);
    let mask = offs < rows * BLOCK;
    store(out + offs, load(x + offs, mask) * 2.0 + 1, mask);
}

/// Every kernel the project compiles (examples and tests).
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = fused_add_mul::all();
    v.extend(fused_softmax::all());
    v.extend(elementwise_chains::all());
    v.extend(fused_bias_gelu::all());
    v.extend(act_and_mul::all());
    v.extend(qk_norm_rope::all());
    v.extend([
        &int_ops::KERNEL,
        &i64_axpy::KERNEL,
        &clamp::KERNEL,
        &small_tile::KERNEL,
    ]);
    v
}

/// Deterministic pseudo-random numbers for tests.
pub struct Rng(pub u64);

impl Rng {
    /// Next 64 random bits (splitmix64).
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform f32 in [-1, 1).
    pub fn f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// The sizes every interpreter test runs.
pub const SIZES: [usize; 6] = [1, 17, 1023, 1024, 1025, 1_000_003];
