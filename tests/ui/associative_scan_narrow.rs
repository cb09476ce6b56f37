//! Must not compile: scans combine 32- and 64-bit numbers; an `i8` tile is refused with the
//! conversion that fixes it.
use tile::prelude::*;

#[tile_kernel]
fn running(x: Ptr<i8, 128>, y: Ptr<i32, 128>, out: Ptr<i32, 128>) {
    let i = arange(0, 128);
    let (_, s) = associative_scan(
        (load(x + i), load(y + i)),
        0,
        |(a1, b1), (a2, b2)| (a2, b1 + b2),
    );
    store(out + i, s);
}

fn main() {}
