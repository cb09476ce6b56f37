//! Must not compile: a keyword where `specialize`'s value goes (tokens that do not parse as a
//! value) is an error at the keyword, not at the attribute.
use tile::prelude::*;

#[tile_kernel(specialize = unsafe)]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
