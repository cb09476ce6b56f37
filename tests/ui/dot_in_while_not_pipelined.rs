//! Builds, with a warning (made an error here) at the `dot` of a `while` loop: only `for` loops
//! read a `dot`'s operands through a ring of shared buffers, and the message says to write one.
#![deny(deprecated)]
use tile::prelude::*;

#[tile_kernel(num_warps = 4, num_stages = 3)]
fn k(a: Ptr<f16, { 64 * 64 }>, b: Ptr<f16, { 64 * 64 }>, c: Ptr<f32, { 64 * 64 }>, kk: i32) {
    let r = arange(0, 64);
    let ks = arange(0, 32);
    let mut acc = zeros([64, 64]);
    let mut k0 = 0;
    while k0 < kk {
        let at = load(a + r.expand_dims(1) * 64 + (k0 + ks).expand_dims(0));
        let bt = load(b + (k0 + ks).expand_dims(1) * 64 + r.expand_dims(0));
        acc = dot(at, bt, acc);
        k0 += 32;
    }
    store(c + r.expand_dims(1) * 64 + r.expand_dims(0), acc);
}

fn main() {}
