//! Must not compile: two 2-D tiles whose shapes do not broadcast (4×8 and 8×4) are an error at the
//! expression that combines them.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, 32>) {
    let a = arange(0, 4).expand_dims(1) * 8 + arange(0, 8).expand_dims(0);
    let b = arange(0, 8).expand_dims(1) * 4 + arange(0, 4).expand_dims(0);
    store(x + a, load(x + (a + b)));
}

fn main() {}
