//! Triton's tutorial 06, fused attention (FlashAttention-2), the forward pass as the tutorial's
//! Hopper path writes it: one program per block of `BLOCK_M` queries of one head, `Q`, `K`, `V`
//! and `O` seen through tensor descriptors over `[Z · H · N_CTX, HEAD_DIM]`, and the online
//! softmax in base 2 in `_attn_fwd_inner`, which the causal kernel calls twice (the key blocks
//! left of the diagonal unmasked, then the diagonal block masked). `M` receives each query row's
//! base-2 log-sum-exp, as the tutorial's backward reads it.
//!
//! Changed constructs (README.md has the table):
//! - The tutorial builds the descriptors on the host (`TensorDescriptor`, block shapes set by
//!   the autotuner's pre-hook) and passes them as arguments; tile builds them in the kernel
//!   (`make_tensor_descriptor`, Triton's in-kernel spelling), from the base pointers.
//! - `_attn_fwd_inner` (a `@triton.jit` helper returning `acc, l_i, m_i`) is a tile function
//!   (`#[tile_fn]`) returning the tuple. `tl.multiple_of(start_n, BLOCK_N)` is left out: the
//!   loop's start and step already tell the compiler.
//! - The autotuner's list cut to two of its configurations: `BLOCK_M = 128`, `BLOCK_N = 64`, 8
//!   warps, 3 stages, and `64 × 64` on 4 warps with 2 stages (Triton's usual pick on Hopper);
//!   `HEAD_DIM` 64 or 128; f16 and bf16 (the tutorial casts `P` and the output to
//!   float16; here to the input type, as the benchmark's Triton baseline does); no FP8 and no
//!   warp specialization. Like the tutorial, the kernel takes whole blocks only: `N_CTX` a
//!   multiple of 128 (the host function returns an `Err` otherwise).

use tile::prelude::*;

use crate::check::{compare, err, Rng};

/// The tutorial's `BLOCK_M`, which `N_CTX` must be a multiple of.
pub const BLOCK_M: usize = 128;

#[tile_fn]
/// One pass of the online softmax over a range of key blocks. `STAGE` 1: the blocks left of the
/// diagonal block (causal, unmasked); 2: the diagonal block (causal, masked); 3: every block.
fn _attn_fwd_inner(
    acc: Tile,
    l_i: Tile,
    m_i: Tile,
    q: Tile,
    desc_k: Tile,
    desc_v: Tile,
    offset_y: i32,
    dtype: Type,
    start_m: i32,
    qk_scale: f32,
    BLOCK_M: Const,
    HEAD_DIM: Const,
    BLOCK_N: Const,
    STAGE: Const,
    offs_m: Tile,
    offs_n: Tile,
    N_CTX: i32,
) -> (Tile, Tile, Tile) {
    let mut acc = acc;
    let mut l_i = l_i;
    let mut m_i = m_i;
    // range of values handled by this stage
    let mut lo = 0;
    let mut hi = N_CTX;
    if STAGE == 1 {
        hi = start_m * BLOCK_M;
    } else if STAGE == 2 {
        lo = start_m * BLOCK_M;
        hi = (start_m + 1) * BLOCK_M;
    }
    let mut offsetk_y = offset_y + lo;
    let mut offsetv_y = offset_y + lo;
    // loop over k, v and update accumulator
    for start_n in (lo..hi).step_by(BLOCK_N) {
        // -- compute qk ----
        let k = desc_k.load([offsetk_y, 0]).trans();
        let mut qk = dot(q, k);
        // triton: `m_ij` is bound in both branches; tile binds a name before assigning it
        let mut m_ij = m_i;
        if STAGE == 2 {
            let mask = offs_m.expand_dims(1) >= (start_n + offs_n.expand_dims(0));
            qk = qk * qk_scale + select(mask, 0.0, -1.0e6);
            m_ij = max(m_i, qk.max(1));
            qk = qk - m_ij.expand_dims(1);
        } else {
            m_ij = max(m_i, qk.max(1) * qk_scale);
            qk = qk * qk_scale - m_ij.expand_dims(1);
        }
        let p = exp2(qk);
        // -- compute correction factor
        let alpha = exp2(m_i - m_ij);
        let l_ij = p.sum(1);
        // -- update output accumulator --
        acc = acc * alpha.expand_dims(1);
        // prepare p and v for the dot
        let v = desc_v.load([offsetv_y, 0]);
        let p = p as dtype; // triton: p = p.to(dtype)
                            // note that this non transposed v for FP8 is only supported on Blackwell
        acc = dot(p, v, acc);
        // update m_i and l_i
        // place this at the end of the loop to reduce register pressure
        l_i = l_i * alpha + l_ij;
        m_i = m_ij;
        offsetk_y += BLOCK_N;
        offsetv_y += BLOCK_N;
    }
    (acc, l_i, m_i)
}

