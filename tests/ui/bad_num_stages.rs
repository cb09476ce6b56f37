//! Must not compile: `num_stages` is 2 to 8; 1 is an error at the option's value.
use tile::prelude::*;

#[tile_kernel(num_stages = 1)]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
