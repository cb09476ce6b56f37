//! The kernels of the `fused_add_mul` example: `(x + y) * z` fused into one kernel, and the
//! unfused pair (`x + y`, then `* z`) it is compared against.

use tile::prelude::*;

#[tile_kernel]
/// `out = (x + y) * z`, one pass over memory.
pub fn add_mul(
    x: Ptr<f32, n>,
    y: Ptr<f32, n>,
    z: Ptr<f32, n>,
    out: Ptr<f32, n>,
    n: i32,
    BLOCK: Const<1024>,
) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let r = (load(x + offs, mask) + load(y + offs, mask)) * load(z + offs, mask);
    store(out + offs, r, mask);
}

#[tile_kernel]
/// `out = x + y` (first half of the unfused version).
pub fn add(x: Ptr<f32, n>, y: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(
        out + offs,
        load(x + offs, mask) + load(y + offs, mask),
        mask,
    );
}

#[tile_kernel]
/// `out = x * y` (second half of the unfused version).
pub fn mul(x: Ptr<f32, n>, y: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(
        out + offs,
        load(x + offs, mask) * load(y + offs, mask),
        mask,
    );
}

/// Every kernel of this example (for the project's PTX and IR tests).
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    vec![&add_mul::KERNEL, &add::KERNEL, &mul::KERNEL]
}
