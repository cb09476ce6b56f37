//! The softmax-regression backward on the interpreter against its float64 reference (`dx` and
//! `dW` from the probabilities and their upstream gradient): the fused and unfused forms, f16
//! and bf16, one and several heads, one row, class counts over the 1024-wide block and not a
//! multiple of 8. Empty shapes are an `Err`.

use tile::prelude::*;
use tile_examples::common::Half;
use tile_examples::softmax_regression::backward::{self, Shape, Tensors};
use tile_tests::assert_close;

fn check<T: Half>(s: Shape) {
    let dev = Device::interpreter();
    let pr = backward::problem::<T>(s, (s.b * 7 + s.d * 31 + s.c * 3 + s.h) as u64);
    let (dx, dw) = backward::reference(&pr, s);
    for fused in [true, false] {
        let mut t = Tensors::upload(&dev, &pr, s).unwrap();
        if fused {
            backward::fused(&dev, &mut t, s).unwrap();
        } else {
            backward::unfused(&dev, &mut t, s).unwrap();
        }
        let what = format!("{s:?} {} fused {fused}", T::NAME);
        assert_close(&dev, &t.dx, &dx, &format!("{what} dx"));
        assert_close(&dev, &t.dw, &dw, &format!("{what} dW"));
    }
}

#[test]
fn single_and_multi_head() {
    for s in backward::CHECK_SHAPES {
        check::<f16>(s);
        check::<bf16>(s);
    }
}

#[test]
fn empty_shapes_are_errs() {
    let dev = Device::interpreter();
    let s = Shape {
        b: 2,
        d: 8,
        c: 4,
        h: 1,
    };
    let pr = backward::problem::<bf16>(s, 1);
    let mut t = Tensors::upload(&dev, &pr, s).unwrap();
    for bad in [
        Shape { b: 0, ..s },
        Shape { d: 0, ..s },
        Shape { c: 0, ..s },
        Shape { h: 0, ..s },
    ] {
        assert!(backward::fused(&dev, &mut t, bad).is_err(), "{bad:?}");
        assert!(backward::unfused(&dev, &mut t, bad).is_err(), "{bad:?}");
    }
}
