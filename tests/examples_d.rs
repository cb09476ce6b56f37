//! The `softmax_regression_simple` example's kernels on the interpreter: fused and unfused against
//! an f64 reference on awkward shapes (every class tile, a `dim` that is not a multiple of the
//! 32-wide slices, batches that leave a partial row block), the error for too many classes, and
//! every instance's IR round trip and PTX (no spills).

use tile_examples::softmax_regression_simple::kernels as softmax_regression_simple;
use tile_examples::softmax_regression_simple::reference as softmax_regression_reference;

use tile_tests as common;

use common::Rng;
use softmax_regression_simple::{fused, unfused};
use tile::prelude::*;

#[test]
fn fused_and_unfused_match_the_reference() {
    let dev = Device::interpreter();
    for (b, d, c) in [
        (1, 1, 1),
        (17, 33, 10),
        (16, 32, 16),
        (5, 100, 17),
        (33, 64, 64),
        (3, 70, 100),
        (2, 5, 128),
    ] {
        let mut r = Rng((b * 131 + d * 7 + c) as u64);
        let x: Vec<f32> = (0..b * d).map(|_| r.f32()).collect();
        let w: Vec<f32> = (0..d * c).map(|_| 0.5 * r.f32()).collect();
        let want = softmax_regression_reference::softmax_regression(&x, &w, (b, d, c));
        let (xb, wb) = (dev.upload(&x).unwrap(), dev.upload(&w).unwrap());
        let s = (b as i32, d as i32, c as i32);
        let mut p = dev.upload(&vec![f32::NAN; b * c]).unwrap();
        fused(&dev, &xb, &wb, &mut p, s).unwrap();
        let mut logits = dev.upload(&vec![f32::NAN; b * c]).unwrap();
        let mut p2 = dev.upload(&vec![f32::NAN; b * c]).unwrap();
        unfused(&dev, &xb, &wb, &mut logits, &mut p2, s).unwrap();
        for (form, got) in [("fused", p), ("unfused", p2)] {
            let got = dev.download(&got).unwrap();
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g as f64 - w).abs() <= 1e-5,
                    "{form} {b}x{d}x{c} element {i}: {g} vs {w}"
                );
            }
        }
    }
}

#[test]
fn more_classes_than_a_tile_is_an_error() {
    let dev = Device::interpreter();
    let x = dev.upload(&[0.0f32; 129]).unwrap();
    let w = dev.upload(&[0.0f32; 129]).unwrap();
    let mut p = dev.upload(&[0.0f32; 129]).unwrap();
    let e = fused(&dev, &x, &w, &mut p, (1, 1, 129)).unwrap_err();
    assert!(e.to_string().contains("at most 128"), "{e}");
}

#[test]
fn ir_round_trips_and_ptx_assembles_without_spills() {
    use tile::ir::{parse, print, verify};
    let ptxas = tile_codegen::ptxas::find();
    if ptxas.is_none() {
        println!("skipped (ptxas): run scripts/setup.sh, or set TILE_PTXAS");
    }
    for k in softmax_regression_simple::all() {
        let f = parse(k.ir).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        verify(&f).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        assert_eq!(print(&f), k.ir, "{}", k.name);
        let Some(ptxas) = &ptxas else { continue };
        for (vi, v) in k.variants.iter().enumerate() {
            for t in v.targets {
                let r = tile_codegen::ptxas::assemble(ptxas, t.ptx, t.target.arch())
                    .unwrap_or_else(|e| panic!("{} v{vi} {}: {e}", k.name, t.target.arch()));
                println!(
                    "{:<22} v{vi} {:<7} {:>3} registers",
                    k.name,
                    t.target.arch(),
                    r.registers
                );
                assert!(
                    !r.spills(),
                    "{} v{vi} {} spills:\n{}",
                    k.name,
                    t.target.arch(),
                    r.raw
                );
            }
        }
    }
}
