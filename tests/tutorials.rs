//! Triton's tutorials as ported in `tutorials/` (the `tile-tutorials` package), on the
//! interpreter: every kernel against its plain-Rust reference, on random inputs of awkward sizes
//! (not multiples of the block sizes, one row, one element, strided rows). Each `run_check`
//! states its tolerance and why.

use tile::Device;
use tile_tutorials as t;

#[test]
fn vector_add_matches_reference() {
    let dev = Device::interpreter();
    for (k, size) in [1, 17, 1024, 1025, 4000, 98432].into_iter().enumerate() {
        t::vector_add::run_check(&dev, size, k as u64).unwrap();
    }
}

#[test]
fn fused_softmax_matches_reference() {
    let dev = Device::interpreter();
    // (rows, cols), padding of each row, persistent programs.
    let cases = [
        ((1, 1), 0, 4),
        ((1, 33), 0, 1),
        ((7, 100), 3, 3),
        ((18, 781), 0, 4),
        ((5, 1024), 1, 8),
        ((3, 2049), 0, 2),
    ];
    for (k, (shape, pad, programs)) in cases.into_iter().enumerate() {
        t::fused_softmax::run_check(&dev, shape, pad, programs, 100 + k as u64).unwrap();
    }
}

#[test]
fn matrix_multiplication_matches_reference() {
    let dev = Device::interpreter();
    // (m, n, k), b transposed, activation (1: leaky ReLU), the wide configuration.
    let cases = [
        ((1, 1, 1), false, 0, false),
        ((64, 64, 64), false, 1, false),
        ((130, 70, 33), false, 0, false),
        ((77, 200, 100), true, 1, false),
        ((200, 129, 31), true, 0, false),
        ((130, 272, 72), false, 1, true),
        ((60, 256, 136), false, 0, true),
    ];
    for (i, (shape, bt, act, wide)) in cases.into_iter().enumerate() {
        t::matrix_multiplication::run_check(&dev, shape, bt, act, wide, 300 + i as u64).unwrap();
    }
    // The tutorial's autotuned kernel (configuration 0 on the interpreter), and its fallback to
    // `matmul_kernel` for a transposed `b`.
    for (i, (shape, bt, act)) in [
        ((130, 272, 72), false, 1),
        ((64, 64, 64), true, 0),
        ((33, 70, 48), false, 0),
    ]
    .into_iter()
    .enumerate()
    {
        t::matrix_multiplication::run_check_autotuned(&dev, shape, bt, act, 400 + i as u64)
            .unwrap();
    }
    // The wide configuration is compiled for unit strides and aligned rows only: a transposed
    // `b` is refused, and so is a row of `k = 129` elements.
    let e = t::matrix_multiplication::run_check(&dev, (60, 256, 136), true, 0, true, 9)
        .expect_err("the unit-stride kernel took a transposed b");
    assert!(e.contains("is not 1"), "{e}");
    let e = t::matrix_multiplication::run_check(&dev, (60, 256, 129), false, 0, true, 10)
        .expect_err("the aligned kernel took k = 129");
    assert!(e.contains("`K` = 129 is not a multiple of 8"), "{e}");
}

#[test]
fn low_memory_dropout_matches_reference() {
    let dev = Device::interpreter();
    for (i, (size, p)) in [(1, 0.5), (10, 0.5), (1000, 0.1), (4099, 0.5), (20000, 0.9)]
        .into_iter()
        .enumerate()
    {
        t::low_memory_dropout::run_check(&dev, size, p, 123 + i as i32).unwrap();
    }
}

#[test]
fn layer_norm_matches_reference() {
    let dev = Device::interpreter();
    // The last one puts two rows in some of the 128 partial-sum rows of `dw` and `db`.
    let cases = [(1, 1), (5, 37), (40, 128), (151, 300), (300, 1100)];
    for (i, shape) in cases.into_iter().enumerate() {
        t::layer_norm::run_check(&dev, shape, 500 + i as u64).unwrap();
    }
}

#[test]
fn persistent_matmul_matches_reference() {
    let dev = Device::interpreter();
    // 4 programs over 1, 4 and 15 output tiles (up to four per program). The kernel is compiled
    // for unit strides and 16-byte rows only (`specialize = unit`): `k = 65` is refused.
    for (i, shape) in [(8, 8, 8), (200, 152, 72), (300, 520, 64)]
        .into_iter()
        .enumerate()
    {
        t::persistent_matmul::run_check(&dev, shape, 4, 700 + i as u64).unwrap();
    }
    let e = t::persistent_matmul::run_check(&dev, (300, 257, 65), 4, 9)
        .expect_err("the aligned kernel took k = 65");
    assert!(e.contains("`K` = 65 is not a multiple of 8"), "{e}");
}

#[test]
fn fused_attention_matches_reference() {
    use tile::{bf16, f16};
    let dev = Device::interpreter();
    // (Z, H, N_CTX, HEAD_DIM), causal: whole 128-row blocks, as the tutorial takes them.
    let cases = [
        ((1, 2, 128, 64), false),
        ((1, 1, 256, 64), true),
        ((2, 1, 128, 128), true),
    ];
    // Every case on every configuration (the interpreter's tuner would run the first only).
    let configs = t::fused_attention::_attn_fwd::CONFIGS.len();
    for (i, (shape, causal)) in cases.into_iter().enumerate() {
        for c in 0..configs {
            t::fused_attention::run_check(
                &dev,
                Some(c),
                shape,
                causal,
                800 + i as u64,
                f16::from_f32,
                2f64.powi(-11),
            )
            .unwrap();
        }
    }
    t::fused_attention::run_check(
        &dev,
        Some(1),
        (1, 2, 256, 64),
        true,
        810,
        bf16::from_f32,
        2f64.powi(-8),
    )
    .unwrap();
    // The tutorial's whole blocks: 200 rows are refused, not read past.
    let e =
        t::fused_attention::run_check(&dev, None, (1, 1, 200, 64), false, 9, f16::from_f32, 1e-3)
            .expect_err("took N_CTX = 200");
    assert!(e.contains("whole blocks"), "{e}");
}

#[test]
fn grouped_gemm_matches_reference() {
    let dev = Device::interpreter();
    // Groups of different sizes (whole 128 × 128 × 32 tiles, as the tutorial's kernel assumes),
    // more tiles than the first configuration's 84 programs in all, so that programs take
    // several tiles and cross from one problem to the next.
    let groups: [&[(usize, usize, usize)]; 3] = [
        &[(128, 128, 32)],
        &[(256, 128, 64), (128, 384, 32), (128, 128, 96)],
        &[(1152, 128, 32), (128, 256, 32)],
    ];
    for (i, shapes) in groups.into_iter().enumerate() {
        t::grouped_gemm::run_check(&dev, shapes, 500 + i as u64).unwrap();
    }
    // Partial tiles are refused, as the tutorial's kernel does not mask them.
    let e = t::grouped_gemm::run_check(&dev, &[(128, 128, 32), (100, 128, 32)], 9)
        .expect_err("a partial tile was accepted");
    assert!(
        e.contains("problem 1: 100 × 128 × 32 is not made of whole"),
        "{e}"
    );
}
