//! Must not compile: a type error inside a tile function is reported at the function's tokens,
//! and a second error says which call instantiated it.
use tile::prelude::*;

#[tile_fn]
fn bad_sum(x: Tile, y: Tile) -> Tile {
    x + y
}

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let v = load(x + offs, offs < n);
    store(x + offs, bad_sum(v, offs), offs < n);
}

fn main() {}
