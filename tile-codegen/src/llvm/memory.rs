//! Lowering of `load` and `store`: vectorized, predicated accesses to global memory.
//!
//! A thread's slots are split into runs of `V` consecutive slots (`V` is the op's `vec`, see
//! [`access_width`] for when it is narrowed). The passes guarantee that the pointers of a run are
//! contiguous and aligned to `V · size` bytes and that the mask is constant over it, so one access
//! of the run's first pointer, predicated on the run's first mask element, covers the run (`layout`
//! explains why a run never leaves a `size_per_thread` chunk).
//!
//! - An access whose mask is absent or the constant `true` is a plain LLVM `load`/`store` of
//!   `<V x T>` (or `T`) from `addrspace(1)` with alignment `V · size`; NVPTX emits `ld.global.v4.f32`.
//! - A masked access is inline PTX guarded by a predicate register (constraint `b`), as Triton
//!   emits it: `@p ld.global.v4.b32 { $0, $1, $2, $3 }, [ $4 + 0 ];`. The destination registers are
//!   tied to the `other` operands, so lanes whose predicate is false keep `other` without a `mov`
//!   that could clobber an input. A store is `@p st.global.v4.b32 [ $0 + 0 ], { … };` with side
//!   effects and a memory clobber.
//! - A run whose mask is the constant `false` touches no memory (loads yield `other`).
//! - An eviction hint (`evict = first | last`) sets the access's L1 eviction priority
//!   (`.L1::evict_first`, as Triton lowers `eviction_policy`) and its L2 cache policy
//!   (`.L2::cache_hint` with a `createpolicy.fractional` policy, sm_80 and later), see
//!   [`evict_parts`]; an unmasked access with a hint takes the inline-asm form, predicated on
//!   `true`.
//!
//! Registers in the asm: `f32` travels as its bits in a 32-bit register (`b32`), `i32` as `b32`,
//! `i64` as `b64`, and `i1` is one byte in memory (`u8`) widened to a 32-bit register.
//!
//! Half-precision elements (`f16`, `bf16`) travel in pairs: a run of `V ≥ 2` of them is `V / 2`
//! 32-bit words (`ld.global.v4.b32` for `V = 8`), each word bitcast to `<2 x half>` (the element at
//! the lower address in the low half, as memory is little-endian); a run of one is a `b16` access
//! (register class `h`). Plain accesses use the same words, so every path yields the same PTX shape.

use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum, VectorType};
use inkwell::values::{
    BasicMetadataValueEnum, BasicValue, BasicValueEnum, IntValue, PointerValue, StructValue,
    ValueKind, VectorValue,
};
use inkwell::{AddressSpace, IntPredicate};
use tile_core::ir::{DType, Elem, Evict, OpData};

use super::layout::Distribution;
use super::lower::{
    bug, dtype, int, memory_type, pointee, pointer, register_type, Lowerer, OrBug, OrLlvm, Result,
    GLOBAL,
};

/// The pieces of an access's PTX that carry an eviction hint: a scope opened before it that
/// makes the L2 cache policy (`createpolicy.fractional.L2::evict_first` or `evict_last`), the
/// access's qualifiers (the L1 eviction priority, as Triton lowers `eviction_policy`, and
/// `.L2::cache_hint`), the policy operand, and the scope's end. All empty for `Evict::Normal`.
/// Both levels: on the H100 the L1 priority alone changed nothing measurable for `last`, the L2
/// policy did (docs/DECISIONS.md, "Cross-entropy").
fn evict_parts(evict: Evict) -> (&'static str, &'static str, &'static str, &'static str) {
    match evict {
        Evict::Normal => ("", "", "", ""),
        Evict::First => (
            "{ .reg .b64 %policy; createpolicy.fractional.L2::evict_first.b64 %policy, 1.0; ",
            ".L1::evict_first.L2::cache_hint",
            ", %policy",
            " }",
        ),
        Evict::Last => (
            "{ .reg .b64 %policy; createpolicy.fractional.L2::evict_last.b64 %policy, 1.0; ",
            ".L1::evict_last.L2::cache_hint",
            ", %policy",
            " }",
        ),
    }
}

