//! Must not compile: an early `return` (Triton's `if pid >= n: return`) is an error at it, which
//! says to put the rest under `if !cond { … }` instead.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let pid = program_id(0);
    if pid * BLOCK >= n {
        return;
    }
    let offs = pid * BLOCK + arange(0, BLOCK);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
