//! The `flash_attention` example on the interpreter against a float64 reference: one token, 17
//! and 130 tokens (not multiples of the 64- and 32-key blocks nor of the 128-row block), causal
//! and not, head dimensions 64 and 128, grouped-query heads 2:1 and 4:1, f16 and bf16. The
//! forward: every output row and log-sum-exp compared; the backward: every element of `dQ`,
//! `dK`, `dV` against the analytic float64 gradients, relative L2 within `grad_tol` (4e-3 for
//! f16, 2e-2 for bf16, the forward's tolerances). Paged decoding, packed variable lengths and
//! the score modifiers (windows, ALiBi, softcap, bias) against float64, and what each refuses.

use half::{bf16, f16};
use tile::prelude::*;
use tile_examples::common::Half;
use tile_examples::flash_attention::attn::{
    backward_config, backward_configs, errors, forward, forward_config, forward_configs,
    grad_errors, grad_tol, sampled_grad_errors, Dropout, Grads, Inputs, Shape,
};

fn check<T: Half>(s: Shape) {
    check_config::<T>(s, None)
}

/// [`check`] with configuration `config` of the autotuned forward (the dropout kernel's).
fn check_config<T: Half>(s: Shape, config: Option<usize>) {
    let dev = Device::interpreter();
    let x = Inputs::<T>::new(&s, 3);
    let (q, k, v) = (
        dev.upload(&x.q).unwrap(),
        dev.upload(&x.k).unwrap(),
        dev.upload(&x.v).unwrap(),
    );
    let mut o = dev.upload(&vec![T::from_f32(f32::NAN); s.q_len()]).unwrap();
    let mut lse = dev
        .upload(&vec![f32::NAN; s.batch * s.hq * s.n_ctx])
        .unwrap();
    forward_config(&dev, &s, [&q, &k, &v], &mut o, &mut lse, config).unwrap();
    let (e, el) = errors(
        &s,
        &x,
        &dev.download(&o).unwrap(),
        &dev.download(&lse).unwrap(),
    );
    assert!(e <= T::TOL, "{} {}: output error {e:e}", s.label(), T::NAME);
    assert!(el <= 1e-5, "{} {}: lse error {el:e}", s.label(), T::NAME);
}

#[test]
fn forward_matches_float64() {
    for d in [64, 128] {
        for causal in [false, true] {
            for (batch, hq, hkv, n_ctx) in [(1, 2, 2, 1), (2, 2, 1, 17), (1, 4, 1, 130)] {
                let s = Shape {
                    batch,
                    hq,
                    hkv,
                    n_ctx,
                    d,
                    causal,
                    dropout: None,
                };
                check::<f16>(s);
                check::<bf16>(s);
            }
        }
    }
}

/// The forward, then the backward from its `o` and `lse`, against float64.
fn check_backward<T: Half>(s: Shape) {
    check_backward_config::<T>(s, None)
}

/// [`check_backward`] with configuration `config` of the backward's autotuned kernels
/// (`None`: the interpreter's pick, configuration 0).
fn check_backward_config<T: Half>(s: Shape, config: Option<usize>) {
    let dev = Device::interpreter();
    let x = Inputs::<T>::new(&s, 5);
    let up = |v: &[T]| dev.upload(v).unwrap();
    let (q, k, v, d_o) = (up(&x.q), up(&x.k), up(&x.v), up(&x.d_o));
    let nan = |n: usize| vec![T::from_f32(f32::NAN); n];
    let mut o = up(&nan(s.q_len()));
    let rows = s.batch * s.hq * s.n_ctx;
    let mut lse = dev.upload(&vec![f32::NAN; rows]).unwrap();
    forward(&dev, &s, &q, &k, &v, &mut o, &mut lse).unwrap();
    let (mut dq, mut dk, mut dv) = (
        up(&nan(s.q_len())),
        up(&nan(s.kv_len())),
        up(&nan(s.kv_len())),
    );
    let mut delta = dev.upload(&vec![f32::NAN; rows]).unwrap();
    let g = Grads {
        o: &o,
        lse: &lse,
        d_o: &d_o,
        dq: &mut dq,
        dk: &mut dk,
        dv: &mut dv,
        delta: &mut delta,
    };
    backward_config(&dev, &s, &q, &k, &v, g, config).unwrap();
    let (gq, gk, gv) = (
        dev.download(&dq).unwrap(),
        dev.download(&dk).unwrap(),
        dev.download(&dv).unwrap(),
    );
    let (eq, ek, ev) = grad_errors(&s, &x, &gq, &gk, &gv);
    println!(
        "{} {} (config {config:?}): dq {eq:.2e} dk {ek:.2e} dv {ev:.2e}",
        s.label(),
        T::NAME
    );
    // The GPU's check of large shapes (from the forward's `o` and `lse`), here on every row of
    // the shorter shapes (it is slow in a debug build).
    let (o, lse) = (dev.download(&o).unwrap(), dev.download(&lse).unwrap());
    let (sq, sk, sv) = if s.n_ctx <= 17 {
        sampled_grad_errors(&s, &x, &o, &lse, &gq, &gk, &gv)
    } else {
        (0.0, 0.0, 0.0)
    };
    for (what, e) in [
        ("dq", eq),
        ("dk", ek),
        ("dv", ev),
        ("dq", sq),
        ("dk", sk),
        ("dv", sv),
    ] {
        assert!(
            e <= grad_tol::<T>(),
            "{} {}: {what} error {e:e}",
            s.label(),
            T::NAME
        );
    }
}

