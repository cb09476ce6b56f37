//! Linear layouts: the one representation every GPU-level layout is a constructor of.
//!
//! A program's threads hold a tensor as registers: thread `(lane, warp)` holds registers
//! `0 .. 2^R`. Because every extent, every register count, 32 lanes and the warp count are powers of
//! two, where a register sits is a linear map over GF(2) from the bits of `(register, lane, warp)`
//! to the bits of the element's row-major index: each input bit has a *basis* (the index that bit
//! alone selects), and the index of any `(register, lane, warp)` is the XOR of the bases of its set
//! bits. This is Triton's "linear layout" idea, written for tile.
//!
//! A basis of 0 means the bit selects nothing: threads (lanes or warps) that differ only in such
//! bits hold *copies* of the same elements. Registers never hold copies: constructors drop
//! register bits whose basis is 0, so a thread's registers are distinct elements.
//!
//! Everything the back end needs to know about a layout comes from the bases: a register's index
//! offset ([`LinearLayout::reg_offset`]), a thread's part of every index (the lane and warp bases),
//! which threads hold copies ([`LinearLayout::free_lane_mask`]), how many consecutive registers are
//! consecutive elements ([`LinearLayout::contiguous_run`]), and where a given bit of an index lives
//! ([`LinearLayout::find_basis`]), so conversions, reductions and rotations are derived from the
//! maps rather than written per pair of layouts.

use std::fmt;

use super::types::{BlockedLayout, DotOperandLayout, Layout, MmaLayout};

/// Where a tensor's elements live across the registers, lanes and warps of a program.
///
/// Bases are row-major indices into a tensor of `shape` (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LinearLayout {
    /// The tensor's shape (every extent a power of two).
    pub shape: Vec<u32>,
    /// One basis per register bit.
    pub reg: Vec<u64>,
    /// One basis per lane bit (5 bits: 32 lanes).
    pub lane: Vec<u64>,
    /// One basis per warp bit.
    pub warp: Vec<u64>,
}

/// Which input of a linear layout a bit belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InDim {
    /// A register bit.
    Reg,
    /// A lane bit.
    Lane,
    /// A warp bit.
    Warp,
}

/// Lanes in a warp, as bits.
const LANE_BITS: usize = 5;

fn log2(x: u64) -> usize {
    x.max(1).trailing_zeros() as usize
}

impl LinearLayout {
    /// Rank of the tensor.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements of the tensor.
    pub fn numel(&self) -> u64 {
        self.shape.iter().map(|&d| u64::from(d)).product()
    }

    /// Registers each thread holds.
    pub fn regs(&self) -> usize {
        1usize << self.reg.len()
    }

    /// Warps the layout spreads over.
    pub fn num_warps(&self) -> u32 {
        1u32 << self.warp.len()
    }

    /// The bases of one input.
    pub fn bases(&self, d: InDim) -> &[u64] {
        match d {
            InDim::Reg => &self.reg,
            InDim::Lane => &self.lane,
            InDim::Warp => &self.warp,
        }
    }

    /// The row-major index of register `reg` of lane `lane` in warp `warp`.
    pub fn apply(&self, reg: u64, lane: u64, warp: u64) -> u64 {
        let mut x = 0;
        for (bases, v) in [(&self.reg, reg), (&self.lane, lane), (&self.warp, warp)] {
            for (i, &b) in bases.iter().enumerate() {
                if v >> i & 1 == 1 {
                    x ^= b;
                }
            }
        }
        x
    }

    /// A row-major index as one coordinate per dimension.
    pub fn coords(&self, flat: u64) -> Vec<u64> {
        let mut out = vec![0; self.rank()];
        let mut rest = flat;
        for d in (0..self.rank()).rev() {
            let n = u64::from(self.shape[d]);
            out[d] = rest % n;
            rest /= n;
        }
        out
    }

    /// One coordinate per dimension as a row-major index.
    pub fn flat(&self, coords: &[u64]) -> u64 {
        coords
            .iter()
            .zip(&self.shape)
            .fold(0, |acc, (&i, &n)| acc * u64::from(n) + i)
    }

    /// The index offsets of register `k` (what a thread adds to its own part), per dimension.
    pub fn reg_offset(&self, k: usize) -> Vec<u64> {
        self.coords(self.apply(k as u64, 0, 0))
    }

    /// The bit of a row-major index that is bit `bit` of dimension `dim`'s coordinate.
    pub fn dim_bit(&self, dim: usize, bit: usize) -> u64 {
        let below: usize = self.shape[dim + 1..]
            .iter()
            .map(|&n| log2(u64::from(n)))
            .sum();
        1u64 << (below + bit)
    }

    /// Lane bits whose basis is 0 (lanes differing in them hold copies), as a mask of lane ids.
    pub fn free_lane_mask(&self) -> u64 {
        free_mask(&self.lane)
    }

    /// Warp bits whose basis is 0, as a mask of warp ids.
    pub fn free_warp_mask(&self) -> u64 {
        free_mask(&self.warp)
    }

