//! Must not compile: a shape is made of compile-time integers; the error is at the run-time one.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, 64>, n: i32) {
    let offs = arange(0, 64);
    let t = offs.reshape([n, 8]);
    store(x + offs, t.reshape(64));
}

fn main() {}
