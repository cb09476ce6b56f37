//! Must not compile: a loop's step is a positive compile-time integer; the error is at the step.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    for off in (0..n).step_by(n) {
        store(x + off + offs, 0.0, off + offs < n);
    }
}

fn main() {}
