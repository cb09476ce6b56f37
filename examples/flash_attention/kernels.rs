//! FlashAttention forward and backward (FlashAttention-2's algorithm, as Triton's
//! fused-attention tutorial writes it). The forward: `O = softmax(Q Kᵀ · scale [+ causal mask]) V`
//! for every (batch, head), one program per block of `BM` query rows, looping over blocks of
//! `BN` keys with an online softmax, so the `S × S` scores never reach memory. It also writes
//! each row's log-sum-exp `L` (natural log), from which the backward recomputes the
//! probabilities.
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
//!
//! The backward (FlashAttention-2's) recomputes `P = exp(S·scale − L)` from the saved `L` instead
//! of storing it, in three kernels: [`attn_bwd_preprocess`] (`Δ = rowsum(dO ∘ O)` per query
//! row), [`attn_bwd_dkdv`] (one program per block of keys, looping over the query blocks of
//! every query head that reads them: `dV += Pᵀ dO`, `dP = dO Vᵀ`, `dS = P ∘ (dP − Δ)`,
//! `dK += dSᵀ Q · scale`) and [`attn_bwd_dq`] (one program per block of queries, looping over
//! key blocks: `dQ += dS K · scale`). With the causal mask both loops start or stop at the
//! diagonal, its block masked and the others not. The `dK`/`dV` loop computes the transposed
//! products (`Sᵀ = K Qᵀ`, `dPᵀ = V dOᵀ`) so that the tiles it loads (`Q`, `dO`) are right-hand
//! operands the pipeline reads from its ring, and the computed `Pᵀ`, `dSᵀ` left-hand operands in
//! registers.

// The backward's autotuned kernels list configurations that only `wgmma` holds: the build
// leaves them out on sm_80 (and a few that spill on sm_90a) and says so with a `deprecated`
// warning per instance, which is expected here.
#![allow(deprecated)]

use tile::prelude::*;

#[tile_fn]
/// The key blocks `lo..hi` of one program: the online-softmax loop. `MASK = 0`: every key of
/// every block is in the sequence and seen by every query (no mask, no compare); `1`: the causal
/// mask (key ≤ query) and the sequence end; `2`: the sequence end only; `3`: the sliding window
/// (query − `left` ≤ key ≤ query + `right`) and the sequence end. `MOD = 1`: the scaled scores
/// go through `SCORE(s, b, h, q_idx, kv_idx, mod_ptr, mod_f, mod_i)` (FlexAttention's
/// `score_mod`, with what the rule reads passed in) before the mask; rows past the sequence's
/// end are given the last row's index.
fn attn_blocks(
    acc: Tile,
    m_i: Tile,
    l_i: Tile,
    q: Tile,
    k_base: Tile,
    v_base: Tile,
    kv_stride_s: i32,
    offs_m: Tile,
    row0: i32,
    lo: i32,
    hi: i32,
    n_ctx: i32,
    sm_scale: f32,
    b: i32,
    h: i32,
    left: i32,
    right: i32,
    mod_ptr: Tile,
    mod_f: f32,
    mod_i: i32,
    drop_key: i64,
    drop_thresh: i32,
    T: Type,
    HEAD_DIM: Const,
    BN: Const,
    BM: Const,
    MASK: Const,
    SCORE: Fn,
    MOD: Const,
    DROP: Const,
) -> (Tile, Tile, Tile) {
    let offs_n = arange(0, BN);
    let offs_d = arange(0, HEAD_DIM);
    let qk_scale = sm_scale * 1.4426950408889634; // log2(e)
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
        // `s` times `scale2` is the score in base-2 units: the raw product times `qk_scale`
        // (log2(e) folded into the scale), or the rule's score (`MOD = 1`, natural units) times
        // log2(e); either way one multiply-add per score below.
        let mut s = dot(q, load(k_base + kv, in_seq, 0.0).trans());
        let mut scale2 = qk_scale;
        if MOD == 1 {
            // Rows past the sequence's end (computed, never stored) take the last row's
            // index, so that a rule reading memory by query index stays in bounds.
            s = SCORE(
                s * sm_scale,
                b,
                h,
                min(offs_m, n_ctx - 1).expand_dims(1),
                cols.expand_dims(0),
                mod_ptr,
                mod_f,
                mod_i,
            );
            scale2 = 1.4426950408889634; // log2(e)
        }
        if MASK == 1 {
            let seen =
                (cols.expand_dims(0) < n_ctx) & (offs_m.expand_dims(1) >= cols.expand_dims(0));
            s = select(seen, s, f32::NEG_INFINITY);
        }
        if MASK == 2 {
            s = select(cols.expand_dims(0) < n_ctx, s, f32::NEG_INFINITY);
        }
        if MASK == 3 {
            let rel = offs_m.expand_dims(1) - cols.expand_dims(0);
            let seen = (cols.expand_dims(0) < n_ctx) & (rel <= left) & (0 - rel <= right);
            s = select(seen, s, f32::NEG_INFINITY);
        }
        let m_new = max(m_i, s.max(1) * scale2);
        // A row that has seen no key yet (a window that starts later, a rule that gave −∞)
        // keeps `m = −∞`; it is offset by 0 so that its probabilities are 0, not NaN.
        let mut m_off = m_new;
        if MASK == 3 || MOD == 1 {
            m_off = select(m_new == f32::NEG_INFINITY, 0.0, m_new);
        }
        let p = (s * scale2 - m_off.expand_dims(1)).exp2();
        let alpha = (m_i - m_off).exp2();
        l_i = l_i * alpha + p.sum(1);
        let vb = load(v_base + kv, in_seq, 0.0);
        // Dropout: the row sums count every probability (the softmax is taken before the
        // mask); only the product sees the dropped ones, and the epilogue scales by
        // `1 / (1 − p)`.
        let mut pv = p;
        if DROP == 1 {
            pv = select(
                dropout_keep(drop_key, row0, start_n, n_ctx, drop_thresh, BM, BN),
                p,
                0.0,
            );
        }
        acc = dot(pv as T, vb, acc * alpha.expand_dims(1));
        m_i = m_new;
    }
    (acc, m_i, l_i)
}

#[tile_fn]
/// The Philox key of the dropout mask of head `bh` (`batch · hq + head`): the seed in the low
/// word, the head in the high one (`seed as i64 + (bh << 32)`), so that every (seed, head) pair
/// draws its own stream.
pub fn dropout_key(seed: i32, bh: i32) -> i64 {
    seed as i64 + ((bh as i64) << 32)
}

