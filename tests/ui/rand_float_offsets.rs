//! Must not compile: the offsets of `randint` are i32 or i64; a float tile is an error at them.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, randint(7, offs as f32), offs < n);
}

fn main() {}
