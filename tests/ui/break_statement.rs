//! Must not compile: `break` in a kernel loop is an error at it, which says to bound the range or
//! mask the iterations instead.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = arange(0, BLOCK);
    for i in 0..64 {
        if i * BLOCK >= n {
            break;
        }
        store(x + i * BLOCK + offs, 0.0, i * BLOCK + offs < n);
    }
}

fn main() {}
