//! Must not compile: a scan's axis must exist.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, 1024>) {
    let r = arange(0, 32);
    let offs = r.expand_dims(1) * 32 + r.expand_dims(0);
    store(x + offs, load(x + offs).cumsum(2));
}

fn main() {}