#[tile_fn]
/// The dropout mask of one block of scores of a head: `true` where the probability of query
/// `row0 + r` and key `col0 + c` (`r < BR`, `c < BC`) is kept. One call of Philox-4x32-10
/// (`randint4x`, key [`dropout_key`]) gives four 32-bit words, each two 16-bit halves: eight
/// decisions, for queries `{R, R + 8}` × keys `{C, C + 1, C + 8, C + 9}` (`R` with bit 3 clear,
/// `C` with bits 0 and 3 clear): the key's bit 0 picks the half (low first), the key's bit 3
/// and the query's bit 3 the word (`key bit 3 + 2 · query bit 3`); the counter is
/// `R' · 4 · cdiv(n_ctx, 16) + C'` with `R' = (R / 16) · 8 + R % 8`, `C' = (C / 16) · 4 +
/// (C / 2) % 4`. A value is kept where its half is at least `thresh` (`p · 2¹⁶` rounded: a
/// probability `thresh / 2¹⁶` of being dropped). `row0`, `col0`, `BR` and `BC` are multiples of
/// 16.
///
/// Why this order: the eight values of one call are the eight a thread holds of a tensor-core
/// accumulator (a pair of keys, rows 8 apart, keys 8 apart), so the `interleave`s below (each
/// between views rotated by `reshape` and `trans` so that the pair is adjacent) move no data,
/// and each thread evaluates Philox once per eight of its values.
pub fn dropout_keep(
    key: i64,
    row0: i32,
    col0: i32,
    n_ctx: i32,
    thresh: i32,
    BR: Const,
    BC: Const,
) -> Tile {
    // The counters, one per (query pair, key quad): rows `i` hold the query block's bits 4..
    // then the key's bits 1..2; columns `j` the key's bits 4.. then the query's bits 0..2.
    let i = arange(0, BR / 4).expand_dims(1);
    let j = arange(0, BC / 2).expand_dims(0);
    let (r_hi, quad) = (i % (BR / 16), i / (BR / 16));
    let (c_hi, r_lo) = (j % (BC / 16), j / (BC / 16));
    let cnt =
        ((row0 / 16 + r_hi) * 8 + r_lo) * (cdiv(n_ctx, 16) * 4) + (col0 / 16 + c_hi) * 4 + quad;
    let (w0, w1) = (randint4x(key, cnt, 0), randint4x(key, cnt, 1));
    let (w2, w3) = (randint4x(key, cnt, 2), randint4x(key, cnt, 3));
    let lo = dropout_place(w0 & 65535, w1 & 65535, w2 & 65535, w3 & 65535, BR, BC);
    let hi = dropout_place(
        (w0 >> 16) & 65535,
        (w1 >> 16) & 65535,
        (w2 >> 16) & 65535,
        (w3 >> 16) & 65535,
        BR,
        BC,
    );
    interleave(lo >= thresh, hi >= thresh)
}

#[tile_fn]
/// [`dropout_keep`]'s placement of one half of the four words (`[BR / 4, BC / 2]` tiles of the
/// counters' layout) at the even (or odd) keys of the block: `[BR, BC / 2]`. Word `w` goes to
/// key bit 3 `= w % 2` (the first `interleave`, adjacent in the rotated view `[BR / 4, BC]`)
/// and query bit 3 `= w / 2` (the second, adjacent after `trans` and `reshape` rotate the
/// query's bit 3 to the lowest place).
fn dropout_place(w0: Tile, w1: Tile, w2: Tile, w3: Tile, BR: Const, BC: Const) -> Tile {
    let upper = interleave(w0, w1).trans().reshape([4 * BC, BR / 16]);
    let lower = interleave(w2, w3).trans().reshape([4 * BC, BR / 16]);
    interleave(upper, lower).trans().reshape([BR, BC / 2])
}

#[tile_fn]
/// The probability that [`dropout_keep`] keeps a value: `1 − thresh / 2¹⁶`.
pub fn dropout_keep_rate(thresh: i32) -> f32 {
    1.0 - thresh as f32 * (1.0 / 65536.0)
}

#[tile_fn]
/// The score rule of the kernels without one (never called: they pass `MOD = 0`).
fn unmodified(
    s: Tile,
    b: i32,
    h: i32,
    q_idx: Tile,
    kv_idx: Tile,
    mod_ptr: Tile,
    mod_f: f32,
    mod_i: i32,
) -> Tile {
    s
}

#[tile_fn]
/// The forward pass of one program of the dense kernels (see [`attn_fwd`]): its batch and
/// head from the program id, then [`attn_rows`] (with a score rule and a window for
/// [`attn_fwd_mod`]).
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
    left: i32,
    right: i32,
    mod_ptr: Tile,
    mod_f: f32,
    mod_i: i32,
    drop_seed: i32,
    drop_thresh: i32,
    T: Type,
    HEAD_DIM: Const,
    CAUSAL: Const,
    WINDOW: Const,
    SCORE: Fn,
    MOD: Const,
    DROP: Const,
    BM: Const,
    BN: Const,
) {
    let bh = program_id(1);
    let (b, h) = (bh / hq, bh % hq);
    let h_kv = h / (hq / hkv);
    let q_off = b * stride_b + h * stride_h;
    let kv_off = b * kv_stride_b + h_kv * kv_stride_h;
    let drop_key = dropout_key(drop_seed, bh);
    attn_rows(
        q + q_off,
        k + kv_off,
        v + kv_off,
        o + q_off,
        lse + bh * n_ctx,
        sm_scale,
        stride_s,
        kv_stride_s,
        n_ctx,
        b,
        h,
        left,
        right,
        mod_ptr,
        mod_f,
        mod_i,
        drop_key,
        drop_thresh,
        T,
        HEAD_DIM,
        CAUSAL,
        WINDOW,
        SCORE,
        MOD,
        DROP,
        BM,
        BN,
    );
}

#[tile_fn]
/// Query rows `program_id(0)·BM ..` of one sequence and head: `q`, `o` at its row 0 (rows
/// `stride_s` apart), `k`, `v` at its key/value head's row 0 (`kv_stride_s` apart), `lse` at
/// its row 0 (rows contiguous); `n_ctx` queries and keys; `b`, `h` its batch (or sequence) and
/// head for the score rule. `WINDOW = 1`: query `i` sees keys `i − left ..= i + right` (a
/// negative bound is no bound; `CAUSAL` is then ignored: it is `right = 0`). `MOD = 1`: the
/// scores go through `SCORE` (see [`attn_blocks`]).
fn attn_rows(
    q: Tile,
    k_base: Tile,
    v_base: Tile,
    o: Tile,
    lse: Tile,
    sm_scale: f32,
    stride_s: i32,
    kv_stride_s: i32,
    n_ctx: i32,
    b: i32,
    h: i32,
    left: i32,
    right: i32,
    mod_ptr: Tile,
    mod_f: f32,
    mod_i: i32,
    drop_key: i64,
    drop_thresh: i32,
    T: Type,
    HEAD_DIM: Const,
    CAUSAL: Const,
    WINDOW: Const,
    SCORE: Fn,
    MOD: Const,
    DROP: Const,
    BM: Const,
    BN: Const,
) {
    let start_m = program_id(0);
    let offs_m = start_m * BM + arange(0, BM);
    let offs_d = arange(0, HEAD_DIM);
    let row_ok = offs_m.expand_dims(1) < n_ctx;
    let q_tile = load(
        q + offs_m.expand_dims(1) * stride_s + offs_d.expand_dims(0),
        row_ok,
        0.0,
    );
    let mut acc = zeros([BM, HEAD_DIM]);
    let mut m_i = zeros([BM]) + f32::NEG_INFINITY;
    let mut l_i = zeros([BM]);
    // The blocks of keys that every query of the program sees and that lie wholly in the
    // sequence run without a mask: without the causal mask, every whole block; with it, those
    // below the diagonal; with a window, those inside every row's window. Then, masked: the
    // diagonal block(s), or the ragged last block, or the window's edges.
    let diag = start_m * BM;
    let whole = (n_ctx / BN) * BN;
    let mut lo = 0;
    let mut mid = 0;
    let mut mid_end = select(CAUSAL == 1, min(diag, whole), whole);
    let mut hi = select(CAUSAL == 1, min(diag + BM, n_ctx), n_ctx);
    let wl = select(left < 0, n_ctx, left);
    let wr = select(right < 0, n_ctx, right);
    if WINDOW == 1 {
        // Keys seen by some row: `diag − wl .. diag + BM + wr`; by every row: `diag + BM − 1 −
        // wl ..= diag + wr`. Masked blocks before and after the unmasked ones.
        // Every loop starts at a multiple of `BN` (the first may end past `hi`, in keys its
        // mask hides), so that the key columns of a block are known aligned.
        lo = (max(diag - wl, 0) / BN) * BN;
        hi = min(n_ctx, diag + BM + wr);
        mid = min(
            max(lo, cdiv(max(diag + BM - 1 - wl, 0), BN) * BN),
            cdiv(hi, BN) * BN,
        );
        mid_end = max(mid, (min(diag + wr + 1, n_ctx) / BN) * BN);
        (acc, m_i, l_i) = attn_blocks(
            acc,
            m_i,
            l_i,
            q_tile,
            k_base,
            v_base,
            kv_stride_s,
            offs_m,
            start_m * BM,
            lo,
            mid,
            n_ctx,
            sm_scale,
            b,
            h,
            wl,
            wr,
            mod_ptr,
            mod_f,
            mod_i,
            drop_key,
            drop_thresh,
            T,
            HEAD_DIM,
            BN,
            BM,
            3,
            SCORE,
            MOD,
            DROP,
        );
    }
    (acc, m_i, l_i) = attn_blocks(
        acc,
        m_i,
        l_i,
        q_tile,
        k_base,
        v_base,
        kv_stride_s,
        offs_m,
        start_m * BM,
        mid,
        mid_end,
        n_ctx,
        sm_scale,
        b,
        h,
        wl,
        wr,
        mod_ptr,
        mod_f,
        mod_i,
        drop_key,
        drop_thresh,
        T,
        HEAD_DIM,
        BN,
        BM,
        0,
        SCORE,
        MOD,
        DROP,
    );
    // The masked blocks after: the window's edge (`3`), the diagonal (`1`) or the ragged end
    // (`2`).
    (acc, m_i, l_i) = attn_blocks(
        acc,
        m_i,
        l_i,
        q_tile,
        k_base,
        v_base,
        kv_stride_s,
        offs_m,
        start_m * BM,
        mid_end,
        hi,
        n_ctx,
        sm_scale,
        b,
        h,
        wl,
        wr,
        mod_ptr,
        mod_f,
        mod_i,
        drop_key,
        drop_thresh,
        T,
        HEAD_DIM,
        BN,
        BM,
        3 * WINDOW + (1 - WINDOW) * (2 - CAUSAL),
        SCORE,
        MOD,
        DROP,
    );
    let row = offs_m < n_ctx;
    let mut l_div = l_i;
    if MOD == 1 {
        // A row the rule masked entirely has `l = 0`: its output is 0 (FlexAttention's).
        l_div = select(l_i == 0.0, 1.0, l_i);
    }
    if DROP == 1 {
        l_div = l_div * dropout_keep_rate(drop_thresh);
    }
    // L = ln(Σ exp(s·scale)) = (m + log2(l)) · ln 2, in base-e units.
    store(
        lse + offs_m,
        (m_i + l_i.log2()) * 0.6931471805599453, // ln(2)
        row,
    );
    store(
        o + offs_m.expand_dims(1) * stride_s + offs_d.expand_dims(0),
        (acc / l_div.expand_dims(1)) as T,
        row_ok,
    );
}

