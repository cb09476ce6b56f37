//! Must not compile: only `cumsum` counts bools; the other scans take numbers.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, 1024>) {
    let i = arange(0, 1024);
    store(x + i, (load(x + i) > 0).cumprod());
}

fn main() {}
