//! Must not compile: every malformed option is reported, each at its own tokens (an empty item,
//! a missing `=`, an unknown name, a value out of range).
use tile::prelude::*;

#[tile_kernel(num_warps = 4,, num_stages 3, warps = 8, num_stages = 9)]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
