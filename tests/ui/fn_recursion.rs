//! Must not compile: a tile function that calls itself is an error at the call.
use tile::prelude::*;

#[tile_fn]
fn halve(x: Tile) -> Tile {
    halve(x / 2)
}

fn main() {}
