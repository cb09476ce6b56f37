//! Must not compile: a tensor descriptor has rank 1 or 2.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f16>, m: i32, n: i32) {
    let d = make_tensor_descriptor(a, [m, n, n], [n, n, 1], [4, 4, 4]);
}

fn main() {}
