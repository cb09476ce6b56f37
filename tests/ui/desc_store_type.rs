//! Must not compile: a descriptor stores its array's element type; the error shows the
//! conversion, as `store`'s does.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f16>, m: i32, n: i32) {
    let d = make_tensor_descriptor(a, [m, n], [n, 1], [16, 16]);
    let acc = zeros([16, 16]);
    d.store([0, 0], acc);
}

fn main() {}
