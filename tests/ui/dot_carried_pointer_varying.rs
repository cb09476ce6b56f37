//! Builds, with a warning (made an error here) at the `dot`: the pointer tile of `a` is advanced
//! by an amount that changes every iteration (`k0`), so it is not a function of the loop counter
//! the pipeline can compute ahead, and the warning says so.
#![deny(deprecated)]
use tile::prelude::*;

#[tile_kernel(num_warps = 4, num_stages = 3)]
fn k(a: Ptr<f16>, b: Ptr<f16, { 64 * 64 }>, c: Ptr<f32, { 64 * 64 }>, kk: i32) {
    let r = arange(0, 64);
    let ks = arange(0, 32);
    let mut a_ptrs = a + r.expand_dims(1) * 64 + ks.expand_dims(0);
    let mut acc = zeros([64, 64]);
    for k0 in 0..kk {
        let at = load(a_ptrs);
        let bt = load(b + ks.expand_dims(1) * 64 + r.expand_dims(0));
        acc = dot(at, bt, acc);
        a_ptrs += k0;
    }
    store(c + r.expand_dims(1) * 64 + r.expand_dims(0), acc);
}

fn main() {}
