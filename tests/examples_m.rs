//! The `linear_cross_entropy` example on the interpreter against its float64 reference (the
//! loss of `x · Wᵀ` with every 7th label ignored, one label on the last class, `dx` and `dW`):
//! the fused form in chunks that do not divide the tokens (one token per chunk included, and
//! label smoothing) and the unfused form, f16 and bf16, on vocabularies and hidden sizes that are
//! not multiples of the blocks or of 8. A chunk of 0 or of more tokens than there are, and empty
//! shapes, are an `Err`.

use tile::prelude::*;
use tile_examples::common::Half;
use tile_examples::linear_cross_entropy::host::{self, Scratch, Shape, Tensors};
use tile_tests::assert_close;

fn check<T: Half>(s: Shape, chunk: usize, smoothing: f32) {
    let dev = Device::interpreter();
    let p = host::problem::<T>(s, (s.t * 31 + s.h * 7 + s.v) as u64);
    let (loss, dx, dw) = host::reference(&p, s, f64::from(smoothing));
    for c in [chunk, s.t] {
        let mut d = Tensors::upload(&dev, &p, s).unwrap();
        let mut sc = Scratch::<T>::new(&dev, s, c).unwrap();
        host::run(&dev, &mut d, &mut sc, s, smoothing).unwrap();
        let what = format!("{s:?} {} chunk {c} smoothing {smoothing}", T::NAME);
        let got = f64::from(dev.download(&sc.mean).unwrap()[0]);
        assert!(
            (got - loss).abs() <= T::TOL / 4.0 * loss.abs(),
            "{what}: loss {got} against {loss}"
        );
        assert_close(&dev, &d.dx, &dx, &format!("{what} dx"));
        assert_close(&dev, &d.dw, &dw, &format!("{what} dW"));
    }
}

#[test]
fn one_token() {
    check::<f16>(
        Shape {
            t: 1,
            h: 64,
            v: 100,
        },
        1,
        0.0,
    );
    check::<bf16>(
        Shape {
            t: 1,
            h: 64,
            v: 100,
        },
        1,
        0.0,
    );
}

#[test]
fn awkward_shapes_in_chunks() {
    for (s, chunk, smoothing) in [
        (
            Shape {
                t: 37,
                h: 40,
                v: 75,
            },
            16,
            0.0,
        ),
        (
            Shape {
                t: 70,
                h: 96,
                v: 257,
            },
            32,
            0.1,
        ),
        (
            Shape {
                t: 9,
                h: 20,
                v: 131,
            },
            1,
            0.0,
        ),
        (
            Shape {
                t: 130,
                h: 72,
                v: 33,
            },
            129,
            0.0,
        ),
    ] {
        check::<f16>(s, chunk, smoothing);
        check::<bf16>(s, chunk, smoothing);
    }
}

#[test]
fn bad_chunks_and_empty_shapes_are_errs() {
    let dev = Device::interpreter();
    let s = Shape { t: 5, h: 8, v: 10 };
    let p = host::problem::<bf16>(s, 1);
    for chunk in [0, 6] {
        assert!(
            Scratch::<bf16>::new(&dev, s, chunk).is_err(),
            "chunk {chunk}"
        );
    }
    let mut d = Tensors::upload(&dev, &p, s).unwrap();
    let mut sc = Scratch::<bf16>::new(&dev, s, 5).unwrap();
    sc.chunk = 0;
    assert!(host::run(&dev, &mut d, &mut sc, s, 0.0).is_err());
    for bad in [
        Shape { t: 0, ..s },
        Shape { h: 0, ..s },
        Shape { v: 0, ..s },
    ] {
        assert!(bad.validate(1).is_err(), "{bad:?}");
    }
    // The default chunk of a large vocabulary: whole 128-row blocks within the budget.
    let big = Shape {
        t: 8192,
        h: 4096,
        v: 128256,
    };
    assert_eq!(big.chunk(host::CHUNK_BYTES), 512);
    assert_eq!(Shape { v: 32000, ..big }.chunk(host::CHUNK_BYTES), 2048);
    assert_eq!(Shape { t: 100, ..big }.chunk(host::CHUNK_BYTES), 100);
}
