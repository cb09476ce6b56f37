//! Must not compile: a mask whose shape differs from the pointer tile's is an error at the mask.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 1024);
    let half = arange(0, 512);
    let v = load(x + offs, half < n);
    store(x + offs, v);
}

fn main() {}
