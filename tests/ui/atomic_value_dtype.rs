//! Must not compile: an atomic of `f32` values through `Ptr<i32>` is an error at the values,
//! which shows the conversion to write.
use tile::prelude::*;

#[tile_kernel]
fn k(hist: Ptr<i32, n>, x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    let v = load(x + offs, offs < n);
    atomic_add(hist + offs, v * 2.0, offs < n);
}

fn main() {}
