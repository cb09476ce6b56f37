//! Must not compile: `other` without a mask is an error at `other`'s value, which shows both
//! spellings with a mask.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    let v = load(x + offs, other = 0.0);
    store(x + offs, v + 1.0, offs < n);
}

fn main() {}
