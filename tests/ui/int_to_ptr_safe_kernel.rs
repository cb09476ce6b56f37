//! Must not compile: a kernel that converts a loaded address into a pointer reaches memory its
//! launch cannot check, so it must be declared `unsafe fn`; the error is at the conversion.
use tile::prelude::*;

#[tile_kernel]
fn k(table: Ptr<i64>, out: Ptr<f32>) {
    let p = load(table + program_id(0)) as Ptr<f32>;
    store(out + program_id(0), load(p));
}

fn main() {}
