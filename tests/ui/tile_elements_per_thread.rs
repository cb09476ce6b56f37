//! Must not compile: one thread holds at most 128 elements of a tile (a register each); a
//! 128 × 256 tile on 4 warps would be 256 per thread. The error is at the expression that makes
//! the tile.
use tile::prelude::*;

#[tile_kernel(num_warps = 4)]
fn k(x: Ptr<f32, n>, n: i32) {
    let offs = arange(0, 128).expand_dims(1) * 256 + arange(0, 256).expand_dims(0);
    store(x + offs, 0.0, offs < n);
}

fn main() {}
