//! Must not compile: `dot` of an 8×16 and a 32×8 tile; the inner dimensions differ. The error is
//! at the call.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, 512>, out: Ptr<f32, 64>) {
    let a = load(x + arange(0, 8).expand_dims(1) * 16 + arange(0, 16).expand_dims(0));
    let b = load(x + arange(0, 32).expand_dims(1) * 8 + arange(0, 8).expand_dims(0));
    let c = dot(a, b);
    store(out + arange(0, 8).expand_dims(1) * 8 + arange(0, 8).expand_dims(0), c);
}

fn main() {}
