//! Must not compile: `dot` of a 128×256 and a 256×128 f32 tile stages 256 KiB through shared
//! memory, more than any target gives a program (227 KiB on sm_90a); the error is at the call
//! and suggests smaller tiles.
use tile::prelude::*;

#[tile_kernel(num_warps = 8)]
fn k(a: Ptr<f32, 32768>, out: Ptr<f32, 16384>) {
    let offs = arange(0, 128).expand_dims(1) * 256 + arange(0, 256).expand_dims(0);
    let t = load(a + offs);
    store(out + arange(0, 128).expand_dims(1) * 128 + arange(0, 128).expand_dims(0), dot(t, t.trans()));
}

fn main() {}
