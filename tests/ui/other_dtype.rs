//! Must not compile: an `other` of another element type than the loaded one is an error at it,
//! which shows the conversion to write.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f16, n>, n: i32) {
    let offs = arange(0, 128);
    let fill = 0.5 as f32;
    let v = load(x + offs, offs < n, other = fill);
    store(x + offs, v, offs < n);
}

fn main() {}
