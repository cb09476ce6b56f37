//! FlashAttention forward and backward against float64.
//!
//! `cargo run --release --example flash_attention [--quick] [--f16] [--dense | --decode | --varlen | --mods] [--every-config] [--small]` — on a GPU: awkward shapes
//! (sequence lengths 1, 17, 1000, 4097; causal and not; grouped-query heads 4:1 and 32:1)
//! checked on every or 64 sampled rows, forward and backward, then the shapes timed in
//! bf16 (and f16 with `--f16`; median of CUDA events after warm-up) in TFLOP/s, the forward as Triton's tutorial counts it (`4·B·H·S²·D`, halved
//! with the causal mask) and the backward as 2.5 times that (its count too). PyTorch's
//! `scaled_dot_product_attention` backends, FlexAttention and Triton's fused-attention tutorial
//! on the same shapes come from `bench/python/baseline.py`. Without a GPU: small shapes on the
//! interpreter. `--quick`: the awkward shapes only. Where `B·H·S²` is below 2³¹ (S ≤ 2048 at 128
//! heads: the fused_softmax example's kernel takes 32-bit offsets) the unfused form (the scores
//! and probabilities through memory: `Q Kᵀ`, that softmax, `P V`) is checked and timed beside the
//! fused kernel.
//!
//! Decoding (`decode.rs`): one query token per sequence against a paged cache, checked on
//! awkward lengths (1, 17, a partial page, 20000) and head groupings (4:1, 32:1, 1:1), then
//! timed at batch 64, 32 query heads on 8 key/value heads, D 128, 1k–32k tokens, as a rate on
//! the bytes it must read against the copy rate of the same run. Packed sequences of different
//! lengths (`varlen.rs`, one launch over `cu_seqlens`): checked on awkward batches (a one-token
//! sequence, grouped-query heads), then timed on `attention.py`'s 64 sequences of 1..4096
//! tokens. Score modifiers (`mods.rs`: a sliding window, ALiBi, the logit softcap, an additive
//! bias, each a tile function handed to the row loop): checked on awkward lengths and windows,
//! then timed on `attention.py`'s `[4, 32, 4096, 128]` bf16 rows in TFLOP/s on the (query, key)
//! pairs seen. `--dense`, `--decode`, `--varlen`, `--mods`: only that part
//! (`--dense`: the dense forward and backward). `--every-config`: the awkward shapes' backward
//! checked with each configuration of its autotuned kernels instead of the tuner's pick;
//! `--small`: only the interpreter's small awkward shapes (for the sanitizers).
//!
//! Tolerance: relative L2 error of the output against float64 within 4e-3 (f16) / 2e-2 (bf16),
//! one rounding of `P` to the input type and one of the output; the log-sum-exp within 1e-5.
//! The gradients `dQ`, `dK`, `dV` within the same 4e-3 / 2e-2 of the analytic float64 ones:
//! whole tensors where `B·H·S²·D ≤ 2³⁰`, else 64 rows of each, computed in float64 from the
//! inputs and the forward's checked `O` and `L`.

use std::process::ExitCode;

