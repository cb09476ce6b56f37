//! The two dropout masks of the dropout examples (`fused_bias_gelu_dropout`,
//! `residual_bias_dropout`), as the CPU computes them from `tile::random`; their kernels include
//! this file.

/// Which random numbers decide the mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Triton's `tl.rand(seed, i)` for element `i = row · cols + col` (its dropout tutorial's
    /// mask): one Philox evaluation per element.
    Rand,
    /// Word `col % 4` of `tl.rand4x(seed, row · ⌈cols / 4⌉ + col / 4)`: one Philox evaluation per
    /// four elements (for `cols` a multiple of 4, word `i % 4` of `tl.rand4x(seed, i / 4)`).
    Words4,
}

impl Stream {
    /// Both.
    pub const ALL: [Stream; 2] = [Stream::Rand, Stream::Words4];

    /// Whether element (`row`, `col`) of a matrix of `cols` columns is kept.
    pub fn keep(self, seed: i64, row: usize, col: usize, cols: usize, p: f32) -> bool {
        let seed = seed as u64;
        match self {
            Stream::Rand => tile::random::rand(seed, (row * cols + col) as u64) > p,
            Stream::Words4 => {
                let q = row * cols.div_ceil(4) + col / 4;
                tile::random::rand4x(seed, q as u64)[col % 4] > p
            }
        }
    }

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Stream::Rand => "rand(i)",
            Stream::Words4 => "rand4x(i/4)",
        }
    }
}
