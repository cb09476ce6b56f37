//! Must not compile: loop bounds are `i32` scalars; a tile bound is an error at the bound.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    for i in 0..offs {
        store(x + i, 0.0);
    }
}

fn main() {}
