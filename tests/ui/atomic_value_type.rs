//! Must not compile: an atomic's values have the pointed-to element type.
use tile::prelude::*;

#[tile_kernel]
fn k(hist: Ptr<i32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    atomic_add(hist + offs, 1.5, offs < n);
}

fn main() {}
