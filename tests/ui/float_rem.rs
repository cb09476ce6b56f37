//! Must not compile: % on floats is rejected (not yet exact on the GPU).
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    let mask = offs < n;
    store(x + offs, load(x + offs, mask) % 2.0, mask);
}

fn main() {}
