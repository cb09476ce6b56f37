//! Must not compile: a reduction axis beyond the tile's rank is an error at the axis.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, out: Ptr<f32, 1>, n: i32) {
    let offs = arange(0, 128);
    store(out, load(x + offs, offs < n).sum(1));
}

fn main() {}
