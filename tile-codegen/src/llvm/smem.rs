//! Explicit shared memory: `local_alloc`, `async_copy` (`cp.async`), `async_commit`,
//! `async_wait`, and `local_load` (`ldmatrix` into a 16-bit mma operand layout or a tf32 `A`
//! operand; one 4-byte `ld.shared` per register for a tf32 `B` operand; a whole stage into a
//! blocked or accumulator layout, one `ld.shared` per run of columns a thread holds).
//!
//! **Buffers.** A `local_alloc` buffer (`smem<S x R x C x T, #shared…>`) is one array of
//! `S · R · C` elements; stage `s` starts `s · R · C · size(T)` bytes in, and element `(r, c)` of
//! a stage sits where its [`SharedLayout`] swizzle puts it. Its bytes, in the kernel's dynamic
//! shared memory, are where the allocation put them (`analysis::shared_alloc`): the buffer's alone
//! while it is live, another user's after that.
//!
//! **Copies.** Each thread copies the elements its pointer tile's layout gives it, `vec` at a time:
//! `cp.async.cg` of 16 bytes, or `cp.async.ca` of 4 or 8, whose `ignore-src` predicate is the negated
//! mask (where the mask is false nothing is read and the destination is zero-filled). A copy of a single 16-bit element (the
//! unaligned variant's `vec = 1`) has no `cp.async` form: it is a predicated `ld.global` and an
//! `st.shared`, complete when it returns; a run of them with consecutive sources (by the axis
//! analysis) inside one swizzle chunk is one asm block with immediate offsets from the run's
//! first addresses. Where the layout holds an element in several threads,
//! only its owner copies it. `async_commit` and `async_wait` are `cp.async.commit_group` and
//! `cp.async.wait_group`; visibility to other threads needs a `barrier` after the wait.

use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, BasicValue, BasicValueEnum, IntValue};
use tile_core::ir::{Layout, OpData, SharedLayout, Type};

use super::ldmatrix::{OperandRead, ReadForm, Swizzle};
use super::lower::{bug, dtype, int, pointer, Lowerer, OrBug, OrLlvm, Result};

/// The buffer type of operand 0 and its shared layout (the verifier's rule 25).
fn buffer_of<'t>(f: &'t tile_core::ir::Function, data: &OpData) -> (&'t Type, SharedLayout) {
    let ty = f.ty(*data.operands.first().or_bug("a buffer operand"));
    match &ty.layout {
        Some(Layout::Shared(s)) if ty.shape.len() == 3 => (ty, s.clone()),
        _ => bug(format_args!("a shared buffer, found `{ty}`")),
    }
}