    /// The input bit whose basis is exactly `basis`, if one is.
    pub fn find_basis(&self, basis: u64) -> Option<(InDim, usize)> {
        for d in [InDim::Reg, InDim::Lane, InDim::Warp] {
            if let Some(i) = self.bases(d).iter().position(|&b| b == basis) {
                return Some((d, i));
            }
        }
        None
    }

    /// The dimension along which a thread's first registers are consecutive elements, and how
    /// many are: registers `0 .. len` hold `offset, offset + 1, …` along `dim`. `len` is 1 when
    /// register bit 0 is not the unit step of any dimension (then `dim` is the fastest dimension
    /// with an extent above 1).
    pub fn contiguous_run(&self) -> (usize, u64) {
        let unit = |d: usize| self.dim_bit(d, 0);
        let fallback = (0..self.rank())
            .rev()
            .find(|&d| self.shape[d] > 1)
            .unwrap_or(0);
        let Some(&first) = self.reg.first() else {
            return (fallback, 1);
        };
        let Some(dim) = (0..self.rank()).find(|&d| self.shape[d] > 1 && unit(d) == first) else {
            return (fallback, 1);
        };
        let mut len = 1u64;
        for (i, &b) in self.reg.iter().enumerate() {
            if i < log2(u64::from(self.shape[dim])) && b == self.dim_bit(dim, i) {
                len *= 2;
            } else {
                break;
            }
        }
        (dim, len)
    }

    /// Checks what every distributed layout must satisfy: 5 lane bits, bases inside the tensor, no
    /// register basis of 0, the nonzero bases linearly independent (no element held twice by one
    /// thread pattern) and spanning every element (every element has an owner).
    pub fn check(&self) -> Result<(), String> {
        if self.lane.len() != LANE_BITS {
            return Err(format!("{} lane bits, not 5", self.lane.len()));
        }
        let numel = self.numel();
        if [&self.reg, &self.lane, &self.warp]
            .iter()
            .any(|b| b.iter().any(|&x| x >= numel))
        {
            return Err("a basis lies outside the tensor".into());
        }
        if self.reg.contains(&0) {
            return Err("a register bit selects nothing (registers would hold copies)".into());
        }
        let nonzero: Vec<u64> = [&self.reg, &self.lane, &self.warp]
            .iter()
            .flat_map(|b| b.iter().copied())
            .filter(|&x| x != 0)
            .collect();
        let rank = gf2_rank(&nonzero);
        if rank != nonzero.len() {
            return Err("two bit patterns select the same element".into());
        }
        if 1u64 << rank != numel {
            return Err(format!(
                "the layout reaches {} of the {numel} elements",
                1u64 << rank
            ));
        }
        Ok(())
    }

    /// The layout with dimension `dim` removed (a slice): each basis loses that coordinate, and
    /// register bits that then select nothing are dropped. Call it on the parent's layout of the
    /// shape with an extent of 1 at `dim`, where the coordinate is 0 anyway.
    fn remove_dim(&self, dim: usize) -> LinearLayout {
        let mut shape = self.shape.clone();
        shape.remove(dim);
        let project = |b: u64| {
            let mut c = self.coords(b);
            c.remove(dim);
            c.iter()
                .zip(&shape)
                .fold(0, |acc, (&i, &n)| acc * u64::from(n) + i)
        };
        LinearLayout::from_bases(
            &shape,
            self.reg.iter().map(|&b| project(b)).collect(),
            self.lane.iter().map(|&b| project(b)).collect(),
            self.warp.iter().map(|&b| project(b)).collect(),
        )
    }
}

impl fmt::Display for LinearLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, name: &str, b: &[u64]| -> fmt::Result {
            write!(f, "{name} = [")?;
            for (i, &x) in b.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{:?}", self.coords(x))?;
            }
            f.write_str("]")
        };
        write!(f, "linear<shape = {:?}, ", self.shape)?;
        list(f, "reg", &self.reg)?;
        f.write_str(", ")?;
        list(f, "lane", &self.lane)?;
        f.write_str(", ")?;
        list(f, "warp", &self.warp)?;
        f.write_str(">")
    }
}

fn free_mask(bases: &[u64]) -> u64 {
    bases
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == 0)
        .fold(0, |m, (i, _)| m | 1 << i)
}

/// The rank over GF(2) of a set of bit vectors.
fn gf2_rank(vs: &[u64]) -> usize {
    let mut rows: Vec<u64> = vs.to_vec();
    let mut rank = 0;
    for bit in (0..64).rev() {
        let Some(p) = (rank..rows.len()).find(|&i| rows[i] >> bit & 1 == 1) else {
            continue;
        };
        rows.swap(rank, p);
        let pivot = rows[rank];
        for (i, r) in rows.iter_mut().enumerate() {
            if i != rank && *r >> bit & 1 == 1 {
                *r ^= pivot;
            }
        }
        rank += 1;
    }
    rank
}

/// Builds bases one input bit at a time: a bit that steps `step` along dimension `dim`, or 0 when
/// that step is past the extent (the tensor is smaller than the layout there: copies).
struct Builder<'a> {
    shape: &'a [u32],
}

