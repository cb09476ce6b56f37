//! Must not compile: an autotuning key names integer parameters; a config names the kernel's
//! open constants only.
use tile::prelude::*;

#[tile_kernel(autotune(configs = [{ BLOCK = 128 }], key = [x]))]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, load(x + offs, offs < n) * 2.0, offs < n);
}

#[tile_kernel(autotune(configs = [{ BLOCK = 128, WIDTH = 2 }], key = [n]))]
fn k2(x: Ptr<f32, n>, n: i32, BLOCK: Const) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(x + offs, load(x + offs, offs < n) * 2.0, offs < n);
}

fn main() {}
