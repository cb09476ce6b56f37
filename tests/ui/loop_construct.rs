//! Must not compile: a `loop` (or `while`) in a kernel is an error at the loop; kernels loop with
//! `for` over a range.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    loop {
        store(x + offs, 0.0, offs < n);
    }
}

fn main() {}
