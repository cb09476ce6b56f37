//! Shared memory: the kernel's one shared array, scratch arrays, barriers, and `convert_layout`,
//! which moves a tensor between two layouts through shared memory.
//!
//! A kernel has one shared array (`addrspace(3)`; 16-byte aligned, 1024 when dynamic: buffers
//! start at multiples of 1024 bytes in it), as large as the allocation
//! (`analysis::shared_alloc`) says: static and internal when it fits
//! [`Target::STATIC_SHARED_BYTES`] and no `local_alloc` buffer asks for dynamic memory, else the
//! `extern` dynamic array the launch sizes.
//! Every user gets its bytes where the allocation put them: a `local_alloc` buffer its region, an
//! op with scratch memory its region, carved into 16-byte aligned arrays as its lowering asks
//! (checked against the region's size, which `scratch` computed from the same decisions). One op's
//! arrays stay below what a program may declare statically, or the lowering fails with a
//! message; the swizzled conversion below may use up to the target's maximum (its kernel's
//! shared memory is then dynamic, and the whole allocation is checked against that maximum).
//!
//! Barriers: an op's lowering places the one between its own writes and reads; the one before
//! its writes, where an earlier user of the same bytes may still be reading, is an IR `barrier`
//! that `insert-barriers` placed (and the lowering refuses a kernel that lacks one).
//!
//! `convert_layout` writes every element once (from the thread that owns it, see `layout`) at its
//! row-major index, waits at a barrier, and reads each slot of the new layout from its index.
//! Elements travel in their memory form: booleans as bytes, pointers as 64-bit integers. From an
//! mma layout into a blocked one, where threads hold runs of consecutive columns on both sides
//! (a GEMM's result on its way to 16-byte stores), runs travel as vectors through a tile whose
//! 16-byte chunks are XORed with the row ([`swizzled_conversion`]), free of bank conflicts.

use inkwell::module::Linkage;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicValue, BasicValueEnum, IntValue, PointerValue};
use inkwell::{AddressSpace, IntPredicate};
use tile_core::ir::{DType, Elem, Layout, OpData, Type};
use tile_core::Target;

use super::layout::Distribution;
use super::ldmatrix::Swizzle;
use super::lower::{bug, int, register_type, Lowerer, OrBug, OrLlvm, Result, GLOBAL};

/// The address space of shared memory in NVPTX.
const SHARED: u16 = 3;

