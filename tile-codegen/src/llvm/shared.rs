//! Shared memory: the kernel's one shared array, scratch arrays, barriers, and `convert_layout`,
//! which moves a tensor between two layouts through shared memory.
//!
//! A kernel has one shared array (`addrspace(3)`; 16-byte aligned, 1024 when dynamic: buffers
//! start at multiples of 1024 bytes in it), as large as the allocation
//! (`passes::shared_alloc`) says: static and internal when it fits [`SHARED_LIMIT`] and no
//! `local_alloc` buffer asks for dynamic memory, else the `extern` dynamic array the launch sizes.
//! Every user gets its bytes where the allocation put them: a `local_alloc` buffer its region, an
//! op with scratch memory its region, carved into 16-byte aligned arrays as its lowering asks
//! (checked against the region's size, which `scratch` computed from the same decisions). One op's
//! arrays stay below the 48 KiB a program may declare statically, or the lowering fails with a
//! message.
//!
//! Barriers: an op's lowering places the one between its own writes and reads; the one before
//! its writes, where an earlier user of the same bytes may still be reading, is an IR `barrier`
//! that `insert-barriers` placed (and the lowering refuses a kernel that lacks one).
//!
//! `convert_layout` writes every element once (from the thread that owns it, see `layout`) at its
//! row-major index, waits at a barrier, and reads each slot of the new layout from its index.
//! Elements travel in their memory form: booleans as bytes, pointers as 64-bit integers.

use inkwell::module::Linkage;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use inkwell::{AddressSpace, IntPredicate};
use tile_core::ir::{DType, Elem, OpData, Type};

use super::layout::Distribution;
use super::lower::{int, pointer, register_type, Lowerer, OrLlvm, Result, GLOBAL};

/// The address space of shared memory in NVPTX.
const SHARED: u16 = 3;

/// Static shared memory a program may declare, in bytes.
pub(super) const SHARED_LIMIT: u64 = 48 * 1024;

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
        let (g, dyn_bytes) = if dynamic || size > SHARED_LIMIT {
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
            let len = u32::try_from(size).map_err(|_| "shared memory too large".to_string())?;
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
            .ok_or("shared memory used, but the allocation has none")?;
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
    /// must fit [`SHARED_LIMIT`] together; a region too small for what the lowering asks is the
    /// allocation disagreeing with the lowering (`scratch`), an internal error.
    pub(super) fn shared_array(
        &mut self,
        elem: BasicTypeEnum<'ctx>,
        n: u64,
    ) -> Result<PointerValue<'ctx>> {
        let op = self.current_op.ok_or("a shared array outside any op")?;
        let bytes = n
            .checked_mul(self.store_size(elem)?)
            .ok_or("a shared array is too large")?;
        let used = if self.scratch_used.0 == Some(op) {
            self.scratch_used.1
        } else {
            0
        };
        let start = used.next_multiple_of(16);
        let end = start + bytes;
        if end > SHARED_LIMIT {
            return Err(format!(
                "an op needs {end} bytes of shared memory, more than the {SHARED_LIMIT} a program may declare statically (smaller tiles help)"
            ));
        }
        let place = self
            .alloc
            .place(op)
            .ok_or("internal error: an op uses shared memory the allocation gave it none of")?;
        if end > place.bytes {
            return Err(format!(
                "internal error: the op uses {end} bytes of scratch shared memory, the allocation gave it {}",
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
        let op = self.current_op.ok_or("a shared buffer outside any op")?;
        let place = self
            .alloc
            .place(op)
            .ok_or("internal error: a buffer the allocation did not place")?;
        self.shared_at(place.offset)
    }

    /// Bytes one element of `t` occupies in a shared array.
    fn store_size(&self, t: BasicTypeEnum<'ctx>) -> Result<u64> {
        Ok(match t {
            BasicTypeEnum::IntType(i) => u64::from(i.get_bit_width().div_ceil(8)),
            BasicTypeEnum::FloatType(f) => {
                if f == self.context.f32_type() {
                    4
                } else {
                    2
                }
            }
            other => return Err(format!("no shared arrays of `{other}`")),
        })
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
            .ok_or("the builder is not inside a function")?;
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
            .ok_or_else(|| format!("LLVM has no intrinsic `{name}`"))?;
        self.builder.build_call(decl, &[], "").llvm()?;
        Ok(())
    }

    /// `convert_layout`: the operand's elements, held as the result's layout places them.
    pub(super) fn convert_layout(&mut self, data: &OpData) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let f = self.f;
        let from = f.ty(*data.operands.first().ok_or("missing operand")?);
        let to = self.result_type(data)?;
        if Self::wants_ldmatrix(from, to) {
            return self.convert_with_ldmatrix(data);
        }
        let (src, dst) = (
            self.tensor_distribution(from)?,
            self.tensor_distribution(to)?,
        );
        let vals = self.operand(data, 0)?.to_vec();
        let elem = from.elem;
        let (smem, mem_ty) = self.tensor_to_shared(&src, elem, &vals)?;

        let td = self.thread_coords(&dst)?;
        let mut out = Vec::with_capacity(dst.elems_per_thread());
        for k in 0..dst.elems_per_thread() {
            let at = self.flat_index(&dst, &td, k)?;
            let v = self.shared_load(smem, mem_ty, at)?;
            out.push(self.register_from_memory(v, elem)?);
        }
        Ok(out)
    }

    /// A new shared array holding the tensor `vals` (this thread's slots under `dist`, elements of
    /// type `elem`) at row-major indices, followed by a barrier; and the array's element type.
    pub(super) fn tensor_to_shared(
        &mut self,
        dist: &Distribution,
        elem: Elem,
        vals: &[BasicValueEnum<'ctx>],
    ) -> Result<(PointerValue<'ctx>, BasicTypeEnum<'ctx>)> {
        let mem_ty: BasicTypeEnum<'ctx> = match elem {
            Elem::Ptr(_) => self.context.i64_type().into(),
            Elem::Scalar(DType::I1) => self.context.i8_type().into(),
            Elem::Scalar(_) => register_type(self.context, elem),
        };
        let numel = dist.numel();
        let smem = self.shared_array(mem_ty, numel)?;
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
                    int(v)?,
                    self.context.ptr_type(AddressSpace::from(GLOBAL)),
                    "",
                )
                .llvm()
                .map(|p| pointer(p.into()))??
                .into(),
            Elem::Scalar(DType::I1) => b
                .build_int_compare(
                    IntPredicate::NE,
                    int(v)?,
                    int(v)?.get_type().const_zero(),
                    "",
                )
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

/// The shared memory `convert_layout` from `from` to `to` needs, in bytes: the swizzled 16-bit
/// tile of the `ldmatrix` path, or the tensor in its memory form.
pub(super) fn convert_scratch_bytes(from: &Type, to: &Type) -> u64 {
    if Lowerer::wants_ldmatrix(from, to) {
        to.numel() * 2
    } else {
        from.numel() * memory_bytes(from.elem)
    }
}
