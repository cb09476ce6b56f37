//! Must not compile where a ptxas is at hand: two 16384-wide rows on 4 warps are 256 values a
//! thread keeps live at once (both loads are issued before the first use), more than the 255
//! registers a thread may have. Even asked for one program per SM, ptxas spills, and the build
//! says so at the op where the most values are live.
use tile::prelude::*;

#[tile_kernel(num_warps = 4)]
fn row_dot(x: Ptr<f32, { n * 16384 }>, y: Ptr<f32, { n * 16384 }>, out: Ptr<f32, n>, n: i32) {
    let offs = program_id(0) * 16384 + arange(0, 16384);
    let a = load(x + offs);
    let b = load(y + offs);
    store(out + program_id(0), (a * b).sum() / (a.max() + b.max()));
}

fn main() {}
