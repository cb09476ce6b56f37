//! Must not compile: five 4096-wide f32 rows live at once on one warp are about 900 registers
//! per thread by tile's estimate, more than two and a half times the 255 a thread has: refused
//! before LLVM runs, at the op where the most values are live.
use tile::prelude::*;

#[tile_kernel(num_warps = 1)]
fn five_rows(x: Ptr<f32, { n * 4096 }>, out: Ptr<f32, n>, n: i32) {
    let offs = program_id(0) * 4096 + arange(0, 4096);
    let a = load(x + offs);
    let b = load(x + offs + 1);
    let c = load(x + offs + 2);
    let d = load(x + offs + 3);
    let e = load(x + offs + 4);
    let s = (a * b + c * d + e).sum();
    store(out + program_id(0), s / (a.max() + b.max() + c.max() + d.max() + e.max()));
}

fn main() {}
