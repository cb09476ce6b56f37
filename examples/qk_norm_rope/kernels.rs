//! Per-head RMSNorm of q and k followed by neox-style rotary embedding, in place in a packed
//! `qkv` buffer (`[tokens, (q_heads + 2·kv_heads)·128]`, bf16), as vLLM's fused QK-norm + RoPE
//! kernel does; v is untouched. Fused: one program per (block of 8 q/k heads, token) loads the
//! heads once as an 8 × 128 tile, normalizes them and rotates them (`roll` by half a head gives
//! each element its partner). Unfused: an
//! RMSNorm kernel, then a RoPE kernel (one program per head and token), with the normalized heads
//! written to and read back from memory in between.
//!
//! Layout facts: head dimension 128 (two halves of 64, rotated as `(x1·cos − x2·sin,
//! x2·cos + x1·sin)`), `cos_sin` holds 64 cosines then 64 sines per position (bf16), the weights
//! are per head dimension (128, bf16), shared by all q heads (`qw`) and all k heads (`kw`).

use tile::prelude::*;

/// Head dimension.
pub const HEAD_DIM: i32 = 128;

#[tile_kernel(num_warps = 4)]
/// Fused per-head RMSNorm + RoPE on `NH` q/k heads of one token (program (head block, token)):
/// an `NH × 128` tile of whole heads (16-byte accesses), the sums of squares along the rows, the
/// weights and the token's cos/sin broadcast down the heads, and each element's rotation partner
/// (`j ± 64`) from `roll` by half a head, which is a lane shuffle in this layout.
#[allow(clippy::too_many_arguments)]
pub fn qk_norm_rope(
    qkv: Ptr<bf16, { tokens * stride }>,
    positions: Ptr<i32, tokens>,
    cos_sin: Ptr<bf16, { max_pos * 128 }>,
    qw: Ptr<bf16, 128>,
    kw: Ptr<bf16, 128>,
    tokens: i32,
    stride: i32,
    q_heads: i32,
    qk_heads: i32,
    max_pos: i32,
    eps: f32,
    D: Const<128>,
    NH: Const<8>,
) {
    let tok = program_id(1);
    let h = program_id(0) * NH + arange(0, NH);
    let j = arange(0, D);
    let rows = (h < qk_heads).expand_dims(1);
    let offs = tok * stride + h.expand_dims(1) * D + j.expand_dims(0);
    let x = load(qkv + offs, rows) as f32;
    // Choosing the weight before widening it keeps the instruction count down.
    let w = select((h < q_heads).expand_dims(1), load(qw + j), load(kw + j)) as f32;
    let r = rsqrt((x * x).sum(1) / 128.0 + eps).expand_dims(1);
    // vLLM rounds the normalized head to the model's type before the rotation.
    let y = ((x * r) * w) as bf16;
    let partner = y.roll(64, 1) as f32;
    // First half: y·cos − partner·sin; second half: y·cos + partner·sin.
    let half = j % 64;
    let p = load(positions + tok) * D;
    let c = load(cos_sin + p + half) as f32;
    let s = load(cos_sin + p + 64 + half) as f32;
    let s = select(j < 64, 0.0 - s, s);
    store(qkv + offs, ((y as f32) * c + partner * s) as bf16, rows);
}

#[tile_kernel(num_warps = 4)]
/// The access pattern's ceiling, not part of the computation: each q/k head of a token read and
/// written back unchanged, in place, with the fused kernel's programs and tiles (v untouched).
pub fn qk_touch(
    qkv: Ptr<bf16, { tokens * stride }>,
    tokens: i32,
    stride: i32,
    qk_heads: i32,
    D: Const<128>,
    NH: Const<8>,
) {
    let h = program_id(0) * NH + arange(0, NH);
    let rows = (h < qk_heads).expand_dims(1);
    let offs = program_id(1) * stride + h.expand_dims(1) * D + arange(0, D).expand_dims(0);
    store(qkv + offs, load(qkv + offs, rows), rows);
}

#[tile_kernel(num_warps = 1)]
/// Unfused step 1: per-head RMSNorm of the q and k heads, in place.
pub fn qk_norm(
    qkv: Ptr<bf16, { tokens * stride }>,
    qw: Ptr<bf16, 128>,
    kw: Ptr<bf16, 128>,
    tokens: i32,
    stride: i32,
    q_heads: i32,
    eps: f32,
    D: Const<128>,
) {
    let head = program_id(0);
    let i = arange(0, D);
    let base = program_id(1) * stride + head * D;
    let x = load(qkv + base + i) as f32;
    let w = select(head < q_heads, load(qw + i) as f32, load(kw + i) as f32);
    let r = rsqrt((x * x).sum() / 128.0 + eps);
    store(qkv + base + i, (x * r * w) as bf16);
}

