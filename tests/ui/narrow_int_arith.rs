//! Must not compile: `i8` is a storage type; arithmetic needs `as i32` first. The error is at the
//! addition.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i8, n>, n: i32) {
    let offs = arange(0, 128);
    let v = load(x + offs, offs < n);
    store(x + offs, v + v, offs < n);
}

fn main() {}