// `math = fast`: the epilogue divides by the row sums as Triton and FlashAttention do (one
// reciprocal per row and a multiply per element, within 2 ulp), not by IEEE division.
#[tile_kernel(num_warps = 8, num_stages = 3, specialize = aligned, math = fast)]
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
        -1,
        -1,
        lse,
        0.0,
        0,
        0,
        0,
        T,
        64,
        CAUSAL,
        0,
        unmodified,
        0,
        0,
        128,
        64,
    );
}

#[tile_kernel(num_warps = 8, num_stages = 3, specialize = aligned, math = fast)]
/// [`attn_fwd`] for `head_dim = 128` (the same 128 × 64 blocks).
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
        -1,
        -1,
        lse,
        0.0,
        0,
        0,
        0,
        T,
        128,
        CAUSAL,
        0,
        unmodified,
        0,
        0,
        128,
        64,
    );
}

#[tile_kernel(
    specialize = aligned,
    math = fast,
    autotune(
        configs = [
            { BN = 32, num_warps = 8, num_stages = 3 },
            { BN = 64, num_warps = 8, num_stages = 3 },
        ],
        key = [n_ctx, hq, hkv],
    )
)]
/// [`attn_fwd`] with dropout on the probabilities: `O = (P ∘ Z) V / (1 − p)`, where `Z` is
/// [`dropout_keep`]'s mask for `seed` and `thresh` (`p · 2¹⁶` rounded), the stream of each head
/// its own ([`dropout_key`]). `lse` is that of the scores, as without dropout: the backward
/// recomputes `P` from it and regenerates `Z`. Either head dimension (64 or 128). Blocks of
/// 128 queries; of 32 keys or 64 (autotuned; at `head_dim = 128` sm_80 holds only 32, the mask
/// beside the forward's other tiles).
#[allow(clippy::too_many_arguments)]
pub fn attn_fwd_dropout(
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
    seed: i32,
    thresh: i32,
    T: Type<{ [f16, bf16] }>,
    HEAD_DIM: Const<{ [64, 128] }>,
    CAUSAL: Const<{ [0, 1] }>,
    BN: Const,
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
        -1,
        -1,
        lse,
        0.0,
        0,
        seed,
        thresh,
        T,
        HEAD_DIM,
        CAUSAL,
        0,
        unmodified,
        0,
        1,
        128,
        BN,
    );
}

#[tile_fn]
/// ALiBi: `s + slope[h] · (key − query)`, the slopes read from `slopes` (one per query head).
pub fn alibi(
    s: Tile,
    b: i32,
    h: i32,
    q_idx: Tile,
    kv_idx: Tile,
    slopes: Tile,
    mod_f: f32,
    mod_i: i32,
) -> Tile {
    // The positions converted before they are broadcast (one conversion per row and per
    // column, not per score: integer-to-float conversions issue at an eighth of the FMA rate).
    // `s + a − b` in that order: the scale's multiply and the first add fuse into one fma.
    let slope = load(slopes + h);
    s + kv_idx as f32 * slope - q_idx as f32 * slope
}

#[tile_fn]
/// The logit softcap of Gemma 2 and Grok: `cap · tanh(s / cap)`.
pub fn softcap(
    s: Tile,
    b: i32,
    h: i32,
    q_idx: Tile,
    kv_idx: Tile,
    mod_ptr: Tile,
    cap: f32,
    mod_i: i32,
) -> Tile {
    (s * (1.0 / cap)).tanh() * cap
}

#[tile_fn]
/// An additive bias read from memory: `s + bias[query, key]`, `bias` an `n × ld` array (the
/// same for every batch and head; rows `ld` apart, `ld` at least `n` rounded up to the key
/// block, the columns past `n` never used). For the attention loop only, which gives rows past
/// `n` the last row's index and masks keys past `n` after the rule.
pub fn additive_bias(
    s: Tile,
    b: i32,
    h: i32,
    q_idx: Tile,
    kv_idx: Tile,
    bias: Tile,
    mod_f: f32,
    ld: i32,
) -> Tile {
    // Neither clamped nor masked: a key past `n` reads a padding column of its row (masked
    // after the rule), so a thread's two neighbouring keys are one 4-byte copy, which the loop's
    // ring issues iterations ahead without a predicate.
    s + load(bias + q_idx * ld + kv_idx) as f32
}

