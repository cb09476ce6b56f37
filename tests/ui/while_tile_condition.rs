//! Must not compile: the condition of a `while` is a tile of bools; it must be one scalar `bool`
//! for the whole program, and the message says how to reduce a tile to one.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let mut offs = arange(0, BLOCK);
    while offs < n {
        store(x + offs, 0.0, offs < n);
        offs = offs + BLOCK;
    }
}

fn main() {}
