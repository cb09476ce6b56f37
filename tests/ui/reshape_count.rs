//! Must not compile: `reshape` keeps the element count; the error is at the shape.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, 64>, B: Const<8>) {
    let offs = arange(0, 64);
    let t = offs.reshape([B, 4]);
    store(x + offs, t.sum(1).sum());
}

fn main() {}
