//! Must not compile: a destructuring assignment of two names from a tile function with three
//! results; the error is at the names and says how many each side has.
use tile::prelude::*;

#[tile_fn]
fn three(x: Tile) -> (Tile, Tile, Tile) {
    (x, x + 1.0, x + 2.0)
}

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    let mut a = load(x + offs, offs < n);
    let mut b = a;
    (a, b) = three(a);
    store(x + offs, a + b, offs < n);
}

fn main() {}