impl Builder<'_> {
    fn step(&self, dim: usize, step: u64) -> u64 {
        let n = u64::from(self.shape[dim]);
        if step >= n {
            return 0;
        }
        let below: u64 = self.shape[dim + 1..]
            .iter()
            .map(|&x| u64::from(x))
            .product();
        step * below
    }

    /// `bits` bases stepping `first, 2·first, 4·first, …` along `dim`.
    fn run(&self, dim: usize, first: u64, bits: usize) -> impl Iterator<Item = u64> + '_ {
        (0..bits).map(move |i| self.step(dim, first << i))
    }
}

impl LinearLayout {
    /// A layout of `shape` from its bases, dropping register bits that select nothing: the one
    /// place that keeps registers from holding copies (see the module documentation).
    fn from_bases(
        shape: &[u32],
        mut reg: Vec<u64>,
        lane: Vec<u64>,
        warp: Vec<u64>,
    ) -> LinearLayout {
        reg.retain(|&x| x != 0);
        LinearLayout {
            shape: shape.to_vec(),
            reg,
            lane,
            warp,
        }
    }

    /// The layout of `shape` under a blocked layout: along each dimension in `order`, the
    /// thread's chunk (`min(spt, extent)` consecutive elements), then the repetitions of the layout
    /// tile, in registers; lanes and warps split over the dimensions in `order`, lanes first.
    pub fn blocked(b: &BlockedLayout, shape: &[u32]) -> LinearLayout {
        let bl = Builder { shape };
        let mut reg = Vec::new();
        let mut lane = Vec::new();
        let mut warp = Vec::new();
        for &d in &b.order {
            let d = d as usize;
            let n = u64::from(shape[d]);
            let spt = u64::from(b.size_per_thread[d]);
            let tile = b.tile_extent(d);
            reg.extend(bl.run(d, 1, log2(spt.min(n))));
            reg.extend(bl.run(d, tile, log2((n / tile.max(1)).max(1))));
        }
        for &d in &b.order {
            let d = d as usize;
            let spt = u64::from(b.size_per_thread[d]);
            let tpw = u64::from(b.threads_per_warp[d]);
            lane.extend(bl.run(d, spt, log2(tpw)));
        }
        for &d in &b.order {
            let d = d as usize;
            let spt = u64::from(b.size_per_thread[d]);
            let tpw = u64::from(b.threads_per_warp[d]);
            let wpc = u64::from(b.warps_per_cta[d]);
            warp.extend(bl.run(d, spt * tpw, log2(wpc)));
        }
        LinearLayout::from_bases(shape, reg, lane, warp)
    }

    /// The accumulator layout of `mma.sync.m16n8` for an `M × N` tensor: per warp, per 16 × 8
    /// instruction tile, lane `l` holds rows `l / 4` and `l / 4 + 8` and columns `2 · (l % 4) + {0,
    /// 1}` (registers: column + 1, then row + 8); warps tile the tensor in 16 × 8 units (warp bits:
    /// along N, then along M); repetitions over N, then over M, in further register bits.
    pub fn mma(m: &MmaLayout, shape: &[u32]) -> LinearLayout {
        let bl = Builder { shape };
        let (wm, wn) = (u64::from(m.warps_per_cta[0]), u64::from(m.warps_per_cta[1]));
        let (big_m, big_n) = (u64::from(shape[0]), u64::from(shape[1]));
        let mut reg = vec![bl.step(1, 1), bl.step(0, 8)];
        let lane = vec![
            bl.step(1, 2),
            bl.step(1, 4),
            bl.step(0, 1),
            bl.step(0, 2),
            bl.step(0, 4),
        ];
        let mut warp: Vec<u64> = bl.run(1, 8, log2(wn)).collect();
        warp.extend(bl.run(0, 16, log2(wm)));
        reg.extend(bl.run(1, 8 * wn, log2((big_n / (8 * wn)).max(1))));
        reg.extend(bl.run(0, 16 * wm, log2((big_m / (16 * wm)).max(1))));
        LinearLayout::from_bases(shape, reg, lane, warp)
    }

