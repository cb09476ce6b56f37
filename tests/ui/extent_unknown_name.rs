//! Must not compile: an extent naming something that is not a parameter is an error at the name.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, { rows * cols }>, rows: i32) {
    let offs = arange(0, 128);
    store(x + offs, 0.0);
}

fn main() {}