#[test]
fn backward_matches_float64() {
    for d in [64, 128] {
        for causal in [false, true] {
            for (batch, hq, hkv, n_ctx) in [(1, 2, 2, 1), (1, 2, 1, 17), (1, 4, 1, 130)] {
                let s = Shape {
                    batch,
                    hq,
                    hkv,
                    n_ctx,
                    d,
                    causal,
                    dropout: None,
                };
                check_backward::<f16>(s);
                check_backward::<bf16>(s);
            }
        }
    }
}

/// Every configuration of the autotuned backward kernels (the GPU's tuner may pick any): block
/// sizes, column slices and the causal diagonal in one loop or two, on a length that is not a
/// multiple of any block and grouped heads.
/// Dropout on the probabilities: the forward and, with every configuration of the dropout
/// backward's kernels, the gradients against float64 with the same mask (the host's
/// `Dropout::keep`), so a kernel that dropped other values, or none, fails; 130 tokens (not a
/// multiple of the blocks nor of the 8 keys of one Philox call), grouped heads, both head
/// dimensions, causal and not, f16 at p = 0.5 on 17 tokens.
#[test]
fn dropout_matches_float64() {
    let shape = |n_ctx, d, causal, p| Shape {
        batch: 1,
        hq: 2,
        hkv: 1,
        n_ctx,
        d,
        causal,
        dropout: Some(Dropout::new(p, -3).unwrap()),
    };
    for d in [64, 128] {
        for causal in [false, true] {
            let s = shape(130, d, causal, 0.1);
            for c in 0..forward_configs(&s) {
                check_config::<bf16>(s, Some(c));
            }
            for c in 0..backward_configs(&s) {
                check_backward_config::<bf16>(s, Some(c));
            }
        }
        let s = shape(17, d, true, 0.5);
        check::<f16>(s);
        check_backward::<f16>(s);
    }
}

/// The mask drops a share `p` of the values, and `p` outside `[0, 1)` is an error.
#[test]
fn dropout_drops_its_share() {
    let dr = Dropout::new(0.1, 42).unwrap();
    let n = 1000;
    let kept = (0..n * n)
        .filter(|&i| dr.keep(i % 3, i / n, i % n, n))
        .count();
    let rate = kept as f64 / (n * n) as f64;
    assert!((rate - 0.9).abs() < 0.002, "kept {rate}");
    // Another seed or another head draws another mask.
    let other = Dropout::new(0.1, 43).unwrap();
    let differ = |f: &dyn Fn(usize) -> bool| (0..4096).filter(|&i| f(i)).count();
    assert!(differ(&|i| dr.keep(0, 0, i, 4096) != other.keep(0, 0, i, 4096)) > 300);
    assert!(differ(&|i| dr.keep(0, 0, i, 4096) != dr.keep(1, 0, i, 4096)) > 300);
    for p in [1.0, -0.1, f64::NAN, 0.999995] {
        assert!(Dropout::new(p, 0).is_err(), "p = {p}");
    }
    assert_eq!(Dropout::new(0.0, 0).unwrap().p(), 0.0);
}

