//! Must not compile: an empty block is not a buffer extent.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, {}>) {
    let offs = arange(0, 128);
    store(x + offs, 0.0);
}

fn main() {}
