//! Must not compile: an unknown named argument of `store` is an error at its key, which lists
//! `mask` and `evict`.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let v = load(x + offs, offs < n);
    store(x + offs, v, offs < n, cache = streaming);
}

fn main() {}
