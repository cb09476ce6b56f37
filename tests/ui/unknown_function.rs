//! Must not compile: an unknown function is an error at its name: Rust finds no tile function
//! (`#[tile_fn]`) under it.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, softplus(load(x + offs)), offs < n);
}

fn main() {}
