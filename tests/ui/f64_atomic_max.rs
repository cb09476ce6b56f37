//! Must not compile: `atomic_max` does not take `f64` (PTX has no double max atomic); the error
//! names the types it takes, at the pointer.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f64, n>, top: Ptr<f64, 1>, n: i32) {
    let offs = arange(0, 128);
    let v = load(x + offs, offs < n);
    atomic_max(top + offs * 0, v, offs < n);
}

fn main() {}