    /// The operand layout of `mma.sync.m16n8k{8·kw}` for operand `idx` (0: `A`, `M × K`; 1: `B`,
    /// `K × N`) whose result has the mma layout `parent`, with `kw` (`k_width`) consecutive `K`
    /// elements per 32-bit register (4 for 8-bit types, 2 for 16-bit types, 1 for tf32). `A`: registers `k + 1 … kw/2`,
    /// row + 8, `k + 4·kw`; lanes: `k` by `kw` (two bits), then rows 1, 2, 4. `B`: registers
    /// `k + 1 … kw/2`, `k + 4·kw`; lanes: `k` by `kw`, then columns 1, 2, 4. Warps as the parent's,
    /// with the bits of the other operand's dimension selecting nothing (those warps hold copies);
    /// repetitions along `K` first, then along `M` (or `N`).
    pub fn dot_operand(d: &DotOperandLayout, parent: &MmaLayout, shape: &[u32]) -> LinearLayout {
        let bl = Builder { shape };
        let kw = u64::from(d.k_width);
        let (wm, wn) = (
            u64::from(parent.warps_per_cta[0]),
            u64::from(parent.warps_per_cta[1]),
        );
        // The dimension of K and of the other extent (M or N) in this operand.
        let (kd, od) = if d.op_idx == 0 { (1, 0) } else { (0, 1) };
        let k_extent = u64::from(shape[kd]);
        let o_extent = u64::from(shape[od]);
        let mut reg: Vec<u64> = bl.run(kd, 1, log2(kw)).collect();
        let mut lane: Vec<u64> = bl.run(kd, kw, 2).collect();
        let mut warp = Vec::new();
        if d.op_idx == 0 {
            reg.push(bl.step(0, 8));
            reg.push(bl.step(1, 4 * kw));
            lane.extend(bl.run(0, 1, 3));
            warp.extend(std::iter::repeat_n(0, log2(wn)));
            warp.extend(bl.run(0, 16, log2(wm)));
            reg.extend(bl.run(kd, 8 * kw, log2((k_extent / (8 * kw)).max(1))));
            reg.extend(bl.run(od, 16 * wm, log2((o_extent / (16 * wm)).max(1))));
        } else {
            reg.push(bl.step(0, 4 * kw));
            lane.extend(bl.run(1, 1, 3));
            warp.extend(bl.run(1, 8, log2(wn)));
            warp.extend(std::iter::repeat_n(0, log2(wm)));
            reg.extend(bl.run(kd, 8 * kw, log2((k_extent / (8 * kw)).max(1))));
            reg.extend(bl.run(od, 8 * wn, log2((o_extent / (8 * wn)).max(1))));
        }
        LinearLayout::from_bases(shape, reg, lane, warp)
    }
}

impl LinearLayout {
    /// The transpose's layout (2-D): every basis with its two coordinates swapped, so each
    /// thread holds the same elements, relabeled, in the same registers.
    pub fn transposed(&self) -> LinearLayout {
        let shape = vec![self.shape[1], self.shape[0]];
        let swap = |b: u64| {
            let c = self.coords(b);
            c[0] + c[1] * u64::from(shape[1])
        };
        let map = |v: &[u64]| v.iter().map(|&b| swap(b)).collect::<Vec<_>>();
        LinearLayout {
            reg: map(&self.reg),
            lane: map(&self.lane),
            warp: map(&self.warp),
            shape,
        }
    }

    /// The layout of the row-major reshape to `shape` (the same element count): an element's
    /// row-major index does not change, so the bases stay and only the shape they index does.
    pub fn reshaped(&self, shape: &[u32]) -> LinearLayout {
        LinearLayout {
            shape: shape.to_vec(),
            ..self.clone()
        }
    }

    /// The layout of `interleave` of two tensors in this layout: an element's row-major index
    /// `i` becomes `2i` (or `2i + 1` for the second operand), so every basis doubles, and the
    /// pair's basis `1` is the first register basis (a thread's registers alternate between the
    /// operands, and a run of `n` consecutive elements becomes one of `2n`).
    pub fn interleaved(&self) -> LinearLayout {
        let mut shape = self.shape.clone();
        if let Some(last) = shape.last_mut() {
            *last *= 2;
        }
        let double = |v: &[u64]| v.iter().map(|&b| b * 2).collect::<Vec<_>>();
        let mut reg = vec![1];
        reg.extend(double(&self.reg));
        LinearLayout::from_bases(&shape, reg, double(&self.lane), double(&self.warp))
    }

    /// The layout of each result of `deinterleave` of a tensor in this layout, the inverse of
    /// [`LinearLayout::interleaved`]: `None` unless the pair's basis `1` is a register basis and
    /// every other basis is even (each pair then lies in one thread's registers); the result
    /// drops that basis and halves the others.
    pub fn deinterleaved(&self) -> Option<LinearLayout> {
        let mut shape = self.shape.clone();
        let last = shape.last_mut()?;
        if *last % 2 != 0 {
            return None;
        }
        *last /= 2;
        let pair = self.reg.iter().position(|&b| b == 1)?;
        let all = self.reg.iter().chain(&self.lane).chain(&self.warp);
        if all.enumerate().any(|(i, &b)| i != pair && b % 2 == 1) {
            return None;
        }
        let half = |v: &[u64]| v.iter().map(|&b| b / 2).collect::<Vec<_>>();
        let reg: Vec<u64> = self
            .reg
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != pair)
            .map(|(_, &b)| b / 2)
            .collect();
        Some(LinearLayout::from_bases(
            &shape,
            reg,
            half(&self.lane),
            half(&self.warp),
        ))
    }

    /// The layout for a tensor of `shape` (the same rank, each extent at most this layout's):
    /// every basis with its coordinates cut to the extents, as a blocked layout wraps around a
    /// tensor smaller than its tile (threads past an extent hold copies, registers past it are
    /// dropped). `Err` when the ranks differ or an extent is larger.
    pub fn restricted(&self, shape: &[u32]) -> Result<LinearLayout, String> {
        if shape == self.shape.as_slice() {
            return Ok(self.clone());
        }
        if shape.len() != self.rank() || shape.iter().zip(&self.shape).any(|(&a, &b)| a > b) {
            return Err(format!(
                "{self} does not cover a tensor of shape {shape:?} (rank {}, extents at most {:?})",
                self.rank(),
                self.shape
            ));
        }
        let cut = |b: u64| {
            self.coords(b)
                .iter()
                .zip(shape)
                .fold(0, |acc, (&i, &n)| acc * u64::from(n) + i % u64::from(n))
        };
        let map = |v: &[u64]| v.iter().map(|&b| cut(b)).collect::<Vec<_>>();
        Ok(LinearLayout::from_bases(
            shape,
            map(&self.reg),
            map(&self.lane),
            map(&self.warp),
        ))
    }

    /// True when `other` places every element in the same thread as this layout and differs at
    /// most in the order of a thread's registers (the same register bases, in any order): a
    /// value moves from one to the other by renumbering registers, without data movement.
    pub fn same_up_to_register_order(&self, other: &LinearLayout) -> bool {
        let sorted = |v: &[u64]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v
        };
        self.shape == other.shape
            && self.lane == other.lane
            && self.warp == other.warp
            && sorted(&self.reg) == sorted(&other.reg)
    }
}

