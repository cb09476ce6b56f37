//! Must not compile: `auto(E, max = W)` takes a power of two up to 16 for `W`; 24 is an error
//! at the value.
use tile::prelude::*;

#[tile_kernel(num_warps = auto(8, max = 24))]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
