//! Must not compile: arithmetic on constants is checked; one that overflows i64 is an error at the
//! expression, not a value that wraps on the GPU.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let big = 9223372036854775807;
    let offs = arange(0, 128) + (big + 1);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