// The score modifiers of FlexAttention's examples, on the `head_dim = 128` forward; every one
// with a sliding window (`left = right = -1`: none). Two kernels, since one with every rule and
// both types would pass the compile-cost limit.
#[tile_kernel(num_warps = 8, num_stages = 3, specialize = aligned, math = fast)]
/// [`attn_fwd_d128`] with a sliding window and a score rule: query `i` sees keys
/// `i − left ..= i + right` (a negative bound is no bound; blocks outside every row's window
/// are skipped), and `MOD` picks the rule applied to the scaled score `s = q·k · sm_scale`:
/// `0` none, `1` [`alibi`] (`slopes[h]`, f32 per query head), `2` [`softcap`] (`cap`).
/// `slopes` may be any buffer when `MOD` is not 1.
#[allow(clippy::too_many_arguments)]
pub fn attn_fwd_mod(
    q: Ptr<T>,
    k: Ptr<T>,
    v: Ptr<T>,
    o: Ptr<T>,
    lse: Ptr<f32>,
    slopes: Ptr<f32>,
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
    left: i32,
    right: i32,
    cap: f32,
    T: Type<{ [f16, bf16] }>,
    MOD: Const<{ [0, 1, 2] }>,
) {
    if MOD == 0 {
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
            left,
            right,
            lse,
            0.0,
            0,
            0,
            0,
            T,
            128,
            0,
            1,
            unmodified,
            0,
            0,
            128,
            64,
        );
    }
    if MOD == 1 {
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
            left,
            right,
            slopes,
            0.0,
            0,
            0,
            0,
            T,
            128,
            0,
            1,
            alibi,
            1,
            0,
            128,
            64,
        );
    }
    if MOD == 2 {
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
            left,
            right,
            lse,
            cap,
            0,
            0,
            0,
            T,
            128,
            0,
            1,
            softcap,
            1,
            0,
            128,
            64,
        );
    }
}

#[tile_kernel(num_warps = 8, num_stages = 2, specialize = aligned, math = fast)]
/// [`attn_fwd_mod`] with the rule [`additive_bias`]: `s + bias[query, key]`, `bias` an
/// `n_ctx × bias_stride` array of the input type shared by every batch and head
/// (`bias_stride`: `n_ctx` rounded up to a multiple of 64, the key block).
#[allow(clippy::too_many_arguments)]
pub fn attn_fwd_bias(
    q: Ptr<T>,
    k: Ptr<T>,
    v: Ptr<T>,
    o: Ptr<T>,
    lse: Ptr<f32>,
    bias: Ptr<T>,
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
    left: i32,
    right: i32,
    bias_stride: i32,
    T: Type<{ [f16, bf16] }>,
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
        left,
        right,
        bias,
        0.0,
        bias_stride,
        0,
        0,
        T,
        128,
        0,
        1,
        additive_bias,
        1,
        0,
        128,
        64,
    );
}

#[tile_kernel(num_warps = 8, num_stages = 3, specialize = aligned, math = fast)]
/// The forward over packed sequences of different lengths (`varlen`): sequence `i` is tokens
/// `cu_seqlens[i] .. cu_seqlens[i + 1]` of `q`, `o` (`[total, hq, HEAD_DIM]`, token stride
/// `stride_t`, head stride `stride_h`) and `k`, `v` (`[total, hkv, HEAD_DIM]`, `kv_stride_t`,
/// `kv_stride_h`); `lse` is `[hq, total]`. Program `(i, seq · hq + h)` computes query rows
/// `128·i ..` of that sequence and head, as [`attn_fwd`] does for one of the batch; the
/// programs past a sequence's end return at once. Launch `(cdiv(longest, 128), n_seqs · hq)`.
#[allow(clippy::too_many_arguments)]
pub fn attn_fwd_varlen(
    q: Ptr<T>,
    k: Ptr<T>,
    v: Ptr<T>,
    o: Ptr<T>,
    lse: Ptr<f32>,
    cu_seqlens: Ptr<i32>,
    sm_scale: f32,
    stride_t: i32,
    stride_h: i32,
    kv_stride_t: i32,
    kv_stride_h: i32,
    hq: i32,
    hkv: i32,
    total: i32,
    T: Type<{ [f16, bf16] }>,
    HEAD_DIM: Const<{ [64, 128] }>,
    CAUSAL: Const<{ [0, 1] }>,
) {
    let sh = program_id(1);
    let (seq, h) = (sh / hq, sh % hq);
    let start = load(cu_seqlens + seq);
    let n_ctx = load(cu_seqlens + seq + 1) - start;
    if program_id(0) * 128 < n_ctx {
        let h_kv = h / (hq / hkv);
        let q_off = start * stride_t + h * stride_h;
        let kv_off = start * kv_stride_t + h_kv * kv_stride_h;
        attn_rows(
            q + q_off,
            k + kv_off,
            v + kv_off,
            o + q_off,
            lse + h * total + start,
            sm_scale,
            stride_t,
            kv_stride_t,
            n_ctx,
            seq,
            h,
            -1,
            -1,
            lse,
            0.0,
            0,
            0,
            0,
            T,
            HEAD_DIM,
            CAUSAL,
            0,
            unmodified,
            0,
            0,
            128,
            64,
        );
    }
}

/// The forward's grid: `cdiv(n_ctx, 128)` row blocks by `batch · hq`.
pub fn grid(batch: usize, hq: usize, n_ctx: usize) -> Grid {
    Grid::xy(cdiv(n_ctx, 128), (batch * hq) as u32)
}

#[tile_kernel(num_warps = 4)]
/// Unfused step 1: `s = Q Kᵀ · scale` in f32, one `64 × 64` block of one head's `n_ctx × n_ctx`
/// scores per program (grid: query blocks, key blocks, `batch · hq`; BHSD inputs, `hkv` key/value
/// heads as in [`attn_fwd`]). With `causal = 1` the scores of keys after the query are `-∞`.
#[allow(clippy::too_many_arguments)]
pub fn attn_scores(
    q: Ptr<T>,
    k: Ptr<T>,
    s: Ptr<f32>,
    sm_scale: f32,
    hq: i32,
    hkv: i32,
    n_ctx: i32,
    causal: i32,
    T: Type<{ [f16, bf16] }>,
    HEAD_DIM: Const<{ [64, 128] }>,
) {
    let rows = program_id(0) * 64 + arange(0, 64);
    let cols = program_id(1) * 64 + arange(0, 64);
    let bh = program_id(2);
    let h_kv = (bh / hq) * hkv + (bh % hq) / (hq / hkv);
    let d = arange(0, HEAD_DIM);
    let (row_ok, col_ok) = (rows.expand_dims(1) < n_ctx, cols.expand_dims(0) < n_ctx);
    let q_tile = load(
        q + (bh * n_ctx + rows.expand_dims(1)) * HEAD_DIM + d.expand_dims(0),
        row_ok,
        0.0,
    );
    let k_tile = load(
        k + (h_kv * n_ctx + cols.expand_dims(1)) * HEAD_DIM + d.expand_dims(0),
        cols.expand_dims(1) < n_ctx,
        0.0,
    );
    let seen = (rows.expand_dims(1) >= cols.expand_dims(0)) | (causal == 0);
    let scores = select(
        seen,
        dot(q_tile, k_tile.trans()) * sm_scale,
        f32::NEG_INFINITY,
    );
    // 64-bit offsets: `batch · hq · n_ctx²` passes 2³¹ at 128 heads of 4096 tokens.
    let at = (bh * n_ctx + rows.expand_dims(1)) as i64 * n_ctx as i64 + cols.expand_dims(0) as i64;
    store(s + at, scores, row_ok & col_ok);
}

