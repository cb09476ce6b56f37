//! Must not compile: tile functions' parameters are `Tile`, scalars, `Const` or `Type`; no
//! generics; a builtin's name is taken; a declared result needs a tail expression.
use tile::prelude::*;

#[tile_fn]
fn takes_vec(x: Vec<f32>) -> Tile {
    x
}

#[tile_fn]
fn generic<T>(x: Tile) -> Tile {
    x
}

#[tile_fn]
fn load(x: Tile) -> Tile {
    x
}

#[tile_fn]
fn no_tail(x: Tile) -> Tile {
    let y = x + 1;
}

fn main() {}