impl<'ctx> Lowerer<'_, 'ctx> {
    /// `local_alloc`: the buffer's address, where the allocation put it (one pointer, held by
    /// every thread; the allocation sized it from the op's type).
    pub(super) fn local_alloc(&mut self) -> Result<Vec<BasicValueEnum<'ctx>>> {
        Ok(vec![self.shared_buffer()?.into()])
    }

    /// The shared address of stage `stage` of the buffer operand (operand 0, its stage operand
    /// 1, of type `ty`).
    pub(super) fn stage_base(&self, data: &OpData, ty: &Type) -> Result<IntValue<'ctx>> {
        let buf = pointer(self.scalar_operand(data, 0));
        let stage = int(self.scalar_operand(data, 1));
        self.stage_address(buf, stage, ty)
    }

    /// The shared address of stage `stage` of buffer `buf` (of type `ty`, `smem<S x R x C x
    /// T>`): `base + stage · R · C · size(T)`.
    pub(super) fn stage_address(
        &self,
        buf: inkwell::values::PointerValue<'ctx>,
        stage: IntValue<'ctx>,
        ty: &Type,
    ) -> Result<IntValue<'ctx>> {
        let d = dtype(ty);
        let stage_bytes =
            u64::from(ty.shape[1]) * u64::from(ty.shape[2]) * u64::from(d.size_bytes());
        let base = self.shared_address(buf)?;
        let b = &self.builder;
        let i32_ty = self.context.i32_type();
        let off = b
            .build_int_nuw_mul(stage, i32_ty.const_int(stage_bytes, false), "")
            .llvm()?;
        b.build_int_nuw_add(base, off, "").llvm()
    }

    /// `async_copy %buf, %stage, %ptr[, %mask]` (see the module documentation).
    pub(super) fn async_copy(&mut self, data: &OpData, vec: u32) -> Result<()> {
        let f = self.f;
        let (ty, layout) = buffer_of(f, data);
        let d = dtype(ty);
        let cols = u64::from(ty.shape[2]);
        let sw = Swizzle::from_layout(&layout, u64::from(ty.shape[1]), cols, d.size_bytes());
        let pty = self.operand_type(data, 2);
        let src = self.tensor_distribution(pty);
        let base = self.stage_base(data, ty)?;
        let ptrs = self.operand(data, 2).to_vec();
        let masks = data.operands.get(3).map(|_| self.operand(data, 3).to_vec());
        let t = self.thread_coords(&src)?;
        let owner = self.owner(&src)?;
        let bytes = u64::from(vec) * u64::from(d.size_bytes());
        let (run_dim, run) = src.contiguous_run();
        if vec > 1 && (run_dim != 1 || run % u64::from(vec) != 0) {
            return Err(format!(
                "`async_copy` of {vec} elements needs runs along the columns"
            ));
        }
        // 16-bit elements copied one at a time, in runs of consecutive columns whose pointers
        // are consecutive too (the axis analysis says so) and whose destination is one swizzle
        // chunk: each run is one asm block addressing its elements from the run's first source
        // pointer and destination, with immediate offsets. A pointer and a shared address per
        // element instead held 255 registers and spilled in a 128 × 256 × 64 GEMM tile.
        if bytes < 4 {
            let contiguity = self
                .axis
                .get(data.operands[2].index())
                .map_or(1, |i| i.contiguity);
            let elem = u64::from(d.size_bytes());
            let grouped = elem == 2
                && run_dim == 1
                && run > 1
                && contiguity.is_multiple_of(run)
                && run * elem <= sw.chunk_bytes
                && (ptrs.len() as u64).is_multiple_of(run);
            if grouped {
                let mut runs = Vec::new();
                for k in (0..ptrs.len()).step_by(run as usize) {
                    let row = self.index_along(&src, &t, 0, k)?;
                    let col = self.index_along(&src, &t, 1, k)?;
                    let off = self.swizzled_byte_offset(sw, row, col)?;
                    let dst = self.builder.build_int_nuw_add(base, off, "").llvm()?;
                    let m = masks.as_ref().map(|m| {
                        m[k..k + run as usize]
                            .iter()
                            .map(|&v| int(v))
                            .collect::<Vec<_>>()
                    });
                    runs.push((dst, pointer(ptrs[k]), m));
                }
                return self.guarded(owner, |me| {
                    for (dst, src, m) in &runs {
                        me.copy_half_run(*dst, *src, m.as_deref(), run, elem)?;
                    }
                    Ok(())
                });
            }
        }
        // Per copy: destination address, source pointer, mask.
        let mut copies = Vec::new();
        for k in (0..ptrs.len()).step_by(vec as usize) {
            let row = self.index_along(&src, &t, 0, k)?;
            let col = self.index_along(&src, &t, 1, k)?;
            let off = self.swizzled_byte_offset(sw, row, col)?;
            let dst = self.builder.build_int_nuw_add(base, off, "").llvm()?;
            let m = masks.as_ref().map(|m| int(m[k]));
            copies.push((dst, pointer(ptrs[k]), m));
        }
        self.guarded(owner, |me| {
            for &(dst, src, m) in &copies {
                if bytes >= 4 {
                    me.cp_async(dst, src, m, bytes)?;
                } else {
                    me.copy_half(dst, src, m, d.size_bytes())?;
                }
            }
            Ok(())
        })
    }

    /// One `cp.async` of `bytes` (4, 8 or 16) from `src` to shared address `dst`, zero-filled
    /// (nothing read) where `mask` is false: the mask is the instruction's `ignore-src`
    /// predicate (PTX 7.5), so a mask made of several conditions stays predicate logic instead of
    /// a chain of selects of the source size.
    fn cp_async(
        &self,
        dst: IntValue<'ctx>,
        src: inkwell::values::PointerValue<'ctx>,
        mask: Option<IntValue<'ctx>>,
        bytes: u64,
    ) -> Result<()> {
        let ctx = self.context;
        let i32_ty = ctx.i32_type();
        // `.cg` (L2 only) exists for 16 bytes; smaller copies go through L1 (`.ca`).
        let cache = if bytes == 16 { "cg" } else { "ca" };
        let copy = format!("cp.async.{cache}.shared.global [$0], [$1], {bytes}");
        let ptr_ty = src.get_type();
        let (text, constraints, params, args): (
            String,
            &str,
            Vec<BasicMetadataTypeEnum>,
            Vec<BasicMetadataValueEnum>,
        ) = match mask {
            Some(m) => (
                format!("{{ .reg .pred %ignore; not.pred %ignore, $2; {copy}, %ignore; }}"),
                "r,l,b,~{memory}",
                vec![i32_ty.into(), ptr_ty.into(), ctx.bool_type().into()],
                vec![dst.into(), src.into(), m.into()],
            ),
            None => (
                format!("{copy};"),
                "r,l,~{memory}",
                vec![i32_ty.into(), ptr_ty.into()],
                vec![dst.into(), src.into()],
            ),
        };
        let fn_ty = ctx.void_type().fn_type(&params, false);
        let asm = ctx.create_inline_asm(
            fn_ty,
            text,
            constraints.to_string(),
            true,
            false,
            None,
            false,
        );
        self.builder
            .build_indirect_call(fn_ty, asm, &args, "")
            .llvm()?;
        Ok(())
    }

    /// A 16-bit (or 8-bit: `elem_bytes`) element copied synchronously (no `cp.async` is that
    /// small): 0 where `mask` is false, else the loaded element.
    fn copy_half(
        &self,
        dst: IntValue<'ctx>,
        src: inkwell::values::PointerValue<'ctx>,
        mask: Option<IntValue<'ctx>>,
        elem_bytes: u32,
    ) -> Result<()> {
        let ctx = self.context;
        let i32_ty = ctx.i32_type();
        let mask = mask.unwrap_or(ctx.bool_type().const_all_ones());
        // A byte travels in a 16-bit register (`ld.u8` zero-extends into it).
        let text = if elem_bytes == 1 {
            "{ .reg .u16 t; mov.u16 t, 0; @$2 ld.global.u8 t, [$1]; st.shared.u8 [$0], t; }"
        } else {
            "{ .reg .b16 t; mov.b16 t, 0; @$2 ld.global.b16 t, [$1]; st.shared.b16 [$0], t; }"
        };
        let params: [BasicMetadataTypeEnum; 3] =
            [i32_ty.into(), src.get_type().into(), ctx.bool_type().into()];
        let fn_ty = ctx.void_type().fn_type(&params, false);
        let asm = ctx.create_inline_asm(
            fn_ty,
            text.to_string(),
            "r,l,b,~{memory}".to_string(),
            true,
            false,
            None,
            false,
        );
        let args: [BasicMetadataValueEnum; 3] = [dst.into(), src.into(), mask.into()];
        self.builder
            .build_indirect_call(fn_ty, asm, &args, "")
            .llvm()?;
        Ok(())
    }

    /// `run` (even) consecutive 16-bit elements copied synchronously from `src` to shared address
    /// `dst` (both the run's first element; element `j` is `j · elem` bytes on in both), each 0
    /// where its mask is false: one asm block, the offsets immediate.
    fn copy_half_run(
        &self,
        dst: IntValue<'ctx>,
        src: inkwell::values::PointerValue<'ctx>,
        masks: Option<&[IntValue<'ctx>]>,
        run: u64,
        elem: u64,
    ) -> Result<()> {
        let ctx = self.context;
        let i32_ty = ctx.i32_type();
        // Pairs of elements travel as one 32-bit word into shared memory (the run starts a
        // swizzle chunk, so each pair's destination is 4-byte aligned): half the stores, and
        // half the registers for loads that ptxas moves ahead of their stores.
        let mut text = String::from("{ .reg .b16 t0, t1; .reg .b32 w;");
        for j in (0..run).step_by(2) {
            for (i, t) in ["t0", "t1"].into_iter().enumerate() {
                let e = j + i as u64;
                let off = e * elem;
                match masks {
                    Some(_) => text.push_str(&format!(
                        " mov.b16 {t}, 0; @${p} ld.global.b16 {t}, [$1+{off}];",
                        p = 2 + e
                    )),
                    None => text.push_str(&format!(" ld.global.b16 {t}, [$1+{off}];")),
                }
            }
            text.push_str(&format!(
                " mov.b32 w, {{t0, t1}}; st.shared.b32 [$0+{}], w;",
                j * elem
            ));
        }
        text.push_str(" }");
        let mut params: Vec<BasicMetadataTypeEnum> = vec![i32_ty.into(), src.get_type().into()];
        let mut args: Vec<BasicMetadataValueEnum> = vec![dst.into(), src.into()];
        let mut constraints = String::from("r,l");
        for &m in masks.unwrap_or(&[]) {
            params.push(ctx.bool_type().into());
            args.push(m.into());
            constraints.push_str(",b");
        }
        constraints.push_str(",~{memory}");
        let fn_ty = ctx.void_type().fn_type(&params, false);
        let asm = ctx.create_inline_asm(fn_ty, text, constraints, true, false, None, false);
        self.builder
            .build_indirect_call(fn_ty, asm, &args, "")
            .llvm()?;
        Ok(())
    }

    /// An instruction without operands or results, with side effects on memory.
    pub(super) fn memory_asm(&self, text: String) -> Result<()> {
        let ctx = self.context;
        let fn_ty = ctx.void_type().fn_type(&[], false);
        let asm = ctx.create_inline_asm(
            fn_ty,
            text,
            "~{memory}".to_string(),
            true,
            false,
            None,
            false,
        );
        self.builder
            .build_indirect_call(fn_ty, asm, &[], "")
            .llvm()?;
        Ok(())
    }

    /// `cp.async.commit_group`.
    pub(super) fn async_commit(&self) -> Result<()> {
        self.memory_asm("cp.async.commit_group;".into())
    }

    /// `cp.async.wait_group pending`.
    pub(super) fn async_wait(&self, pending: u32) -> Result<()> {
        self.memory_asm(format!("cp.async.wait_group {pending};"))
    }

    /// `local_load {offset} %buf, %stage`: the window of the stage at `offset` read into the
    /// result's operand layout by `ldmatrix`.
    pub(super) fn local_load(
        &mut self,
        data: &OpData,
        offset: [u32; 2],
        trans: bool,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let f = self.f;
        let offset = offset.map(u64::from);
        let (ty, layout) = buffer_of(f, data);
        let to = self.result_type(data);
        let d = dtype(ty);
        let sw = Swizzle::from_layout(
            &layout,
            u64::from(ty.shape[1]),
            u64::from(ty.shape[2]),
            d.size_bytes(),
        );
        let operand_a = matches!(&to.layout, Some(Layout::DotOperand(o)) if o.op_idx == 0);
        if matches!(to.layout, Some(Layout::Blocked(_) | Layout::Mma(_))) {
            // A whole stage into a distributed layout (the verifier's rule 25).
            let base = self.stage_pointer(data, ty)?;
            return self.shared_read_runs(base, sw, to);
        }
        if trans || d.size_bytes() <= 2 {
            // 16-bit operands, and `i8`'s `A` (the verifier's rule 25).
            let form = match (trans, operand_a) {
                (false, _) => ReadForm::Rows { offset },
                (true, true) => ReadForm::TransposedA,
                (true, false) => ReadForm::TransposedB,
            };
            let base = self.stage_base(data, ty)?;
            self.read_or_slice(OperandRead {
                base,
                sw,
                form,
                to: to.clone(),
                elem: to.elem,
            })
        } else if operand_a && sw.chunk_bytes == 16 && to.shape[0] >= 16 && to.shape[1] >= 8 {
            let base = self.stage_base(data, ty)?;
            self.ldmatrix_tf32_a(base, sw, offset, to)
        } else {
            let base = self.stage_pointer(data, ty)?;
            self.shared_read_each(base, sw, offset, to)
        }
    }

    /// A pointer to the start of stage `stage` of the buffer operand (operand 0, its stage
    /// operand 1, of type `ty`).
    fn stage_pointer(
        &self,
        data: &OpData,
        ty: &Type,
    ) -> Result<inkwell::values::PointerValue<'ctx>> {
        let buf = pointer(self.scalar_operand(data, 0));
        let stage = int(self.scalar_operand(data, 1));
        let stage_bytes =
            u64::from(ty.shape[1]) * u64::from(ty.shape[2]) * u64::from(dtype(ty).size_bytes());
        let i32_ty = self.context.i32_type();
        let b = &self.builder;
        let off = b
            .build_int_nuw_mul(stage, i32_ty.const_int(stage_bytes, false), "")
            .llvm()?;
        // SAFETY: a GEP to the start of stage `stage` (< S, the verifier's stage rule) of the
        // buffer's S stages.
        unsafe { b.build_in_bounds_gep(self.context.i8_type(), buf, &[off], "") }.llvm()
    }

    /// Reads the whole swizzled stage at `base` into the
    /// distributed layout of `to`: each thread its own elements, one `ld.shared` per run of
    /// consecutive columns it holds (at most 16 bytes, within one swizzle chunk). A ring that
    /// copies a tile in the layout its consumer uses reads it back so: an attention bias in the
    /// accumulator's layout is a 4-byte read per pair of columns, and the 128-byte swizzle puts
    /// the eight rows of a warp's read on different banks.
    fn shared_read_runs(
        &mut self,
        base: inkwell::values::PointerValue<'ctx>,
        sw: Swizzle,
        to: &Type,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let dst = self.tensor_distribution(to);
        let t = self.thread_coords(&dst)?;
        let elem_ty = super::lower::register_type(self.context, to.elem);
        let n = dst.elems_per_thread();
        let (run_dim, run) = dst.contiguous_run();
        let elem = sw.elem_bytes;
        let mut v = if run_dim == 1 { run } else { 1 };
        while v > 1 && (v * elem > 16 || v * elem > sw.chunk_bytes || !(n as u64).is_multiple_of(v))
        {
            v /= 2;
        }
        let ctx = self.context;
        let mut out = Vec::with_capacity(n);
        for k in (0..n).step_by(v as usize) {
            let row = self.index_along(&dst, &t, 0, k)?;
            let col = self.index_along(&dst, &t, 1, k)?;
            let off = self.swizzled_byte_offset(sw, row, col)?;
            let b = &self.builder;
            // SAFETY: `off` is the swizzled byte offset of an element of this stage, the first
            // of a run inside one swizzle chunk.
            let p = unsafe { b.build_in_bounds_gep(ctx.i8_type(), base, &[off], "") }.llvm()?;
            if v == 1 {
                let x = b.build_load(elem_ty, p, "").llvm()?;
                if let Some(i) = x.as_instruction_value() {
                    i.set_alignment(elem as u32).llvm()?;
                }
                out.push(x);
                continue;
            }
            let vty = match elem_ty {
                inkwell::types::BasicTypeEnum::FloatType(x) => x.vec_type(v as u32),
                inkwell::types::BasicTypeEnum::IntType(x) => x.vec_type(v as u32),
                _ => bug("a shared read of numbers"),
            };
            let x = b.build_load(vty, p, "").llvm()?;
            if let Some(i) = x.as_instruction_value() {
                i.set_alignment((v * elem) as u32).llvm()?;
            }
            let x = x.into_vector_value();
            for j in 0..v {
                let e = b
                    .build_extract_element(x, ctx.i32_type().const_int(j, false), "")
                    .llvm()?;
                out.push(e);
            }
        }
        Ok(out)
    }

    /// Reads the window at `offset` of the swizzled tile at shared address `base` into the layout
    /// of `to` one element at a time (`ld.shared` of 4 bytes per register at its swizzled
    /// address): the tf32 operands, which `ldmatrix` (16-bit rows) does not transpose.
    fn shared_read_each(
        &mut self,
        base: inkwell::values::PointerValue<'ctx>,
        sw: Swizzle,
        offset: [u64; 2],
        to: &Type,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let dst = self.tensor_distribution(to);
        let t = self.thread_coords(&dst)?;
        let elem_ty = super::lower::register_type(self.context, to.elem);
        let mut out = Vec::with_capacity(dst.elems_per_thread());
        for k in 0..dst.elems_per_thread() {
            let i32_ty = self.context.i32_type();
            let row = self.index_along(&dst, &t, 0, k)?;
            let col = self.index_along(&dst, &t, 1, k)?;
            let b = &self.builder;
            let row = b
                .build_int_nsw_add(row, i32_ty.const_int(offset[0], false), "")
                .llvm()?;
            let col = b
                .build_int_nsw_add(col, i32_ty.const_int(offset[1], false), "")
                .llvm()?;
            let off = self.swizzled_byte_offset(sw, row, col)?;
            let b = &self.builder;
            // SAFETY: `off` is the swizzled byte offset of an element of this R × C stage.
            let p = unsafe { b.build_in_bounds_gep(self.context.i8_type(), base, &[off], "") }
                .llvm()?;
            let v = b.build_load(elem_ty, p, "").llvm()?;
            if let Some(i) = v.as_instruction_value() {
                i.set_alignment(sw.elem_bytes as u32).llvm()?;
            }
            out.push(v);
        }
        Ok(out)
    }
}
