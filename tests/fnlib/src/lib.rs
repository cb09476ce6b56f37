//! A library of tile functions (`#[tile_fn]`) that other crates call, as a user's crate of
//! shared kernel code would publish them, and ten kernels of its own that share three of them.
//! `tile-tests` calls the functions from its kernels (across crates) and runs the kernels on the
//! interpreter; `scripts/rebuild_time.sh` edits one function and times the rebuild.

use tile::prelude::*;

/// `x · a + b`, element-wise.
#[tile_fn]
pub fn scale_shift(x: Tile, a: f32, b: f32) -> Tile {
    x * a + b
}

/// `x` clamped to `[0, HI]` (`HI` as a float).
#[tile_fn]
pub fn clamp_to(x: Tile, HI: Const) -> Tile {
    min(max(x, 0.0), HI as f32)
}

/// `x` divided by its Euclidean norm along `AXIS`.
#[tile_fn]
pub fn normalize(x: Tile, AXIS: Const) -> Tile {
    x / (x * x).sum(AXIS).sqrt().expand_dims(AXIS)
}

/// `F(F(x))`: a function that takes a function (`F: Fn`), as FlexAttention's `score_mod`.
#[tile_fn]
pub fn apply_twice(x: Tile, F: Fn) -> Tile {
    F(F(x))
}

/// `apply_twice(x, F) + offset_by_one(x)`: a `Fn` parameter passed on, and a private helper.
#[tile_fn]
pub fn twice_plus_one(x: Tile, F: Fn) -> Tile {
    apply_twice(x, F) + apply_twice(x, offset_by_one) - x - 1.0
}

#[tile_fn]
fn offset_by_one(x: Tile) -> Tile {
    x + 0.5
}

/// Kernel 0 of ten: `y = scale_shift(clamp_to(f(x), 2), 2, 1)` with `f` from the functions
/// above; each program handles `BLOCK` elements.
#[tile_kernel]
pub fn k0(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const<256>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    let v = scale_shift(v, 1.0, 0.5);
    let v = scale_shift(clamp_to(v, 2), 2.0, 1.0);
    store(y + offs, v, m);
}

/// Kernel 1 of ten: `y = scale_shift(clamp_to(f(x), 2), 2, 1)` with `f` from the functions
/// above; each program handles `BLOCK` elements.
#[tile_kernel]
pub fn k1(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const<512>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    let v = clamp_to(v * 2.0, 1);
    let v = scale_shift(clamp_to(v, 2), 2.0, 1.0);
    store(y + offs, v, m);
}

/// Kernel 2 of ten: `y = scale_shift(clamp_to(f(x), 2), 2, 1)` with `f` from the functions
/// above; each program handles `BLOCK` elements.
#[tile_kernel]
pub fn k2(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    let v = normalize(select(m, v, 0.0), 0);
    let v = scale_shift(clamp_to(v, 2), 2.0, 1.0);
    store(y + offs, v, m);
}

/// Kernel 3 of ten: `y = scale_shift(clamp_to(f(x), 2), 2, 1)` with `f` from the functions
/// above; each program handles `BLOCK` elements.
#[tile_kernel]
pub fn k3(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const<256>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    let v = scale_shift(v, 4.0, 0.5);
    let v = scale_shift(clamp_to(v, 2), 2.0, 1.0);
    store(y + offs, v, m);
}

/// Kernel 4 of ten: `y = scale_shift(clamp_to(f(x), 2), 2, 1)` with `f` from the functions
/// above; each program handles `BLOCK` elements.
#[tile_kernel]
pub fn k4(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const<512>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    let v = clamp_to(v * 2.0, 1);
    let v = scale_shift(clamp_to(v, 2), 2.0, 1.0);
    store(y + offs, v, m);
}

/// Kernel 5 of ten: `y = scale_shift(clamp_to(f(x), 2), 2, 1)` with `f` from the functions
/// above; each program handles `BLOCK` elements.
#[tile_kernel]
pub fn k5(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    let v = normalize(select(m, v, 0.0), 0);
    let v = scale_shift(clamp_to(v, 2), 2.0, 1.0);
    store(y + offs, v, m);
}

/// Kernel 6 of ten: `y = scale_shift(clamp_to(f(x), 2), 2, 1)` with `f` from the functions
/// above; each program handles `BLOCK` elements.
#[tile_kernel]
pub fn k6(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const<256>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    let v = scale_shift(v, 7.0, 0.5);
    let v = scale_shift(clamp_to(v, 2), 2.0, 1.0);
    store(y + offs, v, m);
}

/// Kernel 7 of ten: `y = scale_shift(clamp_to(f(x), 2), 2, 1)` with `f` from the functions
/// above; each program handles `BLOCK` elements.
#[tile_kernel]
pub fn k7(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const<512>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    let v = clamp_to(v * 2.0, 1);
    let v = scale_shift(clamp_to(v, 2), 2.0, 1.0);
    store(y + offs, v, m);
}

/// Kernel 8 of ten: `y = scale_shift(clamp_to(f(x), 2), 2, 1)` with `f` from the functions
/// above; each program handles `BLOCK` elements.
#[tile_kernel]
pub fn k8(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    let v = normalize(select(m, v, 0.0), 0);
    let v = scale_shift(clamp_to(v, 2), 2.0, 1.0);
    store(y + offs, v, m);
}

/// Kernel 9 of ten: `y = scale_shift(clamp_to(f(x), 2), 2, 1)` with `f` from the functions
/// above; each program handles `BLOCK` elements.
#[tile_kernel]
pub fn k9(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const<256>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let m = offs < n;
    let v = load(x + offs, m);
    let v = scale_shift(v, 10.0, 0.5);
    let v = scale_shift(clamp_to(v, 2), 2.0, 1.0);
    store(y + offs, v, m);
}

/// Every kernel of this crate.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    vec![
        &k0::KERNEL,
        &k1::KERNEL,
        &k2::KERNEL,
        &k3::KERNEL,
        &k4::KERNEL,
        &k5::KERNEL,
        &k6::KERNEL,
        &k7::KERNEL,
        &k8::KERNEL,
        &k9::KERNEL,
    ]
}
