//! Must not compile: a descriptor's extents and strides are integer scalars.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f16>, m: i32, n: i32) {
    let d = make_tensor_descriptor(a, [m, n], [n, 1.0], [16, 16]);
}

fn main() {}
