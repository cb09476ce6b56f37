//! Must not compile: `multiple_of` promises something of integer offsets, not of floats; the error
//! is at the tile.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let v = load(x + offs, offs < n);
    store(x + offs, multiple_of(v, 16), offs < n);
}

fn main() {}
