//! Must not compile: scalar parameters are i32, i64 or f32; a `u32` comes as one of them and is
//! converted in the kernel. The error is at the type.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<u32, n>, n: i32, s: u32) {
    let offs = arange(0, 128);
    store(x + offs, offs as u32, offs < n);
}

fn main() {}
