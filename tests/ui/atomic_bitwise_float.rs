//! Must not compile: bitwise atomics take integer pointers only.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    atomic_or(x + offs, 1.0, offs < n);
}

fn main() {}
