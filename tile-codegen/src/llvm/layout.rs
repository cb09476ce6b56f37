//! Which elements of a distributed tensor each thread holds, and in which order: a tensor type's
//! layout as its linear map ([`tile_core::ir::LinearLayout`]), with the questions the lowering asks
//! of it, free of LLVM so that they can be tested on their own.
//!
//! A tensor value is held by every thread as a list of scalars, one per register of the linear
//! layout: register `k` of the thread `(lane, warp)` holds the element whose row-major index is
//! the XOR of the bases of the set bits of `k`, `lane` and `warp`. The lowering splits that index
//! into a compile-time part, the register's offset ([`Distribution::reg_offset`]), and a run-time
//! part that depends only on the thread ([`Distribution::thread_terms`]), computed once per kernel
//! and layout. Where the two parts never set the same bit along a dimension
//! ([`Distribution::disjoint`], true for every layout tile builds), the XOR is an addition, which
//! folds into addresses.
//!
//! **Copies.** Lane and warp bits whose basis is 0 select nothing: threads that differ only in
//! them hold the same elements. The thread whose copy bits are all 0 is the element's *owner*
//! ([`Distribution::free_lanes`], [`Distribution::free_warps`]); writing an element once (to shared
//! memory) is done by owners only. Registers never hold copies (see `LinearLayout`).
//!
//! A slice layout's linear map is its parent's with the sliced dimension removed, so a slice
//! tensor has its own rank here; `expand_dims` keeps a thread's list as it is because the parent's
//! map of the extent-1 shape has the same registers.

use std::collections::HashMap;

use tile_core::ir::{InDim, LinearLayout, Type};

/// A tensor type's layout as the lowering reads it.
#[derive(Clone, Debug)]
pub(crate) struct Distribution {
    ll: LinearLayout,
    /// Register of each row-major index a register holds (with lane and warp 0).
    by_offset: HashMap<u64, usize>,
}

/// One term of a thread's part of an index along one dimension: bits `shift .. shift + len` of
/// the lane or warp id, moved to bit `to` of the coordinate (consecutive input bits whose bases
/// are consecutive powers of two along the dimension form one term).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Term {
    /// Lane or warp id.
    pub input: InDim,
    /// First bit of the input.
    pub shift: u32,
    /// Number of bits.
    pub len: u32,
    /// Bit of the coordinate the first input bit lands on.
    pub to: u32,
}

impl Distribution {
    /// The distribution of a tensor type with a layout; `Err` for a scalar, a missing layout or a
    /// layout that does not fit the shape (the verifier rules those out).
    pub fn of(ty: &Type) -> Result<Distribution, String> {
        if !ty.is_tensor() {
            return Err(format!("expected a tensor, found `{ty}`"));
        }
        let layout = ty.layout.as_ref().ok_or_else(|| {
            format!(
                "`{ty}` has no layout; the LLVM back end takes GPU-level IR (run layout assignment first)"
            )
        })?;
        Ok(Distribution::new(layout.linear(&ty.shape)?))
    }

    /// The distribution of a linear layout.
    pub fn new(ll: LinearLayout) -> Distribution {
        let by_offset = (0..ll.regs())
            .map(|k| (ll.apply(k as u64, 0, 0), k))
            .collect();
        Distribution { ll, by_offset }
    }

    /// The linear layout.
    pub fn linear(&self) -> &LinearLayout {
        &self.ll
    }

    /// The tensor's rank.
    pub fn rank(&self) -> usize {
        self.ll.rank()
    }

    /// Extent of dimension `d`.
    pub fn extent(&self, d: usize) -> u64 {
        u64::from(self.ll.shape[d])
    }

    /// Number of elements of the tensor.
    pub fn numel(&self) -> u64 {
        self.ll.numel()
    }

    /// Number of scalars each thread holds.
    pub fn elems_per_thread(&self) -> usize {
        self.ll.regs()
    }

