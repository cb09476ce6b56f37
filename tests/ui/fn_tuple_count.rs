//! Must not compile: binding a function's two results to three names, and using a function with
//! two results as one value.
use tile::prelude::*;

#[tile_fn]
fn spread(x: Tile) -> (Tile, Tile) {
    (x + 1, x - 1)
}

#[tile_kernel]
fn k(x: Ptr<i32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let (a, b, c) = spread(offs);
    store(x + offs, a + b + c, offs < n);
}

#[tile_kernel]
fn k2(x: Ptr<i32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, spread(offs), offs < n);
}

fn main() {}
