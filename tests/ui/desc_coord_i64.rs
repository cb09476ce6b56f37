//! Must not compile: a coordinate of a descriptor access is an `i32`; an `i64` one is refused,
//! not narrowed, with the conversion to write.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f16>, m: i32, n: i32, row: i64) {
    let d = make_tensor_descriptor(a, [m, n], [n, 1], [16, 16]);
    let t = d.load([row, 0]);
}

fn main() {}
