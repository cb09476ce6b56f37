//! Launch checks on the interpreter (no GPU needed): wrong lengths, grids and devices are `Err`s
//! with clear messages, an empty grid launches nothing, and out-of-bounds unmasked accesses are
//! caught.

use tile_examples::fused_add_mul::kernels;

use kernels::add_mul;
use tile::prelude::*;
use tile_tests::gather_rows;

#[tile_kernel]
fn unmasked_copy(src: Ptr<f32>, dst: Ptr<f32>, BLOCK: Const<256>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(dst + offs, load(src + offs));
}

#[tile_kernel]
/// `unmasked_copy` with two instances: its errors name it as written, not by an instance's symbol.
fn unmasked_copy_of(src: Ptr<f32>, dst: Ptr<f32>, BLOCK: Const<{ [128, 256] }>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    store(dst + offs, load(src + offs));
}

#[tile_kernel]
fn offset_extent(src: Ptr<f32, { 2 * n + 1 }>, dst: Ptr<f32, n>, n: i32, BLOCK: Const<128>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(dst + offs, load(src + (2 * offs + 1), mask), mask);
}

fn dev() -> Device {
    Device::interpreter()
}

#[test]
fn short_buffer_is_a_length_error() {
    let x = vec![1.0f32; 100];
    let mut out = vec![0.0f32; 100];
    let e = add_mul::launch(&dev(), Grid::x(1), &x, &x, &x, &mut out, 101).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Length {
                kernel: "add_mul",
                param: "x",
                required: 101,
                actual: 100
            }
        ),
        "{e}"
    );
    assert_eq!(e.to_string(), "kernel `add_mul`: buffer `x` has 100 elements, the kernel's declaration needs at least 101");
    let short_out = &mut out[..50];
    let e = add_mul::launch(&dev(), Grid::x(1), &x, &x, &x, short_out, 100).unwrap_err();
    assert!(matches!(e, Error::Length { param: "out", .. }), "{e}");
}

#[test]
fn extent_expressions_are_checked() {
    let n = 300i32;
    let src: Vec<f32> = (0..(2 * n + 1)).map(|i| i as f32).collect();
    let mut dst = vec![0.0f32; n as usize];
    offset_extent::launch(&dev(), Grid::x(cdiv(n, 128)), &src, &mut dst, n).unwrap();
    assert!(dst
        .iter()
        .enumerate()
        .all(|(i, &v)| v == (2 * i + 1) as f32));
    let e = offset_extent::launch(
        &dev(),
        Grid::x(cdiv(n, 128)),
        &src[..(2 * n) as usize],
        &mut dst,
        n,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Length {
                param: "src",
                required: 601,
                actual: 600,
                ..
            }
        ),
        "{e}"
    );
    let e = offset_extent::launch(&dev(), Grid::x(1), &src, &mut dst, i32::MAX).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Length {
                param: "src",
                required: 4294967295,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn oversized_grids_are_errors() {
    let x = vec![1.0f32; 16];
    let mut out = vec![0.0f32; 16];
    let e = add_mul::launch(&dev(), Grid::xyz(1, 1, 65536), &x, &x, &x, &mut out, 16).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `add_mul`: bad grid: axis 2 has 65536 programs, the device allows 65535"
    );
    // An empty axis does not excuse another one beyond the limits.
    let e = add_mul::launch(&dev(), Grid::xy(0, 70_000), &x, &x, &x, &mut out, 16).unwrap_err();
    assert!(matches!(e, Error::Grid { .. }), "{e}");
}

