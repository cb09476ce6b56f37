//! Must not compile: `bitcast` reinterprets numbers, not booleans. The error is at the operand.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<u8, n>, n: i32) {
    let offs = arange(0, 128);
    let m = offs < n;
    store(x + offs, bitcast(m, u8), m);
}

fn main() {}
