//! Must not compile: a specialization list with a repeated value.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<{ [128, 256, 128] }>) {
    let offs = arange(0, BLOCK);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