/// What a run's mask says, when it is known while building.
#[derive(Clone, Copy)]
enum Mask<'ctx> {
    /// No mask, or the constant `true`.
    Always,
    /// The constant `false`: no memory is touched.
    Never,
    /// Known at run time only.
    If(IntValue<'ctx>),
}

/// How the elements of one access travel: in words of `per_word` elements, each word one register
/// of a PTX class inside inline asm.
#[derive(Clone, Copy)]
struct AsmReg {
    /// PTX type suffix of the access (`b16`, `b32`, `b64`, `u8`).
    ptx: &'static str,
    /// LLVM constraint letter of the register.
    constraint: &'static str,
    /// Register width in bits.
    bits: u32,
    /// Elements per word (2 for a pair of half-precision elements, else 1).
    per_word: usize,
}

/// The words of an access of `w` elements of type `d`.
fn asm_reg(d: DType, w: usize) -> AsmReg {
    let one = |ptx, constraint, bits| AsmReg {
        ptx,
        constraint,
        bits,
        per_word: 1,
    };
    match (d, packed_bits(d)) {
        (DType::I64 | DType::U64 | DType::F64, _) => one("b64", "l", 64),
        // A boolean is one byte in memory; PTX loads and stores it from a wider register.
        (DType::I1, _) => one("u8", "r", 32),
        // Elements narrower than a word travel packed: two or four in a 32-bit word, two
        // bytes in a 16-bit one, a lone byte through a 32-bit register.
        (_, Some(e)) => {
            let per_word = (32 / e as usize).min(w.max(1).next_power_of_two());
            match e * per_word as u32 {
                32 => AsmReg {
                    per_word,
                    ..one("b32", "r", 32)
                },
                16 => AsmReg {
                    per_word,
                    ..one("b16", "h", 16)
                },
                _ => one("u8", "r", 32),
            }
        }
        _ => one("b32", "r", 32),
    }
}

/// The width of an element that travels packed in wider words (`f16`, `bf16`, `i16`: 16; `i8`,
/// `u8`: 8); `None` for booleans and 32- and 64-bit types.
fn packed_bits(d: DType) -> Option<u32> {
    (d != DType::I1 && d.size_bytes() < 4).then(|| 8 * d.size_bytes())
}

/// Elements per access: the op's `vec`, narrowed so that an access is at most 16 bytes (the widest
/// PTX vector access; booleans are accessed one at a time), stays within the tensor's extent along
/// the inner dimension (a tensor smaller than a thread's chunk repeats its elements) and divides both
/// the chunk and the thread's slot count. Scalar pointers are accessed one element at a time.
pub(super) fn access_width(dist: Option<&Distribution>, d: DType, vec: u32, slots: usize) -> usize {
    let Some(dist) = dist else { return 1 };
    let (inner, run) = dist.contiguous_run();
    let cap = match d {
        DType::I1 => 1,
        _ => 16 / d.size_bytes() as u64,
    };
    // The largest power of two dividing `n`.
    let pow2_factor = |n: u64| n & n.wrapping_neg();
    let w = u64::from(vec.max(1))
        .min(cap)
        .min(dist.extent(inner))
        .min(pow2_factor(run))
        .min(pow2_factor(slots as u64))
        .max(1);
    let w = 1u64 << w.ilog2();
    w as usize
}