use half::{bf16, f16};
use tile::prelude::*;
use tile_examples::common::{self, print_table, time_ms, Half};
use tile_examples::flash_attention::attn::{
    backward_config, backward_configs, errors, forward, grad_errors_against, grad_tol,
    reference_grads, sampled_grad_errors, unfused_forward, unfused_scratch_len, Grads, Inputs,
    Shape,
};
use tile_examples::flash_attention::decode::{
    decode, decode_errors, DecodeBuffers, DecodeInputs, DecodeShape,
};
use tile_examples::flash_attention::mods::{mod_errors, mod_forward, ModInputs, ModShape, Rule};
use tile_examples::flash_attention::varlen::{
    varlen_errors, varlen_forward, varlen_lengths, VarlenInputs, VarlenShape,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Relative L2 tolerance of the log-sum-exp.
const LSE_TOL: f64 = 1e-5;

fn shape(batch: usize, hq: usize, hkv: usize, n_ctx: usize, d: usize, causal: bool) -> Shape {
    Shape {
        batch,
        hq,
        hkv,
        n_ctx,
        d,
        causal,
    }
}

/// Runs the forward and the backward of `s` once, checks them, and (when `reps > 0`) times
/// them: `(ok, forward ms, backward ms)`. With `every_config`, the backward is checked
/// with each configuration of its autotuned kernels instead of the tuner's pick (on a GPU the
/// tuner may pick any).
fn run_case<T: Half>(
    dev: &Device,
    s: &Shape,
    reps: usize,
    every_config: bool,
) -> Res<(bool, f64, f64)> {
    let x = Inputs::<T>::new(s, 1);
    let (q, k, v, d_o) = (
        dev.upload(&x.q)?,
        dev.upload(&x.k)?,
        dev.upload(&x.v)?,
        dev.upload(&x.d_o)?,
    );
    let nan = |n: usize| vec![T::from_f32(f32::NAN); n];
    let rows = s.batch * s.hq * s.n_ctx;
    let mut o = dev.upload(&nan(s.q_len()))?;
    let mut lse = dev.upload(&vec![f32::NAN; rows])?;
    forward(dev, s, &q, &k, &v, &mut o, &mut lse)?;
    let (got, got_lse) = (dev.download(&o)?, dev.download(&lse)?);
    let (e, el) = errors(s, &x, &got, &got_lse);
    let mut ok = e <= T::TOL && el <= LSE_TOL;
    println!(
        "check {} {}: output rel. L2 {e:.2e} (tolerance {:.0e}), lse {el:.2e} (tolerance {LSE_TOL:.0e}) -> {}",
        s.label(),
        T::NAME,
        T::TOL,
        if ok { "ok" } else { "FAILED" }
    );
    let (mut dq, mut dk, mut dv) = (
        dev.upload(&nan(s.q_len()))?,
        dev.upload(&nan(s.kv_len()))?,
        dev.upload(&nan(s.kv_len()))?,
    );
    let mut delta = dev.upload(&vec![f32::NAN; rows])?;
    let mut bwd = |dq: &mut Buffer<T>, dk: &mut Buffer<T>, dv: &mut Buffer<T>, c| {
        let g = Grads {
            o: &o,
            lse: &lse,
            d_o: &d_o,
            dq,
            dk,
            dv,
            delta: &mut delta,
        };
        backward_config(dev, s, &q, &k, &v, g, c)
    };
    let whole = s.batch * s.hq * s.n_ctx * s.n_ctx * s.d <= 1 << 30;
    // Each configuration, or the tuner's pick (one of them).
    let runs: Vec<Option<usize>> = if every_config {
        (0..backward_configs(s.d)).map(Some).collect()
    } else {
        vec![None]
    };
    let reference = whole.then(|| reference_grads(s, &x));
    for c in runs {
        let which = c.map_or("tuned".to_string(), |c| format!("config {c}"));
        match bwd(&mut dq, &mut dk, &mut dv, c) {
            Err(tile::Error::NoVariant { msg, .. }) if c.is_some() => {
                println!(
                    "check {} {} backward ({which}): not built for this target ({msg})",
                    s.label(),
                    T::NAME
                );
                continue;
            }
            r => r?,
        }
        let (gq, gk, gv) = (dev.download(&dq)?, dev.download(&dk)?, dev.download(&dv)?);
        let (eq, ek, ev) = if let Some(want) = &reference {
            grad_errors_against(want, &gq, &gk, &gv)
        } else {
            sampled_grad_errors(s, &x, &got, &got_lse, &gq, &gk, &gv)
        };
        let tol = grad_tol::<T>();
        let good = eq <= tol && ek <= tol && ev <= tol;
        ok &= good;
        println!(
            "check {} {} backward ({which}, {}): dq {eq:.2e}, dk {ek:.2e}, dv {ev:.2e} (tolerance {tol:.0e}) -> {}",
            s.label(),
            T::NAME,
            if whole { "every element" } else { "sampled rows" },
            if good { "ok" } else { "FAILED" }
        );
    }
    if reps == 0 {
        return Ok((ok, 0.0, 0.0));
    }
    let stream = dev.stream().ok_or("no stream")?.clone();
    let tb = time_ms(&stream, 5, reps, || bwd(&mut dq, &mut dk, &mut dv, None))?;
    let tf = time_ms(&stream, 5, reps, || {
        forward(dev, s, &q, &k, &v, &mut o, &mut lse)
    })?;
    Ok((ok, tf, tb))
}

/// The unfused form (scores and probabilities through memory) on `s`, checked against float64
/// (its output; the log-sum-exp is the fused kernel's, which the unfused form does not write)
/// and timed: `(ok, ms)`.
fn run_unfused<T: Half>(dev: &Device, s: &Shape, reps: usize) -> Res<(bool, f64)> {
    let x = Inputs::<T>::new(s, 1);
    let (q, k, v) = (dev.upload(&x.q)?, dev.upload(&x.k)?, dev.upload(&x.v)?);
    let mut o = dev.upload(&vec![T::from_f32(f32::NAN); s.q_len()])?;
    let mut lse = dev.upload(&vec![f32::NAN; s.batch * s.hq * s.n_ctx])?;
    forward(dev, s, &q, &k, &v, &mut o, &mut lse)?;
    let mut sc = dev.zeros::<f32>(unfused_scratch_len(s))?;
    let mut pr = dev.zeros::<f32>(unfused_scratch_len(s))?;
    unfused_forward(dev, s, &q, &k, &v, &mut o, &mut sc, &mut pr)?;
    let (e, _) = errors(s, &x, &dev.download(&o)?, &dev.download(&lse)?);
    let ok = e <= T::TOL;
    println!(
        "check {} {} unfused: output rel. L2 {e:.2e} (tolerance {:.0e}) -> {}",
        s.label(),
        T::NAME,
        T::TOL,
        if ok { "ok" } else { "FAILED" }
    );
    let stream = dev.stream().ok_or("no stream")?.clone();
    let t = time_ms(&stream, 2, reps, || {
        unfused_forward(dev, s, &q, &k, &v, &mut o, &mut sc, &mut pr)
    })?;
    Ok((ok, t))
}

/// Decoding against the paged cache: checks every query head of the first and the last sequence
/// (and of every sequence of a small batch) and, when `reps > 0`, times the step: `(ok, ms)`.
fn run_decode<T: Half>(dev: &Device, s: &DecodeShape, reps: usize) -> Res<(bool, f64)> {
    let x = DecodeInputs::<T>::new(s, 3);
    let mut bufs = DecodeBuffers::new(dev, s, &x)?;
    decode(dev, s, &mut bufs)?;
    let seqs: Vec<usize> = if s.batch() <= 8 {
        (0..s.batch()).collect()
    } else {
        vec![0, s.batch() - 1]
    };
    let (e, el) = decode_errors(
        s,
        &x,
        &dev.download(&bufs.o)?,
        &dev.download(&bufs.lse)?,
        &seqs,
    );
    let ok = e <= T::TOL && el <= LSE_TOL;
    let (splits, split_len) = s.splits();
    println!(
        "check decode {} {}: {splits} splits of {split_len}: output rel. L2 {e:.2e}, lse {el:.2e} -> {}",
        decode_label(s),
        T::NAME,
        if ok { "ok" } else { "FAILED" }
    );
    if reps == 0 {
        return Ok((ok, 0.0));
    }
    let stream = dev.stream().ok_or("no stream")?.clone();
    let t = time_ms(&stream, 5, reps, || decode(dev, s, &mut bufs))?;
    Ok((ok, t))
}

/// The packed variable-length forward on `s`: checked on [`varlen_rows`]'s rows and, when
/// `reps > 0`, timed: `(ok, ms)`.
///
/// [`varlen_rows`]: tile_examples::flash_attention::varlen::varlen_rows
fn run_varlen<T: Half>(dev: &Device, s: &VarlenShape, reps: usize) -> Res<(bool, f64)> {
    let x = VarlenInputs::<T>::new(s, 9);
    let (q, k, v) = (dev.upload(&x.q)?, dev.upload(&x.k)?, dev.upload(&x.v)?);
    let cu = dev.upload(&s.cu_seqlens())?;
    let mut o = dev.upload(&vec![T::from_f32(f32::NAN); x.q.len()])?;
    let mut lse = dev.upload(&vec![f32::NAN; s.hq * s.total()])?;
    varlen_forward(dev, s, [&q, &k, &v], &cu, &mut o, &mut lse)?;
    let (e, el) = varlen_errors(s, &x, &dev.download(&o)?, &dev.download(&lse)?);
    let ok = e <= T::TOL && el <= LSE_TOL;
    println!(
        "check varlen {} {}: output rel. L2 {e:.2e}, lse {el:.2e} -> {}",
        varlen_label(s),
        T::NAME,
        if ok { "ok" } else { "FAILED" }
    );
    if reps == 0 {
        return Ok((ok, 0.0));
    }
    let stream = dev.stream().ok_or("no stream")?.clone();
    let t = time_ms(&stream, 5, reps, || {
        varlen_forward(dev, s, [&q, &k, &v], &cu, &mut o, &mut lse)
    })?;
    Ok((ok, t))
}

/// Runs the modified forward `m` once, checks it, and (when `reps > 0`) times it: `(ok, ms)`.
fn run_mod<T: Half>(dev: &Device, m: &ModShape, reps: usize) -> Res<(bool, f64)> {
    let x = ModInputs::<T>::new(m, 5);
    let (q, k, v) = (
        dev.upload(&x.x.q)?,
        dev.upload(&x.x.k)?,
        dev.upload(&x.x.v)?,
    );
    let slopes = dev.upload(&x.slopes)?;
    // The bias buffer is read only by the bias rule; the others get a placeholder.
    let bias = dev.upload(if x.bias.is_empty() {
        &x.x.q[..1]
    } else {
        &x.bias
    })?;
    let s = &m.shape;
    let mut o = dev.upload(&vec![T::from_f32(f32::NAN); s.q_len()])?;
    let mut lse = dev.upload(&vec![f32::NAN; s.batch * s.hq * s.n_ctx])?;
    mod_forward(dev, m, [&q, &k, &v], &slopes, &bias, &mut o, &mut lse)?;
    let (e, el) = mod_errors(m, &x, &dev.download(&o)?, &dev.download(&lse)?);
    let ok = e <= T::TOL && el <= LSE_TOL;
    println!(
        "check {} {} {}: output rel. L2 {e:.2e}, lse {el:.2e} -> {}",
        m.variant(),
        s.label(),
        T::NAME,
        if ok { "ok" } else { "FAILED" }
    );
    if reps == 0 {
        return Ok((ok, 0.0));
    }
    let stream = dev.stream().ok_or("no stream")?.clone();
    let t = time_ms(&stream, 5, reps, || {
        mod_forward(dev, m, [&q, &k, &v], &slopes, &bias, &mut o, &mut lse)
    })?;
    Ok((ok, t))
}

/// Score modifiers on edges: windows narrower than a block, one-sided and open-ended, lengths
/// that are not multiples of the blocks, grouped-query heads, and every rule.
fn awkward_mods(gpu: bool) -> Vec<ModShape> {
    let mut v = Vec::new();
    let lens: &[usize] = if gpu {
        &[1, 17, 130, 1000, 4097]
    } else {
        &[1, 17, 130]
    };
    for (i, &n) in lens.iter().enumerate() {
        let sh = shape(1, 4, if i % 2 == 0 { 4 } else { 1 }, n, 128, false);
        for window in [
            None,
            Some((5, 0)),
            Some((100, 3)),
            Some((-1, 0)),
            Some((0, -1)),
        ] {
            v.push(ModShape {
                shape: sh,
                window,
                rule: Rule::None,
            });
        }
        for rule in [
            Rule::Alibi,
            Rule::Softcap(20.0),
            Rule::Softcap(0.5),
            Rule::Bias,
        ] {
            v.push(ModShape {
                shape: sh,
                window: None,
                rule,
            });
            v.push(ModShape {
                shape: sh,
                window: Some((64, 7)),
                rule,
            });
        }
    }
    v
}

/// The timed modifiers: `attention.py`'s `[4, 32, 4096, 128]` bf16 rows (window 1024 left, 0
/// right; ALiBi; softcap 20; bias).
fn timed_mods() -> Vec<ModShape> {
    let sh = shape(4, 32, 32, 4096, 128, false);
    let m = |window, rule| ModShape {
        shape: sh,
        window,
        rule,
    };
    vec![
        m(Some((1024, 0)), Rule::None),
        m(None, Rule::Alibi),
        m(None, Rule::Softcap(20.0)),
        m(None, Rule::Bias),
    ]
}

/// `n seqs ≤ longest, hq/hkv × d [causal]`, for tables.
fn varlen_label(s: &VarlenShape) -> String {
    format!(
        "{} seqs <= {}, {}/{}x{}{}",
        s.lens.len(),
        s.lens.iter().max().copied().unwrap_or(0),
        s.hq,
        s.hkv,
        s.d,
        if s.causal { " causal" } else { "" }
    )
}

/// Packed batches with edges: a one-token sequence, lengths that are not multiples of the
/// blocks, grouped-query heads.
fn awkward_varlen(gpu: bool) -> Vec<VarlenShape> {
    let mut v = Vec::new();
    for causal in [false, true] {
        v.push(VarlenShape {
            hq: 4,
            hkv: 2,
            d: 64,
            lens: vec![1, 17, 130, 5],
            causal,
        });
        v.push(VarlenShape {
            hq: 2,
            hkv: 2,
            d: 128,
            lens: vec![40, 1],
            causal,
        });
        if gpu {
            v.push(VarlenShape {
                hq: 8,
                hkv: 2,
                d: 128,
                lens: varlen_lengths(16, 1500, 7),
                causal,
            });
        }
    }
    v
}

/// `batch×hq/hkv×d ctx(longest)`, for tables.
fn decode_label(s: &DecodeShape) -> String {
    let longest = s.lens.iter().max().copied().unwrap_or(0);
    format!("{}x{}/{}x{} ctx {longest}", s.batch(), s.hq, s.hkv, s.d)
}

/// Decoding steps with edges: one token, a partial page, sequences of different lengths, one
/// key/value head for 32 query heads (two row blocks), as many key/value heads as query heads.
fn awkward_decode(gpu: bool) -> Vec<DecodeShape> {
    let dec = |hq, hkv, d, lens: &[usize]| DecodeShape {
        hq,
        hkv,
        d,
        lens: lens.to_vec(),
    };
    let mut v = vec![
        dec(8, 2, 64, &[1, 17, 300]),
        dec(32, 1, 128, &[40, 5]),
        dec(4, 4, 128, &[130, 1, 64]),
    ];
    if gpu {
        v.push(dec(32, 8, 128, &[1000, 4097, 1, 16, 17, 20000]));
        v.push(dec(32, 8, 64, &[8191; 3]));
    }
    v
}

/// Shapes whose edges the kernels must mask: lengths that are not multiples of the blocks, one
/// token, grouped-query heads.
fn awkward(gpu: bool) -> Vec<Shape> {
    let mut v = Vec::new();
    for d in [64, 128] {
        for causal in [false, true] {
            v.push(shape(1, 2, 2, 1, d, causal));
            v.push(shape(2, 2, 1, 17, d, causal));
            v.push(shape(1, 4, 1, 130, d, causal));
            if gpu {
                v.push(shape(2, 8, 2, 1000, d, causal));
                v.push(shape(1, 32, 1, 4097, d, causal));
            }
        }
    }
    v
}

/// The shapes, forward and backward: `B·H·S = 4·32·{1024, 4096, 16384}`, `D ∈ {64, 128}`, causal and
/// not.
fn timed() -> Vec<Shape> {
    let mut v = Vec::new();
    for d in [64, 128] {
        for causal in [false, true] {
            for n in [1024, 4096, 16384] {
                v.push(shape(4, 32, 32, n, d, causal));
            }
        }
    }
    v.push(shape(4, 32, 8, 4096, 128, false));
    v.push(shape(4, 32, 1, 4096, 128, false));
    v
}

fn run() -> Res<bool> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dev, no_gpu) = Device::best_available();
    if let Some(why) = &no_gpu {
        println!("No GPU ({why}). Running on the CPU interpreter instead (checks only).");
    }
    let gpu = no_gpu.is_none();
    // `--decode` / `--varlen`: only that part.
    let only = |p: &str| std::env::args().any(|a| a == p);
    let (dense_only, decode_only, varlen_only, mods_only) = (
        only("--dense"),
        only("--decode"),
        only("--varlen"),
        only("--mods"),
    );
    let one = dense_only || decode_only || varlen_only || mods_only;
    let every_config = only("--every-config");
    let (dense, decoding, varlen, mods) = (
        !one || dense_only,
        !one || decode_only,
        !one || varlen_only,
        !one || mods_only,
    );
    let mut ok = true;
    if dense {
        for s in awkward(gpu && !only("--small")) {
            ok &= run_case::<f16>(&dev, &s, 0, every_config)?.0;
            ok &= run_case::<bf16>(&dev, &s, 0, every_config)?.0;
        }
    }
    for s in awkward_decode(gpu).into_iter().filter(|_| decoding) {
        ok &= run_decode::<f16>(&dev, &s, 0)?.0;
        ok &= run_decode::<bf16>(&dev, &s, 0)?.0;
    }
    if varlen {
        for s in awkward_varlen(gpu) {
            ok &= run_varlen::<f16>(&dev, &s, 0)?.0;
            ok &= run_varlen::<bf16>(&dev, &s, 0)?.0;
        }
    }
    for m in awkward_mods(gpu).into_iter().filter(|_| mods) {
        ok &= run_mod::<bf16>(&dev, &m, 0)?.0;
    }
    if mods {
        // f16 through the same kernels, once per rule.
        for m in awkward_mods(gpu).into_iter().take(13) {
            ok &= run_mod::<f16>(&dev, &m, 0)?.0;
        }
    }
    if !gpu || quick {
        return Ok(ok);
    }
    // Score modifiers: attention.py's rows, TFLOP/s on the (query, key) pairs seen.
    let mut mrows = Vec::new();
    for m in timed_mods().into_iter().filter(|_| mods) {
        let (good, ms) = run_mod::<bf16>(&dev, &m, 20)?;
        ok &= good;
        mrows.push(vec![
            m.variant(),
            m.shape.label(),
            format!("{ms:.4}"),
            format!("{:.1}", m.flops() / ms / 1e9),
        ]);
    }
    if mods {
        print_table(&["modifier", "B x H x S x D", "ms", "TFLOP/s"], &mrows);
    }
    // Decoding: batch 64, 32 query heads on 8 key/value heads, D 128, pages of 16, bf16; the
    // rate on the bytes it must read against the device's copy rate in the same run.
    let copy = common::copy_bandwidth(dev.stream().ok_or("no stream")?, 1 << 30)?;
    let mut drows = Vec::new();
    for ctx in [1024, 4096, 8192, 16384, 32768]
        .into_iter()
        .filter(|_| decoding)
    {
        let s = DecodeShape {
            hq: 32,
            hkv: 8,
            d: 128,
            lens: vec![ctx; 64],
        };
        let (good, ms) = run_decode::<bf16>(&dev, &s, 20)?;
        ok &= good;
        let gbs = s.bytes(2) / (ms * 1e-3) / 1e9;
        drows.push(vec![
            decode_label(&s),
            format!("{ms:.4}"),
            format!("{gbs:.0}"),
            format!("{:.1}%", 100.0 * gbs / copy),
        ]);
    }
    if decoding {
        print_table(&["decode", "ms", "GB/s", "of copy"], &drows);
    }
    // Variable lengths: attention.py's batch (64 sequences of 1..4096 tokens, 32 heads, D 128),
    // against the dense kernel per FLOP.
    let mut vrows = Vec::new();
    for causal in [false, true].into_iter().filter(|_| varlen) {
        let s = VarlenShape {
            hq: 32,
            hkv: 32,
            d: 128,
            lens: varlen_lengths(64, 4096, 12345),
            causal,
        };
        let (good, ms) = run_varlen::<bf16>(&dev, &s, 20)?;
        ok &= good;
        vrows.push(vec![
            varlen_label(&s),
            s.total().to_string(),
            format!("{ms:.4}"),
            format!("{:.1}", s.flops() / ms / 1e9),
        ]);
    }
    if varlen {
        print_table(&["varlen", "tokens", "ms", "TFLOP/s"], &vrows);
    }
    if !dense {
        return Ok(ok);
    }
    let mut rows = Vec::new();
    // bf16 only unless `--f16` (the two run within a percent of each other), fewer samples for
    // the longest sequences: the whole table fits a few minutes.
    let dtypes: &[&str] = if std::env::args().any(|a| a == "--f16") {
        &["f16", "bf16"]
    } else {
        &["bf16"]
    };
    for s in timed() {
        for &dtype in dtypes {
            let reps = if s.n_ctx >= 16384 { 10 } else { 20 };
            let (good, ms, bwd_ms) = match dtype {
                "f16" => run_case::<f16>(&dev, &s, reps, false)?,
                _ => run_case::<bf16>(&dev, &s, reps, false)?,
            };
            ok &= good;
            println!(
                "time {} {dtype}: forward {ms:.3} ms ({:.1} TFLOP/s), backward {bwd_ms:.3} ms ({:.1} TFLOP/s)",
                s.label(),
                s.flops() / ms / 1e9,
                s.bwd_flops() / bwd_ms / 1e9
            );
            // The unfused form where its `B·H·S²` scores fit the softmax example's 32-bit
            // offsets (to S = 2048 at 128 heads; the softmax's launch refuses more).
            if unfused_scratch_len(&s) <= i32::MAX as usize && s.hkv == s.hq {
                let (good, un_ms) = match dtype {
                    "f16" => run_unfused::<f16>(&dev, &s, 5)?,
                    _ => run_unfused::<bf16>(&dev, &s, 5)?,
                };
                ok &= good;
                println!(
                    "time {} {dtype}: unfused forward {un_ms:.3} ms, {:.2}x the fused",
                    s.label(),
                    un_ms / ms
                );
            }
            rows.push(vec![
                s.label(),
                dtype.to_string(),
                format!("{ms:.3}"),
                format!("{:.1}", s.flops() / ms / 1e9),
                format!("{bwd_ms:.3}"),
                format!("{:.1}", s.bwd_flops() / bwd_ms / 1e9),
            ]);
        }
    }
    print_table(
        &[
            "B x H x S x D",
            "dtype",
            "fwd ms",
            "fwd TFLOP/s",
            "bwd ms",
            "bwd TFLOP/s",
        ],
        &rows,
    );
    print_tuning();
    Ok(ok)
}

/// What the backward's tuner chose for each shape it met, and each configuration's time.
fn print_tuning() {
    use tile_examples::flash_attention::kernels as k;
    let tuners = [
        &k::attn_bwd_dkdv::TUNER,
        &k::attn_bwd_dq::TUNER,
        &k::attn_bwd_dkdv_d128::TUNER,
        &k::attn_bwd_dq_d128::TUNER,
    ];
    for d in tuners.iter().flat_map(|t| t.decisions()) {
        let times: Vec<String> = d
            .times
            .iter()
            .map(|t| match t {
                tile::autotune::Timing::Ms(ms) => format!("{ms:.4}"),
                tile::autotune::Timing::NotTimed => "-".to_string(),
                tile::autotune::Timing::Failed(_) => "failed".to_string(),
            })
            .collect();
        println!(
            "tuned {} key {:?}: config {} ({}), ms by config [{}]",
            d.kernel,
            d.key,
            d.config,
            d.label,
            times.join(", ")
        );
    }
}

fn main() -> ExitCode {
    common::exit("flash_attention", run())
}
