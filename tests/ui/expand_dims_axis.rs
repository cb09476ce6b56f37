//! Must not compile: `expand_dims` of a 1-D tile takes axis 0 or 1; the error is at the axis.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<i32, 64>) {
    let offs = arange(0, 64);
    store(x + offs.expand_dims(2), 1);
}

fn main() {}