#[test]
fn every_backward_configuration_matches_float64() {
    for d in [64, 128] {
        for causal in [false, true] {
            let s = Shape {
                batch: 1,
                hq: 2,
                hkv: 1,
                n_ctx: 150,
                d,
                causal,
                dropout: None,
            };
            for c in 0..backward_configs(&s) {
                check_backward_config::<bf16>(s, Some(c));
            }
        }
    }
}

#[test]
fn an_unsupported_head_dimension_is_an_error() {
    let dev = Device::interpreter();
    let s = Shape {
        batch: 1,
        hq: 1,
        hkv: 1,
        n_ctx: 8,
        d: 32,
        causal: false,
        dropout: None,
    };
    let x = Inputs::<f16>::new(&s, 1);
    let (q, k, v) = (
        dev.upload(&x.q).unwrap(),
        dev.upload(&x.k).unwrap(),
        dev.upload(&x.v).unwrap(),
    );
    let mut o = dev.upload(&x.q).unwrap();
    let mut lse = dev.upload(&[0f32; 8]).unwrap();
    assert!(forward(&dev, &s, &q, &k, &v, &mut o, &mut lse).is_err());
}

/// The unfused form (scores, the softmax example's kernel, `P V`) against the same float64
/// reference as the fused kernel.
#[test]
fn unfused_matches_float64() {
    use tile_examples::flash_attention::attn::{unfused_forward, unfused_scratch_len};
    let dev = Device::interpreter();
    for (d, causal, hkv, n_ctx) in [(64, false, 2, 17), (128, true, 1, 70)] {
        let s = Shape {
            batch: 1,
            hq: 2,
            hkv,
            n_ctx,
            d,
            causal,
            dropout: None,
        };
        let x = Inputs::<f16>::new(&s, 5);
        let (q, k, v) = (
            dev.upload(&x.q).unwrap(),
            dev.upload(&x.k).unwrap(),
            dev.upload(&x.v).unwrap(),
        );
        let mut o = dev.upload(&vec![f16::NAN; s.q_len()]).unwrap();
        let mut sc = dev.zeros::<f32>(unfused_scratch_len(&s)).unwrap();
        let mut pr = dev.zeros::<f32>(unfused_scratch_len(&s)).unwrap();
        unfused_forward(&dev, &s, &q, &k, &v, &mut o, &mut sc, &mut pr).unwrap();
        // `errors` also compares a log-sum-exp, which the unfused form does not write: give it
        // the reference's own, so only the output is judged.
        let lse: Vec<f32> = (0..s.batch * s.hq * s.n_ctx)
            .map(|i| {
                let (b, h, r) = (i / (s.hq * s.n_ctx), (i / s.n_ctx) % s.hq, i % s.n_ctx);
                tile_examples::flash_attention::attn::reference_row(&s, &x, b, h, r).1 as f32
            })
            .collect();
        let (e, _) = errors(&s, &x, &dev.download(&o).unwrap(), &lse);
        assert!(e <= f16::TOL, "{} unfused: {e:e}", s.label());
    }
}

/// One decoding step on the interpreter: every query head of every sequence against float64.
fn check_decode<T: Half>(s: &tile_examples::flash_attention::decode::DecodeShape) {
    use tile_examples::flash_attention::decode::{
        decode, decode_errors, DecodeBuffers, DecodeInputs,
    };
    let dev = Device::interpreter();
    let x = DecodeInputs::<T>::new(s, 5);
    let mut bufs = DecodeBuffers::new(&dev, s, &x).unwrap();
    decode(&dev, s, &mut bufs).unwrap();
    let seqs: Vec<usize> = (0..s.batch()).collect();
    let (o, lse) = (
        dev.download(&bufs.o).unwrap(),
        dev.download(&bufs.lse).unwrap(),
    );
    let (e, el) = decode_errors(s, &x, &o, &lse, &seqs);
    assert!(e <= T::TOL, "{s:?} {}: output error {e:e}", T::NAME);
    assert!(el <= 1e-5, "{s:?} {}: lse error {el:e}", T::NAME);
}

#[test]
fn paged_decode_matches_float64() {
    use tile_examples::flash_attention::decode::DecodeShape;
    let dec = |hq, hkv, d, lens: &[usize]| DecodeShape {
        hq,
        hkv,
        d,
        lens: lens.to_vec(),
    };
    // Sequences of one token, of a partial page and of two splits (the short ones' second
    // split empty); 4:1, 32:1 (two blocks of 16 query rows) and 1:1 heads.
    let shapes = [
        dec(8, 2, 64, &[1, 17, 300]),
        dec(32, 1, 128, &[40, 5]),
        dec(4, 4, 128, &[130, 1, 64]),
    ];
    assert_eq!(shapes[0].splits(), (2, 256));
    check_decode::<f16>(&shapes[0]);
    check_decode::<bf16>(&shapes[0]);
    check_decode::<bf16>(&shapes[1]);
    check_decode::<f16>(&shapes[2]);
}

