//! Must not compile: a `while` loop is an error at it, which says to compute the trip count and
//! write a `for` loop.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = arange(0, BLOCK);
    let mut start = 0;
    while start < n {
        store(x + start + offs, 0.0, start + offs < n);
        start += BLOCK;
    }
}

fn main() {}
