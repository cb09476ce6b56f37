//! Must not compile: each specialization is cheap, but twelve `S` values times two element types
//! add up past the compile-cost budget; the error is at the parameters that declare them.
use tile::prelude::*;

#[tile_kernel(num_warps = 4)]
fn scaled(x: Ptr<T, 8192>, out: Ptr<T, 8192>, T: Type<{ [f32, bf16] }>, S: Const<{ [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] }>) {
    let offs = arange(0, 64).expand_dims(1) * 128 + arange(0, 128).expand_dims(0);
    let v = load(x + offs) as f32;
    store(out + offs, (erf(v * S) + tanh(v) + exp(v)) as T);
}

fn main() {}
