//! The `rmsnorm_linear` example on the interpreter against its float64 reference (RMSNorm with
//! its weight, then the product with `Wᵀ`, unfolded): the fused form (the weight folded, the
//! row statistic applied in the GEMM's epilogue; a split 64-row product for at most 64 tokens)
//! and the unfused form, f16 and bf16, on shapes that cut every edge — one token, token and
//! feature counts not a multiple of the blocks, hidden sizes that are not a multiple of 8 or of
//! the 1024-column step, both the split and the tiled path. Empty shapes are an `Err`.

use tile::prelude::*;
use tile_examples::common::{Half, Rng};
use tile_examples::rmsnorm_linear::host::{self, Scratch, Shape};
use tile_tests::assert_close;

fn check<T: Half>(s: Shape) {
    let dev = Device::interpreter();
    let seed = (s.m * 7 + s.n * 131 + s.k) as u64;
    let xh: Vec<T> = Rng::new(seed)
        .vec(s.m * s.k, -1.0, 1.0)
        .into_iter()
        .map(T::from_f32)
        .collect();
    let wh = host::weights::<T>(s, seed + 1);
    let at: Vec<(usize, usize)> = (0..s.m)
        .flat_map(|i| (0..s.n).map(move |j| (i, j)))
        .collect();
    let want = host::reference(&xh, &wh, s, &at);
    let x = dev.upload(&xh).unwrap();
    let w = host::upload(&dev, &wh, s).unwrap();
    let mut sc = Scratch::<T>::new(&dev, s).unwrap();
    let nan = vec![T::from_f32(f32::NAN); s.m * s.n];
    // The fused form twice: its last programs leave their counters at zero for the next launch.
    for (fused, form) in [(true, "fused"), (true, "fused again"), (false, "unfused")] {
        let mut y = dev.upload(&nan).unwrap();
        if fused {
            host::fused(&dev, &x, &w, &mut sc, &mut y, s).unwrap();
        } else {
            host::unfused(&dev, &x, &w, &mut sc, &mut y, s).unwrap();
        }
        assert_close(&dev, &y, &want, &format!("{s:?} {} {form}", T::NAME));
    }
}

fn shapes() -> [Shape; 6] {
    [
        Shape { m: 1, n: 64, k: 64 },
        Shape {
            m: 3,
            n: 100,
            k: 200,
        },
        Shape {
            m: 17,
            n: 130,
            k: 1500,
        },
        Shape {
            m: 70,
            n: 72,
            k: 96,
        },
        Shape {
            m: 45,
            n: 100,
            k: 300,
        },
        Shape {
            m: 65,
            n: 100,
            k: 300,
        },
    ]
}

#[test]
fn both_paths_are_covered() {
    let plan = |m, n, k| host::few_tokens_plan(Shape { m, n, k });
    assert!(plan(3, 100, 200).is_some());
    assert!(plan(17, 130, 1500).is_some_and(|(split, _)| split > 1));
    assert!(plan(70, 72, 96).is_none());
}

#[test]
fn f16_matches_float64() {
    for s in shapes() {
        check::<f16>(s);
    }
}

#[test]
fn bf16_matches_float64() {
    for s in shapes() {
        check::<bf16>(s);
    }
}

#[test]
fn empty_shapes_are_errors() {
    let dev = Device::interpreter();
    let s = Shape { m: 2, n: 8, k: 8 };
    let x = dev.zeros::<f16>(16).unwrap();
    let w = host::upload(&dev, &host::weights::<f16>(s, 1), s).unwrap();
    let mut sc = Scratch::<f16>::new(&dev, s).unwrap();
    let mut y = dev.zeros::<f16>(16).unwrap();
    for bad in [
        Shape { k: 0, ..s },
        Shape { m: 0, ..s },
        Shape { n: 0, ..s },
    ] {
        let r = host::fused(&dev, &x, &w, &mut sc, &mut y, bad);
        assert!(matches!(r, Err(Error::Args(_))), "{bad:?}: {r:?}");
        let r = host::unfused(&dev, &x, &w, &mut sc, &mut y, bad);
        assert!(matches!(r, Err(Error::Args(_))), "{bad:?}: {r:?}");
    }
}
