//! The `selective_scan` example on the interpreter against its float64 loop: every configuration
//! of the fused kernel and the unfused three kernels, f32 and bf16 sequences, on shapes that cut
//! every edge — one position, channel counts not a multiple of the 16-channel block (5, 17),
//! lengths not a multiple of any chunk (129, 300, 1000), and several batch elements (the `B` and
//! `C` rows of the right element, the state reset per sequence).

use tile::prelude::*;
use tile_examples::common::rel_l2;
use tile_examples::selective_scan::host::{self, Storage};
use tile_examples::selective_scan::kernels::{fused_with, unfused, Scratch, Shape, CONFIGS};

fn check<T: Storage>(s: Shape, tol: f64) {
    let dev = Device::interpreter();
    let h = host::host::<T>(s, (s.batch * 131 + s.channels * 7 + s.len) as u64);
    let x = host::upload::<T>(&dev, &h).unwrap();
    let channels = host::checked_channels(s);
    let want = host::reference(s, &h, &channels);
    for c in CONFIGS {
        let mut y = dev.upload(&vec![T::from_f32(f32::NAN); s.seq()]).unwrap();
        fused_with(&dev, s, &x, &mut y, c).unwrap();
        let got = host::gather(s, &dev.download(&y).unwrap(), &channels);
        let e = rel_l2(&got, &want);
        assert!(e <= tol, "{s:?} fused {c:?}: rel. L2 error {e:.2e}");
    }
    let mut scratch = Scratch::new(&dev, s).unwrap();
    let mut y = dev.upload(&vec![T::from_f32(f32::NAN); s.seq()]).unwrap();
    unfused(&dev, s, &x, &mut scratch, &mut y).unwrap();
    let got = host::gather(s, &dev.download(&y).unwrap(), &channels);
    let e = rel_l2(&got, &want);
    assert!(e <= tol, "{s:?} unfused: rel. L2 error {e:.2e}");
}

fn shapes() -> [Shape; 4] {
    let shape = |batch, channels, len| Shape {
        batch,
        channels,
        len,
    };
    [
        shape(1, 1, 1),
        shape(2, 5, 300),
        shape(1, 17, 129),
        shape(3, 16, 1000),
    ]
}

#[test]
fn f32_matches_float64() {
    for s in shapes() {
        check::<f32>(s, 1e-5);
    }
}

#[test]
fn bf16_matches_float64() {
    for s in shapes() {
        check::<bf16>(s, 1e-2);
    }
}
