//! Must not compile: `while let` has no meaning in a kernel (no enums or options); the condition
//! of a `while` is a scalar `bool`.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let mut i = 0;
    while let 0 = i {
        store(x + i, 1.0, i < n);
        i += 1;
    }
}

fn main() {}
