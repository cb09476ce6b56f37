//! Must not compile: `static_range` copies its body once per value, at most 1024 of them; a
//! longer range is refused with the loop that does the same at run time.
use tile::prelude::*;

#[tile_kernel]
fn unrolled(x: Ptr<f32, 128>) {
    let i = arange(0, 128);
    let mut acc = zeros([128]);
    for _ in static_range(0, 5000) {
        acc = acc + 1.0;
    }
    store(x + i, acc);
}

fn main() {}
