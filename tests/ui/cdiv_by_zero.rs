//! Must not compile: `cdiv` by the compile-time integer 0 is an error at the divisor, even with a
//! run-time dividend.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BK: Const<32>) {
    let offs = arange(0, BK);
    for k in 0..cdiv(n, BK - 32) {
        store(x + k * BK + offs, 0.0, k * BK + offs < n);
    }
}

fn main() {}
