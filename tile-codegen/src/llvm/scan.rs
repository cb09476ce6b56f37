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
//!
//! `associative_scan` runs the same three levels on tuples (one register of each operand per
//! position), combining by lowering its region's scalar ops once per combination with the
//! region's arguments bound to the earlier and the later tuple; every level combines an earlier
//! tuple with a later one in that order, so the combiner need not commute.

use inkwell::values::{BasicValueEnum, IntValue};
use inkwell::IntPredicate;
use tile_core::ir::{BinOp, DType, OpData, OpKind, ScanKind, Type};

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

/// Scratch bytes a scan of operands of types `tys` along `axis` needs: for each operand, one
/// element per warp along the axis and position along the other dimensions, when warps lie
/// along the axis (the arrays one after another, each from a 16-byte boundary, as the lowering
/// carves them).
pub(crate) fn scratch_bytes<'t>(tys: impl IntoIterator<Item = &'t Type>, axis: u32) -> Result<u64> {
    let mut used = 0u64;
    for ty in tys {
        let dist = Distribution::of(ty)?;
        let axis = axis as usize;
        let plan = Plan::of(&dist, axis)?;
        if plan.warp_len == 0 {
            return Ok(0);
        }
        let size = u64::from(dtype(ty).size_bytes());
        let groups = dist.numel() / dist.extent(axis);
        used = used.next_multiple_of(16) + (groups << plan.warp_len) * size;
    }
    Ok(used)
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

/// How a scan combines an earlier tuple with a later one.
#[derive(Clone, Copy)]
enum Combine<'f> {
    /// One operand, by an element-wise op (`scan`).
    Op(BinOp),
    /// The combiner region of an `associative_scan`.
    Region(&'f OpData),
}

/// One register of each scanned operand.
type Tuple<'ctx> = Vec<BasicValueEnum<'ctx>>;

impl<'ctx> Lowerer<'_, 'ctx> {
    /// `scan {kind} {axis} {reverse}`: this thread's elements of the result.
    pub(super) fn scan_op(
        &mut self,
        kind: ScanKind,
        axis: u32,
        reverse: bool,
        data: &OpData,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let mut out = self.scan_tuples(Combine::Op(combiner(kind)), axis, reverse, data)?;
        Ok(out.pop().or_bug("one scanned tile"))
    }

    /// `associative_scan {axis} {reverse}`: each result's elements in this thread.
    pub(super) fn associative_scan_op(
        &mut self,
        axis: u32,
        reverse: bool,
        data: &OpData,
    ) -> Result<Vec<Vec<BasicValueEnum<'ctx>>>> {
        self.scan_tuples(Combine::Region(data), axis, reverse, data)
    }

    /// `earlier ⊕ later`, a tuple of one register per operand (of element types `ds`).
    fn combine_tuples(
        &mut self,
        how: Combine<'_>,
        ds: &[DType],
        earlier: &[BasicValueEnum<'ctx>],
        later: &[BasicValueEnum<'ctx>],
    ) -> Result<Tuple<'ctx>> {
        let data = match how {
            Combine::Op(op) => {
                return Ok(vec![self.binary(op, ds[0], earlier[0], later[0], false)?])
            }
            Combine::Region(data) => data,
        };
        let f = self.f;
        let region = *data.regions.first().or_bug("a combiner region");
        let block = *f.regions[region.index()]
            .blocks
            .first()
            .or_bug("a block in the combiner");
        for (&a, &v) in f.blocks[block.index()]
            .args
            .iter()
            .zip(earlier.iter().chain(later))
        {
            self.values[a.index()] = Some(vec![v]);
        }
        for &op in &f.blocks[block.index()].ops {
            let d = f.op(op);
            if matches!(d.kind, OpKind::Yield) {
                return (0..d.operands.len())
                    .map(|i| {
                        Ok(*self
                            .operand(d, i)
                            .first()
                            .or_bug("a scalar yielded by the combiner"))
                    })
                    .collect();
            }
            self.lower_nested(op)?;
        }
        bug("a combiner ending with `yield`")
    }

    /// `select(has, both, keep)` per component.
    fn select_tuple(
        &self,
        has: IntValue<'ctx>,
        both: &[BasicValueEnum<'ctx>],
        keep: &[BasicValueEnum<'ctx>],
    ) -> Result<Tuple<'ctx>> {
        both.iter()
            .zip(keep)
            .map(|(&x, &y)| self.builder.build_select(has, x, y, "").llvm())
            .collect()
    }

    /// Where `has` holds (the thread has positions before its own along the axis), each
    /// register of group `g` becomes `befores[g] ⊕ register`; elsewhere it stays. One branch
    /// around the combinations rather than a `select` per register and component: the condition
    /// is the same for all of a thread's registers, and the lanes without a prefix (one per row
    /// of lanes) skip the work.
    fn prefix_where(
        &mut self,
        how: Combine<'_>,
        ds: &[DType],
        has: IntValue<'ctx>,
        groups: &[Group],
        befores: &[Tuple<'ctx>],
        vals: &mut [Tuple<'ctx>],
    ) -> Result<()> {
        let function = self
            .builder
            .get_insert_block()
            .and_then(|bb| bb.get_parent())
            .or_bug("the builder inside the kernel");
        let start = self.builder.get_insert_block().or_bug("an insertion block");
        let then_bb = self.context.append_basic_block(function, "scan.prefix");
        let join_bb = self.context.append_basic_block(function, "scan.join");
        self.builder
            .build_conditional_branch(has, then_bb, join_bb)
            .llvm()?;
        self.builder.position_at_end(then_bb);
        let mut combined: Vec<(usize, Tuple<'ctx>)> = Vec::new();
        for ((_, m), before) in groups.iter().zip(befores) {
            for &(_, k) in m {
                combined.push((k, self.combine_tuples(how, ds, before, &vals[k].clone())?));
            }
        }
        let then_end = self.builder.get_insert_block().or_bug("an insertion block");
        self.builder.build_unconditional_branch(join_bb).llvm()?;
        self.builder.position_at_end(join_bb);
        for (k, both) in combined {
            let mut merged = Vec::with_capacity(both.len());
            for (&kept, &new) in vals[k].iter().zip(&both) {
                let phi = self
                    .builder
                    .build_phi(kept.get_type(), "scan.value")
                    .llvm()?;
                phi.add_incoming(&[(&kept, start), (&new, then_end)]);
                merged.push(phi.as_basic_value());
            }
            vals[k] = merged;
        }
        Ok(())
    }

    /// The three levels over the scan's operands (all of one shape and layout), combined by
    /// `how`: each operand's registers of the result.
    fn scan_tuples(
        &mut self,
        how: Combine<'_>,
        axis: u32,
        reverse: bool,
        data: &OpData,
    ) -> Result<Vec<Vec<BasicValueEnum<'ctx>>>> {
        let n_ops = data.operands.len();
        let ds: Vec<DType> = (0..n_ops)
            .map(|i| dtype(self.operand_type(data, i)))
            .collect();
        if let Some(d) = ds.iter().find(|d| !d.is_arith()) {
            bug(format_args!("a scan of 32- or 64-bit numbers, found `{d}`"));
        }
        let ty = self.operand_type(data, 0);
        let dist = self.tensor_distribution(ty);
        let axis = axis as usize;
        let plan = Plan::of(&dist, axis)?;
        let n_regs = self.operand(data, 0).len();
        // vals[k]: register k's tuple.
        let mut vals: Vec<Tuple<'ctx>> = (0..n_regs)
            .map(|k| (0..n_ops).map(|i| self.operand(data, i)[k]).collect())
            .collect();

        // Groups: registers with one position along the other dimensions, in axis order.
        let mut groups: Vec<Group> = Vec::new();
        for k in 0..n_regs {
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
        let mut totals: Vec<Tuple<'ctx>> = Vec::with_capacity(groups.len());
        for (_, m) in &groups {
            for w in 0..m.len().saturating_sub(1) {
                let (prev, next) = (m[w].1, m[w + 1].1);
                vals[next] =
                    self.combine_tuples(how, &ds, &vals[prev].clone(), &vals[next].clone())?;
            }
            let last = m.last().or_bug("registers in each scan group").1;
            totals.push(vals[last].clone());
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
            let shuffle = |me: &Self, t: &[BasicValueEnum<'ctx>], src| -> Result<Tuple<'ctx>> {
                t.iter()
                    .zip(&ds)
                    .map(|(&v, &d)| me.shuffle_idx(d, v, src))
                    .collect()
            };
            let mut inclusive = totals.clone();
            for i in 0..plan.lane_len {
                let (src, has) = neighbour(self, 1 << i)?;
                for t in &mut inclusive {
                    let other = shuffle(self, t, src)?;
                    let both = self.combine_tuples(how, &ds, &other, t)?;
                    *t = self.select_tuple(has, &both, t)?;
                }
            }
            let (src, has) = neighbour(self, 1)?;
            let befores = inclusive
                .iter()
                .map(|t| shuffle(self, t, src))
                .collect::<Result<Vec<_>>>()?;
            self.prefix_where(how, &ds, has, &groups, &befores, &mut vals)?;
            totals = inclusive;
        }

        // 3. Across the warps along the axis.
        if plan.warp_len > 0 {
            let warps = 1u64 << plan.warp_len;
            let n_groups = dist.numel() / dist.extent(axis);
            let first = totals.first().or_bug("a scan group");
            let elems: Vec<_> = first.iter().map(|v| v.get_type()).collect();
            let smem = elems
                .iter()
                .map(|&e| self.shared_array(e, warps * n_groups))
                .collect::<Result<Vec<_>>>()?;
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
            self.guarded(writer, |me| {
                for (&g, tuple) in group_index.iter().zip(&totals) {
                    let at = me.builder.build_int_nsw_add(base, g, "").llvm()?;
                    for ((&p, &e), &v) in smem.iter().zip(&elems).zip(tuple) {
                        me.shared_store(p, e, at, v)?;
                    }
                }
                Ok(())
            })?;
            self.barrier()?;
            let order: Vec<u64> = if reverse {
                (0..warps).rev().collect()
            } else {
                (0..warps).collect()
            };
            let mut prefixes = Vec::with_capacity(groups.len());
            let mut any = None;
            for &gi in &group_index {
                let mut acc: Option<(Tuple<'ctx>, IntValue<'ctx>)> = None;
                for &w in &order {
                    let b = &self.builder;
                    let before = if reverse {
                        b.build_int_compare(IntPredicate::UGT, c(w), wpos, "")
                    } else {
                        b.build_int_compare(IntPredicate::ULT, c(w), wpos, "")
                    }
                    .llvm()?;
                    let at = b.build_int_nsw_add(c(w * n_groups), gi, "").llvm()?;
                    let v = smem
                        .iter()
                        .zip(&elems)
                        .map(|(&p, &e)| self.shared_load(p, e, at))
                        .collect::<Result<Tuple<'ctx>>>()?;
                    acc = Some(match acc {
                        None => (v, before),
                        Some((a, has)) => {
                            let both = self.combine_tuples(how, &ds, &a, &v)?;
                            let next = self.select_tuple(has, &both, &v)?;
                            let a = self.select_tuple(before, &next, &a)?;
                            (a, self.builder.build_or(has, before, "").llvm()?)
                        }
                    });
                }
                let (prefix, has) = acc.or_bug("warps along the scan's axis");
                prefixes.push(prefix);
                // Whether a warp comes before this thread's: the same for every group.
                any = Some(has);
            }
            let has = any.or_bug("a scan group");
            self.prefix_where(how, &ds, has, &groups, &prefixes, &mut vals)?;
        }
        // Back to one register list per operand.
        Ok((0..n_ops)
            .map(|i| vals.iter().map(|t| t[i]).collect())
            .collect())
    }
}
