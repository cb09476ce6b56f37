//! `rand`, `randint` and `umulhi` on the interpreter against `tile_core::random` (Triton's Philox
//! stream, checked there against Random123's known answers and Triton's own values), bit for bit,
//! for seeds and offsets at the edges of their types.

mod common;

use tile::prelude::*;

#[test]
fn philox_matches_the_reference() {
    common::check_philox(&Device::interpreter());
}

/// The four `randint4x`/`rand4x` words of one seed and offsets come from one Philox evaluation:
/// the optimized IR holds one chain of 10 rounds (at most 20 `umulhi`), not four.
#[test]
fn four_words_share_one_evaluation() {
    let ir = common::philox_words::KERNEL.ir;
    let n = ir.matches(" umulhi ").count();
    assert!((1..=20).contains(&n), "{n} umulhi in\n{ir}");
}
