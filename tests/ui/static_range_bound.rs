//! Must not compile: `static_range` unrolls its body while the kernel is built, so its bounds
//! are compile-time integers; a run-time `n` is refused at the bound.
use tile::prelude::*;

#[tile_kernel]
fn unrolled(x: Ptr<f32, 128>, n: i32) {
    let i = arange(0, 128);
    let mut acc = zeros([128]);
    for k in static_range(0, n) {
        acc = acc + (k as f32);
    }
    store(x + i, acc);
}

fn main() {}
