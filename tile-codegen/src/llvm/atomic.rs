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
//! - **16-bit floats.** `f16` adds are `atom.add.noftz.f16`, `bf16` adds `atom.add.noftz.bf16` on
//!   sm_90a; everything else on them (max, min, exchange, and `bf16` adds on sm_80) is a loop of
//!   `atom.cas.b16` in one inline asm (`cas_loop_asm`), max and min in the sign-and-magnitude
//!   order of `tile_core::ir::atomic_half_max`. `atomic_cas` is `atom.cas.b16` itself.
//! - **`f32` max and min**, which PTX lacks, are integer atomics on the bits: a non-negative value
//!   (sign bit clear) takes `atom.max.s32`, a negative one `atom.min.u32` (for `min`, `min.s32`
//!   and `max.u32`), each predicated on the sign; `tile_core::ir::atomic_float_max` states the
//!   order this gives, which the interpreter computes too.

use inkwell::types::{BasicMetadataTypeEnum, BasicTypeEnum};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, IntValue, PointerValue, ValueKind};
use inkwell::IntPredicate;
use tile_core::ir::{AtomicOp, DType, Function, MemScope, MemSem, OpData, OpId};
use tile_core::Target;

use super::lower::{bug, int, pointee, pointer, Lowerer, OrBug, OrLlvm, Result};

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
            .or_bug("an atomic's result to be a number (verifier rule 26)")
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
fn suffix(a: Atomic, d: DType) -> String {
    let bits = match d {
        DType::F16 | DType::BF16 => 16,
        DType::I32 | DType::U32 | DType::F32 => 32,
        DType::I64 | DType::U64 | DType::F64 => 64,
        DType::I1 | DType::I8 | DType::I16 | DType::U8 | DType::F8E4M3 | DType::F8E5M2 => bug(
            format_args!("an atomic on 32- or 64-bit numbers, found `{d}`"),
        ),
    };
    let op = match a {
        Atomic::Cas => return format!("cas.b{bits}"),
        Atomic::Rmw(op) => op,
    };
    match (op, d) {
        (AtomicOp::Add, DType::F32) => "add.f32".into(),
        (AtomicOp::Add, DType::F64) => "add.f64".into(),
        (AtomicOp::Add, DType::F16) => "add.noftz.f16".into(),
        (AtomicOp::Add, DType::BF16) => "add.noftz.bf16".into(),
        (_, DType::F16 | DType::BF16) => bug(format_args!(
            "a compare-and-swap loop for atomic `{}` on `{d}`",
            op.name()
        )),
        (
            AtomicOp::Max | AtomicOp::Min | AtomicOp::And | AtomicOp::Or | AtomicOp::Xor,
            DType::F64,
        )
        | (AtomicOp::And | AtomicOp::Or | AtomicOp::Xor, DType::F32) => bug(format_args!(
            "a type atomic `{}` takes, found `{d}`",
            op.name()
        )),
        (AtomicOp::Add, _) => format!("add.u{bits}"),
        (AtomicOp::Max | AtomicOp::Min, DType::F32) => {
            format!("{}.s32", op.name())
        }
        (AtomicOp::Max | AtomicOp::Min, d) if d.is_unsigned() => {
            format!("{}.u{bits}", op.name())
        }
        (AtomicOp::Max | AtomicOp::Min, _) => format!("{}.s{bits}", op.name()),
        (AtomicOp::And | AtomicOp::Or | AtomicOp::Xor, _) => format!("{}.b{bits}", op.name()),
        (AtomicOp::Xchg, _) => format!("exch.b{bits}"),
    }
}

/// Whether PTX has an `atom` for `op` on 16-bit floats of type `d`: `add.noftz.f16` (sm_70),
/// `add.noftz.bf16` (sm_90, when the target has it: `bf16_add`); every other 16-bit float op is
/// a compare-and-swap loop.
fn hardware_16(op: AtomicOp, d: DType, bf16_add: bool) -> bool {
    op == AtomicOp::Add && (d == DType::F16 || bf16_add)
}

