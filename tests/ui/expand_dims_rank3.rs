//! Must not compile: tiles have at most two dimensions, so a 2-D tile cannot be expanded again.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, 64>) {
    let rows = arange(0, 8).expand_dims(1);
    store(x + rows.expand_dims(2), 1);
}

fn main() {}
