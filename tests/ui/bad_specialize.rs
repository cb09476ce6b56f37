//! Must not compile: `specialize` takes `aligned` or `all`; anything else is an error at the
//! option's value.
use tile::prelude::*;

#[tile_kernel(specialize = unaligned)]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
