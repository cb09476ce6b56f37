//! Must not compile: the word of `rand4x` is a compile-time 0, 1, 2 or 3.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, rand4x(7, offs, 4), offs < n);
}

fn main() {}
