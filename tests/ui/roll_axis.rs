//! Must not compile: `roll` of a 1-D tile takes axis 0; the error is at the axis.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, 64>) {
    let offs = arange(0, 64);
    store(x + offs, offs.roll(32, 1));
}

fn main() {}
