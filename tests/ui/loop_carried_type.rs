//! Must not compile: a value carried through a loop keeps its type; a scalar that becomes a tile
//! is an error at the assignment.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, out: Ptr<f32, 128>, n: i32) {
    let offs = arange(0, 128);
    let mut acc = 0.0;
    for off in (0..n).step_by(128) {
        acc = acc + load(x + off + offs, off + offs < n);
    }
    store(out + offs, acc);
}

fn main() {}