impl Layout {
    /// The layout of `trans` of a 2-D tensor of `shape` in this layout: a blocked layout with
    /// its dimensions swapped (which is exactly the transposed linear map, registers in the same
    /// order), any other kind the general [`LinearLayout::transposed`] map. `Err` when the layout
    /// does not fit `shape`.
    pub fn transposed(&self, shape: &[u32]) -> Result<Layout, String> {
        if shape.len() != 2 {
            return Err(format!(
                "a transpose is of a 2-D tensor, not of shape {shape:?}"
            ));
        }
        if let Layout::Blocked(b) = self {
            self.linear(shape)?;
            let swap = |v: &[u32]| vec![v[1], v[0]];
            return Ok(Layout::Blocked(BlockedLayout {
                size_per_thread: swap(&b.size_per_thread),
                threads_per_warp: swap(&b.threads_per_warp),
                warps_per_cta: swap(&b.warps_per_cta),
                order: b.order.iter().map(|&d| 1 - d).collect(),
            }));
        }
        Ok(Layout::Linear(self.linear(shape)?.transposed()))
    }

    /// The layout of the row-major `reshape` of a tensor of shape `from` in this layout to shape
    /// `to` (the same element count): this layout itself when the shapes are equal, else the
    /// general [`LinearLayout::reshaped`] map. `Err` when the layout does not fit `from`.
    pub fn reshaped(&self, from: &[u32], to: &[u32]) -> Result<Layout, String> {
        if from == to {
            return Ok(self.clone());
        }
        Ok(Layout::Linear(self.linear(from)?.reshaped(to)))
    }

    /// The layout of `interleave` of two tensors of `shape` in this layout
    /// ([`LinearLayout::interleaved`]). `Err` when the layout does not fit `shape`.
    pub fn interleaved(&self, shape: &[u32]) -> Result<Layout, String> {
        Ok(Layout::Linear(self.linear(shape)?.interleaved()))
    }

    /// The layout of each result of `deinterleave` of a tensor of `shape` in this layout
    /// ([`LinearLayout::deinterleaved`]). `Err` when the layout does not fit `shape` or does not
    /// hold each pair of the last dimension in one thread's registers.
    pub fn deinterleaved(&self, shape: &[u32]) -> Result<Layout, String> {
        self.linear(shape)?
            .deinterleaved()
            .map(Layout::Linear)
            .ok_or_else(|| {
                format!("{self} does not hold each pair of the last dimension in one thread's registers")
            })
    }

