//! Must not compile: a shift of constants that loses bits (the DSL's constants are checked). The
//! error is at the shift.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i64, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, offs as i64 + (3 << 62), offs < n);
}

fn main() {}
