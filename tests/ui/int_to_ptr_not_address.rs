//! Must not compile: only `i64` or `u64` values are addresses; an `i32` converted to a pointer
//! is an error at the value.
use tile::prelude::*;

#[tile_kernel]
unsafe fn k(table: Ptr<i32>, out: Ptr<f32>) {
    let p = load(table + program_id(0)) as Ptr<f32>;
    store(out + program_id(0), load(p));
}

fn main() {}
