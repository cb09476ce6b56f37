//! Must not compile: `umulhi` takes i32 operands.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i64, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let v = load(x + offs, offs < n);
    store(x + offs, umulhi(v, v), offs < n);
}

fn main() {}
