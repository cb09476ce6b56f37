//! Must not compile: scalar parameters are i32, i64, u32, u64 or f32; a `u8` comes as one of them
//! and is converted in the kernel. The error is at the type.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<u8, n>, n: i32, s: u8) {
    let offs = arange(0, 128);
    store(x + offs, offs as u8, offs < n);
}

fn main() {}