impl<'ctx> Lowerer<'_, 'ctx> {
    /// Creates the kernel's one shared array, as large as the allocation says (nothing when the
    /// kernel uses no shared memory): a static array while every byte fits the static limit and
    /// no `local_alloc` asks for dynamic memory, else the `extern` dynamic array the launch sizes.
    /// Returns the dynamic bytes (0 for a static array).
    pub(super) fn create_shared(&mut self) -> Result<u64> {
        let (size, dynamic) = (self.alloc.size, self.alloc.dynamic);
        if size == 0 {
            return Ok(0);
        }
        let i8_ty = self.context.i8_type();
        let (g, dyn_bytes) = if dynamic || size > Target::STATIC_SHARED_BYTES {
            // `.extern .shared .align 1024 .b8 __tile_dyn_smem[]`: sized by the launch.
            let g = self.module.add_global(
                i8_ty.array_type(0),
                Some(AddressSpace::from(SHARED)),
                "__tile_dyn_smem",
            );
            g.set_linkage(Linkage::External);
            g.set_alignment(1024);
            (g, size)
        } else {
            let len = u32::try_from(size).or_bug("static shared memory of a `u32` size");
            (
                self.internal_shared_global(i8_ty.array_type(len), "__tile_smem"),
                0,
            )
        };
        self.smem_base = Some(g.as_pointer_value());
        Ok(dyn_bytes)
    }

    /// The address `off` bytes into the kernel's shared array.
    fn shared_at(&self, off: u64) -> Result<PointerValue<'ctx>> {
        let base = self
            .smem_base
            .or_bug("shared memory in the allocation for an op that uses it");
        let i8_ty = self.context.i8_type();
        let at = self.context.i64_type().const_int(off, false);
        // SAFETY: a constant GEP of `off` bytes into the kernel's shared array, whose length (the
        // allocation's size; the launch's dynamic size for the extern one) is at least `off` plus
        // the bytes of the region that starts there (checked by the callers against the
        // allocation), so the address stays inside it.
        Ok(unsafe { base.const_gep(i8_ty, &[at]) })
    }

    /// A new scratch array of `n` elements of type `elem` for the op being lowered, carved from
    /// the region the allocation gave that op (each array 16-byte aligned). The arrays of one op
    /// must fit [`Target::STATIC_SHARED_BYTES`] together; a region too small for what the
    /// lowering asks is the allocation disagreeing with the lowering (`scratch`), an internal
    /// error.
    pub(super) fn shared_array(
        &mut self,
        elem: BasicTypeEnum<'ctx>,
        n: u64,
    ) -> Result<PointerValue<'ctx>> {
        self.shared_array_within(elem, n, Target::STATIC_SHARED_BYTES)
    }

    /// [`Lowerer::shared_array`] up to the target's maximum: a `dot`'s staged operands, which
    /// may pass the static limit (the kernel then gets its shared memory dynamically, and
    /// `lower_module` checks the whole allocation against the target).
    pub(super) fn shared_array_up_to_target(
        &mut self,
        elem: BasicTypeEnum<'ctx>,
        n: u64,
    ) -> Result<PointerValue<'ctx>> {
        let limit = self
            .f
            .target
            .map_or(Target::STATIC_SHARED_BYTES, Target::max_shared_bytes);
        self.shared_array_within(elem, n, limit)
    }

    /// [`Lowerer::shared_array`] with another limit for the op's arrays (a kernel whose shared
    /// memory exceeds [`Target::STATIC_SHARED_BYTES`] is given it dynamically, up to the target's
    /// maximum, which `lower_module` checks for the whole allocation).
    pub(super) fn shared_array_within(
        &mut self,
        elem: BasicTypeEnum<'ctx>,
        n: u64,
        limit: u64,
    ) -> Result<PointerValue<'ctx>> {
        let op = self.op_id();
        let bytes = n
            .checked_mul(self.store_size(elem))
            .or_bug("a shared array's size in `u64`");
        let used = if self.scratch_used.0 == Some(op) {
            self.scratch_used.1
        } else {
            0
        };
        let start = used.next_multiple_of(16);
        let end = start + bytes;
        if end > limit {
            return Err(format!(
                "an op needs {end} bytes of shared memory, more than the {limit} a program may declare statically (smaller tiles help)"
            ));
        }
        // The allocation sized the region from `scratch`, which must agree with the lowering.
        let place = self
            .alloc
            .place(op)
            .or_bug("a region of the allocation for an op that uses scratch shared memory");
        if end > place.bytes {
            bug(format_args!(
                "at least {end} bytes of scratch shared memory in the allocation, found {}",
                place.bytes
            ));
        }
        self.scratch_used = (Some(op), end);
        self.shared_at(place.offset + start)
    }

    /// A new internal, 16-byte aligned shared array of type `array_ty` named `name`.
    fn internal_shared_global(
        &self,
        array_ty: inkwell::types::ArrayType<'ctx>,
        name: &str,
    ) -> inkwell::values::GlobalValue<'ctx> {
        let g = self
            .module
            .add_global(array_ty, Some(AddressSpace::from(SHARED)), name);
        g.set_linkage(Linkage::Internal);
        // Shared memory cannot be initialized; `undef` is what NVPTX accepts.
        g.set_initializer(&array_ty.get_undef());
        g.set_alignment(16);
        g
    }

    /// The `local_alloc` buffer being lowered: where the allocation put it.
    pub(super) fn shared_buffer(&mut self) -> Result<PointerValue<'ctx>> {
        let op = self.op_id();
        let place = self
            .alloc
            .place(op)
            .or_bug("the buffer placed by the allocation");
        self.shared_at(place.offset)
    }

    /// Bytes one element of `t` occupies in a shared array.
    #[track_caller]
    fn store_size(&self, t: BasicTypeEnum<'ctx>) -> u64 {
        match t {
            BasicTypeEnum::IntType(i) => u64::from(i.get_bit_width().div_ceil(8)),
            BasicTypeEnum::FloatType(f) => {
                if f == self.context.f32_type() {
                    4
                } else {
                    2
                }
            }
            other => bug(format_args!("an integer or float type, found `{other}`")),
        }
    }

    /// The address of element `i` of the shared array at `base`.
    fn shared_slot(
        &self,
        base: PointerValue<'ctx>,
        elem: BasicTypeEnum<'ctx>,
        i: IntValue<'ctx>,
    ) -> Result<PointerValue<'ctx>> {
        // SAFETY: a GEP with one index over a sized element type only computes an address; every
        // caller's index is below the array's length (a row-major index of the tensor, plus a
        // warp's offset that the array's length counts), so the access stays inside it.
        unsafe { self.builder.build_in_bounds_gep(elem, base, &[i], "") }.llvm()
    }

    /// `array[i] = v`.
    pub(super) fn shared_store(
        &self,
        base: PointerValue<'ctx>,
        elem: BasicTypeEnum<'ctx>,
        i: IntValue<'ctx>,
        v: BasicValueEnum<'ctx>,
    ) -> Result<()> {
        let p = self.shared_slot(base, elem, i)?;
        self.builder.build_store(p, v).llvm()?;
        Ok(())
    }

    /// `array[i]`.
    pub(super) fn shared_load(
        &self,
        base: PointerValue<'ctx>,
        elem: BasicTypeEnum<'ctx>,
        i: IntValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let p = self.shared_slot(base, elem, i)?;
        self.builder.build_load(elem, p, "").llvm()
    }

    /// Runs `body` where `cond` holds (always when `None`), then continues after it.
    pub(super) fn guarded(
        &mut self,
        cond: Option<IntValue<'ctx>>,
        body: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<()> {
        let Some(cond) = cond else {
            return body(self);
        };
        let function = self
            .builder
            .get_insert_block()
            .and_then(|bb| bb.get_parent())
            .or_bug("the builder inside the kernel");
        let then_bb = self.context.append_basic_block(function, "guarded");
        let join_bb = self.context.append_basic_block(function, "guarded.join");
        self.builder
            .build_conditional_branch(cond, then_bb, join_bb)
            .llvm()?;
        self.builder.position_at_end(then_bb);
        body(self)?;
        self.builder.build_unconditional_branch(join_bb).llvm()?;
        self.builder.position_at_end(join_bb);
        Ok(())
    }

    /// `bar.sync 0`: every thread of the program waits here.
    pub(super) fn barrier(&self) -> Result<()> {
        let name = "llvm.nvvm.barrier0";
        let decl = inkwell::intrinsics::Intrinsic::find(name)
            .and_then(|i| i.get_declaration(self.module, &[]))
            .unwrap_or_else(|| bug(format_args!("LLVM to have the intrinsic `{name}`")));
        self.builder.build_call(decl, &[], "").llvm()?;
        Ok(())
    }

    /// `convert_layout`: the operand's elements, held as the result's layout places them.
    pub(super) fn convert_layout(&mut self, data: &OpData) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let from = self.operand_type(data, 0);
        let to = self.result_type(data);
        if let Some(perm) = register_permutation(from, to) {
            let vals = self.operand(data, 0);
            return Ok(perm.iter().map(|&k| vals[k]).collect());
        }
        if Self::wants_ldmatrix(from, to) {
            return self.convert_with_ldmatrix(data);
        }
        if let Some(sw) = swizzled_conversion(from, to) {
            return self.convert_swizzled(data, sw);
        }
        let (src, dst) = (self.tensor_distribution(from), self.tensor_distribution(to));
        let vals = self.operand(data, 0).to_vec();
        let elem = from.elem;
        // Up to the target's maximum, as the swizzled conversion (a kernel whose allocation
        // passes the static limit gets its shared memory dynamically): a `128 × 256` f16 result
        // stored through pointers the axis analysis cannot prove contiguous takes 64 KiB.
        let limit = self
            .f
            .target
            .map_or(Target::STATIC_SHARED_BYTES, Target::max_shared_bytes);
        let (smem, mem_ty) = self.tensor_to_shared(&src, elem, &vals, limit)?;

        let td = self.thread_coords(&dst)?;
        let mut out = Vec::with_capacity(dst.elems_per_thread());
        for k in 0..dst.elems_per_thread() {
            let at = self.flat_index(&dst, &td, k)?;
            let v = self.shared_load(smem, mem_ty, at)?;
            out.push(self.register_from_memory(v, elem)?);
        }
        Ok(out)
    }

    /// `convert_layout` of a 2-D tile whose threads hold runs of consecutive columns on both
    /// sides (an mma result into a blocked layout): each run, cut at 16-byte chunks, moves as one
    /// vector store and one vector load through a scratch tile whose 16-byte chunks are XORed
    /// with the row's phase ([`swizzled_conversion`]). An mma fragment's eight rows then land in
    /// eight different chunks (no bank conflicts) instead of one 32-bit element at a time into
    /// eight rows of the same banks.
    fn convert_swizzled(
        &mut self,
        data: &OpData,
        sw: Swizzle,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let from = self.operand_type(data, 0);
        let to = self.result_type(data);
        let (src, dst) = (self.tensor_distribution(from), self.tensor_distribution(to));
        let vals = self.operand(data, 0).to_vec();
        let elem_ty = register_type(self.context, from.elem);
        let i8_ty = self.context.i8_type();
        let bytes = u64::from(from.shape[0]) * sw.c * sw.elem_bytes;
        let limit = self
            .f
            .target
            .map_or(Target::STATIC_SHARED_BYTES, Target::max_shared_bytes);
        let smem = self.shared_array_within(i8_ty.into(), bytes, limit)?;
        let per_chunk = (sw.chunk_bytes / sw.elem_bytes) as usize;
        let piece = |d: &Distribution| match d.contiguous_run() {
            (1, run) => (run as usize).min(per_chunk).max(1),
            _ => 1,
        };

        self.write_swizzled_runs(smem, sw, &src, &vals, piece(&src), elem_ty, [0, 1])?;

        let td = self.thread_coords(&dst)?;
        let step = piece(&dst);
        let n = dst.elems_per_thread();
        let mut out = Vec::with_capacity(n);
        for k in (0..n).step_by(step) {
            let row = self.index_along(&dst, &td, 0, k)?;
            let col = self.index_along(&dst, &td, 1, k)?;
            let at = self.swizzled_byte_offset(sw, row, col)?;
            out.extend(self.shared_vector_load(smem, at, elem_ty, step.min(n - k))?);
        }
        Ok(out)
    }

    /// Writes the tensor `vals` (this thread's registers under `src`, runs of `step` consecutive
    /// elements along the stored tile's rows) into the swizzled tile `smem`, each element once
    /// (by its owner), one store per run, then a barrier. The stored tile's rows run along the
    /// tensor's dimension `dims[0]` and its columns along `dims[1]`: `[0, 1]` stores the tensor
    /// as it is, `[1, 0]` transposed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_swizzled_runs(
        &mut self,
        smem: PointerValue<'ctx>,
        sw: Swizzle,
        src: &Distribution,
        vals: &[BasicValueEnum<'ctx>],
        step: usize,
        elem_ty: BasicTypeEnum<'ctx>,
        dims: [usize; 2],
    ) -> Result<()> {
        let t = self.thread_coords(src)?;
        let owner = self.owner(src)?;
        let mut writes = Vec::new();
        for k in (0..vals.len()).step_by(step) {
            let row = self.index_along(src, &t, dims[0], k)?;
            let col = self.index_along(src, &t, dims[1], k)?;
            let at = self.swizzled_byte_offset(sw, row, col)?;
            writes.push((at, &vals[k..(k + step).min(vals.len())]));
        }
        self.guarded(owner, |me| {
            for (at, vs) in &writes {
                me.shared_vector_store(smem, *at, elem_ty, vs)?;
            }
            Ok(())
        })?;
        self.barrier()
    }

    /// `vals` (consecutive elements of type `elem_ty`) as one store at byte offset `at` of the
    /// shared array `smem`, aligned to its size (the caller keeps the run inside one aligned
    /// chunk of the array).
    pub(super) fn shared_vector_store(
        &self,
        smem: PointerValue<'ctx>,
        at: IntValue<'ctx>,
        elem_ty: BasicTypeEnum<'ctx>,
        vals: &[BasicValueEnum<'ctx>],
    ) -> Result<()> {
        let b = &self.builder;
        let i8_ty = self.context.i8_type();
        // SAFETY: a GEP of `at` bytes into the shared array: every caller passes the swizzled
        // offset of an element of its tile (row below its rows, swizzled chunk below its chunks
        // per row), and the run stays inside that element's 16-byte chunk.
        let p = unsafe { b.build_in_bounds_gep(i8_ty, smem, &[at], "") }.llvm()?;
        let value: BasicValueEnum<'ctx> = match vals {
            [v] => *v,
            _ => {
                let vty = super::memory::vector_of(elem_ty, vals.len());
                let mut v = vty.get_poison();
                for (i, &x) in vals.iter().enumerate() {
                    let idx = self.context.i32_type().const_int(i as u64, false);
                    v = b.build_insert_element(v, x, idx, "").llvm()?;
                }
                v.into()
            }
        };
        let align = self.store_size(elem_ty) * vals.len() as u64;
        let st = b.build_store(p, value).llvm()?;
        st.set_alignment(align as u32).llvm()?;
        Ok(())
    }

    /// `count` consecutive elements of type `elem_ty` loaded at once from byte offset `at` of the
    /// shared array `smem`.
    fn shared_vector_load(
        &self,
        smem: PointerValue<'ctx>,
        at: IntValue<'ctx>,
        elem_ty: BasicTypeEnum<'ctx>,
        count: usize,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let b = &self.builder;
        let i8_ty = self.context.i8_type();
        // SAFETY: as in `shared_vector_store`: the run lies inside one chunk of the tile.
        let p = unsafe { b.build_in_bounds_gep(i8_ty, smem, &[at], "") }.llvm()?;
        let align = (self.store_size(elem_ty) * count as u64) as u32;
        if count == 1 {
            let v = b.build_load(elem_ty, p, "").llvm()?;
            if let Some(i) = v.as_instruction_value() {
                i.set_alignment(align).llvm()?;
            }
            return Ok(vec![v]);
        }
        let vty = super::memory::vector_of(elem_ty, count);
        let v = b.build_load(vty, p, "").llvm()?;
        if let Some(i) = v.as_instruction_value() {
            i.set_alignment(align).llvm()?;
        }
        let v = v.into_vector_value();
        (0..count)
            .map(|i| {
                let idx = self.context.i32_type().const_int(i as u64, false);
                b.build_extract_element(v, idx, "").llvm()
            })
            .collect()
    }

    /// A new shared array holding the tensor `vals` (this thread's slots under `dist`, elements of
    /// type `elem`) at row-major indices, followed by a barrier; and the array's element type.
    /// The array may take up to `limit` bytes.
    pub(super) fn tensor_to_shared(
        &mut self,
        dist: &Distribution,
        elem: Elem,
        vals: &[BasicValueEnum<'ctx>],
        limit: u64,
    ) -> Result<(PointerValue<'ctx>, BasicTypeEnum<'ctx>)> {
        let mem_ty: BasicTypeEnum<'ctx> = match elem {
            Elem::Ptr(_) => self.context.i64_type().into(),
            Elem::Scalar(DType::I1) => self.context.i8_type().into(),
            Elem::Scalar(_) => register_type(self.context, elem),
        };
        let numel = dist.numel();
        let smem = self.shared_array_within(mem_ty, numel, limit)?;
        self.store_tensor(smem, mem_ty, dist, vals, Self::memory_from_register)?;
        self.barrier()?;
        Ok((smem, mem_ty))
    }

    /// Writes the tensor `vals` (this thread's registers under `dist`) to the shared array `smem`
    /// at row-major indices, each element once: by the thread that owns it (see `layout`), after
    /// `to_mem` (the element's form in the array). No barrier: the caller
    /// places them.
    pub(super) fn store_tensor(
        &mut self,
        smem: PointerValue<'ctx>,
        mem_ty: BasicTypeEnum<'ctx>,
        dist: &Distribution,
        vals: &[BasicValueEnum<'ctx>],
        to_mem: impl Fn(
            &Self,
            BasicValueEnum<'ctx>,
            BasicTypeEnum<'ctx>,
        ) -> Result<BasicValueEnum<'ctx>>,
    ) -> Result<()> {
        let t = self.thread_coords(dist)?;
        let owner = self.owner(dist)?;
        let mut writes = Vec::new();
        for (k, &v) in vals.iter().enumerate() {
            let at = self.flat_index(dist, &t, k)?;
            writes.push((at, to_mem(self, v, mem_ty)?));
        }
        self.guarded(owner, |me| {
            for &(at, v) in &writes {
                me.shared_store(smem, mem_ty, at, v)?;
            }
            Ok(())
        })
    }

    /// The row-major index of slot `k` of this thread (coordinates `t`) under `dist` (an extent-1
    /// dimension adds nothing).
    pub(super) fn flat_index(
        &self,
        dist: &Distribution,
        t: &[IntValue<'ctx>],
        k: usize,
    ) -> Result<IntValue<'ctx>> {
        let i32_ty = self.context.i32_type();
        let mut i = i32_ty.const_zero();
        for d in 0..dist.rank() {
            let x = self.index_along(dist, t, d, k)?;
            let scaled = self
                .builder
                .build_int_nsw_mul(i, i32_ty.const_int(dist.extent(d), false), "")
                .llvm()?;
            i = self.builder.build_int_nsw_add(scaled, x, "").llvm()?;
        }
        Ok(i)
    }

    /// A register value in the form a shared array of `mem_ty` holds.
    fn memory_from_register(
        &self,
        v: BasicValueEnum<'ctx>,
        mem_ty: BasicTypeEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.builder;
        Ok(match v {
            BasicValueEnum::PointerValue(p) => b
                .build_ptr_to_int(p, self.context.i64_type(), "")
                .llvm()?
                .into(),
            BasicValueEnum::IntValue(i) if i.get_type().get_bit_width() == 1 => b
                .build_int_z_extend(i, mem_ty.into_int_type(), "")
                .llvm()?
                .into(),
            other => other,
        })
    }

    /// The register value of element type `elem` from its shared-memory form.
    pub(super) fn register_from_memory(
        &self,
        v: BasicValueEnum<'ctx>,
        elem: Elem,
    ) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.builder;
        Ok(match elem {
            Elem::Ptr(_) => b
                .build_int_to_ptr(
                    int(v),
                    self.context.ptr_type(AddressSpace::from(GLOBAL)),
                    "",
                )
                .llvm()?
                .into(),
            Elem::Scalar(DType::I1) => b
                .build_int_compare(IntPredicate::NE, int(v), int(v).get_type().const_zero(), "")
                .llvm()?
                .into(),
            Elem::Scalar(_) => v,
        })
    }
}

