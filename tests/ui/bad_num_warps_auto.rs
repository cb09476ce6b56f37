//! Must not compile: `num_warps = auto(E)` takes a power of two; 3 is an error at the option.
use tile::prelude::*;

#[tile_kernel(num_warps = auto(3))]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
