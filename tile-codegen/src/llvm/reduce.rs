//! Lowering of `reduce` of a rank-1 tensor to a scalar that every thread of the program holds.
//!
//! Three steps, each combining with the reduction's operation (`sum`: wrapping integer add or
//! `fadd`; `max`/`min`: `smax`/`smin` or `llvm.maxnum`/`llvm.minnum`, which ignore NaN):
//!
//! 1. **In the thread**: the thread's *primary* slots (see `layout`: each element of the tensor is
//!    in exactly one primary slot of one thread) are combined pairwise. When the tensor is smaller
//!    than the layout tile, threads whose chunk starts past the tensor hold only copies and
//!    contribute the identity instead (`0`, `−0.0`, `INT_MIN`/`INT_MAX`, and NaN for float
//!    `max`/`min`: `maxnum(NaN, x) = x`, so an all-NaN tensor still reduces to NaN, as in the
//!    interpreter).
//! 2. **In the warp**: a butterfly over the lanes with `llvm.nvvm.shfl.sync.bfly.i32` (full mask;
//!    `f32` as its bits, `i64` as two halves). The combining operations are commutative, so after
//!    `log2(32)` steps every lane holds the same bits.
//! 3. **Across warps** (`num_warps > 1`): lane 0 of each warp writes its partial to a static shared
//!    array (`addrspace(3)`, one per `reduce` op, `num_warps` elements), between two
//!    `bar.sync 0`s (the first one keeps a write from overtaking readers of an earlier use of the
//!    array, once loops exist); then every thread reads all partials and combines them in the
//!    same fixed order, so all threads get the same scalar.
//!
//! Reductions of rank > 1 (which need a layout for the result) are refused.

use inkwell::module::Linkage;
use inkwell::types::{BasicType, BasicTypeEnum};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, IntValue, VectorValue};
use inkwell::{AddressSpace, IntPredicate};
use tile_core::ir::{DType, Layout, OpData, ReduceKind};

use super::lower::{dtype, float, int, Lowerer, OrLlvm, Result};

/// The address space of shared memory in NVPTX.
const SHARED: u16 = 3;

/// Lanes of a warp.
const WARP: u64 = 32;

