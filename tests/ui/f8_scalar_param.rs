//! Must not compile: a scalar parameter cannot be an 8-bit float; the error, at the type, says
//! to pass an `f32` and convert it.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f8e4m3, n>, s: f8e4m3, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, s, offs < n);
}

fn main() {}
