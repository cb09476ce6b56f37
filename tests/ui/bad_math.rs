//! Must not compile: `math` takes `fast` or `precise`; `approx` is an error at the value.
use tile::prelude::*;

#[tile_kernel(math = approx)]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