impl<'ctx> Lowerer<'_, 'ctx> {
    /// `load %ptr[, %mask, %other]`.
    pub(super) fn load(
        &mut self,
        data: &OpData,
        vec: u32,
        evict: Evict,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let ptr_ty = self.operand_type(data, 0);
        let d = pointee(ptr_ty);
        let ptrs = self.operand(data, 0).to_vec();
        let (masks, others) = match data.operands.len() {
            1 => (None, None),
            3 => (
                Some(self.operand(data, 1).to_vec()),
                Some(self.operand(data, 2).to_vec()),
            ),
            n => bug(format_args!("1 or 3 operands, found {n}")),
        };
        let dist = self.distribution(ptr_ty);
        let w = access_width(dist.as_ref(), d, vec, ptrs.len());
        check_lengths(ptrs.len(), [masks.as_ref(), others.as_ref()]);

        let bases = self.address_bases(data.operands[0], dist.as_ref(), d, ptrs.len());
        let mut out = Vec::with_capacity(ptrs.len());
        for k in (0..ptrs.len()).step_by(w) {
            let p = pointer(ptrs[k]);
            let mask = match &masks {
                None => Mask::Always,
                Some(m) => classify(int(m[k])),
            };
            let other = others.as_ref().map(|o| &o[k..k + w]);
            match (mask, other) {
                (Mask::Always, _) if evict == Evict::Normal => {
                    out.extend(self.plain_load(d, p, w)?)
                }
                // A hint needs the asm form: predicated on `true`, which ptxas drops.
                (Mask::Always, _) => {
                    let (base, imm) = bases[k];
                    let p = pointer(ptrs[base]);
                    let zero = register_type(self.context, Elem::Scalar(d)).const_zero();
                    let on = self.context.bool_type().const_all_ones();
                    out.extend(self.predicated_load(d, (p, imm), on, &vec![zero; w], evict)?)
                }
                (Mask::Never, Some(other)) => out.extend_from_slice(other),
                (Mask::If(m), Some(other)) => {
                    let (base, imm) = bases[k];
                    let p = pointer(ptrs[base]);
                    out.extend(self.predicated_load(d, (p, imm), m, other, evict)?)
                }
                (Mask::Never | Mask::If(_), None) => bug("`other` beside the mask"),
            }
        }
        Ok(out)
    }

    /// `store %ptr, %value[, %mask]`.
    pub(super) fn store(&mut self, data: &OpData, vec: u32, evict: Evict) -> Result<()> {
        let ptr_ty = self.operand_type(data, 0);
        let d = pointee(ptr_ty);
        let vd = dtype(self.operand_type(data, 1));
        if vd != d {
            bug(format_args!(
                "a value of the pointee type `{d}`, found `{vd}`"
            ));
        }
        let ptrs = self.operand(data, 0).to_vec();
        let vals = self.operand(data, 1).to_vec();
        let masks = match data.operands.len() {
            2 => None,
            3 => Some(self.operand(data, 2).to_vec()),
            n => bug(format_args!("2 or 3 operands, found {n}")),
        };
        let dist = self.distribution(ptr_ty);
        let w = access_width(dist.as_ref(), d, vec, ptrs.len());
        check_lengths(ptrs.len(), [Some(&vals), masks.as_ref()]);

        let bases = self.address_bases(data.operands[0], dist.as_ref(), d, ptrs.len());
        for k in (0..ptrs.len()).step_by(w) {
            let p = pointer(ptrs[k]);
            let mask = match &masks {
                None => Mask::Always,
                Some(m) => classify(int(m[k])),
            };
            let run = &vals[k..k + w];
            match mask {
                Mask::Always if evict == Evict::Normal => self.plain_store(d, p, run)?,
                // A hint needs the asm form: predicated on `true`, which ptxas drops.
                Mask::Always => {
                    let (base, imm) = bases[k];
                    let on = self.context.bool_type().const_all_ones();
                    self.predicated_store(d, (pointer(ptrs[base]), imm), on, run, evict)?
                }
                Mask::Never => {}
                Mask::If(m) => {
                    let (base, imm) = bases[k];
                    self.predicated_store(d, (pointer(ptrs[base]), imm), m, run, evict)?
                }
            }
        }
        Ok(())
    }

    /// For each slot of the pointer tile `ptr` (`slots` per thread, of element type `d`): a slot
    /// whose pointer is a known constant number of bytes past another slot's, and that byte
    /// count, so that a predicated access (inline asm, where LLVM cannot fold offsets) addresses
    /// it as `[ base + imm ]` and the thread keeps one address register per row instead of one
    /// per access. It applies where the pointers are consecutive along the whole inner
    /// dimension (`axis_info` contiguity at least its extent) and the layout's index there is a
    /// thread part plus a register part: slots in the same row then differ by their register
    /// parts. Elsewhere each slot is its own base.
    fn address_bases(
        &self,
        ptr: tile_core::ir::ValueId,
        dist: Option<&Distribution>,
        d: DType,
        slots: usize,
    ) -> Vec<(usize, u64)> {
        let own: Vec<(usize, u64)> = (0..slots).map(|k| (k, 0)).collect();
        let Some(dist) = dist else { return own };
        let inner = dist.rank().saturating_sub(1);
        let contiguous = self
            .axis
            .get(ptr.index())
            .is_some_and(|i| i.contiguity >= dist.extent(inner));
        if dist.rank() == 0 || !contiguous || !dist.disjoint(inner) {
            return own;
        }
        // The lowest inner offset of each row (the other dimensions' register parts), and its slot.
        let mut first: std::collections::HashMap<Vec<u64>, (u64, usize)> = Default::default();
        let offsets: Vec<Vec<u64>> = (0..slots).map(|k| dist.reg_offset(k)).collect();
        for (k, off) in offsets.iter().enumerate() {
            let mut row = off.clone();
            let col = std::mem::take(&mut row[inner]);
            let e = first.entry(row).or_insert((col, k));
            if col < e.0 {
                *e = (col, k);
            }
        }
        let size = u64::from(d.size_bytes());
        offsets
            .into_iter()
            .map(|mut row| {
                let col = std::mem::take(&mut row[inner]);
                let (lo, base) = first[&row];
                (base, (col - lo) * size)
            })
            .collect()
    }

    /// An unpredicated load of `w` elements as `n` words: `load W` or `load <n x W>`, aligned to the
    /// access size.
    fn plain_load(
        &self,
        d: DType,
        p: PointerValue<'ctx>,
        w: usize,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let b = &self.builder;
        let reg = asm_reg(d, w);
        let mem = self.word_type(d, reg);
        let n = w / reg.per_word;
        let align = d.size_bytes() * w as u32;
        if n == 1 {
            let v = b.build_load(mem, p, "").llvm()?;
            set_alignment(v, align)?;
            return self.unpack_words(d, reg, &[v]);
        }
        let v = b.build_load(vector_of(mem, n), p, "").llvm()?;
        set_alignment(v, align)?;
        let v = VectorValue::try_from(v).or_bug("a vector from a vector load");
        let words = (0..n)
            .map(|i| b.build_extract_element(v, self.index(i), "").llvm())
            .collect::<Result<Vec<_>>>()?;
        self.unpack_words(d, reg, &words)
    }

    /// An unpredicated store of `vals` as `n` words: `store W` or `store <n x W>`, aligned to the
    /// access size.
    fn plain_store(
        &self,
        d: DType,
        p: PointerValue<'ctx>,
        vals: &[BasicValueEnum<'ctx>],
    ) -> Result<()> {
        let b = &self.builder;
        let reg = asm_reg(d, vals.len());
        let mem = self.word_type(d, reg);
        let align = d.size_bytes() * vals.len() as u32;
        let words = self.pack_words(d, reg, vals)?;
        let value: BasicValueEnum = match words.as_slice() {
            [v] => *v,
            _ => {
                let mut acc = vector_of(mem, words.len()).get_poison();
                for (i, &v) in words.iter().enumerate() {
                    acc = b.build_insert_element(acc, v, self.index(i), "").llvm()?;
                }
                acc.into()
            }
        };
        let st = b.build_store(p, value).llvm()?;
        st.set_alignment(align).llvm()
    }

    /// The constant `i` as an `i32` (a vector lane).
    fn index(&self, i: usize) -> IntValue<'ctx> {
        self.context.i32_type().const_int(i as u64, false)
    }

    /// The LLVM type of one word in memory: the element's memory type, or a 16/32-bit integer
    /// holding one or two half-precision elements.
    fn word_type(&self, d: DType, reg: AsmReg) -> BasicTypeEnum<'ctx> {
        match packed_bits(d) {
            Some(e) => self.int_type(e * reg.per_word as u32),
            None => memory_type(self.context, d),
        }
    }

    /// Register values as memory words: booleans become one byte, half-precision pairs one `i32`
    /// (a single one an `i16`).
    fn pack_words(
        &self,
        d: DType,
        reg: AsmReg,
        vals: &[BasicValueEnum<'ctx>],
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let b = &self.builder;
        match d {
            DType::I1 => vals
                .iter()
                .map(|&v| {
                    Ok(b.build_int_z_extend(int(v), self.context.i8_type(), "")
                        .llvm()?
                        .into())
                })
                .collect(),
            _ if packed_bits(d).is_none() => Ok(vals.to_vec()),
            _ => {
                let word = self.word_type(d, reg);
                let elem = vals.first().or_bug("a register to access").get_type();
                vals.chunks(reg.per_word)
                    .map(|pair| {
                        let v: BasicValueEnum = match pair {
                            [x] => *x,
                            _ => {
                                let mut acc = vector_of(elem, pair.len()).get_poison();
                                for (i, &x) in pair.iter().enumerate() {
                                    acc =
                                        b.build_insert_element(acc, x, self.index(i), "").llvm()?;
                                }
                                acc.into()
                            }
                        };
                        b.build_bit_cast(v, word, "").llvm()
                    })
                    .collect()
            }
        }
    }

    /// Memory words as register values: a byte is a boolean when it is not zero, an `i32` word is
    /// two half-precision elements (the low half first).
    fn unpack_words(
        &self,
        d: DType,
        reg: AsmReg,
        words: &[BasicValueEnum<'ctx>],
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let b = &self.builder;
        match d {
            DType::I1 => words
                .iter()
                .map(|&v| {
                    let v = int(v);
                    let zero = v.get_type().const_zero();
                    Ok(b.build_int_compare(IntPredicate::NE, v, zero, "")
                        .llvm()?
                        .into())
                })
                .collect(),
            _ if packed_bits(d).is_none() => Ok(words.to_vec()),
            _ => {
                let elem = register_type(self.context, Elem::Scalar(d));
                let mut out = Vec::with_capacity(words.len() * reg.per_word);
                for &word in words {
                    if reg.per_word == 1 {
                        out.push(b.build_bit_cast(word, elem, "").llvm()?);
                        continue;
                    }
                    let v = b
                        .build_bit_cast(word, vector_of(elem, reg.per_word), "")
                        .llvm()?;
                    let v = VectorValue::try_from(v).or_bug("a vector from a bitcast to one");
                    for i in 0..reg.per_word {
                        out.push(b.build_extract_element(v, self.index(i), "").llvm()?);
                    }
                }
                Ok(out)
            }
        }
    }

    /// `@p ld.global[.vW].T { dst… }, [ ptr + imm ];` with the destinations tied to `other`
    /// (`at` is `(ptr, imm)`, see [`Lowerer::address_bases`]).
    fn predicated_load(
        &self,
        d: DType,
        (p, imm): (PointerValue<'ctx>, u64),
        mask: IntValue<'ctx>,
        other: &[BasicValueEnum<'ctx>],
        evict: Evict,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let reg = asm_reg(d, other.len());
        let reg_ty = self.asm_reg_type(&reg);
        // The access moves `w` words.
        let other = self.asm_operands(d, reg, other)?;
        let w = other.len();
        let ret_ty: BasicTypeEnum = if w == 1 {
            reg_ty
        } else {
            self.context
                .struct_type(&vec![reg_ty; w], false)
                .as_basic_type_enum()
        };
        // Operands: $0..$w-1 destinations, $w the address, $w+1 the predicate, then `other`.
        let dsts = register_list((0..w).map(|i| format!("${i}")));
        let (open, hint, policy, close) = evict_parts(evict);
        let text = format!(
            "{open}@${} ld.global{hint}{}.{} {dsts}, [ ${w} + {imm} ]{policy};{close}",
            w + 1,
            vec_suffix(w),
            reg.ptx
        );
        let mut constraints: Vec<String> = (0..w).map(|_| format!("={}", reg.constraint)).collect();
        constraints.push("l".into());
        constraints.push("b".into());
        constraints.extend((0..w).map(|i| i.to_string()));

        let mut args: Vec<BasicMetadataValueEnum> = vec![p.into(), mask.into()];
        args.extend(other.iter().map(|&o| BasicMetadataValueEnum::from(o)));
        let mut params: Vec<BasicMetadataTypeEnum> = vec![
            self.global_ptr_type().into(),
            self.context.bool_type().into(),
        ];
        params.extend((0..w).map(|_| BasicMetadataTypeEnum::from(reg_ty)));
        let fn_ty = ret_ty.fn_type(&params, false);
        // With side effects: inline asm without them is taken as reading no memory, so LLVM
        // hoisted a masked load out of a loop that stored to the same addresses (every
        // iteration then read the value from before the loop), and the sink pass may move it.
        let asm = self.context.create_inline_asm(
            fn_ty,
            text,
            constraints.join(","),
            true,
            false,
            None,
            false,
        );
        let call = self
            .builder
            .build_indirect_call(fn_ty, asm, &args, "")
            .llvm()?;
        let ValueKind::Basic(v) = call.try_as_basic_value() else {
            bug("a value from the load's inline asm");
        };
        if w == 1 {
            return self.asm_results(d, reg, &[int(v)]);
        }
        let s = StructValue::try_from(v).or_bug("a struct from the load's inline asm");
        let words = (0..w)
            .map(|i| {
                Ok(int(self
                    .builder
                    .build_extract_value(s, i as u32, "")
                    .llvm()?))
            })
            .collect::<Result<Vec<_>>>()?;
        self.asm_results(d, reg, &words)
    }

    /// `@p st.global[.vW].T [ ptr + imm ], { src… };`, with side effects (`at` is `(ptr, imm)`,
    /// see [`Lowerer::address_bases`]).
    fn predicated_store(
        &self,
        d: DType,
        (p, imm): (PointerValue<'ctx>, u64),
        mask: IntValue<'ctx>,
        vals: &[BasicValueEnum<'ctx>],
        evict: Evict,
    ) -> Result<()> {
        let reg = asm_reg(d, vals.len());
        let reg_ty = self.asm_reg_type(&reg);
        // The access moves `w` words.
        let words = self.asm_operands(d, reg, vals)?;
        let w = words.len();
        // Operands: $0 the address, $1..$w the values, $w+1 the predicate.
        let srcs = register_list((1..=w).map(|i| format!("${i}")));
        let (open, hint, policy, close) = evict_parts(evict);
        let text = format!(
            "{open}@${} st.global{hint}{}.{} [ $0 + {imm} ], {srcs}{policy};{close}",
            w + 1,
            vec_suffix(w),
            reg.ptx
        );
        let mut constraints: Vec<String> = vec!["l".into()];
        constraints.extend((0..w).map(|_| reg.constraint.to_string()));
        constraints.push("b".into());
        constraints.push("~{memory}".into());

        let mut args: Vec<BasicMetadataValueEnum> = vec![p.into()];
        args.extend(words.iter().map(|&v| BasicMetadataValueEnum::from(v)));
        args.push(mask.into());
        let mut params: Vec<BasicMetadataTypeEnum> = vec![self.global_ptr_type().into()];
        params.extend((0..w).map(|_| BasicMetadataTypeEnum::from(reg_ty)));
        params.push(self.context.bool_type().into());
        let fn_ty = self.context.void_type().fn_type(&params, false);
        let asm = self.context.create_inline_asm(
            fn_ty,
            text,
            constraints.join(","),
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

    /// The LLVM integer type of an asm register.
    fn asm_reg_type(&self, reg: &AsmReg) -> BasicTypeEnum<'ctx> {
        self.int_type(reg.bits)
    }

    /// The LLVM integer type of 8, 16, 32 or 64 bits (the register widths of [`AsmReg`], and a
    /// lone byte's word).
    fn int_type(&self, bits: u32) -> BasicTypeEnum<'ctx> {
        match bits {
            8 => self.context.i8_type().as_basic_type_enum(),
            16 => self.context.i16_type().as_basic_type_enum(),
            64 => self.context.i64_type().as_basic_type_enum(),
            _ => self.context.i32_type().as_basic_type_enum(),
        }
    }

    pub(super) fn global_ptr_type(&self) -> BasicTypeEnum<'ctx> {
        self.context
            .ptr_type(AddressSpace::from(GLOBAL))
            .as_basic_type_enum()
    }

    /// Register values as the integer registers (words) the inline asm takes.
    fn asm_operands(
        &self,
        d: DType,
        reg: AsmReg,
        vals: &[BasicValueEnum<'ctx>],
    ) -> Result<Vec<IntValue<'ctx>>> {
        let b = &self.builder;
        let i32_ty = self.context.i32_type();
        match d {
            DType::F32 => vals
                .iter()
                .map(|&v| Ok(int(b.build_bit_cast(v, i32_ty, "").llvm()?)))
                .collect(),
            DType::F64 => vals
                .iter()
                .map(|&v| {
                    Ok(int(b
                        .build_bit_cast(v, self.context.i64_type(), "")
                        .llvm()?))
                })
                .collect(),
            DType::I1 => vals
                .iter()
                .map(|&v| b.build_int_z_extend(int(v), i32_ty, "").llvm())
                .collect(),
            _ if packed_bits(d).is_none() => Ok(vals.iter().map(|&v| int(v)).collect()),
            // A lone byte travels in a 32-bit register.
            _ => self
                .pack_words(d, reg, vals)?
                .into_iter()
                .map(|w| {
                    let w = int(w);
                    if w.get_type().get_bit_width() < reg.bits {
                        b.build_int_z_extend(w, self.int_type(reg.bits).into_int_type(), "")
                            .llvm()
                    } else {
                        Ok(w)
                    }
                })
                .collect(),
        }
    }

    /// The inline asm's integer registers (words) as register values of type `d`.
    fn asm_results(
        &self,
        d: DType,
        reg: AsmReg,
        words: &[IntValue<'ctx>],
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let b = &self.builder;
        match d {
            DType::F32 => words
                .iter()
                .map(|&v| b.build_bit_cast(v, self.context.f32_type(), "").llvm())
                .collect(),
            DType::F64 => words
                .iter()
                .map(|&v| b.build_bit_cast(v, self.context.f64_type(), "").llvm())
                .collect(),
            DType::I1 => words
                .iter()
                .map(|&v| {
                    Ok(
                        b.build_int_compare(IntPredicate::NE, v, v.get_type().const_zero(), "")
                            .llvm()?
                            .into(),
                    )
                })
                .collect(),
            _ if packed_bits(d).is_none() => Ok(words.iter().map(|&v| v.into()).collect()),
            _ => {
                // A lone byte came in a 32-bit register.
                let word = self.word_type(d, reg).into_int_type();
                let words = words
                    .iter()
                    .map(|&v| {
                        Ok(if v.get_type() == word {
                            v.into()
                        } else {
                            b.build_int_truncate(v, word, "").llvm()?.into()
                        })
                    })
                    .collect::<Result<Vec<BasicValueEnum>>>()?;
                self.unpack_words(d, reg, &words)
            }
        }
    }
}

/// Whether a mask element is a constant.
fn classify(m: IntValue<'_>) -> Mask<'_> {
    match m.get_zero_extended_constant() {
        Some(0) => Mask::Never,
        Some(_) => Mask::Always,
        None => Mask::If(m),
    }
}

/// Every operand of an access holds one scalar per pointer.
#[track_caller]
fn check_lengths<const N: usize>(n: usize, others: [Option<&Vec<BasicValueEnum<'_>>>; N]) {
    if others.iter().flatten().any(|o| o.len() != n) {
        bug("operands holding the same number of registers");
    }
}

/// `<w x t>` for an integer or float `t` (the registers of numbers).
#[track_caller]
pub(super) fn vector_of(t: BasicTypeEnum<'_>, w: usize) -> VectorType<'_> {
    match t {
        BasicTypeEnum::IntType(t) => t.vec_type(w as u32),
        BasicTypeEnum::FloatType(t) => t.vec_type(w as u32),
        BasicTypeEnum::ArrayType(_)
        | BasicTypeEnum::PointerType(_)
        | BasicTypeEnum::StructType(_)
        | BasicTypeEnum::VectorType(_)
        | BasicTypeEnum::ScalableVectorType(_) => {
            bug(format_args!("an integer or float type, found `{t}`"))
        }
    }
}

/// The PTX vector suffix of a `w`-element access.
fn vec_suffix(w: usize) -> String {
    if w == 1 {
        String::new()
    } else {
        format!(".v{w}")
    }
}

/// `$0` for one register, `{ $0, $1 }` for several.
fn register_list(regs: impl Iterator<Item = String>) -> String {
    let regs: Vec<String> = regs.collect();
    if regs.len() == 1 {
        regs.concat()
    } else {
        format!("{{ {} }}", regs.join(", "))
    }
}

/// Sets the alignment of the load that produced `v`.
fn set_alignment(v: BasicValueEnum<'_>, align: u32) -> Result<()> {
    let inst = v.as_instruction_value().or_bug("a load instruction");
    inst.set_alignment(align).llvm()
}
