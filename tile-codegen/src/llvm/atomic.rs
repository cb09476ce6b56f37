//! Lowering of `atomic_rmw` and `atomic_cas`: one predicated PTX `atom` per element, as inline
//! asm (`atom.acq_rel.gpu.global.add.f32`: the ordering and scope are the op's), issued by the
//! element's owner only.
//!
//! - **Each element once.** Threads that hold copies of an element (lane or warp bits whose basis
//!   is 0, see `layout`) must not each apply the update, so the predicate is the mask and the
//!   owner test; a scalar atomic is applied by thread 0 alone.
//! - **The old values.** A thread that did not apply an update has no old value, so where the
//!   result is used and copies exist, owners write their old values to a scratch array at the
//!   element's row-major index, a barrier follows, and every thread reads its elements back (one
//!   value for a scalar). Unused results cost nothing.
//! - **Masked-off elements** issue no `atom` and yield 0: the destination register is set to 0
//!   before the predicated instruction (an early-clobber output, so no input shares it).
//! - **`f32` max and min**, which PTX lacks, are integer atomics on the bits: a non-negative value
//!   (sign bit clear) takes `atom.max.s32`, a negative one `atom.min.u32` (for `min`, `min.s32`
//!   and `max.u32`), each predicated on the sign; `tile_core::ir::atomic_float_max` states the
//!   order this gives, which the interpreter computes too.

use inkwell::types::{BasicMetadataTypeEnum, BasicTypeEnum};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, IntValue, PointerValue, ValueKind};
use inkwell::IntPredicate;
use tile_core::ir::{AtomicOp, DType, Function, MemScope, MemSem, OpData, OpId};

use super::lower::{int, pointer, Lowerer, OrLlvm, Result};

/// What an atomic op asks of the PTX instruction.
#[derive(Clone, Copy)]
pub(super) enum Atomic {
    /// `atom.{op}`.
    Rmw(AtomicOp),
    /// `atom.cas`.
    Cas,
}

/// The scratch bytes the atomic `op` of `f` needs to hand its old values to the threads that hold
/// copies: none when its result is unused or no thread holds a copy.
pub(crate) fn scratch_bytes(f: &Function, op: OpId) -> Result<u64> {
    let d = f.op(op);
    let Some(&r) = d.results.first() else {
        return Ok(0);
    };
    let used = f.walk().into_iter().any(|o| f.op(o).operands.contains(&r));
    if !used {
        return Ok(0);
    }
    let ty = f.ty(r);
    let size = u64::from(
        ty.dtype()
            .ok_or("an atomic's result is a number")?
            .size_bytes(),
    );
    if !ty.is_tensor() {
        return Ok(size);
    }
    let dist = super::layout::Distribution::of(ty)?;
    if dist.free_lanes() == 0 && dist.free_warps() == 0 {
        return Ok(0);
    }
    Ok(dist.numel() * size)
}

/// PTX's spelling of an ordering.
fn sem_name(s: MemSem) -> &'static str {
    match s {
        MemSem::Relaxed => "relaxed",
        MemSem::Acquire => "acquire",
        MemSem::Release => "release",
        MemSem::AcqRel => "acq_rel",
    }
}

/// PTX's spelling of a scope.
fn scope_name(s: MemScope) -> &'static str {
    match s {
        MemScope::Cta => "cta",
        MemScope::Gpu => "gpu",
        MemScope::Sys => "sys",
    }
}

/// The operation and type suffix of `atom` for `op` on `d` (`add.f32`, `max.s64`, `exch.b32`,
/// `cas.b32`); for `f32` max and min the one for non-negative values (see the module docs).
fn suffix(a: Atomic, d: DType) -> Result<String> {
    let bits = match d {
        DType::I32 | DType::F32 => 32,
        DType::I64 => 64,
        DType::I1 | DType::F16 | DType::BF16 => {
            return Err(format!("atomics take i32, i64 or f32, found `{d}`"))
        }
    };
    let op = match a {
        Atomic::Cas => return Ok(format!("cas.b{bits}")),
        Atomic::Rmw(op) => op,
    };
    Ok(match (op, d) {
        (AtomicOp::Add, DType::F32) => "add.f32".into(),
        (AtomicOp::Add, _) => format!("add.u{bits}"),
        (AtomicOp::Max | AtomicOp::Min, DType::F32) => {
            format!("{}.s32", op.name())
        }
        (AtomicOp::Max | AtomicOp::Min, _) => format!("{}.s{bits}", op.name()),
        (AtomicOp::And | AtomicOp::Or | AtomicOp::Xor, DType::F32) => {
            return Err(format!("atomic `{}` does not take f32", op.name()))
        }
        (AtomicOp::And | AtomicOp::Or | AtomicOp::Xor, _) => format!("{}.b{bits}", op.name()),
        (AtomicOp::Xchg, _) => format!("exch.b{bits}"),
    })
}

