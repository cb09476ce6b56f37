//! Must not compile: storing f32 values through Ptr<i32> is an error at the value.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, out: Ptr<i32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let v = load(x + offs, mask);
    store(out + offs, v * 2.0, mask);
}

fn main() {}
