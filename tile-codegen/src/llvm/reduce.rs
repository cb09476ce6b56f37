//! Lowering of `reduce`: of a rank-1 tensor to a scalar that every thread of the program holds, and
//! of a rank-2 tensor along one axis to a rank-1 tensor in the operand's layout sliced at that axis
//! (every thread along the axis holds the combined values).
//!
//! Both are one procedure over the operand's distribution (see `layout`; a slice operand is seen
//! through its parent). The *reduced* dimensions are the axis, or every dimension for a reduction
//! to a scalar; the others index *groups* (one result element each). Three steps, each combining
//! with the reduction's operation (`sum`: wrapping integer add or `fadd`; `max`/`min`:
//! `smax`/`smin` or `llvm.maxnum`/`llvm.minnum`, which ignore NaN):
//!
//! 1. **In the thread**: per group, the thread's slots that are *primary* along the reduced
//!    dimensions (each element is in exactly one such slot of one thread along them) are combined
//!    pairwise. Threads whose chunk starts past the tensor along a reduced dimension hold only
//!    copies and contribute the identity instead (`0`, `−0.0`, `INT_MIN`/`INT_MAX`, and NaN for
//!    float `max`/`min`: `maxnum(NaN, x) = x`, so an all-NaN tensor still reduces to NaN, as in the
//!    interpreter).
//! 2. **In the warp**: a butterfly over the lane bits of the reduced dimensions with
//!    `llvm.nvvm.shfl.sync.bfly.i32` (full mask; `f32` as its bits, `i64` as two halves). The
//!    combining operations are commutative, so afterwards every lane along those dimensions holds
//!    the same bits.
//! 3. **Across warps**, when the reduced dimensions spread over several: one thread per group and
//!    warp (lane 0 along the reduced dimensions, owning the group's element along the others)
//!    writes its partial to a static shared array (`addrspace(3)`, one per `reduce` op,
//!    `warps × groups` elements, at `warp · groups + group`), between two `bar.sync 0`s (the first
//!    keeps a write from overtaking readers of an earlier use of the array); then every thread reads
//!    its groups' partials and combines them in the same fixed order, so all threads agree.

use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, IntValue, VectorValue};
use inkwell::IntPredicate;
use tile_core::ir::{DType, OpData, ReduceKind};

use super::layout::{Distribution, Slot};
use super::lower::{dtype, float, int, Lowerer, OrLlvm, Result};

/// Lanes of a warp.
const WARP: u64 = 32;

