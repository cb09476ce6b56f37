//! Must not compile: a descriptor is bound once; a loop cannot carry a new one.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f16>, b: Ptr<f16>, m: i32, n: i32) {
    let d = make_tensor_descriptor(a, [m, n], [n, 1], [16, 16]);
    for i in 0..4 {
        d = make_tensor_descriptor(b, [m, n], [n, 1], [16, 16]);
    }
}

fn main() {}