impl<'ctx> Lowerer<'_, 'ctx> {
    /// `reduce {kind} {axis = 0}` of a rank-1 tensor: the scalar every thread holds.
    pub(super) fn reduce_op(
        &mut self,
        kind: ReduceKind,
        axis: u32,
        data: &OpData,
    ) -> Result<BasicValueEnum<'ctx>> {
        let f = self.f;
        let ty = f.ty(*data.operands.first().ok_or("missing operand")?);
        if ty.shape.len() != 1 {
            return Err(format!(
                "reductions of rank > 1 are not lowered yet (`{ty}` along axis {axis})"
            ));
        }
        if axis != 0 {
            return Err(format!("axis {axis} is out of range for `{ty}`"));
        }
        let d = dtype(ty)?;
        match d {
            DType::I32 | DType::I64 | DType::F32 => {}
            DType::I1 | DType::F16 | DType::BF16 => {
                return Err(format!("reductions take i32, i64 or f32, found `{d}`"))
            }
        }
        let dist = self.distribution(ty)?.ok_or("`reduce` takes a tensor")?;
        let Some(Layout::Blocked(layout)) = &ty.layout else {
            return Err("`reduce` needs a blocked layout".into());
        };
        let vals = self.operand(data, 0)?.to_vec();
        let identity = self.identity(kind, d)?;

        // 1. The thread's primary slots.
        let primary: Vec<_> = (0..vals.len())
            .filter(|&k| !dist.static_copy(0, dist.slot(k)[0]))
            .map(|k| vals[k])
            .collect();
        let mut acc = self.combine_all(kind, d, &primary)?.unwrap_or(identity);
        let owners = dist.owning_threads(0);
        if owners < dist.threads_along(0) {
            let t = self.thread_coord(layout, 0)?;
            let i32_ty = self.context.i32_type();
            let owns = self
                .builder
                .build_int_compare(IntPredicate::ULT, t, i32_ty.const_int(owners, false), "")
                .llvm()?;
            acc = self.builder.build_select(owns, acc, identity, "").llvm()?;
        }

        // 2. Across the lanes of each warp.
        let lanes = u64::from(layout.threads_per_warp[0]);
        if lanes != WARP {
            return Err(format!("a rank-1 layout with {lanes} lanes per warp"));
        }
        let mut step = lanes / 2;
        while step >= 1 {
            let other = self.shuffle_xor(d, acc, step)?;
            acc = self.combine(kind, d, acc, other)?;
            step /= 2;
        }

        // 3. Across warps.
        let warps = layout.warps_per_cta[0];
        if warps > 1 {
            acc = self.across_warps(kind, d, acc, warps)?;
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
    fn shuffle_xor(
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

    /// Step 3: every warp's partial (uniform within the warp) through shared memory to every
    /// thread.
    fn across_warps(
        &mut self,
        kind: ReduceKind,
        d: DType,
        partial: BasicValueEnum<'ctx>,
        warps: u32,
    ) -> Result<BasicValueEnum<'ctx>> {
        let ctx = self.context;
        let elem: BasicTypeEnum = partial.get_type();
        let array_ty = elem.array_type(warps);
        let op = self.current_op.map_or(0, |o| o.index());
        let name = format!("__tile_reduce_smem_{op}");
        if self.module.get_global(&name).is_some() {
            return Err(format!("the shared array `{name}` exists already"));
        }
        let smem = self
            .module
            .add_global(array_ty, Some(AddressSpace::from(SHARED)), &name);
        smem.set_linkage(Linkage::Internal);
        // Shared memory cannot be initialized; `undef` is what NVPTX accepts.
        smem.set_initializer(&array_ty.get_undef());
        smem.set_alignment(16);
        let base = smem.as_pointer_value();

        let i32_ty = ctx.i32_type();
        let tid = self.tid()?;
        let b = &self.builder;
        let lane = b
            .build_and(tid, i32_ty.const_int(WARP - 1, false), "lane")
            .llvm()?;
        let warp = b
            .build_right_shift(tid, i32_ty.const_int(5, false), false, "warp")
            .llvm()?;
        let function = b
            .get_insert_block()
            .and_then(|bb| bb.get_parent())
            .ok_or("the builder is not inside a function")?;
        let store_bb = ctx.append_basic_block(function, "reduce.store");
        let join_bb = ctx.append_basic_block(function, "reduce.join");

        self.barrier()?;
        let b = &self.builder;
        let is_lane0 = b
            .build_int_compare(IntPredicate::EQ, lane, i32_ty.const_zero(), "")
            .llvm()?;
        b.build_conditional_branch(is_lane0, store_bb, join_bb)
            .llvm()?;
        b.position_at_end(store_bb);
        // SAFETY: `base` points to a `[warps x T]` array and `warp` = tid / 32 is below `warps`
        // (a program has 32 · warps threads), so the in-bounds GEP stays inside the array.
        let slot =
            unsafe { b.build_in_bounds_gep(array_ty, base, &[i32_ty.const_zero(), warp], "") }
                .llvm()?;
        b.build_store(slot, partial).llvm()?;
        b.build_unconditional_branch(join_bb).llvm()?;
        b.position_at_end(join_bb);
        self.barrier()?;

        let b = &self.builder;
        let mut partials = Vec::with_capacity(warps as usize);
        for w in 0..u64::from(warps) {
            // SAFETY: `w` is a constant below the array's length `warps`.
            let p = unsafe {
                b.build_in_bounds_gep(
                    array_ty,
                    base,
                    &[i32_ty.const_zero(), i32_ty.const_int(w, false)],
                    "",
                )
            }
            .llvm()?;
            partials.push(b.build_load(elem, p, "").llvm()?);
        }
        self.combine_all(kind, d, &partials)?
            .ok_or_else(|| "no warps to combine".into())
    }

    /// `bar.sync 0`: every thread of the program waits here.
    fn barrier(&self) -> Result<()> {
        let name = "llvm.nvvm.barrier0";
        let decl = inkwell::intrinsics::Intrinsic::find(name)
            .and_then(|i| i.get_declaration(self.module, &[]))
            .ok_or_else(|| format!("LLVM has no intrinsic `{name}`"))?;
        self.builder.build_call(decl, &[], "").llvm()?;
        Ok(())
    }
}
