//! Which elements of a distributed tensor each thread holds, and in which order: the index math of
//! blocked layouts, free of LLVM so that it can be tested on its own.
//!
//! A tensor value with a blocked layout is held by every thread as a list of scalars. Along each
//! dimension `d` a thread owns `reps[d] × chunk[d]` positions, where `spt` is `size_per_thread`,
//! `chunk[d] = min(spt[d], shape[d])` (a dimension shorter than a thread's chunk is held once, not
//! `spt` times), `tile[d] = spt[d] · tpw[d] · wpc[d]` is the layout tile and
//! `reps[d] = max(1, shape[d] / tile[d])`.
//! Its `r`-th repetition, `v`-th element along `d` is the logical index
//! `(r · tile[d] + t[d] · spt[d] + v) mod shape[d]`, where `t[d]` is the thread's position along `d`
//! (lane and warp ids split over the dimensions in `order`, lanes first). When the tensor is
//! smaller than the tile, several threads (and possibly several slots of one thread) hold copies.
//!
//! The list enumerates those positions with the dimension `order[0]` varying fastest and, within a
//! dimension, `v` faster than `r`. So for rank 1 the `k`-th slot is `r = k / chunk`,
//! `v = k % chunk`, and slots `k..k+V` with `V` dividing `chunk` are always one run of a chunk —
//! what a vectorized load or store needs.
//!
//! A tensor with a slice layout is distributed as its parent distributes the tensor with an
//! extent-1 dimension inserted at the sliced dimension ([`Distribution::of`]): one slot along that
//! dimension, and every thread along it holds the same elements. So `expand_dims` keeps a thread's
//! list as it is, and `broadcast` along an extent-1 dimension repeats its one slot.
//!
//! **Counting each element once** (what a reduction needs): call a slot *primary* when its index
//! before the reduction modulo the extent, `rep · tile + t · spt + v`, is below the extent along
//! every dimension. The primary slots of all threads hold every element exactly once: along one
//! dimension the unreduced indices of all threads and slots are `0 .. reps · tile` without
//! repetition, and those below the extent are the elements. Because extents and `spt` are powers
//! of two, a slot is primary along `d` exactly when both
//! - its constant part `rep · tile + v` is below the extent ([`Distribution::static_copy`] is false:
//!   known while compiling), and
//! - the thread's chunk starts inside the tensor, `t · spt < extent`, i.e. `t` is below
//!   [`Distribution::owning_threads`] (known at run time; always true when the tensor covers the
//!   layout tile).

use tile_core::ir::{BlockedLayout, Type};

/// A tensor shape under a blocked layout.
#[derive(Clone, Debug)]
pub(crate) struct Distribution<'a> {
    shape: Vec<u32>,
    layout: &'a BlockedLayout,
}

/// Where one slot of a thread's list sits along one dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    /// Repetition of the layout tile.
    pub rep: u64,
    /// Element within the thread's `size_per_thread` chunk.
    pub v: u64,
}

