//! Must not compile: `bitcast` keeps the width (`f32` is 32 bits, `u64` 64). The error is at the
//! type.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, y: Ptr<u64, n>, n: i32) {
    let offs = arange(0, 128);
    let v = load(x + offs, offs < n);
    store(y + offs, v.bitcast(u64), offs < n);
}

fn main() {}
