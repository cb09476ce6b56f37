//! The `conv_bn_relu` example on the interpreter against its float64 reference (the trained
//! convolution, BatchNorm and ReLU, unfolded): the fused kernel (folded filter and bias, ReLU in
//! the epilogue) and the unfused three kernels, f16 and bf16, on layers that cut every edge —
//! 3×3 with padding at every border, 1×1, stride 2 on an odd image, 5×5 with padding 2, channel
//! counts that are not a multiple of the 64-channel step (3, 17) or of the 64-wide output block
//! (10, 100), and pixel counts not a multiple of the 128-row block; every tile of the tuner,
//! split-K included, on aligned layers. Layers the kernels cannot take are an `Err`.

use tile::prelude::*;
use tile_examples::common::{Half, Rng};
use tile_examples::conv_bn_relu::host::{self, Shape};
use tile_tests::assert_close;

fn check<T: Half>(s: Shape) {
    let dev = Device::interpreter();
    let seed = (s.cin * 31 + s.cout * 7 + s.h) as u64;
    let xh: Vec<T> = Rng::new(seed)
        .vec(s.x_len(), -1.0, 1.0)
        .into_iter()
        .map(T::from_f32)
        .collect();
    let l = host::layer(s, seed + 1);
    let at: Vec<(usize, usize)> = (0..s.m())
        .flat_map(|i| (0..s.cout).map(move |j| (i, j)))
        .collect();
    let want = host::reference(&xh, &l, s, &at);
    let x = dev.upload(&xh).unwrap();
    let dl = host::upload::<T>(&dev, &l, s).unwrap();
    let nan = vec![T::from_f32(f32::NAN); s.y_len()];
    let mut ws = dev.zeros::<f32>(host::workspace_len(s)).unwrap();
    for fused in [true, false] {
        let mut y = dev.upload(&nan).unwrap();
        if fused {
            host::fused(&dev, &x, &dl, &mut y, &mut ws, s).unwrap();
        } else {
            host::unfused(&dev, &x, &dl, &mut y, &mut ws, s).unwrap();
        }
        let form = if fused { "fused" } else { "unfused" };
        assert_close(&dev, &y, &want, &format!("{s:?} {} {form}", T::NAME));
    }
}

fn layers() -> [Shape; 5] {
    [
        Shape::square(2, 7, 17, 10, 3, 1),
        Shape::square(1, 9, 64, 100, 1, 1),
        Shape::square(1, 11, 3, 64, 3, 2),
        Shape {
            n: 1,
            h: 6,
            w: 13,
            cin: 70,
            cout: 65,
            fh: 5,
            fw: 3,
            stride: 1,
            pad: 2,
        },
        Shape::square(3, 5, 128, 130, 3, 2),
    ]
}

/// Every tile of the tuner (the interpreter's tuner takes only the first), split-K included:
/// `cin` 128 and 70 give 18 and 30 loop steps, which split in 2 and 3.
#[test]
fn every_tile_matches_float64() {
    let dev = Device::interpreter();
    for s in [
        Shape::square(3, 5, 128, 130, 3, 2),
        layers()[3],
        layers()[0],
    ] {
        let seed = (s.cin * 31 + s.cout * 7 + s.h) as u64;
        let xh: Vec<bf16> = Rng::new(seed)
            .vec(s.x_len(), -1.0, 1.0)
            .into_iter()
            .map(bf16::from_f32)
            .collect();
        let l = host::layer(s, seed + 1);
        let at: Vec<(usize, usize)> = (0..s.m())
            .flat_map(|i| (0..s.cout).map(move |j| (i, j)))
            .collect();
        let want = host::reference(&xh, &l, s, &at);
        let x = dev.upload(&xh).unwrap();
        let dl = host::upload::<bf16>(&dev, &l, s).unwrap();
        let mut ws = dev.zeros::<f32>(host::workspace_len(s)).unwrap();
        for t in 0..host::CONV_TILES.len() {
            let mut y = dev.upload(&vec![bf16::NAN; s.y_len()]).unwrap();
            host::fused_on_tile(&dev, &x, &dl, &mut y, &mut ws, s, t).unwrap();
            let tile = host::CONV_TILES[t];
            assert_close(&dev, &y, &want, &format!("{s:?} {tile:?}"));
        }
    }
}

/// The host's tile table names the kernels' configurations in their order: `BM × BN` and the
/// ring (4 stages for the compiler's choice, 3 for `num_stages = 2`).
#[test]
fn tile_table_matches_the_kernels_configurations() {
    use tile_examples::conv_bn_relu::kernels::{conv2d, conv2d_split};
    let configs: Vec<(i32, i32, u32)> = conv2d::CONFIGS
        .iter()
        .map(|c| (c.BM, c.BN, c.num_stages))
        .chain(
            conv2d_split::CONFIGS
                .iter()
                .map(|c| (c.BM, c.BN, c.num_stages)),
        )
        .collect();
    assert_eq!(configs.len(), host::CONV_TILES.len());
    assert_eq!(conv2d::CONFIGS.len(), host::SPLIT_FROM);
    for (i, (t, (bm, bn, stages))) in host::CONV_TILES.iter().zip(configs).enumerate() {
        assert_eq!((t.bm as i32, t.bn as i32), (bm, bn), "{t:?}");
        assert_eq!(t.split, i >= host::SPLIT_FROM, "{t:?}");
        let ring = if stages == 2 { 3 } else { 4 };
        assert_eq!(t.stages, ring, "{t:?}");
    }
}

#[test]
fn f16_matches_float64() {
    for s in layers() {
        check::<f16>(s);
    }
}

#[test]
fn bf16_matches_float64() {
    for s in layers() {
        check::<bf16>(s);
    }
}

/// A filter larger than the padded image, a zero stride and an input past `i32` indexing are
/// `Err`s from both forms, before anything is launched.
#[test]
fn layers_the_kernels_cannot_take_are_errors() {
    let dev = Device::interpreter();
    let ok = Shape::square(1, 4, 8, 8, 3, 1);
    let x = dev.zeros::<f16>(ok.x_len()).unwrap();
    let l = host::upload::<f16>(&dev, &host::layer(ok, 1), ok).unwrap();
    let mut y = dev.zeros::<f16>(ok.y_len()).unwrap();
    let mut ws = dev.zeros::<f32>(1).unwrap();
    let bad = [
        Shape {
            fh: 7,
            fw: 7,
            pad: 1,
            ..ok
        },
        Shape { stride: 0, ..ok },
        Shape {
            n: 1 << 20,
            h: 64,
            w: 64,
            ..ok
        },
    ];
    for s in bad {
        let r = host::fused(&dev, &x, &l, &mut y, &mut ws, s);
        assert!(matches!(r, Err(Error::Args(_))), "{s:?}: {r:?}");
        let r = host::unfused(&dev, &x, &l, &mut y, &mut ws, s);
        assert!(matches!(r, Err(Error::Args(_))), "{s:?}: {r:?}");
    }
}
