//! Must not compile: `continue` in a kernel loop is an error at it, which says to put the rest of
//! the iteration under an `if` instead.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = arange(0, BLOCK);
    for i in 0..cdiv(n, BLOCK) {
        if i % 2 == 1 {
            continue;
        }
        store(x + i * BLOCK + offs, 0.0, i * BLOCK + offs < n);
    }
}

fn main() {}