impl<'a> Distribution<'a> {
    /// The distribution of `shape` under `layout`, or `None` when the ranks differ (the verifier
    /// rules that out).
    pub fn new(shape: &[u32], layout: &'a BlockedLayout) -> Option<Distribution<'a>> {
        let rank = shape.len();
        let ok = rank >= 1
            && layout.size_per_thread.len() == rank
            && layout.threads_per_warp.len() == rank
            && layout.warps_per_cta.len() == rank
            && layout.order.len() == rank
            && layout.order.iter().all(|&d| (d as usize) < rank);
        ok.then(|| Distribution {
            shape: shape.to_vec(),
            layout,
        })
    }

    /// The distribution of a tensor type with a layout (a slice through its parent, see the
    /// module documentation); `None` for a scalar, a missing layout or mismatched ranks.
    pub fn of(ty: &'a Type) -> Option<Distribution<'a>> {
        if !ty.is_tensor() {
            return None;
        }
        let (shape, layout) = ty.layout.as_ref()?.blocked_view(&ty.shape)?;
        Distribution::new(&shape, layout)
    }

    /// The blocked layout the elements are placed by (a slice's parent).
    pub fn layout(&self) -> &'a BlockedLayout {
        self.layout
    }

    /// The tensor's rank.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Extent of dimension `d`.
    pub fn extent(&self, d: usize) -> u64 {
        self.shape[d] as u64
    }

    /// Consecutive elements a thread holds along `d` (`size_per_thread[d]`).
    pub fn spt(&self, d: usize) -> u64 {
        self.layout.size_per_thread[d] as u64
    }

    /// Elements covered by one repetition of the layout along `d`.
    pub fn tile(&self, d: usize) -> u64 {
        self.layout.tile_extent(d)
    }

    /// Repetitions of the layout tile along `d` (at least 1).
    pub fn reps(&self, d: usize) -> u64 {
        (self.extent(d) / self.tile(d).max(1)).max(1)
    }

    /// Consecutive slots of one chunk along `d`: `spt[d]`, or the extent when that is smaller.
    pub fn chunk(&self, d: usize) -> u64 {
        self.spt(d).min(self.extent(d))
    }

    /// Slots a thread holds along `d`.
    pub fn per_dim(&self, d: usize) -> u64 {
        self.reps(d) * self.chunk(d)
    }

    /// The dimension whose elements are consecutive in a thread's list: the first in `order`
    /// with an extent above 1 (see [`tile_core::ir::run_dim`]).
    pub fn inner_dim(&self) -> usize {
        tile_core::ir::run_dim(&self.shape, self.layout)
    }

    /// Number of scalars each thread holds.
    pub fn elems_per_thread(&self) -> usize {
        (0..self.rank()).map(|d| self.per_dim(d)).product::<u64>() as usize
    }

    /// Where the `k`-th slot of a thread's list sits along every dimension (indexed by dimension).
    pub fn slot(&self, k: usize) -> Vec<Slot> {
        let mut out = vec![Slot { rep: 0, v: 0 }; self.rank()];
        let mut rest = k as u64;
        for &d in &self.layout.order {
            let d = d as usize;
            let n = self.per_dim(d);
            let c = rest % n;
            rest /= n;
            out[d] = Slot {
                rep: c / self.chunk(d),
                v: c % self.chunk(d),
            };
        }
        out
    }

    /// The position in a thread's list of the slot at `slots` (one per dimension): the inverse of
    /// [`Distribution::slot`].
    pub fn slot_index(&self, slots: &[Slot]) -> usize {
        let mut k = 0u64;
        for &d in self.layout.order.iter().rev() {
            let d = d as usize;
            let s = slots[d];
            k = k * self.per_dim(d) + s.rep * self.chunk(d) + s.v;
        }
        k as usize
    }

    /// The constant part of the logical index of `slot` along `d`: `rep · tile + v`, to which a
    /// thread adds `t[d] · spt[d]` before reducing modulo the extent.
    pub fn slot_offset(&self, d: usize, slot: Slot) -> u64 {
        slot.rep * self.tile(d) + slot.v
    }

    /// True when `rep · tile + t · spt + v` may reach the extent along `d`, so the logical index
    /// needs the reduction modulo the extent (only when the tensor is smaller than the layout tile).
    pub fn wraps(&self, d: usize) -> bool {
        self.extent(d) < self.tile(d)
    }

    /// Threads along `d` (lanes times warps).
    pub fn threads_along(&self, d: usize) -> u64 {
        u64::from(self.layout.threads_per_warp[d]) * u64::from(self.layout.warps_per_cta[d])
    }

    /// True when `slot` holds, in every thread, a copy of an element that a primary slot holds
    /// (see the module documentation): its constant offset is past the extent along `d`.
    pub fn static_copy(&self, d: usize, slot: Slot) -> bool {
        self.slot_offset(d, slot) >= self.extent(d)
    }

    /// How many threads along `d`, counted from 0, start their chunk inside the tensor
    /// (`t · spt < extent`); the others hold only copies. All of them when the tensor covers the
    /// layout tile.
    pub fn owning_threads(&self, d: usize) -> u64 {
        self.extent(d)
            .div_ceil(self.spt(d).max(1))
            .min(self.threads_along(d))
    }

    /// True when slot `k` of thread `tid` is primary (see the module documentation): the
    /// specification that [`Distribution::static_copy`] and [`Distribution::owning_threads`]
    /// implement.
    #[cfg(test)]
    pub fn is_primary(&self, tid: u64, k: usize) -> bool {
        let t = self.thread_coords(tid);
        let slot = self.slot(k);
        (0..self.rank()).all(|d| self.slot_offset(d, slot[d]) + t[d] * self.spt(d) < self.extent(d))
    }

    /// The thread's position along every dimension, from its thread id in the program.
    #[cfg(test)]
    pub fn thread_coords(&self, tid: u64) -> Vec<u64> {
        let mut lane = tid % 32;
        let mut warp = tid / 32;
        let mut out = vec![0; self.rank()];
        for &d in &self.layout.order {
            let d = d as usize;
            let tpw = self.layout.threads_per_warp[d] as u64;
            let wpc = self.layout.warps_per_cta[d] as u64;
            out[d] = (warp % wpc) * tpw + lane % tpw;
            lane /= tpw;
            warp /= wpc;
        }
        out
    }

    /// The logical index (one per dimension) of the `k`-th slot of thread `tid`: the specification
    /// that the generated code implements.
    #[cfg(test)]
    pub fn logical_index(&self, tid: u64, k: usize) -> Vec<u64> {
        let t = self.thread_coords(tid);
        let slot = self.slot(k);
        (0..self.rank())
            .map(|d| (self.slot_offset(d, slot[d]) + t[d] * self.spt(d)) % self.extent(d))
            .collect()
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

    /// Every element of the tensor is owned by some thread, and each thread's slots follow the
    /// documented order: `(layout, shape, threads, expected list of thread 1 for rank 1)`.
    #[test]
    fn ownership() {
        type Case = (BlockedLayout, Vec<u32>, Option<Vec<u64>>);
        let cases: &[Case] = &[
            // 512 elements, 4 per thread, 4 warps: one rep, thread 1 holds 4..8.
            (
                blocked(&[4], &[32], &[4], &[0]),
                vec![512],
                Some(vec![4, 5, 6, 7]),
            ),
            // 1024 elements: two reps of the 512-element tile.
            (
                blocked(&[4], &[32], &[4], &[0]),
                vec![1024],
                Some(vec![4, 5, 6, 7, 516, 517, 518, 519]),
            ),
            // Smaller than the tile: copies, wrapped modulo the extent.
            (
                blocked(&[4], &[32], &[4], &[0]),
                vec![64],
                Some(vec![4, 5, 6, 7]),
            ),
            (blocked(&[4], &[32], &[1], &[0]), vec![2], Some(vec![0, 1])),
            (
                blocked(&[1], &[32], &[4], &[0]),
                vec![256],
                Some(vec![1, 129]),
            ),
            // Smaller than one warp's share, and smaller than one chunk.
            (blocked(&[2], &[32], &[4], &[0]), vec![16], Some(vec![2, 3])),
            // A dimension shorter than the chunk is held once.
            (
                blocked(&[8], &[32], &[2], &[0]),
                vec![4],
                Some(vec![0, 1, 2, 3]),
            ),
            (
                blocked(&[8], &[32], &[1], &[0]),
                vec![8],
                Some(vec![0, 1, 2, 3, 4, 5, 6, 7]),
            ),
            // Rank 2, row-major and column-major.
            (
                blocked(&[1, 4], &[4, 8], &[2, 2], &[1, 0]),
                vec![16, 64],
                None,
            ),
            (
                blocked(&[2, 1], &[16, 2], &[1, 4], &[0, 1]),
                vec![64, 8],
                None,
            ),
            (
                blocked(&[2, 4], &[8, 4], &[2, 2], &[1, 0]),
                vec![4, 8],
                None,
            ),
            // Extent-1 dimensions (a sliced or expanded tensor) hold one slot.
            (
                blocked(&[2, 4], &[8, 4], &[2, 2], &[1, 0]),
                vec![1, 64],
                None,
            ),
            (
                blocked(&[2, 4], &[8, 4], &[2, 2], &[1, 0]),
                vec![32, 1],
                None,
            ),
        ];
        for (layout, shape, thread1) in cases {
            let d = Distribution::new(shape, layout).expect("ranks match");
            let threads = 32 * layout.num_warps() as u64;
            let numel: u64 = shape.iter().map(|&x| x as u64).product();
            let mut owned = vec![false; numel as usize];
            let mut primary = vec![0u32; numel as usize];
            for tid in 0..threads {
                let t = d.thread_coords(tid);
                for k in 0..d.elems_per_thread() {
                    let idx = d.logical_index(tid, k);
                    let flat = idx
                        .iter()
                        .zip(shape)
                        .fold(0, |acc, (&i, &n)| acc * n as u64 + i);
                    owned[flat as usize] = true;
                    let is_primary = d.is_primary(tid, k);
                    primary[flat as usize] += u32::from(is_primary);
                    // The compile-time and run-time halves of the test agree with the definition.
                    let slot = d.slot(k);
                    let split = (0..d.rank()).all(|dim| {
                        !d.static_copy(dim, slot[dim]) && t[dim] < d.owning_threads(dim)
                    });
                    assert_eq!(
                        split, is_primary,
                        "{layout} {shape:?} thread {tid} slot {k}"
                    );
                }
            }
            assert!(
                owned.iter().all(|&o| o),
                "{layout} {shape:?}: an element has no owner"
            );
            assert!(
                primary.iter().all(|&n| n == 1),
                "{layout} {shape:?}: an element is not counted exactly once: {primary:?}"
            );
            if let Some(want) = thread1 {
                let got: Vec<u64> = (0..d.elems_per_thread())
                    .map(|k| d.logical_index(1, k)[0])
                    .collect();
                assert_eq!(&got, want, "{layout} {shape:?}");
            }
        }
    }

    /// `slot_index` inverts `slot`.
    #[test]
    fn slot_index_inverts_slot() {
        let layout = blocked(&[2, 4], &[8, 4], &[4, 1], &[1, 0]);
        for shape in [[64u32, 32], [1, 32], [64, 1], [2, 2]] {
            let d = Distribution::new(&shape, &layout).expect("ranks match");
            for k in 0..d.elems_per_thread() {
                assert_eq!(d.slot_index(&d.slot(k)), k, "{shape:?} slot {k}");
            }
        }
    }

    /// Consecutive slots along the inner dimension are consecutive elements within a chunk.
    #[test]
    fn runs_are_contiguous() {
        let layout = blocked(&[2, 4], &[8, 4], &[4, 1], &[1, 0]);
        let shape = [64u32, 32];
        let d = Distribution::new(&shape, &layout).expect("ranks match");
        for tid in [0, 5, 77] {
            for k in (0..d.elems_per_thread()).step_by(4) {
                let first = d.logical_index(tid, k);
                for j in 1..4 {
                    let next = d.logical_index(tid, k + j);
                    assert_eq!(next[0], first[0]);
                    assert_eq!(next[1], first[1] + j as u64);
                }
            }
        }
    }
}
