//! Must not compile: a function of the language (`load(ptrs, …)`) called as a method is an error
//! at its name that shows how it is written.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = arange(0, BLOCK);
    let v = (x + offs).load(offs < n);
    store(x + offs, v, offs < n);
}

fn main() {}
