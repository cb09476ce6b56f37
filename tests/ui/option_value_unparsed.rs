//! Must not compile: a value of `num_warps` that does not parse is an error at its tokens, not at
//! the attribute.
use tile::prelude::*;

#[tile_kernel(num_warps = < auto)]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
