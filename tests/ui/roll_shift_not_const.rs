//! Must not compile: `roll`'s shift is a compile-time integer; the error is at the shift.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, 64>, s: i32) {
    let offs = arange(0, 64);
    store(x + offs, offs.roll(s, 0));
}

fn main() {}
