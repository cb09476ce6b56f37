//! Must not compile: an unknown named argument of an atomic is an error at its key, which lists
//! `mask`, `sem` and `scope`.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    atomic_add(x + offs, 1, offs < n, order = relaxed);
}

fn main() {}
