//! Must not compile: a `bool` passed by value; scalars are i32, i64 or f32 (bool is a buffer
//! element type). The error is at the type.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, flag: bool) {
    let offs = arange(0, 128);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
