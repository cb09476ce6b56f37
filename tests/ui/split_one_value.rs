//! Must not compile: `split` gives two tiles, bound with a tuple pattern.
use tile::prelude::*;

#[tile_kernel]
fn halves(x: Ptr<f32, 256>, out: Ptr<f32, 128>) {
    let v = load(x + arange(0, 256)).reshape([128, 2]);
    let s = v.split();
    store(out + arange(0, 128), s);
}

fn main() {}
