//! Must not compile where a ptxas is at hand: `register_limit.rs` with the row width a constant of
//! two values. The narrow instance fits; the wide one spills even asked for one program per SM,
//! and the error names it as the user wrote it (`row_dot` with W = 16384), not by its PTX symbol.
use tile::prelude::*;

#[tile_kernel(num_warps = 4)]
fn row_dot(x: Ptr<f32, { n * W }>, y: Ptr<f32, { n * W }>, out: Ptr<f32, n>, n: i32, W: Const<{ [1024, 16384] }>) {
    let offs = program_id(0) * W + arange(0, W);
    let a = load(x + offs);
    let b = load(y + offs);
    store(out + program_id(0), (a * b).sum() / (a.max() + b.max()));
}

fn main() {}
