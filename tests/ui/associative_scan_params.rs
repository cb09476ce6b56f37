//! Must not compile: the combiner of a tuple of tiles takes two tuples of names, one name per
//! tile in each.
use tile::prelude::*;

#[tile_kernel]
fn recurrence(a: Ptr<f32, 128>, b: Ptr<f32, 128>, out: Ptr<f32, 128>) {
    let i = arange(0, 128);
    let (_, h) = associative_scan((load(a + i), load(b + i)), 0, |x, y| x * y);
    store(out + i, h);
}

fn main() {}
