//! The interpreter's `desc_load` and `desc_store`: elements outside the array's extents read 0
//! and are not written, and an element inside the extents but outside the buffer is the
//! out-of-bounds error an unmasked `load` gives.

use tile_core::interp::{run, HostMut, HostRef, InterpArg, InterpError};
use tile_core::ir::{parse, verify};

/// Copies the 4 × 4 tile at (`r`, `c`) of a `rows × cols` array of `src` (row stride
/// `cols`) to the same place of `dst`.
const COPY: &str = "kernel @copy(%src: ptr<f32>, %dst: ptr<f32>, %rows: i64, %cols: i64, %r: i32, %c: i32) attributes {num_warps = 4, descriptors = 2} {
  %0 = constant 1 : i64
  %1 = desc_load {slot = 0} %src, %rows, %cols, %cols, %0, %r, %c : tensor<4x4xf32>
  desc_store {slot = 1} %dst, %rows, %cols, %cols, %0, %r, %c, %1
  return
}
";

fn copy(
    src: &[f32],
    dst: &mut [f32],
    rows: i64,
    cols: i64,
    r: i32,
    c: i32,
) -> Result<(), InterpError> {
    let f = parse(COPY).unwrap();
    verify(&f).unwrap();
    let mut args = [
        InterpArg::Ref(HostRef::F32(src)),
        InterpArg::Mut(HostMut::F32(dst)),
        InterpArg::I64(rows),
        InterpArg::I64(cols),
        InterpArg::I32(r),
        InterpArg::I32(c),
    ];
    run(&f, [1, 1, 1], &mut args)
}

#[test]
fn copies_the_part_inside_the_extents() {
    let (rows, cols) = (5i64, 6i64);
    let src: Vec<f32> = (0..rows * cols).map(|i| i as f32 + 1.0).collect();
    for (r, c) in [
        (0, 0),
        (-2, -3),
        (3, 4),
        (-4, 0),
        (5, 6),
        (2, -1),
        (-10, 20),
    ] {
        let mut dst = vec![0.0f32; (rows * cols) as usize];
        copy(&src, &mut dst, rows, cols, r, c).unwrap();
        for i in 0..rows {
            for j in 0..cols {
                let inside =
                    (r as i64..r as i64 + 4).contains(&i) && (c as i64..c as i64 + 4).contains(&j);
                let want = if inside {
                    src[(i * cols + j) as usize]
                } else {
                    0.0
                };
                assert_eq!(
                    dst[(i * cols + j) as usize],
                    want,
                    "({r}, {c}) at [{i}][{j}]"
                );
            }
        }
    }
}

#[test]
fn reads_zero_outside_the_extents() {
    // A 1-D array of 3: the tile at -1 reads [0, a0, a1, a2, 0, …].
    let text = "kernel @k(%src: ptr<f32>, %dst: ptr<f32>, %n: i64, %c: i32) attributes {num_warps = 1, descriptors = 1} {
  %0 = constant 1 : i64
  %1 = desc_load {slot = 0} %src, %n, %0, %c : tensor<8xf32>
  %2 = arange {start = 0, end = 8} : tensor<8xi32>
  %3 = splat %dst : tensor<8xptr<f32>>
  %4 = addptr %3, %2 : tensor<8xptr<f32>>
  store %4, %1
  return
}
";
    let f = parse(text).unwrap();
    verify(&f).unwrap();
    let src = [7.0f32, 8.0, 9.0];
    let mut dst = [-1.0f32; 8];
    let mut args = [
        InterpArg::Ref(HostRef::F32(&src)),
        InterpArg::Mut(HostMut::F32(&mut dst)),
        InterpArg::I64(3),
        InterpArg::I32(-1),
    ];
    run(&f, [1, 1, 1], &mut args).unwrap();
    assert_eq!(dst, [0.0, 7.0, 8.0, 9.0, 0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn an_extent_past_the_buffer_is_out_of_bounds() {
    // The extents claim 5 × 6 elements; the buffers hold 29: the last element, inside the
    // extents, lies outside the source buffer.
    let src = vec![1.0f32; 29];
    let mut dst = vec![0.0f32; 30];
    let e = copy(&src, &mut dst, 5, 6, 2, 4).unwrap_err();
    assert!(
        matches!(&e, InterpError::OutOfBounds { param, index: 29, len: 29, .. } if param == "src"),
        "{e}"
    );
    // And a store past the destination's end is one too.
    let src = vec![1.0f32; 30];
    let mut dst = vec![0.0f32; 29];
    let e = copy(&src, &mut dst, 5, 6, 2, 4).unwrap_err();
    assert!(
        matches!(&e, InterpError::OutOfBounds { param, index: 29, len: 29, .. } if param == "dst"),
        "{e}"
    );
}
