//! FlashAttention forward (FlashAttention-2's algorithm, as Triton's fused-attention tutorial
//! writes it): `O = softmax(Q Kᵀ · scale [+ causal mask]) V` for every (batch, head), one program
//! per block of `BM` query rows, looping over blocks of `BN` keys with an online softmax, so the
//! `S × S` scores never reach memory. It also writes each row's log-sum-exp `L` (natural log),
//! from which a backward pass recomputes the probabilities.
//!
//! Layout: `q`, `k`, `v` and `o` are `[batch, heads, seq, head_dim]` arrays addressed through
//! strides (batch, head, token; `head_dim` contiguous), so BHSD and BSHD are both usable. Grouped
//! query attention by index arithmetic: query head `h` reads key/value head `h / (hq / hkv)`
//! (`hkv = hq`: ordinary attention; `hkv = 1`: multi-query).
//!
//! Per iteration: `S = Q Kⱼᵀ` (f32 on tensor cores), the running maximum `m` and sum `l` updated
//! in base 2 with `log2(e)·scale` folded into one multiply, `P = exp2(S·c − m)`, the accumulator
//! rescaled by `exp2(m_old − m)`, and `acc += P Vⱼ` with `P` cast to the input type. With
//! `CAUSAL = 1` the key blocks stop at the diagonal: the blocks fully below it run without a
//! mask, the diagonal block with one (Triton's two stages); without it, the whole blocks run
//! without a mask and a ragged last block (a length that is not a multiple of `BN`) with one.

use tile::prelude::*;

#[tile_fn]
/// The key blocks `lo..hi` of one program: the online-softmax loop. `MASK = 0`: every key of
/// every block is in the sequence and seen by every query (no mask, no compare); `1`: the causal
/// mask (key ≤ query) and the sequence end; `2`: the sequence end only.
fn attn_blocks(
    acc: Tile,
    m_i: Tile,
    l_i: Tile,
    q: Tile,
    k_base: Tile,
    v_base: Tile,
    kv_stride_s: i32,
    offs_m: Tile,
    lo: i32,
    hi: i32,
    n_ctx: i32,
    qk_scale: f32,
    T: Type,
    HEAD_DIM: Const,
    BN: Const,
    MASK: Const,
) -> (Tile, Tile, Tile) {
    let offs_n = arange(0, BN);
    let offs_d = arange(0, HEAD_DIM);
    let mut acc = acc;
    let mut m_i = m_i;
    let mut l_i = l_i;
    for start_n in (lo..hi).step_by(BN) {
        let cols = start_n + offs_n;
        // The key and value blocks as stored (`BN × HEAD_DIM`, rows contiguous); the key block
        // transposed for the product: on sm_90a `wgmma` reads it from the ring as it was copied
        // (K-major).
        let kv = cols.expand_dims(1) * kv_stride_s + offs_d.expand_dims(0);
        let in_seq = cols.expand_dims(1) < n_ctx;
        let mut s = dot(q, load(k_base + kv, in_seq, 0.0).trans());
        if MASK == 1 {
            let seen =
                (cols.expand_dims(0) < n_ctx) & (offs_m.expand_dims(1) >= cols.expand_dims(0));
            s = select(seen, s, f32::NEG_INFINITY);
        }
        if MASK == 2 {
            s = select(cols.expand_dims(0) < n_ctx, s, f32::NEG_INFINITY);
        }
        // exp(s·scale − m) in base 2: the scale folded into one multiply-add per score.
        let m_new = max(m_i, s.max(1) * qk_scale);
        let p = (s * qk_scale - m_new.expand_dims(1)).exp2();
        let alpha = (m_i - m_new).exp2();
        l_i = l_i * alpha + p.sum(1);
        let vb = load(v_base + kv, in_seq, 0.0);
        acc = dot(p as T, vb, acc * alpha.expand_dims(1));
        m_i = m_new;
    }
    (acc, m_i, l_i)
}

