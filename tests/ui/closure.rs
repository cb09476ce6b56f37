//! Must not compile: a closure in a kernel is an error at the closure.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    let double = |v| v * 2.0;
    store(x + offs, double(load(x + offs)), offs < n);
}

fn main() {}
