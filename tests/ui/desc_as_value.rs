//! Must not compile: a tensor descriptor is not a number or tile; the error names it and shows
//! its methods.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f16>, m: i32, n: i32) {
    let d = make_tensor_descriptor(a, [m, n], [n, 1], [16, 16]);
    let t = d + 1;
}

fn main() {}
