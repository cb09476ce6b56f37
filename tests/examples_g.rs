//! The `cross_entropy` example's kernels on the interpreter: every form's mean loss, row losses
//! and in-place gradient against an f64 reference, in f32 and bf16, with and without label
//! smoothing, on awkward shapes (1 row, 1 column, 17, 1000, a 32000-column vocabulary with a
//! label on the last column, 32768 (the one-tile form's widest), ignored rows, every row ignored);
//! every kernel's IR round-trips and its PTX assembles for both targets without spills.

use tile_examples::cross_entropy::ce;
use tile_examples::cross_entropy::kernels;

use ce::{check, inputs, reference, Form, Logit, IGNORE};
use tile::prelude::*;

fn check_shape<T: Logit>(rows: usize, v: usize, all_ignored: bool) {
    let dev = Device::interpreter();
    let (logits, mut labels) = inputs::<T>(rows, v, (rows * 31 + v) as u64);
    if all_ignored {
        labels.iter_mut().for_each(|y| *y = IGNORE);
    }
    let host: Vec<f32> = logits.iter().map(|&x| x.to_f32()).collect();
    let tol = ce::tolerance::<T>();
    for s in [0.0f32, 0.1] {
        let want = reference(&host, &labels, v, f64::from(s));
        for form in Form::ALL.into_iter().filter(|f| f.fits::<T>(v)) {
            let err = check(&dev, &logits, &labels, v, s, form, &want).unwrap();
            assert!(
                err <= tol,
                "{rows}x{v} {} smoothing {s} {form:?}: {err:e}",
                T::NAME
            );
        }
    }
}

#[test]
fn every_form_matches_the_reference() {
    for (rows, v) in [
        (1, 1),
        (1, 17),
        (17, 1),
        (9, 1000),
        (4, 1025),
        (4, 32000),
        (3, 32768),
    ] {
        check_shape::<f32>(rows, v, false);
        check_shape::<bf16>(rows, v, false);
    }
}

#[test]
fn every_row_ignored() {
    check_shape::<f32>(5, 300, true);
    check_shape::<bf16>(5, 300, true);
}

#[test]
fn every_kernel_round_trips_and_assembles_without_spills() {
    use tile::ir::{parse, print, verify};
    let ptxas = tile_codegen::ptxas::find();
    if ptxas.is_none() {
        println!("skipped (ptxas): run scripts/setup.sh, or set TILE_PTXAS");
    }
    for k in kernels::all() {
        let f = parse(k.ir).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        verify(&f).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        assert_eq!(print(&f), k.ir, "{}", k.name);
        let Some(ptxas) = &ptxas else { continue };
        for (vi, v) in k.variants.iter().enumerate() {
            for t in v.targets {
                let r = tile_codegen::ptxas::assemble(ptxas, t.ptx, t.target.arch())
                    .unwrap_or_else(|e| panic!("{} v{vi} {}: {e}", k.name, t.target.arch()));
                println!(
                    "{:<40} v{vi} {:<7} {:>3} registers",
                    k.name,
                    t.target.arch(),
                    r.registers
                );
                assert!(!r.spills(), "{} v{vi} {} spills", k.name, t.target.arch());
            }
        }
    }
}
