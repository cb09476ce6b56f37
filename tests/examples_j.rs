//! The `dequant_matmul` example on the interpreter against its float64 reference: the fused
//! kernel (unpack, dequantize and multiply in one pass) and the unfused form (dequantize, then
//! the `gemm` example's product), f16 and bf16, on shapes that cut every edge — one token, a
//! token count and a weight row count not a multiple of the 16 × 64 block (3, 17, 65; 100, 130),
//! several groups per split slice; the packing order against a known word; a `k` that is not a
//! multiple of the group size is an `Err`.

use tile::prelude::*;
use tile_examples::common::{Half, Rng};
use tile_examples::dequant_matmul::host::{self, DeviceWeights, Shape, Unfused};
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
    let nan = vec![T::from_f32(f32::NAN); s.m * s.n];
    let mut part = dev.zeros::<f32>(host::workspace(s)).unwrap();
    let mut y = dev.upload(&nan).unwrap();
    host::fused(&dev, &x, &w, &mut part, &mut y, s).unwrap();
    assert_close(&dev, &y, &want, &format!("{s:?} {} fused", T::NAME));
    let mut buf = Unfused::<T>::new(&dev, s).unwrap();
    let mut y = dev.upload(&nan).unwrap();
    host::unfused(&dev, &x, &w, &mut buf, &mut y, s).unwrap();
    assert_close(&dev, &y, &want, &format!("{s:?} {} unfused", T::NAME));
}

fn shapes() -> [Shape; 4] {
    [
        Shape {
            m: 1,
            n: 64,
            k: 128,
        },
        Shape {
            m: 3,
            n: 100,
            k: 384,
        },
        Shape {
            m: 17,
            n: 130,
            k: 256,
        },
        Shape {
            m: 65,
            n: 64,
            k: 128,
        },
    ]
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

/// Value `k` of a row is nibble `k mod 8` of word `k / 8`, the first in the low bits: the word
/// `0x7654_3210` holds 0, 1, …, 7, which with scale 1 and zero point 0 and `x` = one-hot rows
/// come back in order.
#[test]
fn packing_order_is_low_nibble_first() {
    assert_eq!(
        host::pack_int4(&[0, 1, 2, 3, 4, 5, 6, 7], 1, 8),
        vec![0x7654_3210]
    );
    let dev = Device::interpreter();
    let s = Shape {
        m: 8,
        n: 64,
        k: 128,
    };
    let q: Vec<u8> = (0..s.n * s.k).map(|i| (i % 8) as u8).collect();
    let w = host::Weights::<f16> {
        q,
        scales: vec![f16::from_f32(1.0); s.n],
        zeros: vec![f16::from_f32(0.0); s.n],
    };
    let mut xh = vec![f16::from_f32(0.0); s.m * s.k];
    for i in 0..s.m {
        xh[i * s.k + i] = f16::from_f32(1.0);
    }
    let (x, dw) = (dev.upload(&xh).unwrap(), host::upload(&dev, &w, s).unwrap());
    let mut part = dev.zeros::<f32>(host::workspace(s)).unwrap();
    let mut y = dev.zeros::<f16>(s.m * s.n).unwrap();
    host::fused(&dev, &x, &dw, &mut part, &mut y, s).unwrap();
    let y = dev.download(&y).unwrap();
    for i in 0..s.m {
        for j in 0..s.n {
            assert_eq!(y[i * s.n + j].to_f32(), i as f32, "y[{i}][{j}]");
        }
    }
}

/// A `k` that is not a multiple of the group size is an `Err` from both forms.
#[test]
fn group_size_not_dividing_k_is_an_error() {
    let dev = Device::interpreter();
    let s = Shape {
        m: 1,
        n: 64,
        k: 200,
    };
    let x = dev.zeros::<f16>(s.m * s.k).unwrap();
    let w = DeviceWeights {
        qw: dev.zeros::<u32>(s.n * s.k / 8).unwrap(),
        scales: dev.zeros::<f16>(s.n * 2).unwrap(),
        zeros: dev.zeros::<f16>(s.n * 2).unwrap(),
    };
    let mut part = dev.zeros::<f32>(s.m * s.n).unwrap();
    let mut y = dev.zeros::<f16>(s.m * s.n).unwrap();
    let r = host::fused(&dev, &x, &w, &mut part, &mut y, s);
    assert!(matches!(r, Err(Error::Args(_))), "{r:?}");
    let mut buf = Unfused::<f16>::new(&dev, s).unwrap();
    let r = host::unfused(&dev, &x, &w, &mut buf, &mut y, s);
    assert!(matches!(r, Err(Error::Args(_))), "{r:?}");
}
