//! Must not compile: shifts take 32- or 64-bit integers, not floats. The error is at the shift.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    let v = load(x + offs, offs < n);
    store(x + offs, v << 2, offs < n);
}

fn main() {}
