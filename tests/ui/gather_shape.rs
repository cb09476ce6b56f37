//! Must not compile: the index of `gather` along the columns of a `16 × 64` tile has its 16 rows;
//! this one has 8. The error is at the index.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, 1024>, out: Ptr<f32, 256>) {
    let r = arange(0, 16);
    let c = arange(0, 64);
    let v = load(x + r.expand_dims(1) * 64 + c.expand_dims(0));
    let idx = arange(0, 8).expand_dims(1) * 0 + arange(0, 32).expand_dims(0);
    store(out + idx, gather(v, idx, 1));
}

fn main() {}
