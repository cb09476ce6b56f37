//! Must not compile: a tensor descriptor is not a tile of pointers for `load`.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f16>, m: i32, n: i32) {
    let t = load(make_tensor_descriptor(a, [m, n], [n, 1], [16, 16]));
}

fn main() {}
