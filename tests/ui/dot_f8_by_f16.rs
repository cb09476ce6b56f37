//! Must not compile: `dot` of an 8-bit float tile and an f16 tile; the tensor cores multiply 8-bit
//! floats only by 8-bit floats. The error is at the call and says what to cast.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f8e4m3, 1024>, h: Ptr<f16, 1024>, out: Ptr<f32, 1024>) {
    let offs = arange(0, 32).expand_dims(1) * 32 + arange(0, 32).expand_dims(0);
    store(out + offs, dot(load(x + offs), load(h + offs)));
}

fn main() {}
