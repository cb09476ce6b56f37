//! Must not compile: a tile given for a scalar parameter is an error at the argument.
use tile::prelude::*;

#[tile_fn]
fn shift(x: Tile, by: i32) -> Tile {
    x + by
}

#[tile_kernel]
fn k(x: Ptr<i32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, shift(offs, offs), offs < n);
}

fn main() {}
