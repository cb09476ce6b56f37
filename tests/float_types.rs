//! The 8-bit floats (`f8e4m3`, `f8e5m2`) and `f64` on the interpreter, against Rust computing the
//! same things (`tile::f8e4m3`'s conversions bit for bit, IEEE double arithmetic). The GPU runs
//! the same checks (`tests/gpu.rs`).

use tile_tests as common;

use tile::prelude::*;

/// Sizes: one element, a ragged program, several programs.
const SIZES: [usize; 4] = [1, 17, 1000, 4099];

#[test]
fn f8_conversions_round_to_nearest_even_and_saturate() {
    common::floats::check_f8_conversions(&Device::interpreter(), &SIZES);
}

#[test]
fn f64_arithmetic_conversions_reductions_and_atomics() {
    common::floats::check_f64(&Device::interpreter(), &SIZES);
}

#[test]
fn i8_dot_is_exact_in_i32() {
    common::int_dot::check_dot_i8(
        &Device::interpreter(),
        &[(64, 64, 64), (100, 72, 200), (1, 5, 7), (33, 130, 96)],
    );
}

#[test]
fn f8_dot_matches_f64() {
    common::f8_dot::check_dot_f8(
        &Device::interpreter(),
        &[(64, 64, 64), (100, 72, 200), (1, 5, 7), (33, 130, 96)],
    );
}
