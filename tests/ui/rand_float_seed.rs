//! Must not compile: the seed of `rand` is an i32 or i64 scalar; a float is an error at the seed.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, s: f32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, rand(s, offs), offs < n);
}

fn main() {}
