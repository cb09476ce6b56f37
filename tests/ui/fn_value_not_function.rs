//! Must not compile: a value where a tile function takes a function (`F: Fn`).
use tile::prelude::*;

#[tile_fn]
fn apply(x: Tile, F: Fn) -> Tile {
    F(x)
}

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let v = load(x + offs, offs < n);
    store(x + offs, apply(v, v * 2.0), offs < n);
}

fn main() {}
