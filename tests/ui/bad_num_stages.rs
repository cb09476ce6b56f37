//! Must not compile: `num_stages` is 1 to 8; 0 is an error at the option's value.
use tile::prelude::*;

#[tile_kernel(num_stages = 0)]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
