//! Must not compile: a descriptor's strides and block shape have one entry per dimension of its
//! shape; the error is at the list that disagrees.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f16>, m: i32, n: i32) {
    let d = make_tensor_descriptor(a, [m, n], [n], [16, 16]);
    let t = d.load([0, 0]);
}

fn main() {}
