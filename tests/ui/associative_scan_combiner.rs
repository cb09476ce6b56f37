//! Must not compile: a combiner works on the scalar elements it is given; a tile from outside
//! it is refused at the expression that uses it.
use tile::prelude::*;

#[tile_kernel]
fn running(x: Ptr<i32, 128>, out: Ptr<i32, 128>) {
    let i = arange(0, 128);
    let v = load(x + i);
    store(out + i, associative_scan(v, 0, |a, b| a * b + v));
}

fn main() {}
