//! Must not compile: `dot` of two 128×128 f32 tiles stages 128 KiB through shared memory, more than
//! a program may declare (48 KiB); the error is at the call and suggests smaller tiles.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<f32, 16384>, out: Ptr<f32, 16384>) {
    let offs = arange(0, 128).expand_dims(1) * 128 + arange(0, 128).expand_dims(0);
    let t = load(a + offs);
    store(out + offs, dot(t, t));
}

fn main() {}