    /// The compile-time part of register `k`'s index, per dimension.
    pub fn reg_offset(&self, k: usize) -> Vec<u64> {
        self.ll.reg_offset(k)
    }

    /// The register whose compile-time part is `offset` (per dimension), if one is.
    pub fn reg_at(&self, offset: &[u64]) -> Option<usize> {
        if offset.len() != self.rank() {
            return None;
        }
        self.by_offset.get(&self.ll.flat(offset)).copied()
    }

    /// The terms of a thread's part of its index along `d` (see [`Term`]).
    pub fn thread_terms(&self, d: usize) -> Vec<Term> {
        let mut out: Vec<Term> = Vec::new();
        let lo = self.ll.dim_bit(d, 0);
        let bits = self.extent(d).trailing_zeros();
        for input in [InDim::Lane, InDim::Warp] {
            for (i, &b) in self.ll.bases(input).iter().enumerate() {
                // The basis's bit along `d`, if it has exactly one and nothing along other
                // dimensions; a basis spanning dimensions is split per dimension below.
                let along = (0..bits).filter(|&j| b & (lo << j) != 0);
                for j in along {
                    match out.last_mut() {
                        Some(t)
                            if t.input == input
                                && t.shift + t.len == i as u32
                                && t.to + t.len == j =>
                        {
                            t.len += 1
                        }
                        _ => out.push(Term {
                            input,
                            shift: i as u32,
                            len: 1,
                            to: j,
                        }),
                    }
                }
            }
        }
        out
    }

    /// True when, along `d`, no bit is set both by some register's offset and by some thread's
    /// part: the index is then their sum.
    pub fn disjoint(&self, d: usize) -> bool {
        let mask = |bases: &[u64]| {
            let lo = self.ll.dim_bit(d, 0);
            let bits = self.extent(d).trailing_zeros();
            let dim_mask = ((1u64 << bits) - 1) * lo;
            bases.iter().fold(0, |m, &b| m | (b & dim_mask))
        };
        let regs = mask(&self.ll.reg);
        let threads = mask(&self.ll.lane) | mask(&self.ll.warp);
        regs & threads == 0
    }

    /// Lane bits whose basis is 0 (lanes differing in them hold copies).
    pub fn free_lanes(&self) -> u64 {
        self.ll.free_lane_mask()
    }

    /// Warp bits whose basis is 0.
    pub fn free_warps(&self) -> u64 {
        self.ll.free_warp_mask()
    }

    /// Where every thread of `self` already holds the elements `to` gives it (same lane and warp
    /// maps, and each of `to`'s register offsets one of `self`'s), the register of `self` each
    /// register of `to` takes: a conversion between the two is a renaming of registers. An mma
    /// accumulator and the `A` operand layout of the next product over the same parent are such a
    /// pair (flash attention's `P`).
    pub fn register_permutation(&self, to: &Distribution) -> Option<Vec<usize>> {
        let (a, b) = (&self.ll, &to.ll);
        if a.shape != b.shape
            || a.bases(InDim::Lane) != b.bases(InDim::Lane)
            || a.bases(InDim::Warp) != b.bases(InDim::Warp)
        {
            return None;
        }
        (0..b.regs())
            .map(|k| self.by_offset.get(&b.apply(k as u64, 0, 0)).copied())
            .collect()
    }

    /// The dimension and length of the run of consecutive elements in a thread's first registers
    /// (see [`LinearLayout::contiguous_run`]); every aligned group of that many registers is such a
    /// run, since the run's register bits come first.
    pub fn contiguous_run(&self) -> (usize, u64) {
        self.ll.contiguous_run()
    }

    /// The row-major index (one coordinate per dimension) of register `k` of the thread
    /// `(lane, warp)`: the specification that the generated code implements.
    #[cfg(test)]
    pub fn logical_index(&self, lane: u64, warp: u64, k: usize) -> Vec<u64> {
        self.ll.coords(self.ll.apply(k as u64, lane, warp))
    }

