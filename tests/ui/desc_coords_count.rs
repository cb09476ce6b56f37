//! Must not compile: an access to a rank-2 descriptor takes two coordinates.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f16>, m: i32, n: i32) {
    let d = make_tensor_descriptor(a, [m, n], [n, 1], [16, 16]);
    let t = d.load([0]);
}

fn main() {}
