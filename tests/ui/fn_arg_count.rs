//! Must not compile: a tile function called with the wrong number of arguments.
use tile::prelude::*;

#[tile_fn]
fn axpy(a: f32, x: Tile, y: Tile) -> Tile {
    a * x + y
}

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let v = load(x + offs, offs < n);
    store(x + offs, axpy(2.0, v), offs < n);
}

fn main() {}
