//! Must not compile: `cdiv` of compile-time integers whose `a + b - 1` overflows is an error at
//! the call.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs * cdiv(i64::MAX, 2), 0.0, offs < n);
}

fn main() {}
