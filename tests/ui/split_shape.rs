//! Must not compile: `split` takes a 2-D tile whose last extent is 2.
use tile::prelude::*;

#[tile_kernel]
fn halves(x: Ptr<f32, 256>, out: Ptr<f32, 128>) {
    let v = load(x + arange(0, 256));
    let (a, b) = split(v);
    store(out + arange(0, 128), a - b);
}

fn main() {}
