//! Atomics and scans on the interpreter against host references: a histogram, every atomic on
//! every type it takes (with the old values), atomics whose old values threads holding copies need,
//! and scans of every kind, direction and layout case (the same checks run on the GPU in `gpu.rs`).

use tile_tests as common;

use tile::prelude::*;
use tile::ParamKind;

#[test]
fn histogram_counts() {
    let dev = Device::interpreter();
    for (n, bins) in [(1, 1), (17, 3), (1000, 64), (5000, 256)] {
        common::check_histogram(&dev, n, bins);
    }
}

#[test]
fn every_atomic_on_every_type() {
    let dev = Device::interpreter();
    for n in [1, 17, 1000] {
        common::check_atomic_each(&dev, n);
    }
}

#[test]
fn atomics_on_16_bit_floats() {
    let dev = Device::interpreter();
    for n in [1, 17, 1000] {
        common::check_atomic_each_16(&dev, n);
    }
}

#[test]
fn atomics_whose_old_values_are_shared() {
    let dev = Device::interpreter();
    for g in [1, 3, 40] {
        common::check_atomic_tickets(&dev, g);
    }
}

#[test]
fn scans_match_sequential_references() {
    common::check_scans(&Device::interpreter());
}

#[test]
fn associative_scans_with_tuple_combiners() {
    common::check_scans_combined(&Device::interpreter());
}

/// A buffer written only through atomics is a written buffer: the launch takes it as `&mut`.
#[test]
fn atomics_make_a_buffer_written() {
    let written = |name: &str| {
        common::histogram::KERNEL
            .params
            .iter()
            .find(|p| p.name == name)
            .map(|p| matches!(p.kind, ParamKind::Ptr { written: true, .. }))
    };
    assert_eq!(written("hist"), Some(true));
    assert_eq!(written("x"), Some(false));
}
