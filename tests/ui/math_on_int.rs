//! Must not compile: float math on an integer tile is an error at the call.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, n>, out: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    let mask = offs < n;
    store(out + offs, load(x + offs, mask).exp(), mask);
}

fn main() {}