#[tile_kernel(
    specialize = aligned,
    math = fast,
    autotune(
        configs = [
            { BLOCK_M = 128, BLOCK_N = 64, num_stages = 3, num_warps = 8 },
            { BLOCK_M = 64, BLOCK_N = 64, num_stages = 2, num_warps = 4 },
        ],
        key = [N_CTX],
    )
)]
/// The attention forward of query block `program_id(0)` of head `program_id(1)` (`Z · H`
/// programs along axis 1): `Out = softmax(Q Kᵀ · sm_scale) V` over the keys (`STAGE = 3`:
/// causal, a query sees the keys up to its own; 1: all), and `M` the base-2 log-sum-exp of each
/// query row's scaled scores. `Q`, `K`, `V`, `Out`: `[Z, H, N_CTX, HEAD_DIM]`, contiguous.
#[allow(clippy::too_many_arguments)]
pub fn _attn_fwd(
    sm_scale: f32,
    M: Ptr<f32>,
    Z: i32,
    H: i32,
    Q: Ptr<T>,   // triton: desc_q
    K: Ptr<T>,   // triton: desc_k
    V: Ptr<T>,   // triton: desc_v
    Out: Ptr<T>, // triton: desc_o
    N_CTX: i32,
    HEAD_DIM: Const<{ [64, 128] }>,
    BLOCK_M: Const,
    BLOCK_N: Const,
    STAGE: Const<{ [1, 3] }>,
    T: Type<{ [f16, bf16] }>, // triton: dtype, from FP8_OUTPUT (f16 here, or bf16)
) {
    // triton: tl.static_assert(BLOCK_N <= HEAD_DIM)
    let start_m = program_id(0);
    let off_hz = program_id(1);
    let off_z = off_hz / H;
    let off_h = off_hz % H;

    let y_dim = Z * H * N_CTX;
    let desc_q = make_tensor_descriptor(Q, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM]);
    let desc_v = make_tensor_descriptor(V, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM]);
    let desc_k = make_tensor_descriptor(K, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM]);
    let desc_o = make_tensor_descriptor(Out, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM]);

    let offset_y = off_z * (N_CTX * H) + off_h * N_CTX;
    let qo_offset_y = offset_y + start_m * BLOCK_M;
    // initialize offsets
    let offs_m = start_m * BLOCK_M + arange(0, BLOCK_M);
    let offs_n = arange(0, BLOCK_N);
    // initialize pointer to m and l
    let mut m_i = zeros([BLOCK_M]) - f32::INFINITY;
    let mut l_i = zeros([BLOCK_M]) + 1.0;
    let mut acc = zeros([BLOCK_M, HEAD_DIM]);
    // load scales
    let mut qk_scale = sm_scale;
    qk_scale *= 1.44269504; // 1/log(2)
                            // load q: it will stay in SRAM throughout
    let q = desc_q.load([qo_offset_y, 0]);
    // stage 1: off-band
    // For causal = True, STAGE = 3 and _attn_fwd_inner gets 1 as its STAGE
    // For causal = False, STAGE = 1, and _attn_fwd_inner gets 3 as its STAGE
    if (STAGE & 1) != 0 {
        (acc, l_i, m_i) = _attn_fwd_inner(
            acc,
            l_i,
            m_i,
            q,
            desc_k,
            desc_v,
            offset_y,
            T,
            start_m,
            qk_scale,
            BLOCK_M,
            HEAD_DIM,
            BLOCK_N,
            4 - STAGE,
            offs_m,
            offs_n,
            N_CTX,
        );
    }
    // stage 2: on-band
    if (STAGE & 2) != 0 {
        (acc, l_i, m_i) = _attn_fwd_inner(
            acc, l_i, m_i, q, desc_k, desc_v, offset_y, T, start_m, qk_scale, BLOCK_M, HEAD_DIM,
            BLOCK_N, 2, offs_m, offs_n, N_CTX,
        );
    }
    // epilogue
    m_i += log2(l_i);
    acc = acc / l_i.expand_dims(1);
    let m_ptrs = M + off_hz * N_CTX + offs_m;
    store(m_ptrs, m_i);
    desc_o.store([qo_offset_y, 0], acc as T);
}

