//! Shared memory: static arrays, barriers, and `convert_layout`, which moves a tensor between two
//! layouts through one.
//!
//! Every user of shared memory gets its own static arrays (`addrspace(3)`, internal linkage,
//! 16-byte aligned) while it is lowered; once the kernel is lowered, the arrays of different ops are
//! laid over one another in a single array (`Lowerer::merge_shared`, safe because every use is
//! bracketed by barriers). One op's arrays stay below the 48 KiB a program may declare statically
//! ([`SHARED_LIMIT`]), or the lowering fails with a message.
//!
//! `convert_layout` writes every element once (from the thread that owns it, see `layout`) at its
//! row-major index, waits at a barrier, and reads each slot of the new layout
//! from its index. A barrier also precedes the writes, so that a later use of the array (once loops
//! exist) cannot overtake readers of an earlier one. Elements travel in their memory form:
//! booleans as bytes, pointers as 64-bit integers.

use inkwell::module::Linkage;
use inkwell::types::{BasicType, BasicTypeEnum};
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use inkwell::{AddressSpace, IntPredicate};
use tile_core::ir::{DType, Elem, OpData};

use super::layout::Distribution;
use super::lower::{int, pointer, register_type, Lowerer, OrLlvm, Result, GLOBAL};

/// The address space of shared memory in NVPTX.
const SHARED: u16 = 3;

/// Static shared memory a program may declare, in bytes.
pub(super) const SHARED_LIMIT: u64 = 48 * 1024;

/// One shared array created during lowering: the op it belongs to, and its size.
pub(super) struct SharedArray<'ctx> {
    /// The op (its index) whose lowering created it.
    pub op: usize,
    /// The array.
    pub global: inkwell::values::GlobalValue<'ctx>,
    /// Its size in bytes.
    pub bytes: u64,
    /// A `local_alloc` buffer, live for the whole kernel: it gets bytes of its own instead of
    /// sharing them with other ops.
    pub persistent: bool,
}

impl<'ctx> Lowerer<'_, 'ctx> {
    /// A new static shared array of `n` elements of type `elem`, named after the current op. The
    /// arrays of one op must fit the limit together; those of different ops share memory (see
    /// [`Lowerer::merge_shared`]).
    pub(super) fn shared_array(
        &mut self,
        elem: BasicTypeEnum<'ctx>,
        n: u64,
    ) -> Result<PointerValue<'ctx>> {
        let op = self.current_op.map_or(0, |o| o.index());
        let bytes = n * self.store_size(elem)?;
        let this_op: u64 = self
            .smem
            .iter()
            .filter(|a| a.op == op)
            .map(|a| a.bytes.next_multiple_of(16))
            .sum::<u64>()
            + bytes;
        if this_op > SHARED_LIMIT {
            return Err(format!(
                "an op needs {this_op} bytes of shared memory, more than the {SHARED_LIMIT} a program may declare statically (smaller tiles help)"
            ));
        }
        let len = u32::try_from(n).map_err(|_| "a shared array is too long".to_string())?;
        let array_ty = elem.array_type(len);
        let mut name = format!("__tile_smem_op{op}");
        let mut i = 1;
        while self.module.get_global(&name).is_some() {
            name = format!("__tile_smem_op{op}_{i}");
            i += 1;
        }
        let g = self.internal_shared_global(array_ty, &name);
        self.smem.push(SharedArray {
            op,
            global: g,
            bytes,
            persistent: false,
        });
        Ok(g.as_pointer_value())
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

    /// A `local_alloc` buffer of `bytes` bytes: a placeholder array, given its place in the
    /// kernel's dynamic shared memory by [`Lowerer::merge_shared`], after every op's scratch arrays.
    pub(super) fn shared_buffer(&mut self, bytes: u64) -> Result<PointerValue<'ctx>> {
        let op = self.current_op.map_or(0, |o| o.index());
        let len = u32::try_from(bytes).map_err(|_| "a shared buffer is too large".to_string())?;
        let array_ty = self.context.i8_type().array_type(len);
        let g = self.internal_shared_global(array_ty, &format!("__tile_buffer_op{op}"));
        self.smem.push(SharedArray {
            op,
            global: g,
            bytes,
            persistent: true,
        });
        Ok(g.as_pointer_value())
    }

    /// Makes every op's shared arrays one region of a single array `__tile_smem` as large as the
    /// largest op's arrays together (each 16-byte aligned), instead of one array each. Safe because
    /// every use of shared memory is bracketed by barriers (a barrier, the writes, a barrier, the
    /// reads; see `reduce`, `convert_layout`, `dot`): the next op's writes come after a barrier
    /// that every thread reaches only after its reads of the previous op's data. So a kernel
    /// needs the shared memory of its largest op, not of all of them, and more programs fit on an
    /// SM.
    ///
    /// A kernel with `local_alloc` buffers puts everything in one dynamic shared array instead
    /// (`extern`, sized at launch): the scratch region first, then each buffer in bytes of its
    /// own (buffers live for the whole kernel). Returns the dynamic bytes (0 without buffers).
    pub(super) fn merge_shared(&mut self) -> Result<u64> {
        let dynamic = self.smem.iter().any(|a| a.persistent);
        let mut ops: Vec<usize> = self
            .smem
            .iter()
            .filter(|a| !a.persistent)
            .map(|a| a.op)
            .collect();
        ops.dedup();
        if ops.len() < 2 && !dynamic {
            return Ok(0);
        }
        let mut offsets = Vec::with_capacity(self.smem.len());
        let mut size = 0u64;
        let mut cursor = 0u64;
        let mut last_op = None;
        for a in self.smem.iter().filter(|a| !a.persistent) {
            if last_op != Some(a.op) {
                cursor = 0;
                last_op = Some(a.op);
            }
            offsets.push((a.global, cursor));
            cursor += a.bytes.next_multiple_of(16);
            size = size.max(cursor);
        }
        for a in self.smem.iter().filter(|a| a.persistent) {
            size = size.next_multiple_of(128);
            offsets.push((a.global, size));
            size += a.bytes;
        }
        let size = size.next_multiple_of(16);
        let i8_ty = self.context.i8_type();
        let union = if dynamic {
            // `.extern .shared .align 16 .b8 __tile_dyn_smem[]`: sized by the launch.
            let array_ty = i8_ty.array_type(0);
            let g = self.module.add_global(
                array_ty,
                Some(AddressSpace::from(SHARED)),
                "__tile_dyn_smem",
            );
            g.set_linkage(Linkage::External);
            g.set_alignment(16);
            g
        } else {
            let len = u32::try_from(size).map_err(|_| "shared memory too large".to_string())?;
            self.internal_shared_global(i8_ty.array_type(len), "__tile_smem")
        };
        let base = union.as_pointer_value();
        for (global, off) in offsets {
            let at = self.context.i64_type().const_int(off, false);
            // SAFETY: a constant GEP of `off` bytes into the merged array, whose length (`size`,
            // the launch's dynamic size for the extern one) is at least `off` plus this array's
            // bytes, so the address stays inside it.
            let p = unsafe { base.const_gep(i8_ty, &[at]) };
            global.as_pointer_value().replace_all_uses_with(p);
            // SAFETY: every use of the old global was just replaced, so deleting it leaves no
            // dangling reference; it is not used again (`smem` is cleared below).
            unsafe { global.delete() };
        }
        self.smem.clear();
        Ok(if dynamic { size } else { 0 })
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
    /// type `elem`) at row-major indices, between two barriers; and the array's element type.
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
        self.barrier()?;
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
