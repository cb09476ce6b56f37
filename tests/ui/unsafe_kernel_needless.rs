//! Must not compile: a kernel is `unsafe` only when it converts integers to pointers; this one
//! does not, and its launch checks everything. The error is at `unsafe`.
use tile::prelude::*;

#[tile_kernel]
unsafe fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
