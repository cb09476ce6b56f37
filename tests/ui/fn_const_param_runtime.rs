//! Must not compile: a `Const` parameter given a run-time value is an error at the argument,
//! with a second error at the call naming the function.
use tile::prelude::*;

#[tile_fn]
fn scale(x: Tile, K: Const) -> Tile {
    x * K
}

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, scale(load(x + offs, offs < n), n), offs < n);
}

fn main() {}
