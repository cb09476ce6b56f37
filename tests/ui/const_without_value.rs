//! Must not compile: `NAME: Const` without a value needs `autotune` configs to give it one.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, load(x + offs, offs < n) * 2.0, offs < n);
}

fn main() {}
