//! Must not compile: 24 `sin`s of a 64 × 128 tile are about three seconds of LLVM's time;
//! the compile-cost budget refuses the kernel at its name, before any GPU code is built.
use tile::prelude::*;

#[tile_kernel(num_warps = 4)]
fn sines(x: Ptr<f32, 8192>, out: Ptr<f32, 8192>) {
    let offs = arange(0, 64).expand_dims(1) * 128 + arange(0, 128).expand_dims(0);
    let mut v = load(x + offs);
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    v = sin(v) + v;
    store(out + offs, v);
}

fn main() {}
