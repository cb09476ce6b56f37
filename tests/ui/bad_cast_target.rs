//! Must not compile: casts go to f32, f16, bf16, i32, i64 or bool only.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    let mask = offs < n;
    let v = load(x + offs, mask) as u8;
    store(x + offs, v, mask);
}

fn main() {}