#[test]
fn paged_decode_refuses_what_it_cannot_run() {
    use tile_examples::flash_attention::decode::{
        decode, DecodeBuffers, DecodeInputs, DecodeShape,
    };
    let dev = Device::interpreter();
    for (hq, hkv, d, lens) in [
        (8, 3, 64, vec![4]),
        (8, 2, 96, vec![4]),
        (8, 2, 64, vec![4, 0]),
    ] {
        let s = DecodeShape { hq, hkv, d, lens };
        let x = DecodeInputs::<f16>::new(&s, 1);
        let mut bufs = DecodeBuffers::new(&dev, &s, &x).unwrap();
        assert!(decode(&dev, &s, &mut bufs).is_err(), "{s:?}");
    }
}

#[test]
fn varlen_lengths_are_attention_py_s() {
    use tile_examples::flash_attention::varlen::varlen_lengths;
    // bench/python/attention.py's `varlen_lengths(64, 4096, 12345)` (its full run) and
    // `varlen_lengths(8, 256, 12345)` (its small case), computed by that function.
    let big = varlen_lengths(64, 4096, 12345);
    assert_eq!(big[..4], [417, 2286, 542, 715]);
    assert_eq!(big.iter().sum::<usize>(), 141_380);
    assert_eq!(
        varlen_lengths(8, 256, 12345),
        [161, 238, 30, 203, 236, 47, 67, 29]
    );
}

#[test]
fn varlen_matches_float64() {
    use tile_examples::flash_attention::varlen::{
        varlen_errors, varlen_forward, VarlenInputs, VarlenShape,
    };
    let dev = Device::interpreter();
    for (hq, hkv, d, lens, causal) in [
        (4, 2, 64, vec![1, 17, 130, 5], false),
        (4, 2, 64, vec![1, 17, 130, 5], true),
        (2, 2, 128, vec![40, 1], true),
    ] {
        let s = VarlenShape {
            hq,
            hkv,
            d,
            lens,
            causal,
        };
        let x = VarlenInputs::<bf16>::new(&s, 2);
        let up = |v: &Vec<bf16>| dev.upload(v).unwrap();
        let (q, k, v) = (up(&x.q), up(&x.k), up(&x.v));
        let cu = dev.upload(&s.cu_seqlens()).unwrap();
        let mut o = dev.upload(&vec![bf16::NAN; x.q.len()]).unwrap();
        let mut lse = dev.upload(&vec![f32::NAN; s.hq * s.total()]).unwrap();
        varlen_forward(&dev, &s, [&q, &k, &v], &cu, &mut o, &mut lse).unwrap();
        let (e, el) = varlen_errors(
            &s,
            &x,
            &dev.download(&o).unwrap(),
            &dev.download(&lse).unwrap(),
        );
        assert!(e <= bf16::TOL && el <= 1e-5, "{s:?}: {e:e} {el:e}");
    }
    let s = VarlenShape {
        hq: 2,
        hkv: 2,
        d: 64,
        lens: vec![3, 0],
        causal: false,
    };
    assert!(s.check().is_err());
}

/// One modified forward on the interpreter: every row against float64.
fn check_mod<T: Half>(m: &tile_examples::flash_attention::mods::ModShape) {
    use tile_examples::flash_attention::mods::{mod_errors, mod_forward, ModInputs};
    let dev = Device::interpreter();
    let x = ModInputs::<T>::new(m, 3);
    let up = |v: &Vec<T>| dev.upload(v).unwrap();
    let (q, k, v) = (up(&x.x.q), up(&x.x.k), up(&x.x.v));
    let slopes = dev.upload(&x.slopes).unwrap();
    let bias = up(if x.bias.is_empty() { &x.x.q } else { &x.bias });
    let s = &m.shape;
    let mut o = up(&vec![T::from_f32(f32::NAN); s.q_len()]);
    let mut lse = dev
        .upload(&vec![f32::NAN; s.batch * s.hq * s.n_ctx])
        .unwrap();
    mod_forward(&dev, m, [&q, &k, &v], &slopes, &bias, &mut o, &mut lse).unwrap();
    let (e, el) = mod_errors(
        m,
        &x,
        &dev.download(&o).unwrap(),
        &dev.download(&lse).unwrap(),
    );
    assert!(
        e <= T::TOL,
        "{} {s:?} {}: output error {e:e}",
        m.variant(),
        T::NAME
    );
    assert!(
        el <= 1e-5,
        "{} {s:?} {}: lse error {el:e}",
        m.variant(),
        T::NAME
    );
}