impl<'ctx> Lowerer<'_, 'ctx> {
    /// `atomic_rmw` / `atomic_cas`: the old values this thread holds.
    pub(super) fn atomic(
        &mut self,
        data: &OpData,
        a: Atomic,
        sem: MemSem,
        scope: MemScope,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let f = self.f;
        let ptr_ty = f.ty(*data.operands.first().ok_or("missing pointer")?);
        let d = ptr_ty.elem.pointee().ok_or("an atomic needs a pointer")?;
        let values = match a {
            Atomic::Rmw(_) => 1,
            Atomic::Cas => 2,
        };
        let ptrs = self.operand(data, 0)?.to_vec();
        let args: Vec<Vec<BasicValueEnum<'ctx>>> = (1..=values)
            .map(|i| self.operand(data, i).map(<[_]>::to_vec))
            .collect::<Result<_>>()?;
        let masks = match data.operands.get(values + 1) {
            Some(_) => Some(self.operand(data, values + 1)?.to_vec()),
            None => None,
        };
        if args.iter().any(|v| v.len() != ptrs.len())
            || masks.as_ref().is_some_and(|m| m.len() != ptrs.len())
        {
            return Err("an atomic's operands hold different numbers of elements".into());
        }
        let dist = self.distribution(ptr_ty)?;
        let owner = match &dist {
            Some(dist) => self.owner(dist)?,
            // A scalar: thread 0 alone.
            None => self.tid_bits_clear(u64::from(u32::MAX))?,
        };
        let head = format!("atom.{}.{}.global", sem_name(sem), scope_name(scope));
        let bits_ty = self.bits_type(d);
        let mut old_bits = Vec::with_capacity(ptrs.len());
        for k in 0..ptrs.len() {
            let b = &self.builder;
            let mut pred = owner;
            if let Some(m) = &masks {
                let m = int(m[k])?;
                pred = Some(match pred {
                    None => m,
                    Some(o) => b.build_and(o, m, "").llvm()?,
                });
            }
            let pred = pred.unwrap_or_else(|| self.context.bool_type().const_all_ones());
            let p = pointer(ptrs[k])?;
            let ins: Vec<IntValue<'ctx>> = args
                .iter()
                .map(|v| self.value_to_bits(d, v[k]))
                .collect::<Result<_>>()?;
            let old = match (a, d) {
                (Atomic::Rmw(op @ (AtomicOp::Max | AtomicOp::Min)), DType::F32) => {
                    // Non-negative values as signed integers, negative ones as unsigned with
                    // the opposite operation.
                    let b = &self.builder;
                    let zero = self.context.i32_type().const_zero();
                    let neg = b
                        .build_int_compare(IntPredicate::SLT, ins[0], zero, "")
                        .llvm()?;
                    let pos = b.build_not(neg, "").llvm()?;
                    let p_pos = b.build_and(pred, pos, "").llvm()?;
                    let p_neg = b.build_and(pred, neg, "").llvm()?;
                    let other = if op == AtomicOp::Max { "min" } else { "max" };
                    let s_pos = format!("{head}.{}.s32", op.name());
                    let s_neg = format!("{head}.{other}.u32");
                    let o_pos = self.atom_asm(&s_pos, bits_ty, p, &ins, p_pos)?;
                    let o_neg = self.atom_asm(&s_neg, bits_ty, p, &ins, p_neg)?;
                    int(self.builder.build_select(neg, o_neg, o_pos, "").llvm()?)?
                }
                _ => {
                    let text = format!("{head}.{}", suffix(a, d)?);
                    self.atom_asm(&text, bits_ty, p, &ins, pred)?
                }
            };
            old_bits.push(old);
        }

        // Hand the old values to the threads holding copies, where anyone reads them.
        let op = self.current_op.ok_or("an atomic outside any op")?;
        if scratch_bytes(f, op)? > 0 {
            let smem = self.shared_array(bits_ty, old_bits.len().max(1) as u64)?;
            match &dist {
                None => {
                    let zero = self.context.i32_type().const_zero();
                    let v = old_bits[0];
                    self.guarded(owner, |me| me.shared_store(smem, bits_ty, zero, v.into()))?;
                    self.barrier()?;
                    old_bits[0] = int(self.shared_load(smem, bits_ty, zero)?)?;
                }
                Some(dist) => {
                    let t = self.thread_coords(dist)?;
                    let at: Vec<IntValue<'ctx>> = (0..old_bits.len())
                        .map(|k| self.flat_index(dist, &t, k))
                        .collect::<Result<_>>()?;
                    let vals = old_bits.clone();
                    self.guarded(owner, |me| {
                        for (&i, &v) in at.iter().zip(&vals) {
                            me.shared_store(smem, bits_ty, i, v.into())?;
                        }
                        Ok(())
                    })?;
                    self.barrier()?;
                    for (k, &i) in at.iter().enumerate() {
                        old_bits[k] = int(self.shared_load(smem, bits_ty, i)?)?;
                    }
                }
            }
        }
        old_bits
            .into_iter()
            .map(|v| self.bits_to_value(d, v))
            .collect()
    }

    /// `mov.bN $0, 0; @$p atom… $0, [ $1 + 0 ], $2[, $3];` with side effects and a memory
    /// clobber: the old value, or 0 where `pred` is false.
    fn atom_asm(
        &self,
        text: &str,
        bits_ty: BasicTypeEnum<'ctx>,
        p: PointerValue<'ctx>,
        ins: &[IntValue<'ctx>],
        pred: IntValue<'ctx>,
    ) -> Result<IntValue<'ctx>> {
        let (width, reg) = if bits_ty.into_int_type().get_bit_width() == 64 {
            (64, "l")
        } else {
            (32, "r")
        };
        let srcs: Vec<String> = (0..ins.len()).map(|i| format!("${}", i + 2)).collect();
        let asm_text = format!(
            "mov.b{width} $0, 0;\n\t@${} {text} $0, [ $1 + 0 ], {};",
            ins.len() + 2,
            srcs.join(", ")
        );
        let mut constraints = vec![format!("=&{reg}"), "l".to_string()];
        constraints.extend(ins.iter().map(|_| reg.to_string()));
        constraints.push("b".into());
        constraints.push("~{memory}".into());
        let mut params: Vec<BasicMetadataTypeEnum> = vec![self.global_ptr_type().into()];
        params.extend(ins.iter().map(|_| BasicMetadataTypeEnum::from(bits_ty)));
        params.push(self.context.bool_type().into());
        let mut argv: Vec<BasicMetadataValueEnum> = vec![p.into()];
        argv.extend(ins.iter().map(|&v| BasicMetadataValueEnum::from(v)));
        argv.push(pred.into());
        let fn_ty = bits_ty.into_int_type().fn_type(&params, false);
        let asm = self.context.create_inline_asm(
            fn_ty,
            asm_text,
            constraints.join(","),
            true,
            false,
            None,
            false,
        );
        match self
            .builder
            .build_indirect_call(fn_ty, asm, &argv, "")
            .llvm()?
            .try_as_basic_value()
        {
            ValueKind::Basic(v) => int(v),
            ValueKind::Instruction(_) => Err("an atomic's asm returned nothing".into()),
        }
    }

    /// The integer type an atomic's element travels as (`f32` as its 32 bits).
    fn bits_type(&self, d: DType) -> BasicTypeEnum<'ctx> {
        match d {
            DType::I64 => self.context.i64_type().into(),
            _ => self.context.i32_type().into(),
        }
    }

    /// `v` of type `d` as integer bits.
    fn value_to_bits(&self, d: DType, v: BasicValueEnum<'ctx>) -> Result<IntValue<'ctx>> {
        match d {
            DType::F32 => int(self
                .builder
                .build_bit_cast(v, self.context.i32_type(), "")
                .llvm()?),
            _ => int(v),
        }
    }

    /// Integer bits back as a value of type `d`.
    fn bits_to_value(&self, d: DType, v: IntValue<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        match d {
            DType::F32 => self
                .builder
                .build_bit_cast(v, self.context.f32_type(), "")
                .llvm(),
            _ => Ok(v.into()),
        }
    }
}
