//! Must not compile: reducing a 2-D tile without saying along which axis.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, 64>, out: Ptr<f32, 1>) {
    let offs = arange(0, 8).expand_dims(1) * 8 + arange(0, 8).expand_dims(0);
    store(out, load(x + offs).sum().sum());
}

fn main() {}
