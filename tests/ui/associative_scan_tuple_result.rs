//! Must not compile: a scan of two tiles gives two tiles, bound with a tuple pattern.
use tile::prelude::*;

#[tile_kernel]
fn recurrence(a: Ptr<f32, 128>, b: Ptr<f32, 128>, out: Ptr<f32, 128>) {
    let i = arange(0, 128);
    let h = associative_scan(
        (load(a + i), load(b + i)),
        0,
        |(a1, b1), (a2, b2)| (a1 * a2, b1 * a2 + b2),
    );
    store(out + i, h);
}

fn main() {}
