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

/// W8A8 on the interpreter: `x` and `W` quantized per row to `i8` (and `x` to `f8e4m3`) by the
/// example's kernel, each row within its rounding bound with the scale the definition gives;
/// both product forms against float64 from the quantized values, on shapes that cut every edge
/// of the 64 × 128 × 64 block (one token, `k` of 7 and 70, `n` of 5 and 130).
#[test]
fn w8a8_quantizes_per_row_and_multiplies_exactly() {
    use tile_examples::dequant_matmul::w8a8::{self, quantization_error};
    let dev = Device::interpreter();
    for s in [
        Shape { m: 1, n: 5, k: 7 },
        Shape {
            m: 3,
            n: 100,
            k: 256,
        },
        Shape {
            m: 17,
            n: 130,
            k: 70,
        },
        Shape {
            m: 65,
            n: 72,
            k: 200,
        },
    ] {
        let seed = (s.m * 5 + s.n * 31 + s.k) as u64;
        let rows = |r: usize, seed: u64| -> Vec<f16> {
            let mut v: Vec<f16> = Rng::new(seed)
                .vec(r * s.k, -1.0, 1.0)
                .into_iter()
                .map(f16::from_f32)
                .collect();
            // A row of zeros takes scale 1.
            v[..s.k].iter_mut().for_each(|x| *x = f16::ZERO);
            v
        };
        let (xh, wh) = (rows(s.m, seed), rows(s.n, seed + 1));
        let (x, w) = (dev.upload(&xh).unwrap(), dev.upload(&wh).unwrap());
        let (mut xq, mut sx) = (dev.zeros::<i8>(s.m * s.k).unwrap(), dev.zeros(s.m).unwrap());
        let (mut wq, mut sw) = (dev.zeros::<i8>(s.n * s.k).unwrap(), dev.zeros(s.n).unwrap());
        let (mut x8, mut s8) = (
            dev.zeros::<f8e4m3>(s.m * s.k).unwrap(),
            dev.zeros(s.m).unwrap(),
        );
        w8a8::quantize(&dev, &x, &mut xq, &mut sx, s.m, s.k).unwrap();
        w8a8::quantize(&dev, &w, &mut wq, &mut sw, s.n, s.k).unwrap();
        w8a8::quantize(&dev, &x, &mut x8, &mut s8, s.m, s.k).unwrap();
        let (xqh, sxh) = (dev.download(&xq).unwrap(), dev.download(&sx).unwrap());
        let (wqh, swh) = (dev.download(&wq).unwrap(), dev.download(&sw).unwrap());
        let (x8h, s8h) = (dev.download(&x8).unwrap(), dev.download(&s8).unwrap());
        let row = |v: &[f16], r: usize| -> Vec<f32> {
            v[r * s.k..(r + 1) * s.k]
                .iter()
                .map(|x| x.to_f32())
                .collect()
        };
        for r in 0..s.m {
            let xr = row(&xh, r);
            let e = quantization_error(&xr, &xqh[r * s.k..(r + 1) * s.k], sxh[r]);
            assert!(e <= 1.0, "{s:?} x row {r} as i8: {e}");
            let e = quantization_error(&xr, &x8h[r * s.k..(r + 1) * s.k], s8h[r]);
            assert!(e <= 1.0, "{s:?} x row {r} as f8e4m3: {e}");
        }
        assert_eq!(sxh[0], 1.0, "a row of zeros has scale 1");
        for r in 0..s.n {
            let e = quantization_error(&row(&wh, r), &wqh[r * s.k..(r + 1) * s.k], swh[r]);
            assert!(e <= 1.0, "{s:?} W row {r}: {e}");
        }
        let want: Vec<f64> = (0..s.m * s.n)
            .map(|e| {
                let (i, j) = (e / s.n, e % s.n);
                let dot: i64 = (0..s.k)
                    .map(|p| i64::from(xqh[i * s.k + p]) * i64::from(wqh[j * s.k + p]))
                    .sum();
                dot as f64 * f64::from(sxh[i]) * f64::from(swh[j])
            })
            .collect();
        let nan = vec![f16::from_f32(f32::NAN); s.m * s.n];
        let mut c = dev.zeros::<i32>(s.m * s.n).unwrap();
        // Twice: the split form leaves its workspace zero.
        for _ in 0..2 {
            let mut y = dev.upload(&nan).unwrap();
            w8a8::fused(&dev, &xq, &sx, &wq, &sw, &mut c, &mut y, s).unwrap();
            let label = format!("{s:?} w8a8 fused, split {}", w8a8::split(s));
            assert_close(&dev, &y, &want, &label);
        }
        assert!(dev.download(&c).unwrap().iter().all(|&v| v == 0));
        let mut y = dev.upload(&nan).unwrap();
        w8a8::unfused(&dev, &xq, &sx, &wq, &sw, &mut c, &mut y, s).unwrap();
        assert_close(&dev, &y, &want, &format!("{s:?} w8a8 unfused"));
    }
}