    /// The linear layout of a tensor of `shape` under this layout; `Err` when the layout does not
    /// fit the shape (ranks differ, a slice past the rank, an operand whose parent is not mma).
    pub fn linear(&self, shape: &[u32]) -> Result<LinearLayout, String> {
        match self {
            Layout::Shared(_) => Err(format!(
                "{self} places a shared-memory buffer; it has no register map"
            )),
            Layout::Linear(l) => l.restricted(shape),
            Layout::Blocked(b) => {
                let rank = shape.len();
                let ok = rank >= 1
                    && b.size_per_thread.len() == rank
                    && b.threads_per_warp.len() == rank
                    && b.warps_per_cta.len() == rank
                    && b.order.len() == rank
                    && b.order.iter().all(|&d| (d as usize) < rank);
                if !ok {
                    return Err(format!("{b} does not have the tensor's rank {rank}"));
                }
                Ok(LinearLayout::blocked(b, shape))
            }
            Layout::Slice(s) => {
                let dim = s.dim as usize;
                if dim > shape.len() {
                    return Err(format!("{self} slices past the rank"));
                }
                let mut full = shape.to_vec();
                full.insert(dim, 1);
                Ok(s.parent.linear(&full)?.remove_dim(dim))
            }
            Layout::Mma(m) => {
                if shape.len() != 2 || m.warps_per_cta.len() != 2 {
                    return Err(format!("{m} is a layout of 2-D tensors"));
                }
                Ok(LinearLayout::mma(m, shape))
            }
            Layout::DotOperand(d) => {
                let Layout::Mma(parent) = &*d.parent else {
                    return Err(format!(
                        "{self}: the parent of an operand layout must be mma"
                    ));
                };
                if shape.len() != 2 || parent.warps_per_cta.len() != 2 {
                    return Err(format!("{self} is a layout of 2-D tensors"));
                }
                if d.op_idx > 1 || !matches!(d.k_width, 1 | 2 | 4) {
                    return Err(format!("{self}: operand 0 or 1, k_width 1, 2 or 4"));
                }
                Ok(LinearLayout::dot_operand(d, parent, shape))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked(spt: &[u32], tpw: &[u32], wpc: &[u32], order: &[u32]) -> BlockedLayout {
        BlockedLayout {
            size_per_thread: spt.to_vec(),
            threads_per_warp: tpw.to_vec(),
            warps_per_cta: wpc.to_vec(),
            order: order.to_vec(),
        }
    }

    /// The blocked constructor against the blocked layout's definition, written out as the
    /// original index arithmetic: along `d`, slot `(rep, v)` of the thread at position `t` holds
    /// `(rep · tile + t · spt + v) mod extent`, slots ordered with `order[0]` fastest and `v` faster
    /// than `rep`, chunks of `min(spt, extent)`.
    #[test]
    fn blocked_matches_definition() {
        let cases = [
            (blocked(&[4], &[32], &[4], &[0]), vec![1024u32]),
            (blocked(&[4], &[32], &[4], &[0]), vec![64]),
            (blocked(&[8], &[32], &[2], &[0]), vec![4]),
            (blocked(&[1, 4], &[4, 8], &[2, 2], &[1, 0]), vec![16, 64]),
            (blocked(&[2, 1], &[16, 2], &[1, 4], &[0, 1]), vec![64, 8]),
            (blocked(&[2, 4], &[8, 4], &[2, 2], &[1, 0]), vec![4, 8]),
            (blocked(&[2, 4], &[8, 4], &[2, 2], &[1, 0]), vec![1, 64]),
            (blocked(&[2, 4], &[8, 4], &[2, 2], &[1, 0]), vec![32, 1]),
        ];
        for (b, shape) in cases {
            let ll = LinearLayout::blocked(&b, &shape);
            ll.check().unwrap_or_else(|e| panic!("{b} {shape:?}: {e}"));
            let rank = shape.len();
            let n = |d: usize| u64::from(shape[d]);
            let spt = |d: usize| u64::from(b.size_per_thread[d]);
            let chunk = |d: usize| spt(d).min(n(d));
            let reps = |d: usize| (n(d) / b.tile_extent(d)).max(1);
            let regs: u64 = (0..rank).map(|d| chunk(d) * reps(d)).product();
            assert_eq!(regs, ll.regs() as u64, "{b} {shape:?}");
            for tid in 0..32 * u64::from(b.num_warps()) {
                let (lane, warp) = (tid % 32, tid / 32);
                let (mut l, mut w) = (lane, warp);
                let mut t = vec![0u64; rank];
                for &d in &b.order {
                    let d = d as usize;
                    let (tpw, wpc) = (b.threads_per_warp[d] as u64, b.warps_per_cta[d] as u64);
                    t[d] = (w % wpc) * tpw + l % tpw;
                    l /= tpw;
                    w /= wpc;
                }
                for k in 0..regs {
                    let mut rest = k;
                    let mut want = vec![0u64; rank];
                    for &d in &b.order {
                        let d = d as usize;
                        let per = chunk(d) * reps(d);
                        let c = rest % per;
                        rest /= per;
                        let (rep, v) = (c / chunk(d), c % chunk(d));
                        want[d] = (rep * b.tile_extent(d) + t[d] * spt(d) + v) % n(d);
                    }
                    let got = ll.coords(ll.apply(k, lane, warp));
                    assert_eq!(got, want, "{b} {shape:?} thread {tid} reg {k}");
                }
            }
        }
    }

    /// Every element's owners by brute force: `(lane, warp, register)` triples holding it.
    fn owners(ll: &LinearLayout) -> Vec<Vec<(u64, u64, u64)>> {
        let mut out = vec![Vec::new(); ll.numel() as usize];
        for warp in 0..u64::from(ll.num_warps()) {
            for lane in 0..32 {
                for k in 0..ll.regs() as u64 {
                    out[ll.apply(k, lane, warp) as usize].push((lane, warp, k));
                }
            }
        }
        out
    }

    /// The mma accumulator against the PTX ISA's fragment table for `mma.m16n8k16` (f32
    /// accumulators): `c_i` of lane `l` is row `l/4 + 8·(i/2)`, column `2·(l%4) + i%2`, per warp
    /// tile, warps tiling 16 × 8 units.
    #[test]
    fn mma_accumulator_matches_ptx_fragments() {
        for (wm, wn, m, n) in [
            (1, 1, 16, 8),
            (2, 2, 64, 64),
            (4, 1, 64, 32),
            (2, 4, 128, 128),
        ] {
            let mma = MmaLayout {
                version: 2,
                warps_per_cta: vec![wm, wn],
            };
            let ll = LinearLayout::mma(&mma, &[m, n]);
            ll.check().unwrap_or_else(|e| panic!("{mma} {m}x{n}: {e}"));
            for warp in 0..(wm * wn) as u64 {
                let (w_m, w_n) = (warp / wn as u64, warp % wn as u64);
                for lane in 0..32u64 {
                    for k in 0..ll.regs() as u64 {
                        let c = ll.coords(ll.apply(k, lane, warp));
                        let (i, rep) = (k % 4, k / 4);
                        let reps_n = (n as u64 / (8 * wn as u64)).max(1);
                        let (rep_m, rep_n) = (rep / reps_n, rep % reps_n);
                        let row = rep_m * 16 * wm as u64 + w_m * 16 + lane / 4 + 8 * (i / 2);
                        let col = rep_n * 8 * wn as u64 + w_n * 8 + 2 * (lane % 4) + i % 2;
                        assert_eq!(
                            c,
                            vec![row, col],
                            "{mma} {m}x{n} warp {warp} lane {lane} reg {k}"
                        );
                    }
                }
            }
        }
    }

    /// Operand fragments against the PTX ISA's tables for `m16n8k16` (16-bit `A`: `a_i` of lane
    /// `l` is row `l/4 + 8·((i/2)%2)`, column `2·(l%4) + i%2 + 8·(i/4)`; `B`: `b_i` is row
    /// `2·(l%4) + i%2 + 8·(i/2)`, column `l/4`) and `m16n8k8` tf32 (`A`: row `l/4 + 8·(i%2)`,
    /// column `l%4 + 4·(i/2)`; `B`: row `l%4 + 4·i`, column `l/4`).
    #[test]
    fn operands_match_ptx_fragments() {
        let parent = MmaLayout {
            version: 2,
            warps_per_cta: vec![1, 1],
        };
        let op = |idx, kw| DotOperandLayout {
            op_idx: idx,
            parent: Box::new(Layout::Mma(parent.clone())),
            k_width: kw,
        };
        let a16 = LinearLayout::dot_operand(&op(0, 2), &parent, &[16, 16]);
        let b16 = LinearLayout::dot_operand(&op(1, 2), &parent, &[16, 8]);
        let a32 = LinearLayout::dot_operand(&op(0, 1), &parent, &[16, 8]);
        let b32 = LinearLayout::dot_operand(&op(1, 1), &parent, &[8, 8]);
        for lane in 0..32u64 {
            let (g, t) = (lane / 4, lane % 4);
            for i in 0..8u64 {
                let want = vec![g + 8 * ((i / 2) % 2), 2 * t + i % 2 + 8 * (i / 4)];
                assert_eq!(
                    a16.coords(a16.apply(i, lane, 0)),
                    want,
                    "A f16 lane {lane} a{i}"
                );
            }
            for i in 0..4u64 {
                let want = vec![2 * t + i % 2 + 8 * (i / 2), g];
                assert_eq!(
                    b16.coords(b16.apply(i, lane, 0)),
                    want,
                    "B f16 lane {lane} b{i}"
                );
                let want = vec![g + 8 * (i % 2), t + 4 * (i / 2)];
                assert_eq!(
                    a32.coords(a32.apply(i, lane, 0)),
                    want,
                    "A tf32 lane {lane} a{i}"
                );
            }
            for i in 0..2u64 {
                let want = vec![t + 4 * i, g];
                assert_eq!(
                    b32.coords(b32.apply(i, lane, 0)),
                    want,
                    "B tf32 lane {lane} b{i}"
                );
            }
        }
        for ll in [&a16, &b16, &a32, &b32] {
            ll.check().unwrap();
        }
    }

    /// Operands over several warps and repetitions: every element is held, warps along the other
    /// operand's dimension hold copies, and the `(m, k)` instruction tile of a warp is where the
    /// accumulator's warp expects it.
    #[test]
    fn operands_with_warps_and_repetitions() {
        for (wm, wn) in [(2, 2), (4, 2), (1, 4), (8, 1)] {
            let parent = MmaLayout {
                version: 2,
                warps_per_cta: vec![wm, wn],
            };
            for (idx, shape) in [(0u32, [128u32, 64u32]), (1, [64, 128])] {
                let d = DotOperandLayout {
                    op_idx: idx,
                    parent: Box::new(Layout::Mma(parent.clone())),
                    k_width: 2,
                };
                let ll = LinearLayout::dot_operand(&d, &parent, &shape);
                ll.check().unwrap_or_else(|e| panic!("{d}: {e}"));
                let own = owners(&ll);
                assert!(own.iter().all(|o| !o.is_empty()));
                let acc = LinearLayout::mma(&parent, &[128, 128]);
                // Warp w's first instruction tile starts at the row (A) or column (B) where the
                // accumulator's warp w starts.
                for warp in 0..(wm * wn) as u64 {
                    let c = ll.coords(ll.apply(0, 0, warp));
                    let r = acc.coords(acc.apply(0, 0, warp));
                    if idx == 0 {
                        assert_eq!(c[0], r[0], "{d} warp {warp}");
                    } else {
                        assert_eq!(c[1], r[1], "{d} warp {warp}");
                    }
                }
            }
        }
    }

    /// A slice holds, per thread, the parent's elements with the sliced coordinate dropped, and
    /// `check` holds for slices of every kind of parent.
    #[test]
    fn slices_of_every_parent() {
        let b = Layout::Blocked(blocked(&[1, 4], &[4, 8], &[2, 2], &[1, 0]));
        let m = Layout::Mma(MmaLayout {
            version: 2,
            warps_per_cta: vec![2, 2],
        });
        for parent in [b, m] {
            for dim in 0..2u32 {
                let s = Layout::Slice(super::super::types::SliceLayout {
                    dim,
                    parent: Box::new(parent.clone()),
                });
                let ll = s.linear(&[64]).unwrap();
                ll.check().unwrap_or_else(|e| panic!("{s}: {e}"));
                let mut full = vec![64u32];
                full.insert(dim as usize, 1);
                let pl = parent.linear(&full).unwrap();
                for warp in 0..4 {
                    for lane in 0..32 {
                        for k in 0..ll.regs() as u64 {
                            let x = ll.apply(k, lane, warp);
                            let found = (0..pl.regs() as u64).any(|j| pl.apply(j, lane, warp) == x);
                            assert!(found, "{s}: lane {lane} warp {warp} reg {k}");
                        }
                    }
                }
            }
        }
    }

    /// A transposed layout holds, in each thread's register `k`, the transposed element of the
    /// operand's register `k` (a blocked layout's swapped dimensions exactly so); a reshaped one
    /// the element of the same row-major index; and both pass `check`.
    #[test]
    fn transposed_and_reshaped_relabel_registers() {
        let b = Layout::Blocked(blocked(&[1, 4], &[4, 8], &[2, 2], &[1, 0]));
        let m = Layout::Mma(MmaLayout {
            version: 2,
            warps_per_cta: vec![2, 2],
        });
        for (l, shape) in [
            (b.clone(), [16u32, 64u32]),
            (b.clone(), [64, 16]),
            (b.clone(), [1, 64]),
            (b, [32, 1]),
            (m.clone(), [64, 64]),
            (m, [32, 16]),
        ] {
            let ll = l.linear(&shape).unwrap();
            let t = l.transposed(&shape).unwrap();
            let tl = t.linear(&[shape[1], shape[0]]).unwrap();
            tl.check().unwrap_or_else(|e| panic!("{t}: {e}"));
            assert_eq!(tl, ll.transposed(), "{l} {shape:?}");
            if matches!(l, Layout::Blocked(_)) {
                assert!(matches!(t, Layout::Blocked(_)), "{t}");
            }
            for warp in 0..4 {
                for lane in 0..32 {
                    for k in 0..ll.regs() as u64 {
                        let c = ll.coords(ll.apply(k, lane, warp));
                        let ct = tl.coords(tl.apply(k, lane, warp));
                        assert_eq!(ct, vec![c[1], c[0]], "{l} {shape:?}");
                    }
                }
            }
            let n = shape[0] * shape[1];
            for to in [vec![n], vec![shape[1], shape[0]], vec![1, n], vec![n, 1]] {
                let r = l.reshaped(&shape, &to).unwrap();
                let rl = r.linear(&to).unwrap();
                rl.check().unwrap_or_else(|e| panic!("{r}: {e}"));
                for warp in 0..4 {
                    for lane in 0..32 {
                        for k in 0..ll.regs() as u64 {
                            assert_eq!(rl.apply(k, lane, warp), ll.apply(k, lane, warp));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn check_rejects_bad_layouts() {
        let ok = LinearLayout {
            shape: vec![64],
            reg: vec![1],
            lane: vec![2, 4, 8, 16, 32],
            warp: vec![],
        };
        ok.check().unwrap();
        let mut dup = ok.clone();
        dup.warp = vec![2];
        assert!(dup.check().is_err());
        let mut zero_reg = ok.clone();
        zero_reg.reg = vec![1, 0];
        assert!(zero_reg.check().is_err());
        let mut short = ok.clone();
        short.reg = vec![];
        assert!(short.check().is_err());
        let mut outside = ok;
        outside.reg = vec![64];
        assert!(outside.check().is_err());
    }

    #[test]
    fn contiguous_runs() {
        let b = blocked(&[1, 8], &[8, 4], &[4, 1], &[1, 0]);
        assert_eq!(
            LinearLayout::blocked(&b, &[64, 32]).contiguous_run(),
            (1, 8)
        );
        assert_eq!(LinearLayout::blocked(&b, &[64, 4]).contiguous_run(), (1, 4));
        assert_eq!(LinearLayout::blocked(&b, &[64, 1]).contiguous_run(), (0, 1));
        let m = MmaLayout {
            version: 2,
            warps_per_cta: vec![2, 2],
        };
        assert_eq!(LinearLayout::mma(&m, &[64, 64]).contiguous_run(), (1, 2));
    }
}
