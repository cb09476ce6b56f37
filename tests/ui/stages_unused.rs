//! Builds, with a warning (made an error here) at `num_stages`: the kernel has no `dot` loop, and
//! its row loop writes the buffer it reads (a softmax in place), so no load may move an
//! iteration ahead of the stores: the stages would pipeline nothing.
#![deny(deprecated)]
use tile::prelude::*;

#[tile_kernel(num_warps = 8, num_stages = 4)]
fn softmax_rows(x: Ptr<f32>, n_rows: i32, n_cols: i32) {
    let mut row = program_id(0);
    while row < n_rows {
        let cols = arange(0, 1024);
        let v = load(x + row * n_cols + cols, mask = cols < n_cols, other = f32::NEG_INFINITY);
        let e = exp(v - v.max(0));
        store(x + row * n_cols + cols, e / e.sum(0), mask = cols < n_cols);
        row += num_programs(0);
    }
}

fn main() {}
