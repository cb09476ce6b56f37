//! Must not compile: a misspelled named argument of `load` is an error at its key, which lists
//! the names `load` takes.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    let v = load(x + offs, masks = offs < n, other = 0.0);
    store(x + offs, v + 1.0, mask = offs < n);
}

fn main() {}