#[tile_kernel(num_warps = 1)]
/// Unfused step 2: neox-style RoPE of the q and k heads, in place.
pub fn rope(
    qkv: Ptr<bf16, { tokens * stride }>,
    positions: Ptr<i32, tokens>,
    cos_sin: Ptr<bf16, { max_pos * 128 }>,
    tokens: i32,
    stride: i32,
    max_pos: i32,
    HALF: Const<64>,
) {
    let tok = program_id(1);
    let i = arange(0, HALF);
    let base = tok * stride + program_id(0) * (2 * HALF);
    let x1 = load(qkv + base + i) as f32;
    let x2 = load(qkv + base + HALF + i) as f32;
    let p = load(positions + tok) * (2 * HALF);
    let c = load(cos_sin + p + i) as f32;
    let s = load(cos_sin + p + HALF + i) as f32;
    store(qkv + base + i, (x1 * c - x2 * s) as bf16);
    store(qkv + base + HALF + i, (x2 * c + x1 * s) as bf16);
}

/// Every kernel of this example.
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    vec![
        &qk_norm_rope::KERNEL,
        &qk_touch::KERNEL,
        &qk_norm::KERNEL,
        &rope::KERNEL,
    ]
}

/// The problem's shape.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Tokens.
    pub tokens: i32,
    /// Query heads.
    pub q_heads: i32,
    /// Key (and value) heads.
    pub kv_heads: i32,
    /// Rows of the cos/sin cache.
    pub max_pos: i32,
}

impl Shape {
    /// Elements per token in `qkv`.
    pub fn stride(self) -> i32 {
        (self.q_heads + 2 * self.kv_heads) * HEAD_DIM
    }
    fn grid(self) -> Grid {
        Grid::xy(
            (self.q_heads + self.kv_heads) as u32,
            self.tokens.max(0) as u32,
        )
    }
}

/// The inputs besides `qkv`.
pub struct Tables {
    /// Position of each token.
    pub positions: Buffer<i32>,
    /// Cosines and sines per position.
    pub cos_sin: Buffer<bf16>,
    /// q-norm weight.
    pub qw: Buffer<bf16>,
    /// k-norm weight.
    pub kw: Buffer<bf16>,
}

/// Fused: one kernel.
pub fn fused(
    dev: &Device,
    s: Shape,
    qkv: &mut Buffer<bf16>,
    t: &Tables,
    eps: f32,
) -> Result<(), Error> {
    let blocks = ((s.q_heads + s.kv_heads).max(0) as u32).div_ceil(8);
    qk_norm_rope::launch(
        dev,
        Grid::xy(blocks, s.tokens.max(0) as u32),
        qkv,
        &t.positions,
        &t.cos_sin,
        &t.qw,
        &t.kw,
        s.tokens,
        s.stride(),
        s.q_heads,
        s.q_heads + s.kv_heads,
        s.max_pos,
        eps,
    )
}

/// The access pattern's ceiling: [`qk_touch`] over the fused kernel's grid.
pub fn touch(s: Shape, dev: &Device, qkv: &mut Buffer<bf16>) -> Result<(), Error> {
    let blocks = ((s.q_heads + s.kv_heads).max(0) as u32).div_ceil(8);
    qk_touch::launch(
        dev,
        Grid::xy(blocks, s.tokens.max(0) as u32),
        qkv,
        s.tokens,
        s.stride(),
        s.q_heads + s.kv_heads,
    )
}

/// Unfused: norm, then rope.
pub fn unfused(
    dev: &Device,
    s: Shape,
    qkv: &mut Buffer<bf16>,
    t: &Tables,
    eps: f32,
) -> Result<(), Error> {
    qk_norm::launch(
        dev,
        s.grid(),
        qkv,
        &t.qw,
        &t.kw,
        s.tokens,
        s.stride(),
        s.q_heads,
        eps,
    )?;
    rope::launch(
        dev,
        s.grid(),
        qkv,
        &t.positions,
        &t.cos_sin,
        s.tokens,
        s.stride(),
        s.max_pos,
    )
}
