//! Must not compile: each block dimension of a descriptor is a power of two.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f16>, m: i32, n: i32, BN: Const<48>) {
    let d = make_tensor_descriptor(a, [m, n], [n, 1], [16, BN]);
}

fn main() {}
