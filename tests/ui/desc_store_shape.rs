//! Must not compile: a descriptor stores tiles of exactly its block shape.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f32>, m: i32, n: i32) {
    let d = make_tensor_descriptor(a, [m, n], [n, 1], [16, 32]);
    let t = zeros([16, 16]);
    d.store([0, 0], t);
}

fn main() {}
