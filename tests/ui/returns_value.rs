//! Must not compile: a kernel signature cannot declare a return type.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) -> f32 {
    let offs = arange(0, 128);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
