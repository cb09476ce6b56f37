//! Must not compile: `associative_scan` combines with `+`, `*`, `max` or `min`; a closure that
//! computes anything else is refused at the combiner.
use tile::prelude::*;

#[tile_kernel]
fn running(x: Ptr<i32, 128>, out: Ptr<i32, 128>) {
    let i = arange(0, 128);
    store(out + i, associative_scan(load(x + i), 0, |a, b| a - b));
}

fn main() {}
