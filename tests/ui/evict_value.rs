//! Must not compile: an eviction hint is `normal`, `first` or `last`.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let v = load(x + offs, offs < n, 0.0, evict = sometimes);
    store(x + offs, v, offs < n);
}

fn main() {}
