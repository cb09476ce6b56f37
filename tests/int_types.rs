//! The integer types beyond `i32`/`i64` (`i8`, `i16`, `u8`, `u32`, `u64`), shifts and bitcasts,
//! on the interpreter, against Rust computing the same expressions with the semantics the
//! language states: Rust's `as` for conversions, unsigned division, comparison and `max`, and
//! shifts whose amount is read as unsigned, past the width giving 0 (or the sign). The GPU runs
//! the same checks (`tests/gpu.rs`).

use tile_tests as common;

use tile::prelude::*;

#[test]
fn integer_types_shifts_and_bitcasts_match_rust() {
    common::check_int_types(&Device::interpreter());
}

#[test]
fn unsigned_scalar_parameters() {
    common::check_unsigned_scalars(&Device::interpreter());
}

#[test]
fn unsigned_reductions_atomics_and_half_bits() {
    common::check_unsigned_reduce(&Device::interpreter());
}
