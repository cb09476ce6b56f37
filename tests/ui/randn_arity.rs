//! Must not compile: `randn` takes the seed and the offsets.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, randn(offs), offs < n);
}

fn main() {}
