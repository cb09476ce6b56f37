//! Must not compile: a literal has no bits to reinterpret until it has a type. The error is at the
//! literal.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, bitcast(1065353216, f32), offs < n);
}

fn main() {}
