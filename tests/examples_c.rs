//! qk_norm_rope on the interpreter: fused and unfused agree (to bf16 rounding), v heads stay
//! untouched, and a q head with position 0 (cos 1, sin 0) comes out RMS-normalized; the
//! access-pattern ceiling kernel leaves the buffer as it was.

use tile_examples::qk_norm_rope::kernels as qk_norm_rope;

use qk_norm_rope::{fused, touch, unfused, Shape, Tables};
use tile::prelude::*;

#[test]
fn fused_and_unfused_agree_and_leave_v_alone() {
    let dev = Device::interpreter();
    let s = Shape {
        tokens: 5,
        q_heads: 3,
        kv_heads: 2,
        max_pos: 8,
    };
    let n = (s.tokens * s.stride()) as usize;
    let qkv: Vec<bf16> = (0..n)
        .map(|i| bf16::from_f32(((i * 37 % 101) as f32 - 50.0) / 25.0))
        .collect();
    let mut cos_sin = Vec::new();
    for p in 0..s.max_pos {
        let a: Vec<f32> = (0..64).map(|i| p as f32 * 0.1 * (i + 1) as f32).collect();
        cos_sin.extend(a.iter().map(|x| bf16::from_f32(x.cos())));
        cos_sin.extend(a.iter().map(|x| bf16::from_f32(x.sin())));
    }
    let t = Tables {
        positions: dev.upload(&[0, 3, 7, 1, 0]).unwrap(),
        cos_sin: dev.upload(&cos_sin).unwrap(),
        qw: dev.upload(&vec![bf16::from_f32(1.0); 128]).unwrap(),
        kw: dev.upload(&vec![bf16::from_f32(0.5); 128]).unwrap(),
    };
    let mut a = dev.upload(&qkv).unwrap();
    let mut b = dev.upload(&qkv).unwrap();
    fused(&dev, s, &mut a, &t, 1e-6).unwrap();
    unfused(&dev, s, &mut b, &t, 1e-6).unwrap();
    let (a, b) = (dev.download(&a).unwrap(), dev.download(&b).unwrap());
    for i in 0..n {
        let (x, y) = (a[i].to_f32(), b[i].to_f32());
        assert!(
            (x - y).abs() <= 1e-2 * x.abs().max(1.0),
            "element {i}: {x} vs {y}"
        );
    }
    let stride = s.stride() as usize;
    let v0 = ((s.q_heads + s.kv_heads) * 128) as usize;
    for tk in 0..s.tokens as usize {
        assert_eq!(
            &a[tk * stride + v0..(tk + 1) * stride],
            &qkv[tk * stride + v0..(tk + 1) * stride],
            "v of token {tk}"
        );
    }
    // Token 0 has position 0: no rotation, so its first q head has RMS 1 (weight 1).
    let head: Vec<f32> = a[..128].iter().map(|v| v.to_f32()).collect();
    let rms = (head.iter().map(|v| v * v).sum::<f32>() / 128.0).sqrt();
    assert!((rms - 1.0).abs() < 1e-2, "rms {rms}");
}

#[test]
fn touch_leaves_every_element_as_it_was() {
    let dev = Device::interpreter();
    // 11 q/k heads: the second program of each token has 3 of its 8 rows masked off.
    let s = Shape {
        tokens: 3,
        q_heads: 9,
        kv_heads: 2,
        max_pos: 1,
    };
    let n = (s.tokens * s.stride()) as usize;
    let qkv: Vec<bf16> = (0..n).map(|i| bf16::from_f32(i as f32 * 0.25)).collect();
    let mut a = dev.upload(&qkv).unwrap();
    touch(s, &dev, &mut a).unwrap();
    assert_eq!(dev.download(&a).unwrap(), qkv);
}