#[tile_kernel(num_warps = 4, num_stages = 3)]
/// Unfused step 3: `o = P V`, `P` the f32 probabilities of step 2 (the fused_softmax example's
/// kernel) rounded to the input type, one block of 64 query rows per program (grid: query
/// blocks, `batch · hq`).
#[allow(clippy::too_many_arguments)]
pub fn attn_pv(
    p: Ptr<f32>,
    v: Ptr<T>,
    o: Ptr<T>,
    hq: i32,
    hkv: i32,
    n_ctx: i32,
    T: Type<{ [f16, bf16] }>,
    HEAD_DIM: Const<{ [64, 128] }>,
) {
    let rows = program_id(0) * 64 + arange(0, 64);
    let bh = program_id(1);
    let h_kv = (bh / hq) * hkv + (bh % hq) / (hq / hkv);
    let d = arange(0, HEAD_DIM);
    let row_ok = rows.expand_dims(1) < n_ctx;
    let mut acc = zeros([64, HEAD_DIM]);
    for j in (0..n_ctx).step_by(64) {
        let keys = j + arange(0, 64);
        let at =
            (bh * n_ctx + rows.expand_dims(1)) as i64 * n_ctx as i64 + keys.expand_dims(0) as i64;
        let pt = load(p + at, row_ok & (keys.expand_dims(0) < n_ctx), 0.0);
        let vt = load(
            v + (h_kv * n_ctx + keys.expand_dims(1)) * HEAD_DIM + d.expand_dims(0),
            keys.expand_dims(1) < n_ctx,
            0.0,
        );
        acc = dot(pt as T, vt, acc);
    }
    store(
        o + (bh * n_ctx + rows.expand_dims(1)) * HEAD_DIM + d.expand_dims(0),
        acc as T,
        row_ok,
    );
}

/// Every kernel of this example, each instance.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = attn_fwd::KERNELS.to_vec();
    v.extend(attn_fwd_d128::KERNELS);
    v.extend(attn_fwd_dropout::KERNELS);
    v.extend(attn_fwd_mod::KERNELS);
    v.extend(attn_fwd_bias::KERNELS);
    v.extend(attn_fwd_varlen::KERNELS);
    v.extend(attn_bwd_preprocess::KERNELS);
    v.extend(attn_bwd_dkdv::KERNELS);
    v.extend(attn_bwd_dkdv_d128::KERNELS);
    v.extend(attn_bwd_dq::KERNELS);
    v.extend(attn_bwd_dq_d128::KERNELS);
    v.extend(attn_bwd_dkdv_dropout::KERNELS);
    v.extend(attn_bwd_dq_dropout::KERNELS);
    v.extend(attn_scores::KERNELS);
    v.extend(attn_pv::KERNELS);
    v.extend(super::decode::attn_decode_split::KERNELS);
    v.extend(super::decode::attn_decode_combine::KERNELS);
    v
}

#[tile_kernel(num_warps = 4, specialize = aligned)]
/// The backward's first step: `delta = rowsum(dO ∘ O)` per query row (f32, `[batch · hq,
/// n_ctx]`), the term `rowsum(P ∘ dP)` of the softmax gradient (they are equal: `dP = dO Vᵀ`
/// and `O = P V`). Program `(i, bh)` does rows `i·64 .. (i+1)·64` of head `bh`; launch
/// `(cdiv(n_ctx, 64), batch · hq)` programs. `o` and `d_o` have `q`'s strides.
#[allow(clippy::too_many_arguments)]
pub fn attn_bwd_preprocess(
    o: Ptr<T>,
    d_o: Ptr<T>,
    delta: Ptr<f32>,
    stride_b: i32,
    stride_h: i32,
    stride_s: i32,
    hq: i32,
    n_ctx: i32,
    T: Type<{ [f16, bf16] }>,
    HEAD_DIM: Const<{ [64, 128] }>,
    BM: Const<64>,
) {
    let bh = program_id(1);
    let off = (bh / hq) * stride_b + (bh % hq) * stride_h;
    let rows = program_id(0) * BM + arange(0, BM);
    let offs = off + rows.expand_dims(1) * stride_s + arange(0, HEAD_DIM).expand_dims(0);
    let ok = rows.expand_dims(1) < n_ctx;
    let ov = load(o + offs, ok, 0.0) as f32;
    let dov = load(d_o + offs, ok, 0.0) as f32;
    store(delta + bh * n_ctx + rows, (ov * dov).sum(1), rows < n_ctx);
}

#[tile_fn]
/// The query blocks `lo..hi` of one query head for one block of keys: accumulates the columns
/// `d_lo .. d_lo + DV` of `dK` and `dV` of the keys (without `dK`'s factor `scale`). Everything is kept transposed, keys along
/// the rows: `Sᵀ = K Qᵀ`, `Pᵀ = exp2(Sᵀ·c − L·log2 e)`, `dV += Pᵀ dO`, `dPᵀ = V dOᵀ`,
/// `dSᵀ = Pᵀ ∘ (dPᵀ − Δ)`, `dK += dSᵀ Q`. So the tiles loaded in the loop (`Q`, `dO`) are the
/// right-hand operands, read from the shared-memory ring as loaded (row by row) or transposed,
/// and the computed `Pᵀ`, `dSᵀ` are left-hand operands in registers, as the first product left
/// them. Each of `Q` and `dO` is loaded once and read by two products from one ring, unless
/// the program keeps only a slice of the columns (`DV < HEAD_DIM`): then the slice is loaded
/// apart. `MASK = 1` keeps key ≤ query. Query rows past `n_ctx` load as zeros (and `L`, `Δ` as
/// 0): their `dO` and `Q` rows are zero, so they add nothing.
fn bwd_kv_blocks(
    dk: Tile,
    dv: Tile,
    k_tile: Tile,
    v_tile: Tile,
    q_base: Tile,
    do_base: Tile,
    lse_row: Tile,
    delta_row: Tile,
    stride_s: i32,
    offs_n: Tile,
    d_lo: i32,
    lo: i32,
    hi: i32,
    n_ctx: i32,
    qk_scale: f32,
    drop_key: i64,
    drop_thresh: i32,
    key0: i32,
    T: Type,
    HEAD_DIM: Const,
    DV: Const,
    BM: Const,
    MASK: Const,
    BN: Const,
    DROP: Const,
) -> (Tile, Tile) {
    let offs_m = arange(0, BM);
    let offs_d = arange(0, HEAD_DIM);
    let offs_dv = d_lo + arange(0, DV);
    let inv_keep = 1.0 / dropout_keep_rate(drop_thresh);
    let mut dk = dk;
    let mut dv = dv;
    for start_m in (lo..hi).step_by(BM) {
        let rows = start_m + offs_m;
        let row_ok = rows < n_ctx;
        let at = rows.expand_dims(1) * stride_s + offs_d.expand_dims(0);
        let qb = load(q_base + at, row_ok.expand_dims(1), 0.0);
        // `L` and `Δ` one element per access: a thread holds pairs of queries in this layout,
        // and paired loads would ask `n_ctx` to be even (the rows of `L` are `n_ctx` apart);
        // the `select` hides the pairs from the compiler's contiguity analysis.
        let rows1 = select(row_ok, rows, 0);
        let l2 = load(lse_row + rows1, row_ok, 0.0) * 1.4426950408889634; // log2(e)
        let st = dot(k_tile, qb.trans());
        let mut pt = (st * qk_scale - l2.expand_dims(0)).exp2();
        if MASK == 1 {
            pt = select(offs_n.expand_dims(1) <= rows.expand_dims(0), pt, 0.0);
        }
        let dob = load(do_base + at, row_ok.expand_dims(1), 0.0);
        let mut dob_dv = dob;
        let mut qb_dv = qb;
        if DV != HEAD_DIM {
            let at_dv = rows.expand_dims(1) * stride_s + offs_dv.expand_dims(0);
            dob_dv = load(do_base + at_dv, row_ok.expand_dims(1), 0.0);
            qb_dv = load(q_base + at_dv, row_ok.expand_dims(1), 0.0);
        }
        // Dropout (`DROP = 1`): `dV` takes the dropped probabilities `Pᵀ ∘ Zᵀ / (1 − p)`, and
        // `dPᵀ` (the gradient of those) goes back through the same mask and scale; `Δ`
        // (`rowsum(dO ∘ O)` of the dropped output) is already the matching row term.
        // Both products that need the mask come first, so that the mask is dead before `dV`'s
        // (sm_80 holds 64 × 16 blocks at `head_dim = 128` that way).
        let mut pt_v = pt;
        let mut dpt = 0.0;
        if DROP == 1 {
            let keep = dropout_keep(drop_key, start_m, key0, n_ctx, drop_thresh, BM, BN).trans();
            dpt = select(keep, dot(v_tile, dob.trans()) * inv_keep, 0.0);
            pt_v = select(keep, pt * inv_keep, 0.0);
        }
        dv = dot(pt_v as T, dob_dv, dv);
        if DROP == 0 {
            dpt = dot(v_tile, dob.trans());
        }
        let di = load(delta_row + rows1, row_ok, 0.0);
        let dst = pt * (dpt - di.expand_dims(0));
        dk = dot(dst as T, qb_dv, dk);
    }
    (dk, dv)
}

