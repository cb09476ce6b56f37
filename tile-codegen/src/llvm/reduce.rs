//! Lowering of `reduce`: of a rank-1 tensor to a scalar that every thread of the program holds, and
//! of a rank-2 tensor along one axis to a rank-1 tensor in the operand's layout sliced at that axis
//! (every thread along the axis holds the combined values).
//!
//! Both are one procedure over the operand's linear layout (see `layout`). The *reduced*
//! dimensions are the axis, or every dimension for a reduction to a scalar; the others are *kept*
//! and index *groups* (one result element each). Every basis of the layout either lies along the
//! reduced dimensions or along the kept ones (true of every layout tile builds; anything else is
//! an error). Three steps, each combining with the reduction's operation (`sum`: wrapping integer
//! add or `fadd`; `max`/`min`: `smax`/`smin` or `llvm.maxnum`/`llvm.minnum`, which ignore NaN, so an
//! all-NaN tensor still reduces to NaN, as in the interpreter):
//!
//! 1. **In the thread**: per group, the thread's registers (each a distinct element) are combined
//!    pairwise.
//! 2. **In the warp**: a butterfly over the lane bits whose bases lie along the reduced
//!    dimensions, with `llvm.nvvm.shfl.sync.bfly.i32` (full mask; `f32` as its bits, `i64` as two
//!    halves). Lane bits whose basis is 0 (copies) are not crossed: those lanes hold the same data
//!    and reach the same result. The operations are commutative, so afterwards every lane of a
//!    butterfly holds the same bits.
//! 3. **Across warps**, when warp bits lie along the reduced dimensions: one thread per group and
//!    reduced warp index (reduced lane bits 0, copy bits 0) writes its partial to a shared array
//!    (`reduced warps × groups` elements, at `warp index · groups + group`), then a barrier (one
//!    before the writes, where an earlier user of the bytes may still read them, is
//!    `insert-barriers`'s); then every thread reads its groups' partials and combines them in the
//!    same fixed order, so all threads agree.

use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, IntValue, VectorValue};
use tile_core::ir::{BinOp, DType, OpData, ReduceKind, Type};

