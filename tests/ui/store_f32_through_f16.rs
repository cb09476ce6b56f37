//! Must not compile: storing an f32 accumulator through `Ptr<f16>` is an error at the value,
//! which shows the conversion to write (Triton converts on store; tile does not convert
//! implicitly).
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f16, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let acc = load(x + offs, offs < n) as f32 * 2.0;
    store(x + offs, acc, offs < n);
}

fn main() {}