#[test]
fn score_modifiers_match_float64() {
    use tile_examples::flash_attention::mods::{ModShape, Rule};
    let sh = |hkv, n| Shape {
        batch: 1,
        hq: 4,
        hkv,
        n_ctx: n,
        d: 128,
        causal: false,
        dropout: None,
    };
    let m = |shape, window, rule| ModShape {
        shape,
        window,
        rule,
    };
    // 130 tokens: two blocks of queries; the windows give masked blocks before the unmasked
    // ones (a row that has seen no key after the first block), after them, or both; a window
    // narrower than a block; causal as `(-1, 0)`.
    for w in [Some((5, 0)), Some((-1, 0)), Some((0, -1)), Some((64, 7))] {
        check_mod::<bf16>(&m(sh(4, 130), w, Rule::None));
    }
    check_mod::<bf16>(&m(sh(1, 130), None, Rule::Alibi));
    check_mod::<f16>(&m(sh(4, 17), Some((3, 2)), Rule::Softcap(0.5)));
    check_mod::<bf16>(&m(sh(4, 130), None, Rule::Softcap(20.0)));
    check_mod::<bf16>(&m(sh(1, 130), Some((64, 7)), Rule::Bias));
    check_mod::<f16>(&m(sh(4, 1), None, Rule::Bias));
}

#[test]
fn score_modifiers_refuse_what_they_cannot_run() {
    use tile_examples::flash_attention::mods::{mod_forward, ModInputs, ModShape, Rule};
    let dev = Device::interpreter();
    let base = Shape {
        batch: 1,
        hq: 2,
        hkv: 2,
        n_ctx: 8,
        d: 128,
        causal: false,
        dropout: None,
    };
    let cases = [
        (Shape { d: 64, ..base }, Rule::None),
        (
            Shape {
                causal: true,
                dropout: None,
                ..base
            },
            Rule::None,
        ),
        (
            Shape {
                hkv: 3,
                hq: 4,
                ..base
            },
            Rule::Alibi,
        ),
        (base, Rule::Softcap(0.0)),
        (base, Rule::Softcap(f32::NAN)),
    ];
    for (shape, rule) in cases {
        let m = ModShape {
            shape,
            window: None,
            rule,
        };
        let x = ModInputs::<bf16>::new(&m, 1);
        let up = |v: &Vec<bf16>| dev.upload(v).unwrap();
        let (q, k, v) = (up(&x.x.q), up(&x.x.k), up(&x.x.v));
        let slopes = dev.upload(&x.slopes).unwrap();
        let mut o = up(&x.x.q);
        let mut lse = dev.zeros::<f32>(64).unwrap();
        assert!(
            mod_forward(&dev, &m, [&q, &k, &v], &slopes, &q, &mut o, &mut lse).is_err(),
            "{m:?}"
        );
    }
    // A bias of fewer than n_ctx × bias_stride(n_ctx) values: a few, or n_ctx² (rows not
    // padded to the key block, which the kernel would read past).
    let m = ModShape {
        shape: base,
        window: None,
        rule: Rule::Bias,
    };
    let x = ModInputs::<bf16>::new(&m, 1);
    let up = |v: &[bf16]| dev.upload(v).unwrap();
    let (q, k, v) = (up(&x.x.q), up(&x.x.k), up(&x.x.v));
    let slopes = dev.upload(&x.slopes).unwrap();
    let (mut o, mut lse) = (up(&x.x.q), dev.zeros::<f32>(16).unwrap());
    for len in [10, 64] {
        let short = up(&x.bias[..len]);
        assert!(mod_forward(&dev, &m, [&q, &k, &v], &slopes, &short, &mut o, &mut lse).is_err());
    }
    let whole = up(&x.bias);
    assert!(mod_forward(&dev, &m, [&q, &k, &v], &slopes, &whole, &mut o, &mut lse).is_ok());
}
