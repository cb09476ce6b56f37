//! Must not compile: a tile holds at most 2^20 elements; a broadcast that makes a 2048×2048 tile
//! is an error at the expression that makes it.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let r = arange(0, 2048);
    let offs = r.expand_dims(1) * 2048 + r.expand_dims(0);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
