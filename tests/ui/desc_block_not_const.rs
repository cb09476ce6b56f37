//! Must not compile: a descriptor's block shape is made of compile-time integers.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f16>, m: i32, n: i32) {
    let d = make_tensor_descriptor(a, [m, n], [n, 1], [16, n]);
}

fn main() {}
