//! Must not compile: a method of the language (`t.sum(axis)`) called as a function is an error at
//! its name that shows how it is written.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, out: Ptr<f32, 1>, n: i32, BLOCK: Const<128>) {
    let offs = arange(0, BLOCK);
    store(out, sum(load(x + offs, offs < n)));
}

fn main() {}
