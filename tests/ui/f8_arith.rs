//! Must not compile: `f8e4m3` is a storage type; arithmetic needs `as f32` first. The error is at
//! the multiplication.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f8e4m3, n>, y: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    let v = load(x + offs, offs < n);
    store(y + offs, (v * v) as f32, offs < n);
}

fn main() {}