use super::layout::Distribution;
use super::lower::{bug, dtype, float, int, Lowerer, OrBug, OrLlvm, Result};

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
        let ty = self.operand_type(data, 0);
        let rty = self.result_type(data);
        let d = dtype(ty);
        let Split {
            dist,
            reduced,
            kept,
            red_lanes,
            red_warps,
        } = split(ty, axis)?;
        let out = if ty.shape.len() == 1 {
            None
        } else {
            Some(self.tensor_distribution(rty))
        };
        let vals = self.operand(data, 0).to_vec();

        // Groups: one per result register (one for a scalar), each a list of this thread's
        // registers.
        let groups = out.as_ref().map_or(1, Distribution::elems_per_thread);
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); groups];
        let mut group_reg = vec![0usize; groups];
        for k in 0..vals.len() {
            let g = match &out {
                None => 0,
                Some(o) => {
                    let mut off = dist.reg_offset(k);
                    for &r in reduced.iter().rev() {
                        off.remove(r);
                    }
                    o.reg_at(&off)
                        .or_bug("a result register per reduced register")
                }
            };
            members[g].push(k);
            group_reg[g] = k;
        }

        // 1. In the thread.
        let mut acc = Vec::with_capacity(groups);
        for m in &members {
            let xs: Vec<_> = m.iter().map(|&k| vals[k]).collect();
            acc.push(
                self.combine_all(kind, d, &xs)?
                    .or_bug("registers in each reduction group"),
            );
        }

        // 2. Across the lanes of the reduced dimensions.
        for bit in 0..5 {
            if red_lanes >> bit & 1 == 1 {
                for a in &mut acc {
                    let other = self.shuffle_xor(d, *a, 1 << bit)?;
                    *a = self.combine(kind, d, *a, other)?;
                }
            }
        }

        // 3. Across warps.
        if red_warps != 0 {
            let t = self.thread_coords(&dist)?;
            acc = self.across_warps(
                kind,
                d,
                &dist,
                &t,
                &kept,
                &group_reg,
                acc,
                (red_lanes, red_warps),
            )?;
        }
        if out.is_none() {
            return Ok(vec![acc[0]]);
        }
        Ok(acc)
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
            // The element-wise op, whose signedness the type chooses (`smax` / `umax`).
            (DType::I32 | DType::I64 | DType::U32 | DType::U64, _) => {
                let op = match kind {
                    ReduceKind::Sum => BinOp::Add,
                    ReduceKind::Max => BinOp::Max,
                    ReduceKind::Min => BinOp::Min,
                };
                self.binary(op, d, x, y, false)
            }
            (DType::F32 | DType::F64, ReduceKind::Sum) => {
                Ok(b.build_float_add(float(x), float(y), "").llvm()?.into())
            }
            (DType::F32 | DType::F64, ReduceKind::Max) => minmax("llvm.maxnum"),
            (DType::F32 | DType::F64, ReduceKind::Min) => minmax("llvm.minnum"),
            // The verifier lets reductions take the arithmetic types only.
            _ => bug(format_args!(
                "a reduction of a 32- or 64-bit type, found `{d}`"
            )),
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
                    _ => bug("a pair of one or two values"),
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
        let step = self.context.i32_type().const_int(step, false);
        self.shuffle("bfly", d, v, step)
    }

    /// The value of lane `src` (`shfl.sync.idx.b32`, full warp; `src` is taken modulo 32).
    pub(super) fn shuffle_idx(
        &self,
        d: DType,
        v: BasicValueEnum<'ctx>,
        src: IntValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        self.shuffle("idx", d, v, src)
    }

    /// `shfl.sync.{mode}` of `v` over the full warp with lane operand `arg`.
    fn shuffle(
        &self,
        mode: &str,
        d: DType,
        v: BasicValueEnum<'ctx>,
        arg: IntValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.builder;
        let i32_ty = self.context.i32_type();
        let name = format!("llvm.nvvm.shfl.sync.{mode}.i32");
        let shfl = |x: IntValue<'ctx>| -> Result<IntValue<'ctx>> {
            let args: [BasicMetadataValueEnum; 4] = [
                i32_ty.const_all_ones().into(),
                x.into(),
                arg.into(),
                // Clamp: the whole warp is one segment.
                i32_ty.const_int(WARP - 1, false).into(),
            ];
            Ok(int(self.intrinsic(&name, &[], &args)?))
        };
        match d {
            DType::I32 | DType::U32 => Ok(shfl(int(v))?.into()),
            DType::F32 => {
                let bits = int(b.build_bit_cast(v, i32_ty, "").llvm()?);
                b.build_bit_cast(shfl(bits)?, self.context.f32_type(), "")
                    .llvm()
            }
            DType::I64 | DType::U64 | DType::F64 => {
                // As `<2 x i32>`: NVPTX splits and joins the halves with `mov.b64`.
                let pair_ty = i32_ty.vec_type(2);
                let pair = VectorValue::try_from(b.build_bit_cast(v, pair_ty, "").llvm()?)
                    .or_bug("a vector from a bitcast to one");
                let mut out = pair_ty.get_poison();
                for i in 0..2 {
                    let idx = i32_ty.const_int(i, false);
                    let half = int(b.build_extract_element(pair, idx, "").llvm()?);
                    out = b.build_insert_element(out, shfl(half)?, idx, "").llvm()?;
                }
                b.build_bit_cast(out, v.get_type(), "").llvm()
            }
            _ => bug(format_args!(
                "a shuffle of a 32- or 64-bit type (what reductions and scans take), found `{d}`"
            )),
        }
    }

    /// Step 3: each group's partials of every warp along the reduced dimensions, through shared
    /// memory to every thread. `group_reg[g]` is one of this thread's registers in group `g` (its
    /// position along the kept dimensions); `red` the lane and warp bits along the reduced ones.
    #[allow(clippy::too_many_arguments)]
    fn across_warps(
        &mut self,
        kind: ReduceKind,
        d: DType,
        dist: &Distribution,
        t: &[IntValue<'ctx>],
        kept: &[usize],
        group_reg: &[usize],
        partial: Vec<BasicValueEnum<'ctx>>,
        red: (u64, u64),
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let (red_lanes, red_warps) = red;
        let ctx = self.context;
        let i32_ty = ctx.i32_type();
        let c = |x: u64| i32_ty.const_int(x, false);
        let warps = 1u64 << red_warps.count_ones();
        // Result elements: the extents of the kept dimensions.
        let groups: u64 = kept.iter().map(|&k| dist.extent(k)).product();
        let elem: BasicTypeEnum = partial.first().or_bug("a reduction group").get_type();
        let smem = self.shared_array(elem, warps * groups)?;

        // This thread's warp index along the reduced dimensions (its reduced warp bits, packed),
        // and whether it writes: reduced lane bits and copy bits all 0.
        let tid = self.tid()?;
        let b = &self.builder;
        let warp = b.build_right_shift(tid, c(5), false, "").llvm()?;
        let mut warp_index = c(0);
        let mut j = 0u64;
        for bit in 0..32u64 {
            if red_warps >> bit & 1 == 1 {
                let x = b.build_right_shift(warp, c(bit), false, "").llvm()?;
                let x = b.build_and(x, c(1), "").llvm()?;
                let x = b.build_left_shift(x, c(j), "").llvm()?;
                warp_index = b.build_or(warp_index, x, "").llvm()?;
                j += 1;
            }
        }
        let writer =
            self.tid_bits_clear(red_lanes | dist.free_lanes() | (dist.free_warps() << 5))?;
        // Each group's element index along the kept dimensions, row-major.
        let mut group_index = Vec::with_capacity(group_reg.len());
        for &k in group_reg {
            let mut g = c(0);
            for &kd in kept {
                let i = self.index_along(dist, t, kd, k)?;
                let scaled = self
                    .builder
                    .build_int_nsw_mul(g, c(dist.extent(kd)), "")
                    .llvm()?;
                g = self.builder.build_int_nsw_add(scaled, i, "").llvm()?;
            }
            group_index.push(g);
        }

        let base = self
            .builder
            .build_int_nsw_mul(warp_index, c(groups), "")
            .llvm()?;
        self.guarded(writer, |me| {
            for (&g, &p) in group_index.iter().zip(&partial) {
                let at = me.builder.build_int_nsw_add(base, g, "").llvm()?;
                me.shared_store(smem, elem, at, p)?;
            }
            Ok(())
        })?;
        self.barrier()?;

        let mut out = Vec::with_capacity(partial.len());
        if warps >= LANE_PARALLEL_WARPS {
            // Lane `l` reads warp `l mod warps`'s partial, and a butterfly over the low lane
            // bits combines them: one shared load and log2(warps) shuffles per group instead of
            // `warps` loads all live at once (32 registers per group on 32 warps, beside the
            // tile being reduced). Step `s` combines `w` with `w ^ s`: the same pairs, in the
            // same tree, as the pairwise combination below (each pair in either order, which
            // a sum, a product, a maximum or a minimum does not see), so the results are too.
            let lane = self.builder.build_and(tid, c(WARP - 1), "").llvm()?;
            let w = self.builder.build_and(lane, c(warps - 1), "").llvm()?;
            let row = self.builder.build_int_nsw_mul(w, c(groups), "").llvm()?;
            for &g in &group_index {
                let at = self.builder.build_int_nsw_add(row, g, "").llvm()?;
                let mut v = self.shared_load(smem, elem, at)?;
                let mut step = 1;
                while step < warps {
                    let other = self.shuffle_xor(d, v, step)?;
                    v = self.combine(kind, d, v, other)?;
                    step <<= 1;
                }
                out.push(v);
            }
            return Ok(out);
        }
        for &g in &group_index {
            let mut parts = Vec::with_capacity(warps as usize);
            for w in 0..warps {
                let at = self
                    .builder
                    .build_int_nsw_add(c(w * groups), g, "")
                    .llvm()?;
                parts.push(self.shared_load(smem, elem, at)?);
            }
            out.push(
                self.combine_all(kind, d, &parts)?
                    .or_bug("warps to combine"),
            );
        }
        Ok(out)
    }
}