/// Bytes an element of type `elem` takes in a scratch array (its memory form: a boolean is a
/// byte, a pointer a 64-bit integer).
pub(super) fn memory_bytes(elem: Elem) -> u64 {
    match elem {
        Elem::Ptr(_) => 8,
        Elem::Scalar(d) => u64::from(d.size_bytes()),
    }
}

/// The swizzle of [`Lowerer::convert_swizzled`]'s scratch tile, where that path applies: a 2-D
/// tile of 16- or 32-bit numbers from an mma layout into a blocked one, rows of whole 16-byte
/// chunks (a power of two of them), and on both sides runs of at least two consecutive columns
/// per thread. The chunk of row `r` is XORed with `(r / per_phase) % max_phase`, phases over
/// 128-byte lines as the `ldmatrix` tiles have them.
pub(super) fn swizzled_conversion(from: &Type, to: &Type) -> Option<Swizzle> {
    let size: u64 = match from.elem {
        Elem::Scalar(DType::F16 | DType::BF16) => 2,
        Elem::Scalar(DType::F32 | DType::I32) => 4,
        _ => return None,
    };
    if from.elem != to.elem
        || from.shape.len() != 2
        || !matches!(from.layout, Some(Layout::Mma(_)))
        || !matches!(to.layout, Some(Layout::Blocked(_)))
    {
        return None;
    }
    let (rows, c) = (u64::from(from.shape[0]), u64::from(from.shape[1]));
    let row_bytes = c * size;
    if !row_bytes.is_multiple_of(16) || !(row_bytes / 16).is_power_of_two() {
        return None;
    }
    let runs = |t: &Type| {
        Distribution::of(t)
            .ok()
            .is_some_and(|d| matches!(d.contiguous_run(), (1, run) if run >= 2))
    };
    if !runs(from) || !runs(to) {
        return None;
    }
    Some(Swizzle {
        c,
        per_phase: (128 / row_bytes).max(1),
        max_phase: (row_bytes / 16).min(8),
        elem_bytes: size,
        chunk_bytes: 16,
        block: c,
        rows,
    })
}

