//! Must not compile: `reverse` is `true` or `false`.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, 1024>) {
    let i = arange(0, 1024);
    store(x + i, load(x + i).cummax(0, reverse = 1));
}

fn main() {}
