//! Must not compile: an autotuned kernel gets the compile-cost budget once per config, and these
//! two configs, each with twelve `S` values times two element types, cost more than twice it; the
//! error says so at the parameters.
use tile::prelude::*;

#[tile_kernel(num_warps = 4, autotune(configs = [{ W = 1 }, { W = 2 }], key = [n]))]
fn scaled(x: Ptr<T, 8192>, out: Ptr<T, 8192>, n: i32, T: Type<{ [f32, bf16] }>, S: Const<{ [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] }>, W: Const) {
    let offs = arange(0, 64).expand_dims(1) * 128 + arange(0, 128).expand_dims(0);
    let v = load(x + offs, offs < n) as f32;
    store(out + offs, (erf(v * S * W) + tanh(v) + exp(v)) as T, offs < n);
}

fn main() {}
