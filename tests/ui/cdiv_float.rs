//! Must not compile: `cdiv` divides integers; a float operand is an error at it, which says how
//! to divide floats rounding up.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let v = load(x + offs, offs < n);
    store(x + offs, cdiv(v, 2), offs < n);
}

fn main() {}
