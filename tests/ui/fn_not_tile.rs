//! Must not compile: calling a Rust function that is not a `#[tile_fn]` from a kernel is an
//! error at its name (Rust finds no tile function's macro under that name).
use tile::prelude::*;

fn softplus(x: f32) -> f32 {
    (1.0 + x.exp()).ln()
}

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, softplus(load(x + offs, offs < n)), offs < n);
}

fn main() {
    let _ = softplus(1.0);
}