#[test]
fn empty_grids_launch_nothing() {
    let x = vec![1.0f32; 16];
    let mut out = vec![7.0f32; 16];
    for grid in [Grid::x(0), Grid::xy(4, 0), Grid::xyz(4, 4, 0)] {
        add_mul::launch(&dev(), grid, &x, &x, &x, &mut out, 16).unwrap();
    }
    assert_eq!(out, vec![7.0; 16], "no program ran");
    // An empty tensor: `cdiv(0, BLOCK)` programs over empty buffers.
    let empty: Vec<f32> = Vec::new();
    let mut empty_out: Vec<f32> = Vec::new();
    let grid = Grid::x(cdiv(empty.len(), 1024));
    add_mul::launch(&dev(), grid, &empty, &empty, &empty, &mut empty_out, 0).unwrap();
    // The arguments are still checked: a buffer shorter than its declared extent is a bug
    // whatever the grid.
    let e = add_mul::launch(&dev(), Grid::x(0), &x, &x, &x, &mut out, 17).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Length {
                param: "x",
                required: 17,
                actual: 16,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn unmasked_out_of_bounds_access_is_reported() {
    let src = vec![1.0f32; 300];
    let mut dst = vec![0.0f32; 300];
    let e = unmasked_copy::launch(&dev(), Grid::x(2), &src, &mut dst).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("unmasked access to `src`[300] outside its 300 elements"),
        "{msg}"
    );
    // Nothing past the buffer was written, and program 0 completed before program 1 failed.
    assert!(dst[..256].iter().all(|&v| v == 1.0));
    let e = unmasked_copy_of::launch(&dev(), Grid::x(2), &src, &mut dst, 256).unwrap_err();
    assert_eq!(
        e.to_string(),
        "interpreter: kernel `unmasked_copy_of`, program [1, 0, 0]: unmasked access to `src`[300] outside its 300 elements"
    );
}

#[test]
fn cdiv_saturates_and_clamps() {
    assert_eq!(cdiv(1000003, 1024), 977);
    assert_eq!(cdiv(0, 1024), 0);
    assert_eq!(cdiv(-5, 1024), 0);
    assert_eq!(cdiv(i64::MAX, 1), u32::MAX);
    assert_eq!(cdiv(1usize << 27, 1024usize), 131072);
}

#[test]
fn pointer_tables_reach_their_buffers() {
    let dev = dev();
    let rows: Vec<Vec<f32>> = (0..3)
        .map(|r| (0..50).map(|i| (r * 100 + i) as f32).collect())
        .collect();
    let src: Vec<Buffer<f32>> = rows.iter().map(|r| dev.upload(r).unwrap()).collect();
    let mut dst: Vec<Buffer<f32>> = (0..3).map(|_| dev.zeros::<f32>(50).unwrap()).collect();
    {
        let from = PointerTable::new(&dev, &src.iter().collect::<Vec<_>>()).unwrap();
        let to = PointerTable::new_mut(&dev, dst.iter_mut().collect()).unwrap();
        assert_eq!((from.len(), to.len()), (3, 3));
        // SAFETY: both tables hold addresses of live f32 buffers of 50 elements.
        unsafe { gather_rows::launch(&dev, Grid::x(3), &from, &to, 50).unwrap() };
        // The written table lends its buffers to one argument at a time.
        // SAFETY: as above (the launch is refused before it runs).
        let e = unsafe { gather_rows::launch(&dev, Grid::x(3), &to, &to, 50) }.unwrap_err();
        assert!(
            e.to_string().contains("one launch argument at a time"),
            "{e}"
        );
    }
    for (r, d) in rows.iter().zip(&dst) {
        let want: Vec<f32> = r.iter().map(|v| v * 3.0).collect();
        assert_eq!(dev.download(d).unwrap(), want);
    }
}

#[test]
fn addresses_outside_the_launch_are_errors_on_the_interpreter() {
    let dev = dev();
    let a = dev.upload(&[1.0f32; 50]).unwrap();
    let mut out = dev.zeros::<f32>(50).unwrap();
    let halves = dev.upload(&[half::f16::ONE; 50]).unwrap();
    let (from, wrong_type) = (
        PointerTable::new(&dev, &[&a]).unwrap(),
        PointerTable::new(&dev, &[&halves]).unwrap(),
    );
    let to = PointerTable::new_mut(&dev, vec![&mut out]).unwrap();
    // A made-up address, and an address read as a pointer to another element type.
    let bogus = dev.upload(&[0x1234_5678i64]).unwrap();
    // SAFETY: the interpreter resolves every address against the launch's buffers; none of these
    // launches touches memory outside them.
    let e = unsafe { gather_rows::launch(&dev, Grid::x(1), &bogus, &to, 50) }.unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("0x12345678") && msg.contains("is in no buffer of this launch"),
        "{msg}"
    );
    assert!(msg.contains("`gather_rows`"), "{msg}");
    // SAFETY: as above.
    let e = unsafe { gather_rows::launch(&dev, Grid::x(1), &wrong_type, &to, 50) }.unwrap_err();
    assert!(
        e.to_string()
            .contains("is in a buffer of `f16` and is read as a pointer to `f32`"),
        "{e}"
    );
    // SAFETY: as above (a correct launch).
    unsafe { gather_rows::launch(&dev, Grid::x(1), &from, &to, 50).unwrap() };
}
