//! Must not compile: casts go to element types (`usize` is not one).
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    let mask = offs < n;
    let v = load(x + offs, mask) as usize;
    store(x + offs, v, mask);
}

fn main() {}
