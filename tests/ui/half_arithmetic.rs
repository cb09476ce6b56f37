//! Must not compile: f16 is a storage type; arithmetic on it without `as f32` is an error.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f16, n>, n: i32) {
    let offs = arange(0, 128);
    let mask = offs < n;
    let v = load(x + offs, mask);
    store(x + offs, v * v, mask);
}

fn main() {}
