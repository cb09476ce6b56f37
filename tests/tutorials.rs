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
