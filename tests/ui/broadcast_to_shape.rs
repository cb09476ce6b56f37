//! Must not compile: a `[4, 8]` tile does not broadcast to `[4, 16]`; the error is at the shape.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, 64>) {
    let r = arange(0, 4);
    let c = arange(0, 8);
    let t = r.expand_dims(1) * 8 + c.expand_dims(0);
    let b = broadcast_to(t, [4, 16]);
    store(x + r.expand_dims(1) * 16 + arange(0, 16).expand_dims(0), b);
}

fn main() {}
