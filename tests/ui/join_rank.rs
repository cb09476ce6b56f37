//! Must not compile: `join` adds a dimension, and tiles have at most two.
use tile::prelude::*;

#[tile_kernel]
fn pairs(x: Ptr<f32, 1024>, out: Ptr<f32, 2048>) {
    let r = arange(0, 16).expand_dims(1) * 64 + arange(0, 64).expand_dims(0);
    let a = load(x + r);
    let j = join(a, a + 1.0);
    store(out + arange(0, 2048), j.reshape(2048));
}

fn main() {}