#[tile_fn]
/// `dK` and `dV` of one program (see [`attn_bwd_dkdv`]): the columns
/// `program_id(2)·DV .. +DV` of them.
fn attn_backward_dkdv(
    q: Tile,
    k: Tile,
    v: Tile,
    d_o: Tile,
    lse: Tile,
    delta: Tile,
    dk: Tile,
    dv: Tile,
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
    drop_seed: i32,
    drop_thresh: i32,
    T: Type,
    HEAD_DIM: Const,
    CAUSAL: Const,
    DV: Const,
    BM: Const,
    BN: Const,
    DIAG: Const,
    DROP: Const,
) {
    let start_n = program_id(0) * BN;
    let d_lo = program_id(2) * DV;
    let bh_kv = program_id(1);
    let (b, h_kv) = (bh_kv / hkv, bh_kv % hkv);
    let group = hq / hkv;
    let offs_n = start_n + arange(0, BN);
    let offs_d = arange(0, HEAD_DIM);
    let key_ok = offs_n.expand_dims(1) < n_ctx;
    let kv_at = b * kv_stride_b
        + h_kv * kv_stride_h
        + offs_n.expand_dims(1) * kv_stride_s
        + offs_d.expand_dims(0);
    let k_tile = load(k + kv_at, key_ok, 0.0);
    let v_tile = load(v + kv_at, key_ok, 0.0);
    let qk_scale = sm_scale * 1.4426950408889634;
    let mut dk_acc = zeros([BN, DV]);
    let mut dv_acc = zeros([BN, DV]);
    // The query heads that share this key/value head, one after the other: their gradients add
    // up in the same accumulators, so no partial sums reach memory.
    for g in 0..group {
        let h = h_kv * group + g;
        let bh = b * hq + h;
        let drop_key = dropout_key(drop_seed, bh);
        let q_off = b * stride_b + h * stride_h;
        let (q_base, do_base) = (q + q_off, d_o + q_off);
        let (lse_row, delta_row) = (lse + bh * n_ctx, delta + bh * n_ctx);
        // Causal: queries above the diagonal see none of these keys. With `DIAG = 1` the query
        // block on the diagonal runs with the mask and the blocks wholly below it without (two
        // loops); with `DIAG = 0` one loop runs them all with the mask, which holds fewer
        // values live across loops (the larger blocks fit the registers that way).
        let lo = select(CAUSAL == 1, start_n, 0);
        let unmasked_lo = select(CAUSAL == 1 && DIAG == 1, start_n + BN, lo);
        if CAUSAL == 1 && DIAG == 1 {
            let (a, c) = bwd_kv_blocks(
                dk_acc,
                dv_acc,
                k_tile,
                v_tile,
                q_base,
                do_base,
                lse_row,
                delta_row,
                stride_s,
                offs_n,
                d_lo,
                start_n,
                min(start_n + BN, n_ctx),
                n_ctx,
                qk_scale,
                drop_key,
                drop_thresh,
                start_n,
                T,
                HEAD_DIM,
                DV,
                BM,
                1,
                BN,
                DROP,
            );
            dk_acc = a;
            dv_acc = c;
        }
        let (a, c) = bwd_kv_blocks(
            dk_acc,
            dv_acc,
            k_tile,
            v_tile,
            q_base,
            do_base,
            lse_row,
            delta_row,
            stride_s,
            offs_n,
            d_lo,
            unmasked_lo,
            n_ctx,
            n_ctx,
            qk_scale,
            drop_key,
            drop_thresh,
            start_n,
            T,
            HEAD_DIM,
            DV,
            BM,
            CAUSAL * (1 - DIAG),
            BN,
            DROP,
        );
        dk_acc = a;
        dv_acc = c;
    }
    // The offsets and mask of the stores, written anew (not `kv_at`, `key_ok`) so that they are
    // computed here rather than kept live through the loops.
    let out_at = (offs_n * kv_stride_s).expand_dims(1)
        + (b * kv_stride_b + h_kv * kv_stride_h)
        + (d_lo + arange(0, DV)).expand_dims(0);
    let out_ok = (offs_n < n_ctx).expand_dims(1);
    store(dk + out_at, (dk_acc * sm_scale) as T, out_ok);
    store(dv + out_at, dv_acc as T, out_ok);
}

#[tile_kernel(
    specialize = aligned,
    autotune(
        configs = [
            { BN = 64, BM = 16, num_warps = 4, num_stages = 3 },
            { BN = 64, BM = 64, num_warps = 4, num_stages = 3 },
            { BN = 128, BM = 64, num_warps = 8, num_stages = 3 },
        ],
        key = [n_ctx, hq, hkv],
    )
)]
/// `dK` and `dV` for `head_dim = 64`: program `(j, b·hkv + h, 0)` computes keys
/// `j·BN .. (j+1)·BN` of key/value head `h` of batch `b`, looping over the query heads of its
/// group (`hq / hkv` of them) and, for each, over blocks of `BM` queries (from the diagonal on
/// with `CAUSAL = 1`). Launch `(cdiv(n_ctx, BN), batch · hkv, 1)` programs ([`grid_dkdv`]).
/// `d_o` has `q`'s strides, `dk` and `dv` those of `k`; `lse` (the forward's, natural log) and
/// `delta` ([`attn_bwd_preprocess`]) are `[batch · hq, n_ctx]`.
///
/// Grouped-query heads are summed inside the program, so each `dK`/`dV` element is written
/// once, with no atomics and no buffer of per-head partial sums; the price is that a group's
/// heads run one after the other in one program (fewer programs when `hkv` is small).
///
/// Blocks (autotuned): configuration 0, 64 keys on 4 warps (16 rows each, one warpgroup for
/// `wgmma`) and queries 16 at a time, is the one that fits sm_80, where the products with a
/// transposed loaded tile (`K Qᵀ`, `V dOᵀ`) take their right-hand operand whole into registers
/// beside the two accumulators and the `K`, `V` tiles (32 queries spill there); the larger
/// blocks are for `wgmma`, which reads `K`, `V` and both operands of the ring from shared
/// memory.
#[allow(clippy::too_many_arguments)]
pub fn attn_bwd_dkdv(
    q: Ptr<T>,
    k: Ptr<T>,
    v: Ptr<T>,
    d_o: Ptr<T>,
    lse: Ptr<f32>,
    delta: Ptr<f32>,
    dk: Ptr<T>,
    dv: Ptr<T>,
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
    BN: Const,
    BM: Const,
) {
    attn_backward_dkdv(
        q,
        k,
        v,
        d_o,
        lse,
        delta,
        dk,
        dv,
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
        0,
        0,
        T,
        64,
        CAUSAL,
        64,
        BM,
        BN,
        1,
        0,
    );
}

