//! Must not compile: the first argument of an atomic is a pointer or a tile of pointers.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    atomic_max(offs, 1, offs < n);
}

fn main() {}
