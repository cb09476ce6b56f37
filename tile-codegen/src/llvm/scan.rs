//! Lowering of `scan`: a running combination along one axis, in three levels as the reductions
//! (`reduce`), for layouts whose bits along the axis are, from least to most significant, some
//! register bits, then consecutive lane bits, then consecutive warp bits ([`Plan`]; the layout pass
//! gives every scan such a layout, see `passes::assign_layouts::scan_layout`).
//!
//! 1. **In the thread**: per group of registers with one position along the other dimensions,
//!    a sequential scan in axis order (from the end for `reverse`).
//! 2. **In the warp**: the threads' totals are scanned over the lane bits along the axis
//!    (Hillis–Steele: step `i` takes the value `2^i` positions back with `shfl.sync.idx`); each
//!    thread then combines the inclusive value of the position before it (`shfl.sync.idx` again)
//!    into its registers.
//! 3. **Across warps**: the last position of each warp along the axis (the first for `reverse`)
//!    writes its warp's total to a scratch array (`warps along the axis × groups`), a barrier
//!    follows, and each thread combines the totals of the warps before it, in warp order.
//!
//! Positions with nothing before them keep their value (no identity element is needed, so `max`
//! and `min` of floats need no infinities): every combination is a `select` on the position.
//! Combining is the element-wise `binary` op of the scan's kind, with the interpreter's
//! semantics; float sums and products associate differently from the interpreter's sequential
//! order, so they agree to rounding, not bit for bit.

use inkwell::values::{BasicValueEnum, IntValue};
use inkwell::IntPredicate;
use tile_core::ir::{BinOp, OpData, ScanKind, Type};

use super::layout::Distribution;
use super::lower::{bug, dtype, Lowerer, OrBug, OrLlvm, Result};

/// How a layout spreads one axis: `reg_bits` low bits in registers, then `lane_len` lane bits
/// from lane bit `lane_shift`, then `warp_len` warp bits from warp bit `warp_shift`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Axis bits held in registers.
    pub reg_bits: u32,
    /// First lane bit along the axis.
    pub lane_shift: u32,
    /// Lane bits along the axis.
    pub lane_len: u32,
    /// First warp bit along the axis.
    pub warp_shift: u32,
    /// Warp bits along the axis.
    pub warp_len: u32,
}

impl Plan {
    /// The plan of `dist` along `axis`; `Err` when the layout does not spread the axis as the
    /// lowering needs (a basis across dimensions, or bits out of order).
    pub(crate) fn of(dist: &Distribution, axis: usize) -> Result<Plan> {
        let ll = dist.linear();
        let bits = dist.extent(axis).trailing_zeros();
        let along = |j: u32| ll.dim_bit(axis, j as usize);
        let axis_mask: u64 = (0..bits).map(along).sum();
        // Every basis lies along the axis (one bit) or off it.
        for b in ll.reg.iter().chain(&ll.lane).chain(&ll.warp) {
            if b & axis_mask != 0 && (b & !axis_mask != 0 || b.count_ones() != 1) {
                return Err("a scan's layout mixes its axis with other dimensions".into());
            }
        }
        let find = |bases: &[u64], j: u32| bases.iter().position(|&b| b == along(j));
        let mut plan = Plan {
            reg_bits: 0,
            lane_shift: 0,
            lane_len: 0,
            warp_shift: 0,
            warp_len: 0,
        };
        let mut j = 0;
        while j < bits && find(&ll.reg, j).is_some() {
            plan.reg_bits += 1;
            j += 1;
        }
        if let Some(s) = (j < bits).then(|| find(&ll.lane, j)).flatten() {
            plan.lane_shift = s as u32;
            while j < bits && find(&ll.lane, j) == Some((plan.lane_shift + plan.lane_len) as usize)
            {
                plan.lane_len += 1;
                j += 1;
            }
        }
        if let Some(s) = (j < bits).then(|| find(&ll.warp, j)).flatten() {
            plan.warp_shift = s as u32;
            while j < bits && find(&ll.warp, j) == Some((plan.warp_shift + plan.warp_len) as usize)
            {
                plan.warp_len += 1;
                j += 1;
            }
        }
        if j < bits {
            return Err(
                "a scan's layout must hold its axis in registers, then lanes, then warps".into(),
            );
        }
        Ok(plan)
    }
}

/// A group of a thread's registers: their offset along the other dimensions, and each register's
/// position along the axis with its index, in scan order.
type Group = (Vec<u64>, Vec<(u64, usize)>);

