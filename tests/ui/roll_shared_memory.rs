//! Must not compile: rolling a 128 × 128 f32 tile along its columns goes through 64 KiB of shared
//! memory, more than a program may declare statically; the error is at the `roll`.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, { 128 * 128 }>) {
    let offs = arange(0, 128).expand_dims(1) * 128 + arange(0, 128).expand_dims(0);
    let v = load(x + offs);
    store(x + offs, v.roll(3, 1));
}

fn main() {}
