//! Must not compile: `max_contiguous` takes a compile-time power of two; the error is at the value.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let offs = max_contiguous(select(offs < n, offs, 0), 96);
    store(x + offs, 1.0);
}

fn main() {}
