//! Must not compile: negating the least i64 constant overflows, an error at the negation.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let least = -9223372036854775807 - 1;
    let offs = arange(0, 128) + -least;
    store(x + offs, 0.0, offs < n);
}

fn main() {}
