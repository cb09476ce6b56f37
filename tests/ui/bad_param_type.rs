//! Must not compile: parameter types outside the accepted forms are errors at the type.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: usize, scale: &f32) {
    let offs = arange(0, 128);
    store(x + offs, 0.0);
}

fn main() {}
