//! The host-side inputs of qk_norm_rope (packed qkv, positions, the cos/sin cache, the norm
//! weights), generated the same way for the example and tile-bench.

use tile::bf16;

use crate::common::Rng;

/// The inputs besides the problem's shape, on the host.
pub struct Host {
    /// Packed q, k and v heads, `tokens × stride`, in [-2, 2).
    pub qkv: Vec<bf16>,
    /// Each token's position, below `max_pos`.
    pub positions: Vec<i32>,
    /// Per position, 64 cosines then 64 sines of the neox frequencies (head dimension 128).
    pub cos_sin: Vec<bf16>,
    /// q-norm weight, 128 values in [0.5, 1.5).
    pub qw: Vec<bf16>,
    /// k-norm weight, 128 values in [0.5, 1.5).
    pub kw: Vec<bf16>,
}

/// Seeded inputs for `tokens` tokens of `stride` elements and a cache of `max_pos` positions.
pub fn host(tokens: i32, stride: i32, max_pos: i32, seed: u64) -> Host {
    let mut r = Rng::new(seed);
    let b = bf16::from_f32;
    let qkv = r
        .vec((tokens * stride).max(0) as usize, -2.0, 2.0)
        .into_iter()
        .map(b)
        .collect();
    let positions = (0..tokens)
        .map(|_| (r.uniform(0.0, 1.0) * max_pos as f32) as i32 % max_pos)
        .collect();
    let mut cos_sin = Vec::with_capacity((max_pos * 128).max(0) as usize);
    for p in 0..max_pos {
        let freqs: Vec<f64> = (0..64)
            .map(|i| p as f64 / 10000f64.powf(2.0 * i as f64 / 128.0))
            .collect();
        cos_sin.extend(freqs.iter().map(|f| b(f.cos() as f32)));
        cos_sin.extend(freqs.iter().map(|f| b(f.sin() as f32)));
    }
    let qw = r.vec(128, 0.5, 1.5).into_iter().map(b).collect();
    let kw = r.vec(128, 0.5, 1.5).into_iter().map(b).collect();
    Host {
        qkv,
        positions,
        cos_sin,
        qw,
        kw,
    }
}
