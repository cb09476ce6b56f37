//! Must not compile: a `while` whose condition is always true never ends (kernels have no
//! `break`); the error is at the condition.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = arange(0, BLOCK);
    let mut v = zeros([BLOCK]);
    while BLOCK > 0 && true {
        v = v + 1.0;
        store(x + offs, v, offs < n);
    }
}

fn main() {}
