//! Must not compile: each value a combiner gives has its tile's element type; an `f32` for an
//! `i32` tile is refused at the value.
use tile::prelude::*;

#[tile_kernel]
fn argmax(x: Ptr<f32, 128>, out: Ptr<i32, 128>) {
    let i = arange(0, 128);
    let (_, at) = associative_scan((load(x + i), i), 0, |(v1, i1), (v2, i2)| {
        (max(v1, v2), select(v2 > v1, v2, v1))
    });
    store(out + i, at);
}

fn main() {}