/// The tutorial's `_attention.forward` for `[z, h, n_ctx, head_dim]` contiguous `q`, `k`, `v`
/// into `o` (same shape) and `m` (`z · h · n_ctx` base-2 log-sum-exps), on the configuration
/// the tuner picks: an `Err` unless `head_dim` is 64 or 128 and `n_ctx` a multiple of
/// [`BLOCK_M`] (the tutorial's whole blocks).
#[allow(clippy::too_many_arguments)]
pub fn forward_into<T: tile::Element>(
    dev: &Device,
    q: &Buffer<T>,
    k: &Buffer<T>,
    v: &Buffer<T>,
    shape: (usize, usize, usize, usize),
    causal: bool,
    sm_scale: f32,
    o: &mut Buffer<T>,
    m: &mut Buffer<f32>,
) -> Result<(), Error> {
    forward_config_into(dev, None, q, k, v, shape, causal, sm_scale, o, m)
}

/// [`forward_into`] on configuration `config` of [`_attn_fwd::CONFIGS`] (`None`: the tuner's
/// pick).
#[allow(clippy::too_many_arguments)]
pub fn forward_config_into<T: tile::Element>(
    dev: &Device,
    config: Option<usize>,
    q: &Buffer<T>,
    k: &Buffer<T>,
    v: &Buffer<T>,
    (z, h, n_ctx, head_dim): (usize, usize, usize, usize),
    causal: bool,
    sm_scale: f32,
    o: &mut Buffer<T>,
    m: &mut Buffer<f32>,
) -> Result<(), Error> {
    if n_ctx % BLOCK_M != 0 || n_ctx == 0 {
        return Err(Error::NoVariant {
            kernel: "_attn_fwd",
            msg: format!(
                "the tutorial's attention takes whole blocks: N_CTX {n_ctx} is not a positive \
                 multiple of {BLOCK_M}"
            ),
        });
    }
    let stage = if causal { 3 } else { 1 };
    let grid =
        |c: &_attn_fwd::Config| Grid::xy((n_ctx / c.BLOCK_M as usize) as u32, (z * h) as u32);
    let (zi, hi, ni, di) = (z as i32, h as i32, n_ctx as i32, head_dim as i32);
    match config {
        None => _attn_fwd::launch(dev, grid, sm_scale, m, zi, hi, q, k, v, o, ni, di, stage),
        Some(i) => {
            let Some(c) = _attn_fwd::CONFIGS.get(i) else {
                return Err(Error::NoVariant {
                    kernel: "_attn_fwd",
                    msg: format!("no configuration {i}"),
                });
            };
            let g = grid(c);
            _attn_fwd::launch_config(dev, i, g, sm_scale, m, zi, hi, q, k, v, o, ni, di, stage)
        }
    }
}

