//! Must not compile: a tile size must be a power of two.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 100);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
