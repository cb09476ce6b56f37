//! Must not compile: `trans` transposes a 2-D tile; the error is at the 1-D tile.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, 64>) {
    let offs = arange(0, 64);
    store(x + offs, offs.trans());
}

fn main() {}
