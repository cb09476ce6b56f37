//! Must not compile: a kernel cannot return a value.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    return load(x + offs);
}

fn main() {}
