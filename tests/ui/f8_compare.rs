//! Must not compile: 8-bit floats are compared after a cast to `f32`. The error is at the
//! comparison.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f8e5m2, n>, y: Ptr<f8e5m2, n>, n: i32) {
    let offs = arange(0, 128);
    let v = load(x + offs, offs < n);
    let w = load(y + offs, offs < n);
    store(y + offs, select(v > w, v, w), offs < n);
}

fn main() {}
