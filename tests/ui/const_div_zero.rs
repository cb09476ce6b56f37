//! Must not compile: a constant divided by zero is an error at the division.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128) * (4 / 0);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
