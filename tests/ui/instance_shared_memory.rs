//! Must not compile: of the two instances, rolling the 128 × 128 f32 tile goes through 64 KiB of
//! shared memory, more than a program may declare statically. The error names the failing
//! instance as the user wrote it (`k` with R = 128), not by its PTX symbol.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, { 128 * 128 }>, R: Const<{ [32, 128] }>) {
    let offs = arange(0, R).expand_dims(1) * 128 + arange(0, 128).expand_dims(0);
    let v = load(x + offs);
    store(x + offs, v.roll(3, 1));
}

fn main() {}
