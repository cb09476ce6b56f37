//! Must not compile: `interleave` merges two tiles of one shape and element type.
use tile::prelude::*;

#[tile_kernel]
fn unpack(q: Ptr<u32, 128>, out: Ptr<f32, 256>) {
    let i = arange(0, 128);
    let x = load(q + i);
    let lo = (x & 15) as f32;
    let hi = x >> 4;
    store(out + arange(0, 256), interleave(lo, hi));
}

fn main() {}