#[tile_kernel(
    specialize = aligned,
    autotune(
        configs = [
            { BN = 64, BM = 16, DV = 64, DIAG = 1, num_warps = 4, num_stages = 2 },
            { BN = 64, BM = 32, DV = 128, DIAG = 0, num_warps = 4, num_stages = 2 },
            { BN = 64, BM = 64, DV = 64, DIAG = 0, num_warps = 4, num_stages = 2 },
            { BN = 64, BM = 16, DV = 128, DIAG = 0, num_warps = 4, num_stages = 3 },
            { BN = 128, BM = 16, DV = 128, DIAG = 0, num_warps = 8, num_stages = 3 },
        ],
        key = [n_ctx, hq, hkv],
    )
)]
/// [`attn_bwd_dkdv`] for `head_dim = 128`. Configuration 0 (the one sm_80 holds) splits the
/// work in two programs along the head dimension of the results: program `(j, b·hkv + h, c)`
/// accumulates the columns `c·64 .. (c+1)·64` of `dK` and `dV` (launch `(cdiv(n_ctx, 64),
/// batch · hkv, 2)`). Each half recomputes `Sᵀ` and `dPᵀ` over all 128 components (1.5 times
/// the products of an unsplit kernel), so a thread holds two `16 × 64` accumulator slices
/// instead of two `16 × 128`: on sm_80 the whole `64 × 128` pair beside `K` and `V` does not fit
/// 255 registers. The others (`DV = 128`) keep whole rows: on `wgmma`, `K` and `V` stay in
/// shared memory.
#[allow(clippy::too_many_arguments)]
pub fn attn_bwd_dkdv_d128(
    q: Ptr<T>,
    k: Ptr<T>,
    v: Ptr<T>,
    d_o: Ptr<T>,
    lse: Ptr<f32>,
    delta: Ptr<f32>,
    dk: Ptr<T>,
    dv: Ptr<T>,
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
    BN: Const,
    BM: Const,
    DV: Const,
    DIAG: Const,
) {
    attn_backward_dkdv(
        q,
        k,
        v,
        d_o,
        lse,
        delta,
        dk,
        dv,
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
        0,
        0,
        T,
        128,
        CAUSAL,
        DV,
        BM,
        BN,
        DIAG,
        0,
    );
}

#[tile_kernel(
    specialize = aligned,
    autotune(
        configs = [
            { BN = 64, BM = 16, WHOLE = 0, DIAG = 1, num_warps = 4, num_stages = 2 },
            { BN = 64, BM = 32, WHOLE = 1, DIAG = 0, num_warps = 4, num_stages = 2 },
            { BN = 64, BM = 32, WHOLE = 0, DIAG = 0, num_warps = 4, num_stages = 2 },
            { BN = 64, BM = 64, WHOLE = 0, DIAG = 0, num_warps = 4, num_stages = 2 },
        ],
        key = [n_ctx, hq, hkv],
    )
)]
/// [`attn_bwd_dkdv`] and [`attn_bwd_dkdv_d128`] for the forward with dropout
/// ([`attn_fwd_dropout`], the same `seed` and `thresh`): the mask regenerated per block,
/// transposed. `WHOLE = 0` keeps 64 columns of `dK`/`dV` per program (at `head_dim = 128`,
/// launch `(cdiv(n_ctx, BN), batch · hkv, 2)`; configuration 0 is the one sm_80 holds), `1` whole
/// rows (at `head_dim = 128` `wgmma` holds them beside the mask only in the plain kernel's
/// smallest blocks, which spill here: the split blocks are what runs).
#[allow(clippy::too_many_arguments)]
pub fn attn_bwd_dkdv_dropout(
    q: Ptr<T>,
    k: Ptr<T>,
    v: Ptr<T>,
    d_o: Ptr<T>,
    lse: Ptr<f32>,
    delta: Ptr<f32>,
    dk: Ptr<T>,
    dv: Ptr<T>,
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
    seed: i32,
    thresh: i32,
    T: Type<{ [f16, bf16] }>,
    HEAD_DIM: Const<{ [64, 128] }>,
    CAUSAL: Const<{ [0, 1] }>,
    BN: Const,
    BM: Const,
    WHOLE: Const,
    DIAG: Const,
) {
    // `DV`: whole rows, or 64 columns a program.
    attn_backward_dkdv(
        q,
        k,
        v,
        d_o,
        lse,
        delta,
        dk,
        dv,
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
        seed,
        thresh,
        T,
        HEAD_DIM,
        CAUSAL,
        WHOLE * HEAD_DIM + (1 - WHOLE) * 64,
        BM,
        BN,
        DIAG,
        1,
    );
}

#[tile_fn]
/// The key blocks `lo..hi` of one block of queries: accumulates `dQ` (without its factor
/// `scale`). `S = Q Kⱼᵀ`, `P = exp2(S·c − L·log2 e)`, `dP = dO Vⱼᵀ`, `dS = P ∘ (dP − Δ)`,
/// `dQ += dS Kⱼ`: the key block is loaded row by row once, and the two products read it from
/// one ring, transposed for `S`, as loaded for `dQ`. Keys past `n_ctx` are masked out of `P`; `MASK = 1` also keeps key ≤ query.
fn bwd_q_blocks(
    dq: Tile,
    q_tile: Tile,
    do_tile: Tile,
    l2: Tile,
    di: Tile,
    k_base: Tile,
    v_base: Tile,
    kv_stride_s: i32,
    offs_m: Tile,
    row0: i32,
    lo: i32,
    hi: i32,
    n_ctx: i32,
    qk_scale: f32,
    drop_key: i64,
    drop_thresh: i32,
    T: Type,
    HEAD_DIM: Const,
    BN: Const,
    BM: Const,
    MASK: Const,
    DROP: Const,
) -> Tile {
    let offs_n = arange(0, BN);
    let offs_d = arange(0, HEAD_DIM);
    let inv_keep = 1.0 / dropout_keep_rate(drop_thresh);
    let mut dq = dq;
    for start_n in (lo..hi).step_by(BN) {
        let cols = start_n + offs_n;
        let at = cols.expand_dims(1) * kv_stride_s + offs_d.expand_dims(0);
        let key_ok = cols.expand_dims(1) < n_ctx;
        let kb = load(k_base + at, key_ok, 0.0);
        let s = dot(q_tile, kb.trans());
        let p = (s * qk_scale - l2.expand_dims(1)).exp2();
        let mut p = select(cols.expand_dims(0) < n_ctx, p, 0.0);
        if MASK == 1 {
            p = select(offs_m.expand_dims(1) >= cols.expand_dims(0), p, 0.0);
        }
        let mut dp = dot(do_tile, load(v_base + at, key_ok, 0.0).trans());
        if DROP == 1 {
            let keep = dropout_keep(drop_key, row0, start_n, n_ctx, drop_thresh, BM, BN);
            dp = select(keep, dp * inv_keep, 0.0);
        }
        let ds = p * (dp - di.expand_dims(1));
        dq = dot(ds as T, kb, dq);
    }
    dq
}

