//! Must not compile: two tile functions that call each other. Each function's macro is defined
//! only once its callees have answered, so Rust reports each call as a macro it cannot find,
//! spanned at the calls.
use tile::prelude::*;

#[tile_fn]
fn ping(x: Tile) -> Tile {
    pong(x) + 1
}

#[tile_fn]
fn pong(x: Tile) -> Tile {
    ping(x) * 2
}

fn main() {}
