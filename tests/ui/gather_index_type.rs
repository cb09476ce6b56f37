//! Must not compile: the index of `gather` is an `i32` tile; the error is at the index.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, 64>, i: Ptr<i64, 64>) {
    let offs = arange(0, 64);
    let v = load(x + offs);
    store(x + offs, v.gather(load(i + offs), 0));
}

fn main() {}
