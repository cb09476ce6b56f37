//! `rand`, `randint` and `umulhi` on the interpreter against `tile_core::random` (Triton's Philox
//! stream, checked there against Random123's known answers and Triton's own values), bit for bit,
//! for seeds and offsets at the edges of their types.

mod common;

use tile::prelude::*;

#[test]
fn philox_matches_the_reference() {
    common::check_philox(&Device::interpreter());
}
