//! Must not compile: an unknown name is an error at the name.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offset, 0.0, offs < n);
}

fn main() {}
