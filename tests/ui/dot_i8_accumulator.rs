//! Must not compile: a `dot` of `i8` tiles accumulates in `i32`; an `f32` accumulator is an
//! error at the accumulator.
use tile::prelude::*;

#[tile_kernel]
fn k(a: Ptr<i8, 1024>, b: Ptr<i8, 1024>, c: Ptr<f32, 1024>) {
    let r = arange(0, 32).expand_dims(1) * 32 + arange(0, 32).expand_dims(0);
    let acc = zeros([32, 32]);
    store(c + r, dot(load(a + r), load(b + r), acc));
}

fn main() {}
