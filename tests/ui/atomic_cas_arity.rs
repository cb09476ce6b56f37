//! Must not compile: `atomic_cas` takes the pointers, the compared values and the new values.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    atomic_cas(x + offs, 0);
}

fn main() {}
