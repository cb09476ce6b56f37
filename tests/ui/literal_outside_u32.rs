//! Must not compile: a literal outside the range of the type it meets (5000000000 as `u32`). The
//! error is at the literal's expression.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<u32, n>, n: i32) {
    let offs = arange(0, 128);
    let v = load(x + offs, offs < n);
    store(x + offs, v + 5000000000, offs < n);
}

fn main() {}
