//! Must not compile: `*` on a value (here a constant) is not a kernel operation.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128) + *1;
    store(x + offs, 0.0, offs < n);
}

fn main() {}
