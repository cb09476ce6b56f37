//! Must not compile: an element-type parameter lists element types only; `usize` is not one. The error
//! is at the offending entry.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<T, n>, n: i32, T: Type<{ [f32, usize] }>) {
    let offs = arange(0, 128);
    store(x + offs, load(x + offs, offs < n), offs < n);
}

fn main() {}