/// Whether `convert_layout` from `from` to `to` moves runs of columns as vectors through a
/// swizzled tile ([`swizzled_conversion`]; the compile-cost budget weighs it so).
pub(crate) fn converts_by_vectors(from: &Type, to: &Type) -> bool {
    swizzled_conversion(from, to).is_some()
}

/// The shared memory `convert_layout` from `from` to `to` needs, in bytes: the swizzled 16-bit
/// tile of the `ldmatrix` path, or the tensor in its memory form (also the size of the swizzled
/// path's tile, whose elements are numbers).
/// The registers of `from` that `to`'s registers take, where converting between the two layouts
/// moves nothing between threads ([`Distribution::register_permutation`]).
pub(super) fn register_permutation(from: &Type, to: &Type) -> Option<Vec<usize>> {
    let (a, b) = (Distribution::of(from).ok()?, Distribution::of(to).ok()?);
    a.register_permutation(&b)
}

pub(super) fn convert_scratch_bytes(from: &Type, to: &Type) -> u64 {
    if register_permutation(from, to).is_some() {
        0
    } else if Lowerer::wants_ldmatrix(from, to) {
        crate::staging::operand_bytes(to, true)
    } else {
        from.numel() * memory_bytes(from.elem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tile_core::ir::{BlockedLayout, MmaLayout};

    /// The byte where the swizzled scratch tile holds element `(row, col)` (what
    /// `swizzled_byte_offset` computes in the generated code).
    fn byte(sw: &Swizzle, row: u64, col: u64) -> u64 {
        let per_chunk = sw.chunk_bytes / sw.elem_bytes;
        let phase = (row / sw.per_phase) % sw.max_phase;
        row * sw.c * sw.elem_bytes
            + ((col / per_chunk) ^ phase) * sw.chunk_bytes
            + (col % per_chunk) * sw.elem_bytes
    }

    fn tile(d: DType, shape: [u32; 2], layout: Layout) -> Type {
        Type {
            elem: Elem::Scalar(d),
            shape: shape.to_vec(),
            layout: Some(layout),
        }
    }

    /// `gemm_wide`'s epilogue and smaller ones: every element gets its own bytes, each warp's
    /// vector store of its mma fragments touches every bank at most once per 128 bytes (no
    /// conflicts), and each quarter-warp's 16-byte read of the blocked rows does too.
    #[test]
    fn mma_to_blocked_scratch_is_a_bijection_without_bank_conflicts() {
        let cases = [
            (DType::F16, [128, 256], vec![8, 1], vec![4, 8], vec![8, 1]),
            (DType::BF16, [64, 64], vec![4, 1], vec![4, 8], vec![4, 1]),
            (DType::F16, [128, 128], vec![4, 1], vec![2, 16], vec![4, 1]),
        ];
        for (d, shape, mma_wpc, tpw, wpc) in cases {
            let from = tile(
                d,
                shape,
                Layout::Mma(MmaLayout {
                    version: 3,
                    warps_per_cta: mma_wpc.clone(),
                }),
            );
            let to = tile(
                d,
                shape,
                Layout::Blocked(BlockedLayout {
                    size_per_thread: vec![1, 8],
                    threads_per_warp: tpw,
                    warps_per_cta: wpc,
                    order: vec![1, 0],
                }),
            );
            let sw = swizzled_conversion(&from, &to).expect("the swizzled path applies");
            let bytes = u64::from(shape[0]) * u64::from(shape[1]) * sw.elem_bytes;
            let mut seen = vec![false; (bytes / sw.elem_bytes) as usize];
            for (ty, write) in [(&from, true), (&to, false)] {
                let dist = Distribution::of(ty).unwrap();
                let (_, run) = dist.contiguous_run();
                let run = run.min(sw.chunk_bytes / sw.elem_bytes) as usize;
                let warps: u64 = mma_wpc.iter().map(|&w| u64::from(w)).product();
                for warp in 0..warps {
                    for k in (0..dist.elems_per_thread()).step_by(run) {
                        // Bytes per bank per 128-byte wavefront of this instruction.
                        let mut banks = std::collections::HashMap::new();
                        for lane in 0..32 {
                            let at = dist.logical_index(lane, warp, k);
                            let b = byte(&sw, at[0], at[1]);
                            assert_eq!(b % (run as u64 * sw.elem_bytes), 0, "run alignment");
                            for j in 0..run as u64 {
                                let e = byte(&sw, at[0], at[1] + j);
                                assert_eq!(e, b + j * sw.elem_bytes, "a run stays in its chunk");
                                if write {
                                    let slot = (e / sw.elem_bytes) as usize;
                                    assert!(!seen[slot], "{d:?} {shape:?}: element twice");
                                    seen[slot] = true;
                                }
                            }
                            // Lanes in groups whose accesses total 128 bytes share a wavefront.
                            let group = lane / (128 / (run as u64 * sw.elem_bytes)).min(32);
                            let word = b / 4;
                            for w in 0..(run as u64 * sw.elem_bytes).div_ceil(4) {
                                let bank = (word + w) % 32;
                                let n = banks.entry((group, bank)).or_insert(0);
                                *n += 1;
                                assert_eq!(*n, 1, "{d:?} {shape:?} write={write}: a bank conflict");
                            }
                        }
                    }
                }
            }
            assert!(
                seen.iter().all(|&s| s),
                "{d:?} {shape:?}: an element was not written"
            );
        }
    }

    /// Not for f32 into f32 with runs of one, 1-D tiles, or blocked sources.
    #[test]
    fn swizzled_path_applies_to_mma_runs_only() {
        let mma = Layout::Mma(MmaLayout {
            version: 3,
            warps_per_cta: vec![4, 1],
        });
        let blocked = |spt: u32, tpw: Vec<u32>| {
            Layout::Blocked(BlockedLayout {
                size_per_thread: vec![1, spt],
                threads_per_warp: tpw,
                warps_per_cta: vec![4, 1],
                order: vec![1, 0],
            })
        };
        let to = tile(DType::F16, [64, 64], blocked(8, vec![4, 8]));
        assert!(swizzled_conversion(&tile(DType::F16, [64, 64], mma.clone()), &to).is_some());
        // Runs of one element on the destination side.
        let ones = tile(DType::F16, [64, 64], blocked(1, vec![1, 32]));
        assert!(swizzled_conversion(&tile(DType::F16, [64, 64], mma.clone()), &ones).is_none());
        // A blocked source.
        assert!(swizzled_conversion(&to, &to).is_none());
        // Booleans and pointers keep the general path.
        assert!(swizzled_conversion(
            &tile(DType::I1, [64, 64], mma),
            &tile(DType::I1, [64, 64], blocked(8, vec![4, 8]))
        )
        .is_none());
    }
}
