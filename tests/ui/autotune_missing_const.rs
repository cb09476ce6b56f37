//! Must not compile: an autotune config that gives no value for one of the kernel's open
//! constants is an error at the config.
use tile::prelude::*;

#[tile_kernel(autotune(configs = [{ BLOCK = 128, num_warps = 4 }, { num_warps = 8 }], key = [n]))]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, load(x + offs, offs < n) * 2.0, offs < n);
}

fn main() {}
