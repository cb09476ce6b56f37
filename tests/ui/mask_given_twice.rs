//! Must not compile: a mask given by position and by name is an error at the name.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    let m = offs < n;
    store(x + offs, 1.0, m, mask = m);
}

fn main() {}
