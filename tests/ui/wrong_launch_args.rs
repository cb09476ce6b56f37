//! Must not compile: the generated launch wrapper is typed: element types and &mut for written buffers.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(out + offs, load(x + offs, offs < n), offs < n);
}

fn main() {
    let dev = Device::interpreter();
    let x = vec![0i32; 4];
    let out = vec![0.0f32; 4];
    // i32 buffer for a Ptr<f32>, and `out` not passed as `&mut`.
    k::launch(&dev, Grid::x(1), &x, &out, 4).unwrap();
}