/// From this many warps along the reduced dimensions, the partials of the warps are read back one
/// per lane and combined by shuffles (see `across_warps`); below, each thread reads them all.
/// Measured on the H100 (docs/DECISIONS.md): at 32 warps the one-read
/// cross-entropy kernel ran 5% faster (a thread held 32 partials per reduction beside its 32-wide
/// slice of the row); at 8 and 16 warps the chain of dependent shuffles made latency-bound kernels
/// (a 64 × 65536 layernorm) 5% slower, and the registers it freed let more programs share an SM,
/// which cost two-pass kernels the L2 hits of their second pass.
const LANE_PARALLEL_WARPS: u64 = 32;

/// A reduction's operand split into the reduced and kept dimensions, and the lane and warp bits
/// (masks over the layout's lane and warp bases) that lie along the reduced ones.
struct Split {
    dist: Distribution,
    reduced: Vec<usize>,
    kept: Vec<usize>,
    red_lanes: u64,
    red_warps: u64,
}

/// The split of `reduce {axis}` on an operand of type `ty` (every dimension of a rank-1 operand
/// is reduced); `Err` where a layout bit mixes reduced and kept dimensions.
fn split(ty: &Type, axis: u32) -> Result<Split> {
    if axis as usize >= ty.shape.len() {
        bug(format_args!(
            "an axis of `{ty}` (verifier rule 16), not {axis}"
        ));
    }
    let dist = Distribution::of(ty)?;
    let reduced: Vec<usize> = if ty.shape.len() == 1 {
        (0..dist.rank()).collect()
    } else {
        vec![axis as usize]
    };
    let kept: Vec<usize> = (0..dist.rank()).filter(|r| !reduced.contains(r)).collect();
    let ll = dist.linear();
    let dims_mask = |dims: &[usize]| {
        dims.iter().fold(0u64, |m, &d| {
            let bits = ll.shape[d].trailing_zeros() as usize;
            m | (((1u64 << bits) - 1) * ll.dim_bit(d, 0))
        })
    };
    let (rmask, kmask) = (dims_mask(&reduced), dims_mask(&kept));
    let along = |bases: &[u64]| -> Result<u64> {
        let mut m = 0;
        for (i, &b) in bases.iter().enumerate() {
            if b & rmask != 0 && b & kmask != 0 {
                return Err(format!(
                    "reducing `{ty}`: its layout mixes the reduced and kept dimensions in one bit"
                ));
            }
            if b & rmask != 0 {
                m |= 1 << i;
            }
        }
        Ok(m)
    };
    let (red_lanes, red_warps) = (along(&ll.lane)?, along(&ll.warp)?);
    along(&ll.reg)?;
    Ok(Split {
        dist,
        reduced,
        kept,
        red_lanes,
        red_warps,
    })
}

/// The shared memory `reduce {axis}` of an operand of type `ty` needs, in bytes: a partial per
/// reduced warp and group when warp bits lie along the reduced dimensions, else none.
pub(super) fn scratch_bytes(ty: &Type, axis: u32) -> Result<u64> {
    let d = ty
        .dtype()
        .or_bug("a reduction of numbers (verifier rule 16)");
    let s = split(ty, axis)?;
    if s.red_warps == 0 {
        return Ok(0);
    }
    let warps = 1u64 << s.red_warps.count_ones();
    let groups: u64 = s.kept.iter().map(|&k| s.dist.extent(k)).product();
    Ok(warps * groups * u64::from(d.size_bytes()))
}