impl<'ctx> Lowerer<'_, 'ctx> {
    /// `reduce {kind} {axis}`: the scalar (rank-1 operand) or the rank-1 tensor (rank-2 operand)
    /// this thread holds.
    pub(super) fn reduce_op(
        &mut self,
        kind: ReduceKind,
        axis: u32,
        data: &OpData,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let f = self.f;
        let ty = f.ty(*data.operands.first().ok_or("missing operand")?);
        let rty = self.result_type(data)?;
        let d = dtype(ty)?;
        match d {
            DType::I32 | DType::I64 | DType::F32 => {}
            DType::I1 | DType::F16 | DType::BF16 => {
                return Err(format!("reductions take i32, i64 or f32, found `{d}`"))
            }
        }
        if axis as usize >= ty.shape.len() {
            return Err(format!("axis {axis} is out of range for `{ty}`"));
        }
        let dist = self.tensor_distribution(ty)?;
        // The reduced dimensions of the distribution, and the result's distribution.
        let (reduced, out): (Vec<usize>, Option<Distribution<'_>>) = if ty.shape.len() == 1 {
            ((0..dist.rank()).collect(), None)
        } else {
            if ty.layout != Some(tile_core::ir::Layout::Blocked(dist.layout().clone())) {
                return Err(format!(
                    "reducing `{ty}` along an axis needs a blocked layout"
                ));
            }
            (vec![axis as usize], Some(self.tensor_distribution(rty)?))
        };
        let vals = self.operand(data, 0)?.to_vec();
        let identity = self.identity(kind, d)?;
        let t = self.thread_coords(&dist)?;

        // Groups: one per result slot (one for a scalar), each a list of this thread's slots.
        let groups = out.as_ref().map_or(1, Distribution::elems_per_thread);
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); groups];
        let mut group_slot = vec![0usize; groups];
        for k in 0..vals.len() {
            let mut slots = dist.slot(k);
            if reduced.iter().any(|&r| dist.static_copy(r, slots[r])) {
                continue;
            }
            let g = match &out {
                None => 0,
                Some(o) => {
                    for &r in &reduced {
                        slots[r] = Slot { rep: 0, v: 0 };
                    }
                    o.slot_index(&slots)
                }
            };
            members[g].push(k);
            group_slot[g] = k;
        }

        // 1. In the thread, with the owners' test along the reduced dimensions.
        let owns = self.owns_along(&dist, &t, reduced.iter().copied())?;
        let mut acc = Vec::with_capacity(groups);
        for m in &members {
            let xs: Vec<_> = m.iter().map(|&k| vals[k]).collect();
            let mut a = self.combine_all(kind, d, &xs)?.unwrap_or(identity);
            if let Some(o) = owns {
                a = self.builder.build_select(o, a, identity, "").llvm()?;
            }
            acc.push(a);
        }

        // 2. Across the lanes of the reduced dimensions.
        let layout = dist.layout();
        for &r in &reduced {
            let shift = lane_shift(layout, r);
            let lanes = u64::from(layout.threads_per_warp[r]);
            let mut step = 1;
            while step < lanes {
                for a in &mut acc {
                    let other = self.shuffle_xor(d, *a, step << shift)?;
                    *a = self.combine(kind, d, *a, other)?;
                }
                step *= 2;
            }
        }

        // 3. Across warps.
        let warps: u32 = reduced.iter().map(|&r| layout.warps_per_cta[r]).product();
        if warps > 1 {
            acc = self.across_warps(kind, d, &dist, &t, &reduced, &group_slot, acc, warps)?;
        }
        if out.is_none() {
            return Ok(vec![acc[0]]);
        }
        Ok(acc)
    }

    /// The value that leaves any other unchanged under the reduction.
    fn identity(&self, kind: ReduceKind, d: DType) -> Result<BasicValueEnum<'ctx>> {
        let ctx = self.context;
        Ok(match (d, kind) {
            (DType::I32, ReduceKind::Sum) => ctx.i32_type().const_zero().into(),
            (DType::I32, ReduceKind::Max) => ctx.i32_type().const_int(i32::MIN as u64, true).into(),
            (DType::I32, ReduceKind::Min) => ctx.i32_type().const_int(i32::MAX as u64, true).into(),
            (DType::I64, ReduceKind::Sum) => ctx.i64_type().const_zero().into(),
            (DType::I64, ReduceKind::Max) => ctx.i64_type().const_int(i64::MIN as u64, true).into(),
            (DType::I64, ReduceKind::Min) => ctx.i64_type().const_int(i64::MAX as u64, true).into(),
            // −0.0, not +0.0: a sum of negative zeros is −0.0.
            (DType::F32, ReduceKind::Sum) => ctx.f32_type().const_float(-0.0).into(),
            (DType::F32, ReduceKind::Max | ReduceKind::Min) => {
                ctx.f32_type().const_float(f64::NAN).into()
            }
            (
                DType::I1 | DType::F16 | DType::BF16,
                ReduceKind::Sum | ReduceKind::Max | ReduceKind::Min,
            ) => return Err(format!("reductions take i32, i64 or f32, found `{d}`")),
        })
    }

    /// `x ∘ y` for the reduction's operation.
    fn combine(
        &self,
        kind: ReduceKind,
        d: DType,
        x: BasicValueEnum<'ctx>,
        y: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.builder;
        let minmax = |name: &str| {
            let ty = x.get_type();
            self.intrinsic(name, &[ty], &[x.into(), y.into()])
        };
        match (d, kind) {
            (DType::I32 | DType::I64, ReduceKind::Sum) => {
                Ok(b.build_int_add(int(x)?, int(y)?, "").llvm()?.into())
            }
            (DType::I32 | DType::I64, ReduceKind::Max) => minmax("llvm.smax"),
            (DType::I32 | DType::I64, ReduceKind::Min) => minmax("llvm.smin"),
            (DType::F32, ReduceKind::Sum) => {
                Ok(b.build_float_add(float(x)?, float(y)?, "").llvm()?.into())
            }
            (DType::F32, ReduceKind::Max) => minmax("llvm.maxnum"),
            (DType::F32, ReduceKind::Min) => minmax("llvm.minnum"),
            (
                DType::I1 | DType::F16 | DType::BF16,
                ReduceKind::Sum | ReduceKind::Max | ReduceKind::Min,
            ) => Err(format!("reductions take i32, i64 or f32, found `{d}`")),
        }
    }

    /// Combines `vals` pairwise (a balanced tree: shorter dependency chains than a left fold);
    /// `None` for no values.
    fn combine_all(
        &self,
        kind: ReduceKind,
        d: DType,
        vals: &[BasicValueEnum<'ctx>],
    ) -> Result<Option<BasicValueEnum<'ctx>>> {
        let mut level = vals.to_vec();
        while level.len() > 1 {
            let mut next = Vec::with_capacity(level.len().div_ceil(2));
            for pair in level.chunks(2) {
                next.push(match *pair {
                    [x, y] => self.combine(kind, d, x, y)?,
                    [x] => x,
                    _ => return Err("an empty pair".into()),
                });
            }
            level = next;
        }
        Ok(level.first().copied())
    }

    /// The value of lane `lane ^ step` (`shfl.sync.bfly.b32`, full warp).
    pub(super) fn shuffle_xor(
        &self,
        d: DType,
        v: BasicValueEnum<'ctx>,
        step: u64,
    ) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.builder;
        let i32_ty = self.context.i32_type();
        let shfl = |x: IntValue<'ctx>| -> Result<IntValue<'ctx>> {
            let args: [BasicMetadataValueEnum; 4] = [
                i32_ty.const_all_ones().into(),
                x.into(),
                i32_ty.const_int(step, false).into(),
                // Clamp: the whole warp is one segment.
                i32_ty.const_int(WARP - 1, false).into(),
            ];
            int(self.intrinsic("llvm.nvvm.shfl.sync.bfly.i32", &[], &args)?)
        };
        match d {
            DType::I32 => Ok(shfl(int(v)?)?.into()),
            DType::F32 => {
                let bits = int(b.build_bit_cast(v, i32_ty, "").llvm()?)?;
                b.build_bit_cast(shfl(bits)?, self.context.f32_type(), "")
                    .llvm()
            }
            DType::I64 => {
                // As `<2 x i32>`: NVPTX splits and joins the halves with `mov.b64`.
                let pair_ty = i32_ty.vec_type(2);
                let pair = VectorValue::try_from(b.build_bit_cast(v, pair_ty, "").llvm()?)
                    .map_err(|()| "a bitcast to a vector did not yield one".to_string())?;
                let mut out = pair_ty.get_poison();
                for i in 0..2 {
                    let idx = i32_ty.const_int(i, false);
                    let half = int(b.build_extract_element(pair, idx, "").llvm()?)?;
                    out = b.build_insert_element(out, shfl(half)?, idx, "").llvm()?;
                }
                b.build_bit_cast(out, self.context.i64_type(), "").llvm()
            }
            DType::I1 | DType::F16 | DType::BF16 => Err(format!(
                "cannot shuffle `{d}` (reductions take i32, i64 or f32)"
            )),
        }
    }

    /// Step 3: each group's partials of every warp along the reduced dimensions, through shared
    /// memory to every thread. `group_slot[g]` is one of this thread's slots in group `g` (its
    /// position along the kept dimensions).
    #[allow(clippy::too_many_arguments)]
    fn across_warps(
        &mut self,
        kind: ReduceKind,
        d: DType,
        dist: &Distribution<'_>,
        t: &[IntValue<'ctx>],
        reduced: &[usize],
        group_slot: &[usize],
        partial: Vec<BasicValueEnum<'ctx>>,
        warps: u32,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let ctx = self.context;
        let i32_ty = ctx.i32_type();
        let c = |x: u64| i32_ty.const_int(x, false);
        let layout = dist.layout();
        let kept: Vec<usize> = (0..dist.rank()).filter(|r| !reduced.contains(r)).collect();
        // Result elements: the extents of the kept dimensions.
        let groups: u64 = kept.iter().map(|&k| dist.extent(k)).product();
        let elem: BasicTypeEnum = partial
            .first()
            .ok_or("a reduction without groups")?
            .get_type();
        let smem = self.shared_array(elem, u64::from(warps) * groups)?;

        // This thread's warp index along the reduced dimensions, and whether it writes: lane 0
        // along them, and the owner of its elements along the kept ones.
        let mut warp_index = c(0);
        let mut writer = None;
        let b = &self.builder;
        for &r in reduced.iter().rev() {
            let tpw = u64::from(layout.threads_per_warp[r]);
            let wpc = u64::from(layout.warps_per_cta[r]);
            let w = b
                .build_right_shift(t[r], c(u64::from(tpw.trailing_zeros())), false, "")
                .llvm()?;
            let scaled = b.build_int_nsw_mul(warp_index, c(wpc), "").llvm()?;
            warp_index = b.build_int_nsw_add(scaled, w, "").llvm()?;
            let lane = b.build_and(t[r], c(tpw - 1), "").llvm()?;
            let first = b
                .build_int_compare(IntPredicate::EQ, lane, c(0), "")
                .llvm()?;
            writer = Some(match writer {
                None => first,
                Some(p) => b.build_and(p, first, "").llvm()?,
            });
        }
        if let Some(o) = self.owns_along(dist, t, kept.iter().copied())? {
            writer = Some(match writer {
                None => o,
                Some(p) => self.builder.build_and(p, o, "").llvm()?,
            });
        }
        // Each group's element index along the kept dimensions, row-major.
        let mut group_index = Vec::with_capacity(group_slot.len());
        for &k in group_slot {
            let mut g = c(0);
            for &kd in &kept {
                let i = self.index_along(dist, t, kd, k)?;
                let scaled = self
                    .builder
                    .build_int_nsw_mul(g, c(dist.extent(kd)), "")
                    .llvm()?;
                g = self.builder.build_int_nsw_add(scaled, i, "").llvm()?;
            }
            group_index.push(g);
        }
        // A group whose slot is a static copy along a kept dimension repeats another group of
        // this thread; only the first of each element writes.
        let writes: Vec<bool> = group_slot
            .iter()
            .map(|&k| {
                let s = dist.slot(k);
                kept.iter().all(|&kd| !dist.static_copy(kd, s[kd]))
            })
            .collect();

        self.barrier()?;
        let base = self
            .builder
            .build_int_nsw_mul(warp_index, c(groups), "")
            .llvm()?;
        self.guarded(writer, |me| {
            for ((&g, &p), &w) in group_index.iter().zip(&partial).zip(&writes) {
                if w {
                    let at = me.builder.build_int_nsw_add(base, g, "").llvm()?;
                    me.shared_store(smem, elem, at, p)?;
                }
            }
            Ok(())
        })?;
        self.barrier()?;

        let mut out = Vec::with_capacity(partial.len());
        for &g in &group_index {
            let mut parts = Vec::with_capacity(warps as usize);
            for w in 0..u64::from(warps) {
                let at = self
                    .builder
                    .build_int_nsw_add(c(w * groups), g, "")
                    .llvm()?;
                parts.push(self.shared_load(smem, elem, at)?);
            }
            out.push(
                self.combine_all(kind, d, &parts)?
                    .ok_or("no warps to combine")?,
            );
        }
        Ok(out)
    }
}

/// The position of dimension `d`'s lane bits in the lane id: the bits of the dimensions before it
/// in `order` come first.
pub(super) fn lane_shift(layout: &tile_core::ir::BlockedLayout, d: usize) -> u64 {
    let mut shift = 0;
    for &o in &layout.order {
        if o as usize == d {
            break;
        }
        shift += u64::from(layout.threads_per_warp[o as usize].trailing_zeros());
    }
    shift
}
