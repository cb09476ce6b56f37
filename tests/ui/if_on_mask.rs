//! Must not compile: `if` takes a scalar bool; a mask (a tile of bools) is an error at the
//! condition, which points to `select`.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    if offs < n {
        store(x + offs, 0.0);
    }
}

fn main() {}
