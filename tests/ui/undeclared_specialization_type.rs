//! Must not compile: the specialized constant is a launch argument of type i32; leaving it out is
//! a type error at the call.
use tile::prelude::*;

#[tile_kernel]
fn k(x: Ptr<f32, n>, n: i32, BLOCK: Const<{ [128, 256] }>) {
    let offs = arange(0, BLOCK);
    store(x + offs, 0.0, offs < n);
}

fn main() {
    let mut x = vec![0.0f32; 4];
    k::launch(&Device::interpreter(), Grid::x(1), &mut x, 4).unwrap();
}
