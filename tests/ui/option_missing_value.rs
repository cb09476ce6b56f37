//! Must not compile: an option without a value is an error at its `=`, which says what the option
//! takes.
use tile::prelude::*;

#[tile_kernel(num_warps =)]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