/// Query row `i` of head `bh` (of `z · h`) of attention in f64: the output row and the base-2
/// log-sum-exp of the row's scaled scores (rows of `q`, `k`, `v`: `[z · h · n_ctx, d]`).
#[allow(clippy::too_many_arguments)]
pub fn reference_row(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    (n_ctx, d): (usize, usize),
    causal: bool,
    sm_scale: f64,
    bh: usize,
    i: usize,
) -> (Vec<f64>, f64) {
    let base = bh * n_ctx;
    let keys = if causal { i + 1 } else { n_ctx };
    let qi = &q[(base + i) * d..(base + i + 1) * d];
    let s: Vec<f64> = (0..keys)
        .map(|j| {
            let kj = &k[(base + j) * d..(base + j + 1) * d];
            qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>() * sm_scale
        })
        .collect();
    let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
    let sum: f64 = e.iter().sum();
    let mut o = vec![0.0; d];
    for (j, p) in e.iter().enumerate() {
        for (c, oc) in o.iter_mut().enumerate() {
            *oc += p / sum * v[(base + j) * d + c];
        }
    }
    (o, (mx + sum.ln()) / std::f64::consts::LN_2)
}

/// Runs [`_attn_fwd`] (configuration `config`, or the tuner's pick) on standard normal `q`, `k`, `v` (the tutorial's `torch.randn`, scaled by
/// 0.5) of `T`, `sm_scale = 0.5` as in the tutorial's test, against [`reference_row`] on the
/// same rounded inputs. Tolerance: `P` is rounded to the input type before the second product
/// (2⁻¹¹ relative for f16, 2⁻⁸ for bf16 on each probability), the output once more; the scores
/// are f32 products of exact 16-bit values; so each output element is within `4 · u · max|v|`
/// of the exact one, `u` the input type's unit roundoff, and `m` within `1e-4` (f32 sums and
/// `log2`).
pub fn run_check<T: tile::Element + Copy + Into<f64>>(
    dev: &Device,
    config: Option<usize>,
    shape: (usize, usize, usize, usize),
    causal: bool,
    seed: u64,
    from_f32: impl Fn(f32) -> T,
    unit: f64,
) -> Result<(), String> {
    let (z, h, n, d) = shape;
    let mut r = Rng::new(seed);
    let len = z * h * n * d;
    let q = r.vec(len, |r| from_f32(0.5 * r.normal()));
    let k = r.vec(len, |r| from_f32(0.5 * r.normal()));
    let v = r.vec(len, |r| from_f32(0.5 * r.normal()));
    let up = |x: &[T]| dev.upload(x).map_err(err);
    let (dq, dk, dv) = (up(&q)?, up(&k)?, up(&v)?);
    let mut o = dev.zeros::<T>(len).map_err(err)?;
    let mut m = dev.zeros::<f32>(z * h * n).map_err(err)?;
    forward_config_into(
        dev, config, &dq, &dk, &dv, shape, causal, 0.5, &mut o, &mut m,
    )
    .map_err(err)?;
    let f = |x: &[T]| -> Vec<f64> { x.iter().map(|&e| e.into()).collect() };
    let (fq, fk, fv) = (f(&q), f(&k), f(&v));
    let (mut want_o, mut want_m) = (Vec::with_capacity(len), Vec::with_capacity(z * h * n));
    for bh in 0..z * h {
        for i in 0..n {
            let (o, m) = reference_row(&fq, &fk, &fv, (n, d), causal, 0.5, bh, i);
            want_o.extend(o);
            want_m.push(m);
        }
    }
    let got_o: Vec<f64> = f(&dev.download(&o).map_err(err)?);
    let got_m: Vec<f64> = dev
        .download(&m)
        .map_err(err)?
        .into_iter()
        .map(f64::from)
        .collect();
    let vmax = fv.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    let what = format!("attention {shape:?}, causal {causal}");
    compare(&format!("{what}: out"), &got_o, &want_o, |_| {
        4.0 * unit * vmax
    })?;
    compare(&format!("{what}: M"), &got_m, &want_m, |i| {
        1e-4 * (1.0 + want_m[i].abs())
    })
}

/// Every kernel of this tutorial.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    _attn_fwd::KERNELS.to_vec()
}