#[tile_fn]
/// `dQ` of one program (see [`attn_bwd_dq`]).
fn attn_backward_dq(
    q: Tile,
    k: Tile,
    v: Tile,
    d_o: Tile,
    lse: Tile,
    delta: Tile,
    dq: Tile,
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
    drop_seed: i32,
    drop_thresh: i32,
    T: Type,
    HEAD_DIM: Const,
    CAUSAL: Const,
    BM: Const,
    BN: Const,
    DROP: Const,
) {
    let start_m = program_id(0) * BM;
    let bh = program_id(1);
    let (b, h) = (bh / hq, bh % hq);
    let h_kv = h / (hq / hkv);
    let q_off = b * stride_b + h * stride_h;
    let kv_off = b * kv_stride_b + h_kv * kv_stride_h;
    let offs_m = start_m + arange(0, BM);
    let offs_d = arange(0, HEAD_DIM);
    let row_ok = offs_m < n_ctx;
    let at = q_off + offs_m.expand_dims(1) * stride_s + offs_d.expand_dims(0);
    let q_tile = load(q + at, row_ok.expand_dims(1), 0.0);
    let do_tile = load(d_o + at, row_ok.expand_dims(1), 0.0);
    let l2 = load(lse + bh * n_ctx + offs_m, row_ok, 0.0) * 1.4426950408889634;
    let di = load(delta + bh * n_ctx + offs_m, row_ok, 0.0);
    let qk_scale = sm_scale * 1.4426950408889634;
    let drop_key = dropout_key(drop_seed, bh);
    let (k_base, v_base) = (k + kv_off, v + kv_off);
    // Without the causal mask every key block; with it, the blocks wholly left of the
    // diagonal, then the diagonal block with the mask.
    let unmasked_end = select(CAUSAL == 1, start_m, n_ctx);
    let mut acc = bwd_q_blocks(
        zeros([BM, HEAD_DIM]),
        q_tile,
        do_tile,
        l2,
        di,
        k_base,
        v_base,
        kv_stride_s,
        offs_m,
        start_m,
        0,
        unmasked_end,
        n_ctx,
        qk_scale,
        drop_key,
        drop_thresh,
        T,
        HEAD_DIM,
        BN,
        BM,
        0,
        DROP,
    );
    if CAUSAL == 1 {
        acc = bwd_q_blocks(
            acc,
            q_tile,
            do_tile,
            l2,
            di,
            k_base,
            v_base,
            kv_stride_s,
            offs_m,
            start_m,
            start_m,
            min(start_m + BM, n_ctx),
            n_ctx,
            qk_scale,
            drop_key,
            drop_thresh,
            T,
            HEAD_DIM,
            BN,
            BM,
            1,
            DROP,
        );
    }
    // The stores' offsets and mask written anew, computed here rather than kept live through
    // the loops.
    let out_at = (offs_m * stride_s).expand_dims(1) + q_off + offs_d.expand_dims(0);
    store(
        dq + out_at,
        (acc * sm_scale) as T,
        (offs_m < n_ctx).expand_dims(1),
    );
}

#[tile_kernel(
    specialize = aligned,
    autotune(
        configs = [
            { BM = 64, BN = 64, num_warps = 4, num_stages = 3 },
            { BM = 128, BN = 64, num_warps = 8, num_stages = 3 },
        ],
        key = [n_ctx, hq, hkv],
    )
)]
/// `dQ` for `head_dim = 64`: program `(i, bh)` computes query rows `i·BM .. (i+1)·BM` of batch
/// `bh / hq`, head `bh % hq`, looping over blocks of `BN` keys of its key/value head (up to the
/// diagonal with `CAUSAL = 1`). Launch `(cdiv(n_ctx, BM), batch · hq)` programs
/// ([`grid_dq`]). `d_o` and `dq` have `q`'s strides.
///
/// `dQ` has its own kernel, as in FlashAttention-2 and Triton's tutorial: it recomputes `P` and
/// `dP` that [`attn_bwd_dkdv`] computed already, but writes each `dQ` element once. The
/// alternative, `atomic_add` of every key block's share `dS Kⱼ` into an f32 `dQ` from the
/// `dK`/`dV` loop, saves that recomputation at the price of `S/64` atomic adds per element and
/// a summation order that changes from run to run.
#[allow(clippy::too_many_arguments)]
pub fn attn_bwd_dq(
    q: Ptr<T>,
    k: Ptr<T>,
    v: Ptr<T>,
    d_o: Ptr<T>,
    lse: Ptr<f32>,
    delta: Ptr<f32>,
    dq: Ptr<T>,
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
    BM: Const,
    BN: Const,
) {
    attn_backward_dq(
        q,
        k,
        v,
        d_o,
        lse,
        delta,
        dq,
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
        0,
        0,
        T,
        64,
        CAUSAL,
        BM,
        BN,
        0,
    );
}

#[tile_kernel(
    specialize = aligned,
    autotune(
        configs = [
            { BM = 64, BN = 16, num_warps = 4, num_stages = 3 },
            { BM = 64, BN = 64, num_warps = 4, num_stages = 3 },
            { BM = 128, BN = 64, num_warps = 8, num_stages = 3 },
        ],
        key = [n_ctx, hq, hkv],
    )
)]
/// [`attn_bwd_dq`] for `head_dim = 128`. Configuration 0 (the one sm_80 holds) takes key
/// blocks of 16; the others are for `wgmma`, which reads `Q` and `dO` from shared memory.
#[allow(clippy::too_many_arguments)]
pub fn attn_bwd_dq_d128(
    q: Ptr<T>,
    k: Ptr<T>,
    v: Ptr<T>,
    d_o: Ptr<T>,
    lse: Ptr<f32>,
    delta: Ptr<f32>,
    dq: Ptr<T>,
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
    BM: Const,
    BN: Const,
) {
    attn_backward_dq(
        q,
        k,
        v,
        d_o,
        lse,
        delta,
        dq,
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
        0,
        0,
        T,
        128,
        CAUSAL,
        BM,
        BN,
        0,
    );
}

#[tile_kernel(
    specialize = aligned,
    autotune(
        configs = [
            { BM = 64, BN = 16, num_warps = 4, num_stages = 3 },
            { BM = 64, BN = 64, num_warps = 4, num_stages = 3 },
            { BM = 128, BN = 64, num_warps = 8, num_stages = 3 },
        ],
        key = [n_ctx, hq, hkv],
    )
)]
/// [`attn_bwd_dq`] and [`attn_bwd_dq_d128`] for the forward with dropout
/// ([`attn_fwd_dropout`], the same `seed` and `thresh`): `dP` goes back through the mask and
/// the scale `1 / (1 − p)` before `dS`.
#[allow(clippy::too_many_arguments)]
pub fn attn_bwd_dq_dropout(
    q: Ptr<T>,
    k: Ptr<T>,
    v: Ptr<T>,
    d_o: Ptr<T>,
    lse: Ptr<f32>,
    delta: Ptr<f32>,
    dq: Ptr<T>,
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
    seed: i32,
    thresh: i32,
    T: Type<{ [f16, bf16] }>,
    HEAD_DIM: Const<{ [64, 128] }>,
    CAUSAL: Const<{ [0, 1] }>,
    BM: Const,
    BN: Const,
) {
    attn_backward_dq(
        q,
        k,
        v,
        d_o,
        lse,
        delta,
        dq,
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
        seed,
        thresh,
        T,
        HEAD_DIM,
        CAUSAL,
        BM,
        BN,
        1,
    );
}

/// The preprocessing kernel's grid: `cdiv(n_ctx, 64)` row blocks by `batch · hq`.
pub fn grid_preprocess(batch: usize, hq: usize, n_ctx: usize) -> Grid {
    Grid::xy(cdiv(n_ctx, 64), (batch * hq) as u32)
}

/// The `dK`/`dV` kernels' grid for `bn`-key blocks: `cdiv(n_ctx, bn)` key blocks by
/// `batch · hkv` by `slices`, the column slices of the results (`head_dim / DV`).
pub fn grid_dkdv(batch: usize, hkv: usize, n_ctx: usize, bn: usize, slices: usize) -> Grid {
    Grid::xyz(cdiv(n_ctx, bn), (batch * hkv) as u32, slices as u32)
}

/// The `dQ` kernels' grid for `bm`-row blocks: `cdiv(n_ctx, bm)` query blocks by `batch · hq`.
pub fn grid_dq(batch: usize, hq: usize, n_ctx: usize, bm: usize) -> Grid {
    Grid::xy(cdiv(n_ctx, bm), (batch * hq) as u32)
}
