//! Must not compile: `dot` of an f16 and an f32 tile; both operands have one type (convert with
//! `as`). The error is at the call.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, 64>, h: Ptr<f16, 64>, out: Ptr<f32, 64>) {
    let offs = arange(0, 8).expand_dims(1) * 8 + arange(0, 8).expand_dims(0);
    store(out + offs, dot(load(h + offs), load(x + offs)));
}

fn main() {}
