//! Must not compile: a descriptor's base is a scalar pointer, not a tile of pointers.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f16>, m: i32, n: i32) {
    let d = make_tensor_descriptor(a + arange(0, 16), [m, n], [n, 1], [16, 16]);
}

fn main() {}
