//! Must not compile: a branch decided at build time may give a name a value of another type, but
//! a loop around it still carries the name with its type: the error is at the loop.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, out: Ptr<f32, 128>, n: i32, ROUND: Const<1>) {
    let offs = arange(0, 128);
    let mut acc = zeros([128]);
    for off in (0..n).step_by(128) {
        if ROUND == 1 {
            acc = load(x + off + offs, off + offs < n) as f16;
        }
    }
    store(out + offs, acc as f32);
}

fn main() {}