    /// A thread's part of its index along `d`, evaluated from [`Distribution::thread_terms`] as
    /// the generated code does.
    #[cfg(test)]
    pub fn thread_part(&self, lane: u64, warp: u64, d: usize) -> u64 {
        self.thread_terms(d)
            .iter()
            .map(|t| {
                let x = if t.input == InDim::Lane { lane } else { warp };
                ((x >> t.shift) & ((1 << t.len) - 1)) << t.to
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tile_core::ir::{BlockedLayout, DotOperandLayout, Layout, MmaLayout};

    fn blocked(spt: &[u32], tpw: &[u32], wpc: &[u32], order: &[u32]) -> Layout {
        Layout::Blocked(BlockedLayout {
            size_per_thread: spt.to_vec(),
            threads_per_warp: tpw.to_vec(),
            warps_per_cta: wpc.to_vec(),
            order: order.to_vec(),
        })
    }

    fn cases() -> Vec<(Layout, Vec<u32>)> {
        let mma = MmaLayout {
            version: 2,
            warps_per_cta: vec![2, 2],
        };
        let op = |i| {
            Layout::DotOperand(DotOperandLayout {
                op_idx: i,
                parent: Box::new(Layout::Mma(mma.clone())),
                k_width: 2,
            })
        };
        vec![
            (blocked(&[4], &[32], &[4], &[0]), vec![1024]),
            (blocked(&[4], &[32], &[4], &[0]), vec![64]),
            (blocked(&[2], &[32], &[4], &[0]), vec![16]),
            (blocked(&[1, 4], &[4, 8], &[2, 2], &[1, 0]), vec![16, 64]),
            (blocked(&[2, 1], &[16, 2], &[1, 4], &[0, 1]), vec![64, 8]),
            (blocked(&[2, 4], &[8, 4], &[2, 2], &[1, 0]), vec![4, 8]),
            (blocked(&[2, 4], &[8, 4], &[2, 2], &[1, 0]), vec![1, 64]),
            (Layout::Mma(mma.clone()), vec![64, 64]),
            (Layout::Mma(mma.clone()), vec![16, 8]),
            (Layout::Mma(mma.clone()).sliced(1), vec![64]),
            (Layout::Mma(mma.clone()).sliced(0), vec![64]),
            (op(0), vec![64, 32]),
            (op(1), vec![32, 64]),
        ]
    }

    /// A scalar, and a tensor without a layout (tile-level IR, which `llvm::compile` is handed
    /// in tests and tools), have no distribution: an error that names the type.
    #[test]
    fn scalars_and_unplaced_tensors_have_no_distribution() {
        let f32 = tile_core::ir::DType::F32;
        let e = Distribution::of(&Type::scalar(f32)).unwrap_err();
        assert_eq!(e, "expected a tensor, found `f32`");
        let unplaced = Type::tensor(tile_core::ir::Elem::Scalar(f32), vec![128]);
        let e = Distribution::of(&unplaced).unwrap_err();
        assert!(e.starts_with("`tensor<128xf32>` has no layout"), "{e}");
    }

    /// The split into a thread part and register offsets adds up to the linear map, every
    /// element is held, and owners (copy bits 0) hold each element exactly once.
    #[test]
    fn parts_add_up_and_owners_hold_each_element_once() {
        for (layout, shape) in cases() {
            let ty = Type {
                elem: tile_core::ir::Elem::Scalar(tile_core::ir::DType::F32),
                shape: shape.clone(),
                layout: Some(layout.clone()),
            };
            let d = Distribution::of(&ty).unwrap();
            let numel = d.numel() as usize;
            let mut owned = vec![0u32; numel];
            let mut held = vec![false; numel];
            let warps = u64::from(layout.num_warps());
            for warp in 0..warps {
                for lane in 0..32 {
                    let owner = lane & d.free_lanes() == 0 && warp & d.free_warps() == 0;
                    for k in 0..d.elems_per_thread() {
                        let idx = d.logical_index(lane, warp, k);
                        let off = d.reg_offset(k);
                        for dim in 0..d.rank() {
                            assert!(d.disjoint(dim), "{layout} {shape:?}");
                            assert_eq!(
                                d.thread_part(lane, warp, dim) + off[dim],
                                idx[dim],
                                "{layout} {shape:?} lane {lane} warp {warp} reg {k}"
                            );
                        }
                        let flat = d.linear().flat(&idx) as usize;
                        held[flat] = true;
                        owned[flat] += u32::from(owner);
                    }
                }
            }
            assert!(held.iter().all(|&h| h), "{layout} {shape:?}");
            assert!(owned.iter().all(|&n| n == 1), "{layout} {shape:?}");
            for k in 0..d.elems_per_thread() {
                assert_eq!(d.reg_at(&d.reg_offset(k)), Some(k));
            }
        }
    }

    /// Consecutive registers along the run are consecutive elements.
    #[test]
    fn runs_are_contiguous() {
        let layout = blocked(&[2, 4], &[8, 4], &[4, 1], &[1, 0]);
        let ty = Type {
            elem: tile_core::ir::Elem::Scalar(tile_core::ir::DType::F32),
            shape: vec![64, 32],
            layout: Some(layout),
        };
        let d = Distribution::of(&ty).unwrap();
        assert_eq!(d.contiguous_run(), (1, 4));
        for (lane, warp) in [(0, 0), (5, 1), (31, 3)] {
            for k in (0..d.elems_per_thread()).step_by(4) {
                let first = d.logical_index(lane, warp, k);
                for j in 1..4 {
                    let next = d.logical_index(lane, warp, k + j);
                    assert_eq!(next[0], first[0]);
                    assert_eq!(next[1], first[1] + j as u64);
                }
            }
        }
    }

    /// Brute force over every lane, warp and register: where `register_permutation` answers, the
    /// register it names holds, in every thread, the element the destination register holds.
    /// An mma accumulator and the `A` operand of the next product over it (all warps along M,
    /// as chained products are placed) are such a pair; `B` and a blocked layout are not.
    #[test]
    fn register_permutations_keep_every_element() {
        let chained = MmaLayout {
            version: 3,
            warps_per_cta: vec![8, 1],
        };
        let acc = Layout::Mma(chained.clone());
        let a = Layout::DotOperand(DotOperandLayout {
            op_idx: 0,
            parent: Box::new(acc.clone()),
            k_width: 2,
        });
        let b = Layout::DotOperand(DotOperandLayout {
            op_idx: 1,
            parent: Box::new(acc.clone()),
            k_width: 2,
        });
        let dist = |l: &Layout, shape: &[u32]| Distribution::new(l.linear(shape).unwrap());
        for shape in [[128u32, 64], [128, 32], [256, 128]] {
            let (from, to) = (dist(&acc, &shape), dist(&a, &shape));
            let perm = from
                .register_permutation(&to)
                .unwrap_or_else(|| panic!("{shape:?}: acc -> A is a renaming"));
            assert_eq!(perm.len(), to.elems_per_thread());
            for warp in 0..8 {
                for lane in 0..32 {
                    for (k, &src) in perm.iter().enumerate() {
                        assert_eq!(
                            from.logical_index(lane, warp, src),
                            to.logical_index(lane, warp, k),
                            "{shape:?} lane {lane} warp {warp} register {k}"
                        );
                    }
                }
            }
            let square = [shape[1], shape[1]];
            assert!(dist(&acc, &square)
                .register_permutation(&dist(&b, &square))
                .is_none());
        }
        let blocked_2d = blocked(&[1, 8], &[4, 8], &[8, 1], &[1, 0]);
        assert!(dist(&acc, &[128, 64])
            .register_permutation(&dist(&blocked_2d, &[128, 64]))
            .is_none());
    }
}
