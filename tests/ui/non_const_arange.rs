//! Must not compile: arange bounds must be compile-time integers.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, n);
    store(x + offs, 1.0);
}

fn main() {}
