//! Must not compile: an unknown precision; the error is under the value.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, 512>, out: Ptr<f32, 256>) {
    let a = load(x + arange(0, 16).expand_dims(1) * 16 + arange(0, 16).expand_dims(0));
    let c = dot(a, a, precision = fp8);
    store(out + arange(0, 16).expand_dims(1) * 16 + arange(0, 16).expand_dims(0), c);
}

fn main() {}
