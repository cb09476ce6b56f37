//! Must not compile: `gather` of a 1-D tile takes axis 0; the error is at the axis.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, 64>) {
    let offs = arange(0, 64);
    let v = load(x + offs);
    store(x + offs, v.gather(63 - offs, 1));
}

fn main() {}
