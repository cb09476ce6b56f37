//! Must not compile: the instance with BLOCK = 2097152 makes a tile beyond the language's element
//! limit, while the others build; a second error at the parameters names the failing instance as
//! the user wrote it.
use tile::prelude::*;

#[tile_kernel]
fn scale(x: Ptr<f32>, n: i32, BLOCK: Const<{ [1024, 2097152] }>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(x + offs, load(x + offs, mask) * 2.0, mask);
}

fn main() {}
