//! Must not compile: negating an 8-bit float needs a cast to `f32` first. The error is at the
//! negation.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f8e4m3, n>, n: i32) {
    let offs = arange(0, 128);
    let v = load(x + offs, offs < n);
    store(x + offs, -v, offs < n);
}

fn main() {}