/// Scratch bytes `scan {axis}` of an operand of type `ty` needs: one element per warp along the
/// axis and position along the other dimensions, when warps lie along the axis.
pub(crate) fn scratch_bytes(ty: &Type, axis: u32) -> Result<u64> {
    let dist = Distribution::of(ty)?;
    let axis = axis as usize;
    let plan = Plan::of(&dist, axis)?;
    if plan.warp_len == 0 {
        return Ok(0);
    }
    let size = u64::from(dtype(ty).size_bytes());
    let groups = dist.numel() / dist.extent(axis);
    Ok((groups << plan.warp_len) * size)
}

/// The element-wise op a scan combines with.
fn combiner(kind: ScanKind) -> BinOp {
    match kind {
        ScanKind::Sum => BinOp::Add,
        ScanKind::Prod => BinOp::Mul,
        ScanKind::Max => BinOp::Max,
        ScanKind::Min => BinOp::Min,
    }
}

impl<'ctx> Lowerer<'_, 'ctx> {
    /// `scan {kind} {axis} {reverse}`: this thread's elements of the result.
    pub(super) fn scan_op(
        &mut self,
        kind: ScanKind,
        axis: u32,
        reverse: bool,
        data: &OpData,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let ty = self.operand_type(data, 0);
        let d = dtype(ty);
        if !d.is_arith() {
            bug(format_args!("a scan of 32- or 64-bit numbers, found `{d}`"));
        }
        let op = combiner(kind);
        let dist = self.tensor_distribution(ty);
        let axis = axis as usize;
        let plan = Plan::of(&dist, axis)?;
        let mut vals = self.operand(data, 0).to_vec();

        // Groups: registers with one position along the other dimensions, in axis order.
        let mut groups: Vec<Group> = Vec::new();
        for k in 0..vals.len() {
            let mut off = dist.reg_offset(k);
            let pos = off[axis];
            off[axis] = 0;
            match groups.iter_mut().find(|(o, _)| *o == off) {
                Some((_, m)) => m.push((pos, k)),
                None => groups.push((off, vec![(pos, k)])),
            }
        }
        for (_, m) in &mut groups {
            m.sort_unstable();
            if reverse {
                m.reverse();
            }
        }

        // 1. In the thread.
        let mut totals = Vec::with_capacity(groups.len());
        for (_, m) in &groups {
            for w in 0..m.len().saturating_sub(1) {
                let (prev, next) = (m[w].1, m[w + 1].1);
                vals[next] = self.binary(op, d, vals[prev], vals[next], false)?;
            }
            let last = m.last().or_bug("registers in each scan group").1;
            totals.push(vals[last]);
        }

        let i32_ty = self.context.i32_type();
        let c = |x: u64| i32_ty.const_int(x, false);
        let tid = self.tid()?;
        // 2. Across the lanes along the axis.
        if plan.lane_len > 0 {
            let b = &self.builder;
            let lane = b.build_and(tid, c(31), "").llvm()?;
            let field = b
                .build_right_shift(lane, c(u64::from(plan.lane_shift)), false, "")
                .llvm()?;
            let pos = b.build_and(field, c((1 << plan.lane_len) - 1), "").llvm()?;
            let last = (1u64 << plan.lane_len) - 1;
            // The lane `steps` positions back (forward) or ahead (reverse), and whether it exists.
            let neighbour = |me: &Self, steps: u64| -> Result<(IntValue<'ctx>, IntValue<'ctx>)> {
                let b = &me.builder;
                let delta = c(steps << plan.lane_shift);
                Ok(if reverse {
                    (
                        b.build_int_add(lane, delta, "").llvm()?,
                        b.build_int_compare(IntPredicate::ULE, pos, c(last - steps), "")
                            .llvm()?,
                    )
                } else {
                    (
                        b.build_int_sub(lane, delta, "").llvm()?,
                        b.build_int_compare(IntPredicate::UGE, pos, c(steps), "")
                            .llvm()?,
                    )
                })
            };
            let mut inclusive = totals.clone();
            for i in 0..plan.lane_len {
                let (src, has) = neighbour(self, 1 << i)?;
                for t in &mut inclusive {
                    let other = self.shuffle_idx(d, *t, src)?;
                    let both = self.binary(op, d, other, *t, false)?;
                    *t = self.builder.build_select(has, both, *t, "").llvm()?;
                }
            }
            let (src, has) = neighbour(self, 1)?;
            for (g, (_, m)) in groups.iter().enumerate() {
                let before = self.shuffle_idx(d, inclusive[g], src)?;
                for &(_, k) in m {
                    let both = self.binary(op, d, before, vals[k], false)?;
                    vals[k] = self.builder.build_select(has, both, vals[k], "").llvm()?;
                }
            }
            totals = inclusive;
        }

        // 3. Across the warps along the axis.
        if plan.warp_len > 0 {
            let warps = 1u64 << plan.warp_len;
            let n_groups = dist.numel() / dist.extent(axis);
            let elem = totals.first().or_bug("a scan group").get_type();
            let smem = self.shared_array(elem, warps * n_groups)?;
            let t = self.thread_coords(&dist)?;
            // Each group's row-major index along the other dimensions.
            let mut group_index = Vec::with_capacity(groups.len());
            for (_, m) in &groups {
                let k = m[0].1;
                let mut g = c(0);
                for dim in (0..dist.rank()).filter(|&x| x != axis) {
                    let i = self.index_along(&dist, &t, dim, k)?;
                    let scaled = self
                        .builder
                        .build_int_nsw_mul(g, c(dist.extent(dim)), "")
                        .llvm()?;
                    g = self.builder.build_int_nsw_add(scaled, i, "").llvm()?;
                }
                group_index.push(g);
            }
            let b = &self.builder;
            let warp = b.build_right_shift(tid, c(5), false, "").llvm()?;
            let wfield = b
                .build_right_shift(warp, c(u64::from(plan.warp_shift)), false, "")
                .llvm()?;
            let wpos = b.build_and(wfield, c(warps - 1), "").llvm()?;
            // The writer of each warp: the last lane position (the first for `reverse`), no copy.
            let lane_mask = ((1u64 << plan.lane_len) - 1) << plan.lane_shift;
            let owner = self.owner(&dist)?;
            let writer = if reverse {
                self.tid_bits_clear(lane_mask)?
            } else if lane_mask != 0 {
                let b = &self.builder;
                let bits = b.build_and(tid, c(lane_mask), "").llvm()?;
                Some(
                    b.build_int_compare(IntPredicate::EQ, bits, c(lane_mask), "")
                        .llvm()?,
                )
            } else {
                None
            };
            let writer = match (writer, owner) {
                (Some(a), Some(o)) => Some(self.builder.build_and(a, o, "").llvm()?),
                (a, o) => a.or(o),
            };
            let base = self
                .builder
                .build_int_nsw_mul(wpos, c(n_groups), "")
                .llvm()?;
            let tot = totals.clone();
            let gi = group_index.clone();
            self.guarded(writer, |me| {
                for (&g, &v) in gi.iter().zip(&tot) {
                    let at = me.builder.build_int_nsw_add(base, g, "").llvm()?;
                    me.shared_store(smem, elem, at, v)?;
                }
                Ok(())
            })?;
            self.barrier()?;
            let order: Vec<u64> = if reverse {
                (0..warps).rev().collect()
            } else {
                (0..warps).collect()
            };
            for (gidx, (_, m)) in groups.iter().enumerate() {
                let mut acc: Option<(BasicValueEnum<'ctx>, IntValue<'ctx>)> = None;
                for &w in &order {
                    let b = &self.builder;
                    let before = if reverse {
                        b.build_int_compare(IntPredicate::UGT, c(w), wpos, "")
                    } else {
                        b.build_int_compare(IntPredicate::ULT, c(w), wpos, "")
                    }
                    .llvm()?;
                    let at = b
                        .build_int_nsw_add(c(w * n_groups), group_index[gidx], "")
                        .llvm()?;
                    let v = self.shared_load(smem, elem, at)?;
                    acc = Some(match acc {
                        None => (v, before),
                        Some((a, has)) => {
                            let both = self.binary(op, d, a, v, false)?;
                            let b = &self.builder;
                            let next = b.build_select(has, both, v, "").llvm()?;
                            let a = b.build_select(before, next, a, "").llvm()?;
                            (a, b.build_or(has, before, "").llvm()?)
                        }
                    });
                }
                let (prefix, has) = acc.or_bug("warps along the scan's axis");
                for &(_, k) in m {
                    let both = self.binary(op, d, prefix, vals[k], false)?;
                    vals[k] = self.builder.build_select(has, both, vals[k], "").llvm()?;
                }
            }
        }
        Ok(vals)
    }
}
