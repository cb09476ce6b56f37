//! Must not compile: a function passed by a path that names no tile function.
use tile::prelude::*;

#[tile_fn]
fn apply(x: Tile, F: Fn) -> Tile {
    F(x)
}

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let v = load(x + offs, offs < n);
    store(x + offs, apply(v, no_such_function), offs < n);
}

fn main() {}
