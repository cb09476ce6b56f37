//! The `moe_align` example's kernels on the interpreter: both forms route awkward problems
//! exactly (each expert's slots hold exactly its ids' indices, then pads; blocks, total, and the
//! counts zero again after each of two calls); every kernel's IR round-trips and its PTX
//! assembles for both targets without spills.

use tile_examples::moe_align::align;
use tile_examples::moe_align::kernels;

use align::{bufs, launch, route, verify, Form, Shape};
use tile::prelude::*;

#[test]
fn both_forms_route_exactly() {
    let dev = Device::interpreter();
    for (tokens, k, experts, block_size) in [
        (1, 1, 1, 1),
        (1, 2, 64, 16),
        (17, 2, 64, 64),
        (5, 3, 7, 5),
        (40, 1, 3, 1),
        (333, 4, 100, 16),
        (1000, 8, 256, 64),
        (300, 2, 256, 128),
    ] {
        let s = Shape {
            tokens,
            k,
            experts,
            block_size,
        };
        let ids = route(s, (tokens * 7 + experts) as u64);
        for form in Form::ALL {
            let mut b = bufs(&dev, s, &ids).unwrap();
            for call in 1..=2 {
                launch(&dev, s, &mut b, form).unwrap();
                let problem = verify(&dev, s, &ids, &b).unwrap();
                assert!(
                    problem.is_none(),
                    "{} {} call {call}: {problem:?}",
                    s.name(),
                    form.name()
                );
            }
        }
    }
}

/// More than 256 experts is an error at the launch, not a wrong result.
#[test]
fn too_many_experts_is_an_error() {
    let dev = Device::interpreter();
    let s = Shape {
        tokens: 4,
        k: 1,
        experts: 300,
        block_size: 4,
    };
    let mut b = bufs(&dev, s, &[0, 1, 2, 299]).unwrap();
    assert!(launch(&dev, s, &mut b, Form::PerRow).is_err());
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
                    "{:<16} v{vi} {:<7} {:>3} registers",
                    k.name,
                    t.target.arch(),
                    r.registers
                );
                assert!(!r.spills(), "{} v{vi} {} spills", k.name, t.target.arch());
            }
        }
    }
}

/// The form tile-bench times (`Form::best`) is the one measured faster at the example's two GPU
/// sizes: one counter per expert for 8192 tokens × top-2 of 64, per-program counters for 65536 ×
/// top-8 of 256.
#[test]
fn best_form_follows_ids_per_expert() {
    let shape = |tokens, k, experts| Shape {
        tokens,
        k,
        experts,
        block_size: 64,
    };
    assert!(matches!(Form::best(shape(8192, 2, 64)), Form::PerId));
    assert!(matches!(Form::best(shape(65536, 8, 256)), Form::PerRow));
    assert!(matches!(Form::best(shape(1, 1, 1)), Form::PerId));
}
