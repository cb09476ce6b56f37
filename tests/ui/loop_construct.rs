//! Must not compile: a `loop` in a kernel is an error at the loop, which says to write a `for`
//! over a range whose count is computed before it.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    loop {
        store(x + offs, 0.0, offs < n);
    }
}

fn main() {}
