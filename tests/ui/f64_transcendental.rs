//! Must not compile: `exp` takes `f32`; `f64` has only the functions with an IEEE double
//! instruction (`sqrt`, `abs`, `floor`, `ceil`, `fma`). The error is at the call.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f64, n>, n: i32) {
    let offs = arange(0, 128);
    let v = load(x + offs, offs < n);
    store(x + offs, exp(v), offs < n);
}

fn main() {}