/// The inline-asm register class of a `width`-bit integer.
fn register_class(width: u32) -> &'static str {
    match width {
        16 => "h",
        64 => "l",
        _ => "r",
    }
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
        let ptr_ty = self.operand_type(data, 0);
        let d = pointee(ptr_ty);
        let values = match a {
            Atomic::Rmw(_) => 1,
            Atomic::Cas => 2,
        };
        let ptrs = self.operand(data, 0).to_vec();
        let args: Vec<Vec<BasicValueEnum<'ctx>>> = (1..=values)
            .map(|i| self.operand(data, i).to_vec())
            .collect();
        let masks = data
            .operands
            .get(values + 1)
            .map(|_| self.operand(data, values + 1).to_vec());
        if args.iter().any(|v| v.len() != ptrs.len())
            || masks.as_ref().is_some_and(|m| m.len() != ptrs.len())
        {
            bug("operands holding the same number of registers");
        }
        let dist = self.distribution(ptr_ty);
        let owner = match &dist {
            Some(dist) => self.owner(dist)?,
            // A scalar: thread 0 alone.
            None => self.tid_bits_clear(u64::from(u32::MAX))?,
        };
        let head = format!("atom.{}.{}.global", sem_name(sem), scope_name(scope));
        let bf16_add = f.target.is_some_and(Target::has_bf16_atomic_add);
        let bits_ty = self.bits_type(d);
        let mut old_bits = Vec::with_capacity(ptrs.len());
        for k in 0..ptrs.len() {
            let b = &self.builder;
            let mut pred = owner;
            if let Some(m) = &masks {
                let m = int(m[k]);
                pred = Some(match pred {
                    None => m,
                    Some(o) => b.build_and(o, m, "").llvm()?,
                });
            }
            let pred = pred.unwrap_or_else(|| self.context.bool_type().const_all_ones());
            let p = pointer(ptrs[k]);
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
                    int(self.builder.build_select(neg, o_neg, o_pos, "").llvm()?)
                }
                (Atomic::Rmw(op), DType::F16 | DType::BF16) if !hardware_16(op, d, bf16_add) => {
                    self.cas_loop_asm(op, d, &head, scope, p, ins[0], pred)?
                }
                _ => {
                    let text = format!("{head}.{}", suffix(a, d));
                    self.atom_asm(&text, bits_ty, p, &ins, pred)?
                }
            };
            old_bits.push(old);
        }

        // Hand the old values to the threads holding copies, where anyone reads them.
        let op = self.op_id();
        if scratch_bytes(f, op)? > 0 {
            let smem = self.shared_array(bits_ty, old_bits.len().max(1) as u64)?;
            match &dist {
                None => {
                    let zero = self.context.i32_type().const_zero();
                    let v = old_bits[0];
                    self.guarded(owner, |me| me.shared_store(smem, bits_ty, zero, v.into()))?;
                    self.barrier()?;
                    old_bits[0] = int(self.shared_load(smem, bits_ty, zero)?);
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
                        old_bits[k] = int(self.shared_load(smem, bits_ty, i)?);
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
        let width = bits_ty.into_int_type().get_bit_width();
        let srcs: Vec<String> = (0..ins.len()).map(|i| format!("${}", i + 2)).collect();
        let asm_text = format!(
            "mov.b{width} $0, 0;\n\t@${} {text} $0, [ $1 + 0 ], {};",
            ins.len() + 2,
            srcs.join(", ")
        );
        self.predicated_asm(asm_text, bits_ty, p, ins, pred)
    }

    /// The call of inline asm `asm_text` (with side effects and a memory clobber) on the global
    /// pointer `$1`, the `bits_ty` integers `ins` (`$2`, …) and the predicate `pred` (last),
    /// whose result `$0` (early-clobber) is the old value.
    fn predicated_asm(
        &self,
        asm_text: String,
        bits_ty: BasicTypeEnum<'ctx>,
        p: PointerValue<'ctx>,
        ins: &[IntValue<'ctx>],
        pred: IntValue<'ctx>,
    ) -> Result<IntValue<'ctx>> {
        let reg = register_class(bits_ty.into_int_type().get_bit_width());
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
            ValueKind::Basic(v) => Ok(int(v)),
            ValueKind::Instruction(_) => bug("an atomic's asm to return its old value"),
        }
    }

    /// A 16-bit float atomic PTX has no instruction for, as a compare-and-swap loop in one
    /// inline asm: read the element, compute the new value from it and `v`, `atom.cas.b16` it in
    /// (with the op's ordering and scope) until no other thread changed the element in between;
    /// the old value is the one the successful swap found, 0 where `pred` is false. Labels are
    /// made unique per asm instance by LLVM's `${:uid}`.
    #[allow(clippy::too_many_arguments)]
    fn cas_loop_asm(
        &self,
        op: AtomicOp,
        d: DType,
        head: &str,
        scope: MemScope,
        p: PointerValue<'ctx>,
        v: IntValue<'ctx>,
        pred: IntValue<'ctx>,
    ) -> Result<IntValue<'ctx>> {
        // `%cur` is the element as last read, `$2` the operand; the result goes to `%new`.
        let update = match (op, d) {
            (AtomicOp::Xchg, _) => "mov.b16 %new, $2;".to_string(),
            // `cur · 1 + v` rounded once (`add.bf16` needs sm_90; `fma.rn.bf16` is sm_80's).
            (AtomicOp::Add, DType::BF16) => {
                "mov.b16 %one, 0x3F80;\n\tfma.rn.bf16 %new, %cur, %one, $2;".to_string()
            }
            (AtomicOp::Add, _) => bug("`atom.add.noftz.f16` for an f16 add"),
            // Sign-and-magnitude order (`tile_core::ir::atomic_half_max`): keys that compare
            // as unsigned integers.
            (AtomicOp::Max | AtomicOp::Min, _) => {
                let cmp = if op == AtomicOp::Max { "gt" } else { "lt" };
                format!(
                    "setp.lt.s16 %neg, %cur, 0;\n\tnot.b16 %ka, %cur;\n\tor.b16 %kb, %cur, 0x8000;\n\t\
                     selp.b16 %kc, %ka, %kb, %neg;\n\t\
                     setp.lt.s16 %neg, $2, 0;\n\tnot.b16 %ka, $2;\n\tor.b16 %kb, $2, 0x8000;\n\t\
                     selp.b16 %kv, %ka, %kb, %neg;\n\t\
                     setp.{cmp}.u16 %take, %kv, %kc;\n\tselp.b16 %new, $2, %cur, %take;"
                )
            }
            (AtomicOp::And | AtomicOp::Or | AtomicOp::Xor, _) => bug(format_args!(
                "integers for atomic `{}`, found `{d}`",
                op.name()
            )),
        };
        let load = format!("ld.relaxed.{}.global.b16", scope_name(scope));
        let asm_text = format!(
            "{{\n\t.reg .pred %neg, %take, %again;\n\t\
             .reg .b16 %cur, %new, %old, %one, %ka, %kb, %kc, %kv;\n\t\
             mov.b16 $0, 0;\n\t\
             @!$3 bra tile_cas_done_${{:uid}};\n\t\
             {load} %cur, [ $1 + 0 ];\n\
             tile_cas_loop_${{:uid}}:\n\t\
             {update}\n\t\
             {head}.cas.b16 %old, [ $1 + 0 ], %cur, %new;\n\t\
             setp.ne.b16 %again, %old, %cur;\n\t\
             mov.b16 %cur, %old;\n\t\
             @%again bra tile_cas_loop_${{:uid}};\n\t\
             mov.b16 $0, %cur;\n\
             tile_cas_done_${{:uid}}:\n\t\
             }}"
        );
        self.predicated_asm(asm_text, self.context.i16_type().into(), p, &[v], pred)
    }

    /// The integer type an atomic's element travels as (a float as its bits).
    fn bits_type(&self, d: DType) -> BasicTypeEnum<'ctx> {
        match d {
            DType::I64 | DType::U64 | DType::F64 => self.context.i64_type().into(),
            DType::F16 | DType::BF16 => self.context.i16_type().into(),
            _ => self.context.i32_type().into(),
        }
    }

    /// `v` of type `d` as integer bits.
    fn value_to_bits(&self, d: DType, v: BasicValueEnum<'ctx>) -> Result<IntValue<'ctx>> {
        let bits = match d {
            DType::F32 => self.context.i32_type(),
            DType::F64 => self.context.i64_type(),
            DType::F16 | DType::BF16 => self.context.i16_type(),
            _ => return Ok(int(v)),
        };
        Ok(int(self.builder.build_bit_cast(v, bits, "").llvm()?))
    }

    /// Integer bits back as a value of type `d`.
    fn bits_to_value(&self, d: DType, v: IntValue<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let ty: BasicTypeEnum<'ctx> = match d {
            DType::F32 => self.context.f32_type().into(),
            DType::F64 => self.context.f64_type().into(),
            DType::F16 => self.context.f16_type().into(),
            DType::BF16 => self.context.bf16_type().into(),
            _ => return Ok(v.into()),
        };
        self.builder.build_bit_cast(v, ty, "").llvm()
    }
}
