//! Must not compile: mixing f32 and i32 without a conversion is an error at the expression.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, idx: Ptr<i32, n>, n: i32) {
    let offs = arange(0, 128);
    let mask = offs < n;
    let v = load(x + offs, mask) + load(idx + offs, mask);
    store(x + offs, v, mask);
}

fn main() {}