#[tile_fn]
/// The forward pass of one program (see [`attn_fwd`]).
fn attn_forward(
    q: Tile,
    k: Tile,
    v: Tile,
    o: Tile,
    lse: Tile,
    sm_scale: f32,
    stride_b: i32,
    stride_h: i32,
    stride_s: i32,
    kv_stride_b: i32,
    kv_stride_h: i32,
    kv_stride_s: i32,
    hq: i32,
    hkv: i32,
    n_ctx: i32,
    T: Type,
    HEAD_DIM: Const,
    CAUSAL: Const,
    BM: Const,
    BN: Const,
) {
    let start_m = program_id(0);
    let bh = program_id(1);
    let (b, h) = (bh / hq, bh % hq);
    let h_kv = h / (hq / hkv);
    let q_off = b * stride_b + h * stride_h;
    let kv_off = b * kv_stride_b + h_kv * kv_stride_h;
    let offs_m = start_m * BM + arange(0, BM);
    let offs_d = arange(0, HEAD_DIM);
    let row_ok = offs_m.expand_dims(1) < n_ctx;
    let q_tile = load(
        q + q_off + offs_m.expand_dims(1) * stride_s + offs_d.expand_dims(0),
        row_ok,
        0.0,
    );
    let qk_scale = sm_scale * 1.4426950408889634; // log2(e)
    let mut acc = zeros([BM, HEAD_DIM]);
    let mut m_i = zeros([BM]) + f32::NEG_INFINITY;
    let mut l_i = zeros([BM]);
    let (k_base, v_base) = (k + kv_off, v + kv_off);
    // The blocks of keys that every query of the program sees and that lie wholly in the
    // sequence run without a mask: without the causal mask, every whole block; with it, those
    // below the diagonal. Then, masked: the diagonal block(s), or the ragged last block.
    let diag = start_m * BM;
    let whole = (n_ctx / BN) * BN;
    let unmasked_end = select(CAUSAL == 1, min(diag, whole), whole);
    let (a, m, l) = attn_blocks(
        acc,
        m_i,
        l_i,
        q_tile,
        k_base,
        v_base,
        kv_stride_s,
        offs_m,
        0,
        unmasked_end,
        n_ctx,
        qk_scale,
        T,
        HEAD_DIM,
        BN,
        0,
    );
    acc = a;
    m_i = m;
    l_i = l;
    if CAUSAL == 1 {
        let (a, m, l) = attn_blocks(
            acc,
            m_i,
            l_i,
            q_tile,
            k_base,
            v_base,
            kv_stride_s,
            offs_m,
            unmasked_end,
            min(diag + BM, n_ctx),
            n_ctx,
            qk_scale,
            T,
            HEAD_DIM,
            BN,
            1,
        );
        acc = a;
        m_i = m;
        l_i = l;
    } else {
        let (a, m, l) = attn_blocks(
            acc,
            m_i,
            l_i,
            q_tile,
            k_base,
            v_base,
            kv_stride_s,
            offs_m,
            whole,
            n_ctx,
            n_ctx,
            qk_scale,
            T,
            HEAD_DIM,
            BN,
            2,
        );
        acc = a;
        m_i = m;
        l_i = l;
    }
    let row = offs_m < n_ctx;
    // L = ln(Σ exp(s·scale)) = (m + log2(l)) · ln 2, in base-e units.
    store(
        lse + bh * n_ctx + offs_m,
        (m_i + l_i.log2()) * 0.6931471805599453, // ln(2)
        row,
    );
    store(
        o + q_off + offs_m.expand_dims(1) * stride_s + offs_d.expand_dims(0),
        (acc / l_i.expand_dims(1)) as T,
        row_ok,
    );
}

#[tile_kernel(num_warps = 8, num_stages = 3, specialize = aligned)]
/// The forward pass for `head_dim = 64`: program `(i, bh)` computes query rows
/// `i·BM .. (i+1)·BM` of batch `bh / hq`, head `bh % hq`. Launch `(cdiv(n_ctx, BM), batch · hq)`
/// programs ([`grid`]). `q`/`o` strides: `stride_b`, `stride_h`, `stride_s`; `k`/`v`:
/// `kv_stride_b`, `kv_stride_h`, `kv_stride_s` (elements; `head_dim` contiguous); `lse` is
/// `[batch · hq, n_ctx]`.
#[allow(clippy::too_many_arguments)]
pub fn attn_fwd(
    q: Ptr<T>,
    k: Ptr<T>,
    v: Ptr<T>,
    o: Ptr<T>,
    lse: Ptr<f32>,
    sm_scale: f32,
    stride_b: i32,
    stride_h: i32,
    stride_s: i32,
    kv_stride_b: i32,
    kv_stride_h: i32,
    kv_stride_s: i32,
    hq: i32,
    hkv: i32,
    n_ctx: i32,
    T: Type<{ [f16, bf16] }>,
    CAUSAL: Const<{ [0, 1] }>,
) {
    attn_forward(
        q,
        k,
        v,
        o,
        lse,
        sm_scale,
        stride_b,
        stride_h,
        stride_s,
        kv_stride_b,
        kv_stride_h,
        kv_stride_s,
        hq,
        hkv,
        n_ctx,
        T,
        64,
        CAUSAL,
        128,
        64,
    );
}

#[tile_kernel(num_warps = 8, num_stages = 3, specialize = aligned)]
/// [`attn_fwd`] for `head_dim = 128`, with key blocks of 32: on sm_80 every warp holds a whole
/// `K`/`V` block as `mma.sync` operands, and 64 keys of 128 components do not fit its registers.
#[allow(clippy::too_many_arguments)]
pub fn attn_fwd_d128(
    q: Ptr<T>,
    k: Ptr<T>,
    v: Ptr<T>,
    o: Ptr<T>,
    lse: Ptr<f32>,
    sm_scale: f32,
    stride_b: i32,
    stride_h: i32,
    stride_s: i32,
    kv_stride_b: i32,
    kv_stride_h: i32,
    kv_stride_s: i32,
    hq: i32,
    hkv: i32,
    n_ctx: i32,
    T: Type<{ [f16, bf16] }>,
    CAUSAL: Const<{ [0, 1] }>,
) {
    attn_forward(
        q,
        k,
        v,
        o,
        lse,
        sm_scale,
        stride_b,
        stride_h,
        stride_s,
        kv_stride_b,
        kv_stride_h,
        kv_stride_s,
        hq,
        hkv,
        n_ctx,
        T,
        128,
        CAUSAL,
        128,
        32,
    );
}

/// The forward's grid: `cdiv(n_ctx, 128)` row blocks by `batch · hq`.
pub fn grid(batch: usize, hq: usize, n_ctx: usize) -> Grid {
    Grid::xy(cdiv(n_ctx, 128), (batch * hq) as u32)
}

/// Every kernel of this example, each instance.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = attn_fwd::KERNELS.to_vec();
    v.extend(attn_fwd_d128::KERNELS);
    v
}
