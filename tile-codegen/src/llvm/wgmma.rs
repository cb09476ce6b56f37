//! Hopper's warpgroup tensor-core ops: `warp_group_dot` (`wgmma.mma_async` with `B` read from
//! shared memory through a matrix descriptor, and `A` likewise or from registers), `warp_group_wait` (`wgmma.wait_group`)
//! and `fence_async_shared` (`fence.proxy.async.shared::cta`), all inline PTX (LLVM 19 has no
//! intrinsics for them).
//!
//! **Operands.** `A` (`M × K`, `K` contiguous: "K-major") and `B` (`K × N`, `N` contiguous:
//! "N-major", the instruction's `imm-trans-b = 1`) sit in buffers of the
//! [`SharedLayout::wgmma`] layout: column blocks of `W` elements (`W · 2` bytes per row: 128, 64
//! or 32), each block an `R × W` tile whose 16-byte chunk `c` of row `r` is stored at chunk
//! `c XOR ((r / per_phase) % max_phase)` — the hardware's 128-, 64- or 32-byte swizzle, given
//! that blocks start at multiples of 1024 bytes (`shared_alloc` aligns buffers so, and every
//! block's byte size is a multiple of 1024 for the tiles that reach here).
//!
//! **Descriptors** (64 bits): bits 0–13 the start address / 16, 16–29 the leading byte offset /
//! 16, 32–45 the stride byte offset / 16, 62–63 the swizzle (1: 128 bytes, 2: 64, 3: 32).
//! - `A`, K-major: the stride byte offset is the distance between groups of 8 rows (8 · row
//!   bytes); the leading offset is unused with a swizzle (1). Step `k` of 16 elements starts
//!   `2 · (16 k mod W)` bytes into its row, in block `16 k / W`: the hardware applies the swizzle
//!   to the final address, so a start inside a 128-byte row is how `K` advances.
//! - `A`, M-major (`trans_a`: the stage holds `Aᵀ`, `K × M`): as `B` N-major below, columns
//!   being rows of `A`; the instruction's `imm-trans-a` is 1. A warpgroup's 64 rows of `A` are
//!   64 columns of the stage, whole column blocks.
//! - `B`, K-major (`trans_b`: the stage holds `Bᵀ`, `N × K`): as `A`, rows being columns of `B`;
//!   the instruction's `imm-trans-b` is 0.
//! - `B`, N-major: the leading byte offset is the distance between column blocks (`K · W · 2`),
//!   the stride byte offset between groups of 8 rows of `K` (8 · row bytes). Step `k` starts 16
//!   rows further down.
//!
//! **`A` in registers.** A register `A` (`M × K`, the `A` operand layout of the accumulator's
//! mma layout) is read four 32-bit words per K step and repetition along M, each two elements,
//! in the order of `mma.sync.m16n8k16`'s `A` fragment, which `wgmma`'s register form shares for
//! the 16 rows of each warp: rows `+0/+8`, columns `+0/+8`.
//!
//! **8-bit operands** (`f8e4m3`, `f8e5m2`, `i8`): the same with `W` columns of one byte (128
//! per block at most), a `K` step of 32 elements (still 32 bytes), both operands K-major (the
//! 8-bit forms have no transpose bits; the verifier's rule 28), `A` in registers four elements a
//! word (the `m16n8k32` fragment); `i8` accumulates in `s32` registers (`=r`), and its form takes
//! no operand scales.
//!
//! **Instructions.** Per warpgroup `g` (warps `4g … 4g + 3`, rows `64 g + 16 W_m r …` of
//! repetition `r`, `W_m` the layout's warps along M), per 16-wide step of `K`, per repetition
//! along M and per `n ≤ 256` columns: one `wgmma.mma_async.sync.aligned.m64n{n}k16.f32.T.T`,
//! whose `n / 2` accumulator registers are the thread's registers of that 64 × n tile in the
//! version-3 mma layout (two columns per 8, then the row + 8; the same order as `mma.sync`'s
//! fragments). One `wgmma.fence` before them (the accumulators were written by other
//! instructions) and one `wgmma.commit_group` after: each `warp_group_dot` is one group.
//!
//! **Waiting.** `warp_group_wait` is `wgmma.wait_group` with every accumulator register taken
//! in and given back (tied operands), so that nothing in LLVM or ptxas reads an accumulator
//! before the wait that completes it.

use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, IntValue, StructValue, ValueKind};
use tile_core::ir::{DType, Layout, OpData, OpKind, SharedLayout, Type};

use super::lower::{bug, int, pointer, Lowerer, OrBug, OrLlvm, Result};

/// The most columns one `wgmma` computes.
const MAX_N: u64 = 256;

/// How a buffer is read by `wgmma`: its column-block width and the descriptor's constant bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Operand {
    /// Columns per block.
    width: u64,
    /// Bytes per row of a block.
    row_bytes: u64,
    /// Bytes per block (`rows · row_bytes`).
    block_bytes: u64,
}

impl Operand {
    /// The read of a `rows × cols` stage of `elem_bytes`-byte elements (2, or 1 for 8-bit
    /// floats) in `layout`, or why `wgmma` cannot.
    fn of(
        layout: &SharedLayout,
        rows: u64,
        cols: u64,
        elem_bytes: u64,
    ) -> std::result::Result<Operand, String> {
        let width = layout.block_cols(cols);
        let row_bytes = width * elem_bytes;
        let cols_u32 = u32::try_from(cols).or_bug("a column count in `u32`");
        let eb = u32::try_from(elem_bytes).or_bug("an element size in `u32`");
        if *layout != SharedLayout::wgmma(cols_u32, eb) {
            bug(format_args!(
                "the `wgmma` layout for {cols} columns (the verifier's rule 28), found {layout}"
            ));
        }
        if !matches!(row_bytes, 32 | 64 | 128) {
            return Err(format!(
                "a `wgmma` operand needs rows of 32, 64 or 128 bytes per swizzle block, not {row_bytes} ({cols} columns)"
            ));
        }
        Ok(Operand {
            width,
            row_bytes,
            block_bytes: rows * row_bytes,
        })
    }

    /// The descriptor's swizzle field.
    fn swizzle_mode(&self) -> u64 {
        match self.row_bytes {
            128 => 1,
            64 => 2,
            _ => 3,
        }
    }

    /// The descriptor bits besides the address, for a K-major (`A`) or N-major (`B`) read.
    fn fixed_bits(&self, k_major: bool) -> u64 {
        let stride = 8 * self.row_bytes;
        let leading = if k_major { 16 } else { self.block_bytes };
        ((leading >> 4) & 0x3fff) << 16 | ((stride >> 4) & 0x3fff) << 32 | self.swizzle_mode() << 62
    }
}

/// Where a `warp_group_dot` reads `A`: a stage, through descriptors, or registers.
enum ASource<'ctx> {
    /// The stage's read and this warpgroup's descriptor.
    Shared(Operand, Desc<'ctx>),
    /// Four words per K step and repetition along M (K steps outer).
    Registers(Vec<Vec<BasicValueEnum<'ctx>>>),
}

/// `A` of one `wgmma`: a descriptor or four words.
enum AIn<'ctx> {
    /// From shared memory.
    Desc(Desc<'ctx>),
    /// From registers.
    Words(Vec<BasicValueEnum<'ctx>>),
}

/// A shared-memory matrix descriptor, one 64-bit value (see [`Lowerer::descriptor`]).
#[derive(Clone, Copy)]
struct Desc<'ctx>(IntValue<'ctx>);

impl<'ctx> Lowerer<'_, 'ctx> {
    /// `fence_async_shared`.
    pub(super) fn fence_async_shared(&self) -> Result<()> {
        self.memory_asm("fence.proxy.async.shared::cta;".into())
    }

    /// The shared address of stage operand `i + 1` of buffer operand `i`.
    fn wgmma_stage(&self, data: &OpData, i: usize, ty: &Type) -> Result<IntValue<'ctx>> {
        let buf = pointer(self.scalar_operand(data, i));
        let stage = int(self.scalar_operand(data, i + 1));
        self.stage_address(buf, stage, ty)
    }

    /// A descriptor: `fixed` with the address field of shared address `addr` (which is below
    /// 2^18, as shared memory is), one 64-bit value: the address field, zero-extended, or-ed
    /// into the constant fields. Stepping along `K` adds to it (the address field never carries
    /// out: shared addresses / 16 stay below 2^14). As one 64-bit value ptxas steps the `K`
    /// offsets with 64-bit adds on the uniform datapath (`UIADD3.64`); built from two 32-bit
    /// halves in the instruction's text, each step's descriptor was rebuilt from a vector
    /// register (`R2UR`, and a `UMOV` of the constant half) before its `wgmma`.
    fn descriptor(&self, addr: IntValue<'ctx>, fixed: u64) -> Result<Desc<'ctx>> {
        let i32_ty = self.context.i32_type();
        let i64_ty = self.context.i64_type();
        let b = &self.builder;
        let field = b
            .build_right_shift(addr, i32_ty.const_int(4, false), false, "")
            .llvm()?;
        let field = b
            .build_and(field, i32_ty.const_int(0x3fff, false), "")
            .llvm()?;
        let field = b.build_int_z_extend(field, i64_ty, "").llvm()?;
        Ok(Desc(
            b.build_or(field, i64_ty.const_int(fixed, false), "")
                .llvm()?,
        ))
    }

    /// `warp_group_dot %a, %a_stage, %b, %b_stage, %acc`, or `warp_group_dot %a, %b, %b_stage,
    /// %acc` with `A` in registers (see the module documentation).
    pub(super) fn warp_group_dot(&mut self, data: &OpData) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let shared_a = data.operands.len() == 5;
        let (trans_a, trans_b) = match data.kind {
            OpKind::WarpGroupDot { trans_a, trans_b } => (trans_a, trans_b),
            _ => bug("a `warp_group_dot`"),
        };
        let (bi, ci) = if shared_a { (2, 4) } else { (1, 3) };
        let ty = |i: usize| self.operand_type(data, i);
        let (aty, bty, cty) = (ty(0), ty(bi), ty(ci));
        let (Some(Layout::Shared(bl)), Some(Layout::Mma(mma))) = (&bty.layout, &cty.layout) else {
            bug("a shared `B` buffer and an mma accumulator");
        };
        let name = |d: Option<DType>| match d {
            Some(DType::F16) => "f16",
            Some(DType::BF16) => "bf16",
            Some(DType::F8E4M3) => "e4m3",
            Some(DType::F8E5M2) => "e5m2",
            Some(DType::I8) => "s8",
            other => bug(format_args!(
                "f16, bf16, 8-bit float or i8 operands, found {other:?}"
            )),
        };
        let types = (name(aty.dtype()), name(bty.dtype()));
        // Bytes per element, and the K of one instruction (32 bytes: 16 elements, 32 of 8 bits).
        let eb = u64::from(aty.dtype().map_or(2, DType::size_bytes));
        let k_step = 32 / eb;
        // `A`'s stage is `M × K`, or `K × M` (M-major) with `trans_a`.
        let mk: Vec<u32> = match &aty.shape[usize::from(shared_a)..] {
            &[r, c] if trans_a => vec![c, r],
            rc => rc.to_vec(),
        };
        // `B`'s stage is `K × N`, or `N × K` (K-major) with `trans_b`.
        let n = u64::from(bty.shape[if trans_b { 1 } else { 2 }]);
        let (m, k) = (u64::from(mk[0]), u64::from(mk[1]));
        let wm = u64::from(mma.warps_per_cta[0]);
        if mma.version != 3
            || !wm.is_multiple_of(4)
            || !m.is_multiple_of(16 * wm)
            || !k.is_multiple_of(k_step)
            || !n.is_multiple_of(8)
        {
            return Err(format!(
                "`wgmma` needs whole 64-row warpgroup tiles and K a multiple of {k_step}: {m} × {k} × {n} on {mma}"
            ));
        }
        let b = if trans_b {
            Operand::of(bl, n, k, eb)?
        } else {
            Operand::of(bl, k, n, eb)?
        };
        let b_fixed = b.fixed_bits(trans_b);
        let dc = self.tensor_distribution(cty);
        // A zero accumulator (`dot(a, b)` without one, flash attention's scores) is not read:
        // the first K step runs with `scale-d = 0`, and no register is zeroed for it.
        let zero_acc = self
            .f
            .constant_of(data.operands[ci])
            .is_some_and(|c| c.is_zero());
        let mut acc = self.operand(data, ci).to_vec();
        if zero_acc {
            let poison: BasicValueEnum = match self.acc_type(cty) {
                BasicTypeEnum::IntType(t) => t.get_poison().into(),
                t => t.into_float_type().get_poison().into(),
            };
            acc.iter_mut().for_each(|v| *v = poison);
        }

        let i32_ty = self.context.i32_type();
        let c32 = |x: u64| i32_ty.const_int(x, false);
        // `A`: a descriptor at this warpgroup's first row (64 · (warp / 4)) of its stage, or the
        // registers, four words of two elements per K step and repetition along M, in the order
        // of `mma.sync`'s `A` fragment (which `wgmma`'s register form shares).
        let a_src = if shared_a {
            let Some(Layout::Shared(al)) = &aty.layout else {
                bug("a shared `A` buffer");
            };
            let a = if trans_a {
                Operand::of(al, k, m, eb)?
            } else {
                Operand::of(al, m, k, eb)?
            };
            if trans_a && !a.width.is_multiple_of(64) && m > a.width {
                return Err(format!(
                    "an M-major `wgmma` `A` needs 64-column blocks, not {} ({m} rows)",
                    a.width
                ));
            }
            let tid = self.tid()?;
            let bld = &self.builder;
            let group = bld.build_right_shift(tid, c32(7), false, "").llvm()?;
            // This warpgroup's first row of `A`: 64 · group rows into a K-major stage, or
            // `64 · group / width` column blocks into an M-major one.
            let group_bytes = if trans_a {
                a.block_bytes * 64 / a.width
            } else {
                64 * a.row_bytes
            };
            let a_stage = self.wgmma_stage(data, 0, aty)?;
            let bld = &self.builder;
            let a_rows = bld.build_int_nuw_mul(group, c32(group_bytes), "").llvm()?;
            let a_base = bld.build_int_nuw_add(a_stage, a_rows, "").llvm()?;
            ASource::Shared(a, self.descriptor(a_base, a.fixed_bits(!trans_a))?)
        } else {
            let da = self.tensor_distribution(aty);
            let va = self.operand(data, 0).to_vec();
            // Elements per word: 2, or 4 of 8 bits (the `mma.sync.m16n8k32` `A` fragment).
            let kw = 4 / eb;
            let mut words = Vec::new();
            for k0 in (0..k).step_by(k_step as usize) {
                for r in 0..m / (16 * wm) {
                    let m0 = r * 16 * wm;
                    let mut four = Vec::with_capacity(4);
                    for w in 0..4 {
                        let elems = (0..kw)
                            .map(|j| {
                                let at = [m0 + 8 * (w % 2), k0 + j + 4 * kw * (w / 2)];
                                let reg = da.reg_at(&at).unwrap_or_else(|| {
                                    bug(format_args!("an `A` register at {at:?}"))
                                });
                                va[reg]
                            })
                            .collect::<Vec<_>>();
                        four.push(self.pack_word(&elems)?);
                    }
                    words.push(four);
                }
            }
            ASource::Registers(self.pinned(words)?)
        };
        let b_stage = self.wgmma_stage(data, bi, bty)?;
        let b_desc = self.descriptor(b_stage, b_fixed)?;

        let n_instr = n.min(MAX_N);
        let reps_m = m / (16 * wm);
        let one = c32(1);
        self.memory_asm("wgmma.fence.sync.aligned;".into())?;
        for ks in 0..k / k_step {
            let k0 = k_step * ks;
            for r in 0..reps_m {
                // A: rows r · 16 · W_m further (a multiple of 64: whole swizzle atoms), the K step's
                // block and its start inside the row; or this step's registers.
                let a_in = match &a_src {
                    ASource::Shared(a, desc) => {
                        let m0 = r * 16 * wm;
                        // M-major: the column block of `m0`, 16 rows of K further.
                        let off = if trans_a {
                            (m0 / a.width) * a.block_bytes + k0 * a.row_bytes
                        } else {
                            (k0 / a.width) * a.block_bytes + m0 * a.row_bytes + (k0 % a.width) * eb
                        };
                        AIn::Desc(self.desc_plus(*desc, off)?)
                    }
                    ASource::Registers(words) => {
                        AIn::Words(words[(ks * reps_m + r) as usize].clone())
                    }
                };
                for q in 0..n / n_instr {
                    let n0 = q * n_instr;
                    // N-major: the column block of `n0`, 16 rows of K further; K-major: rows
                    // `n0` further (whole 8-row swizzle atoms), the K step's block and its start
                    // inside the row, as for `A`.
                    let b_off = if trans_b {
                        (k0 / b.width) * b.block_bytes + n0 * b.row_bytes + (k0 % b.width) * eb
                    } else {
                        (n0 / b.width) * b.block_bytes + k0 * b.row_bytes
                    };
                    let bd = self.desc_plus(b_desc, b_off)?;
                    let regs = (0..n_instr / 2)
                        .map(|j| {
                            let (i8, w) = (j / 4, j % 4);
                            let at = [r * 16 * wm + 8 * (w / 2), n0 + 8 * i8 + w % 2];
                            dc.reg_at(&at).unwrap_or_else(|| {
                                bug(format_args!("an accumulator register at {at:?}"))
                            })
                        })
                        .collect::<Vec<_>>();
                    let c: Vec<_> = regs.iter().map(|&i| acc[i]).collect();
                    let scale_d = if zero_acc && ks == 0 { c32(0) } else { one };
                    let d = self.wgmma_asm(
                        types, k_step, n_instr, &a_in, trans_a, bd, trans_b, scale_d, &c,
                    )?;
                    for (&i, v) in regs.iter().zip(d) {
                        acc[i] = v;
                    }
                }
            }
        }
        self.memory_asm("wgmma.commit_group.sync.aligned;".into())?;
        Ok(acc)
    }

    /// `desc` advanced by `bytes` (a multiple of 16) in its address field.
    fn desc_plus(&self, desc: Desc<'ctx>, bytes: u64) -> Result<Desc<'ctx>> {
        if bytes == 0 {
            return Ok(desc);
        }
        let i64_ty = self.context.i64_type();
        let v = self
            .builder
            .build_int_nuw_add(desc.0, i64_ty.const_int(bytes >> 4, false), "")
            .llvm()?;
        Ok(Desc(v))
    }

    /// One `wgmma.mma_async.sync.aligned.m64n{n}k16.f32.T.T` with `B` from shared memory
    /// (N-major, or K-major where `b_k_major`: the instruction's `imm-trans-b` 1 or 0) and `A`
    /// from shared memory (K-major, or M-major where `a_m_major`: `imm-trans-a` 0 or 1) or four
    /// registers: `c` (`n / 2` registers) in, the new values out.
    #[allow(clippy::too_many_arguments)]
    fn wgmma_asm(
        &self,
        (ta_ty, tb_ty): (&str, &str),
        k_step: u64,
        n: u64,
        a: &AIn<'ctx>,
        a_m_major: bool,
        b_desc: Desc<'ctx>,
        b_k_major: bool,
        scale_d: IntValue<'ctx>,
        c: &[BasicValueEnum<'ctx>],
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let regs = c.len();
        let list = (0..regs)
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let ctx = self.context;
        let i32_ty = ctx.i32_type();
        // Inputs after the accumulator outputs: `A` (a descriptor or four words), `B`'s
        // descriptor, `scale-d`, then the tied accumulator inputs.
        let mut args: Vec<BasicMetadataValueEnum> = match a {
            AIn::Desc(d) => vec![d.0.into()],
            AIn::Words(w) => w.iter().map(|&x| BasicMetadataValueEnum::from(x)).collect(),
        };
        let a_len = args.len();
        args.extend([BasicMetadataValueEnum::from(b_desc.0), scale_d.into()]);
        let (pb, ps) = (regs + a_len, regs + a_len + 1);
        // The 16-bit forms name both operands' majorness; the 8-bit forms have none (both
        // K-major, the verifier's rule 28), and the integer form no operand scales either.
        let sixteen = k_step == 16;
        let int = ta_ty == "s8";
        let (trans_ab, trans_b) = if sixteen {
            let (ta, tb) = (u32::from(a_m_major), u32::from(!b_k_major));
            (format!(", 1, 1, {ta}, {tb}"), format!(", 1, 1, {tb}"))
        } else if int {
            (String::new(), String::new())
        } else {
            (", 1, 1".to_string(), ", 1, 1".to_string())
        };
        let dtype = if int { "s32" } else { "f32" };
        let text = match a {
            AIn::Desc(_) => format!(
                "{{\n.reg .pred p;\nsetp.ne.b32 p, ${ps}, 0;\nwgmma.mma_async.sync.aligned.m64n{n}k{k_step}.{dtype}.{ta_ty}.{tb_ty} {{{list}}}, ${regs}, ${pb}, p{trans_ab};\n}}",
            ),
            AIn::Words(_) => format!(
                "{{\n.reg .pred p;\nsetp.ne.b32 p, ${ps}, 0;\nwgmma.mma_async.sync.aligned.m64n{n}k{k_step}.{dtype}.{ta_ty}.{tb_ty} {{{list}}}, {{${}, ${}, ${}, ${}}}, ${pb}, p{trans_b};\n}}",
                regs,
                regs + 1,
                regs + 2,
                regs + 3,
            ),
        };
        let inputs = args.len();
        let acc_ty = c.first().or_bug("accumulators").get_type();
        let out = if int { "=r" } else { "=f" };
        let mut constraints: Vec<String> = (0..regs).map(|_| out.to_string()).collect();
        // The descriptors are 64-bit (`l`); words and `scale-d` 32-bit (`r`).
        let wide = |i: usize| matches!(a, AIn::Desc(_)) && i == 0 || i == a_len;
        constraints.extend((0..inputs).map(|i| if wide(i) { "l" } else { "r" }.to_string()));
        constraints.extend((0..regs).map(|i| i.to_string()));
        let i64_ty = ctx.i64_type();
        let mut params: Vec<BasicMetadataTypeEnum> = (0..inputs)
            .map(|i| {
                if wide(i) {
                    i64_ty.into()
                } else {
                    i32_ty.into()
                }
            })
            .collect();
        params.extend(std::iter::repeat_n(
            BasicMetadataTypeEnum::from(acc_ty),
            regs,
        ));
        args.extend(c.iter().map(|&v| BasicMetadataValueEnum::from(v)));
        self.tied_asm(&text, &constraints.join(","), &params, &args, regs, acc_ty)
    }

    /// The register type of accumulator `t`'s elements: `i32` for an integer product, else
    /// `f32`.
    fn acc_type(&self, t: &Type) -> BasicTypeEnum<'ctx> {
        if t.dtype() == Some(DType::I32) {
            self.context.i32_type().into()
        } else {
            self.context.f32_type().into()
        }
    }

    /// `warp_group_wait {pending} %acc`: `wgmma.wait_group` with every accumulator register tied.
    pub(super) fn warp_group_wait(
        &mut self,
        data: &OpData,
        pending: u32,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let acc = self.operand(data, 0).to_vec();
        let regs = acc.len();
        let text = format!("wgmma.wait_group.sync.aligned {pending};");
        let acc_ty = self.acc_type(self.operand_type(data, 0));
        let out = if acc_ty.is_int_type() { "=r" } else { "=f" };
        let mut constraints: Vec<String> = (0..regs).map(|_| out.to_string()).collect();
        constraints.extend((0..regs).map(|i| i.to_string()));
        constraints.push("~{memory}".to_string());
        let params: Vec<BasicMetadataTypeEnum> =
            std::iter::repeat_n(BasicMetadataTypeEnum::from(acc_ty), regs).collect();
        let args: Vec<BasicMetadataValueEnum> = acc
            .iter()
            .map(|&v| BasicMetadataValueEnum::from(v))
            .collect();
        self.tied_asm(&text, &constraints.join(","), &params, &args, regs, acc_ty)
    }

    /// The words, passed through one empty inline assembly with side effects (each output tied
    /// to its input): everything that computes them then stays before the `wgmma.fence` that
    /// follows. Without it the demand order (`sink.rs`) moves each K step's packing, and the
    /// element-wise chain that feeds it, to just before its `wgmma`, between the group's
    /// instructions, and ptxas closes the group at each (a `warpgroup.arrive` it injects, and a
    /// wait), serializing the K steps.
    fn pinned(
        &self,
        words: Vec<Vec<BasicValueEnum<'ctx>>>,
    ) -> Result<Vec<Vec<BasicValueEnum<'ctx>>>> {
        let flat: Vec<BasicValueEnum<'ctx>> = words.iter().flatten().copied().collect();
        let n = flat.len();
        if n == 0 {
            return Ok(words);
        }
        let ctx = self.context;
        let i32_ty: BasicTypeEnum = ctx.i32_type().into();
        let params: Vec<BasicMetadataTypeEnum> = vec![i32_ty.into(); n];
        let fn_ty = ctx
            .struct_type(&vec![i32_ty; n], false)
            .fn_type(&params, false);
        let mut constraints: Vec<String> = (0..n).map(|_| "=r".to_string()).collect();
        constraints.extend((0..n).map(|i| i.to_string()));
        let asm = ctx.create_inline_asm(
            fn_ty,
            String::new(),
            constraints.join(","),
            true,
            false,
            None,
            false,
        );
        let args: Vec<BasicMetadataValueEnum> = flat.iter().map(|&v| v.into()).collect();
        let call = self
            .builder
            .build_indirect_call(fn_ty, asm, &args, "")
            .llvm()?;
        let ValueKind::Basic(v) = call.try_as_basic_value() else {
            bug("a value from the pinning asm");
        };
        let st = StructValue::try_from(v).or_bug("a struct from the pinning asm");
        let mut out = Vec::with_capacity(words.len());
        let mut i = 0u32;
        for w in &words {
            let mut row = Vec::with_capacity(w.len());
            for _ in w {
                row.push(self.builder.build_extract_value(st, i, "").llvm()?);
                i += 1;
            }
            out.push(row);
        }
        Ok(out)
    }

    /// Inline PTX `text` with effects (so that neither LLVM nor the demand-order sink moves it),
    /// returning `regs` values of type `f32_ty` (`f32`, or `i32` for integer products; a struct
    /// of them, or one): the tensor-core instructions, whose accumulators are tied to their
    /// results.
    pub(super) fn tied_asm(
        &self,
        text: &str,
        constraints: &str,
        params: &[BasicMetadataTypeEnum<'ctx>],
        args: &[BasicMetadataValueEnum<'ctx>],
        regs: usize,
        f32_ty: BasicTypeEnum<'ctx>,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let ctx = self.context;
        let fn_ty = if regs == 1 {
            f32_ty.fn_type(params, false)
        } else {
            ctx.struct_type(&vec![f32_ty; regs], false)
                .fn_type(params, false)
        };
        let asm = ctx.create_inline_asm(
            fn_ty,
            text.to_string(),
            constraints.to_string(),
            true,
            false,
            None,
            false,
        );
        let call = self
            .builder
            .build_indirect_call(fn_ty, asm, args, "")
            .llvm()?;
        let ValueKind::Basic(v) = call.try_as_basic_value() else {
            bug("a value from the `wgmma` asm");
        };
        if regs == 1 {
            return Ok(vec![v]);
        }
        let s = StructValue::try_from(v).or_bug("a struct from the `wgmma` asm");
        (0..regs as u32)
            .map(|i| self.builder.build_extract_value(s, i, "").llvm())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_fields() {
        // A 128 × 64 f16 `A` stage: 128-byte rows, one block; B 64 × 128: two 64-wide blocks.
        let a = Operand::of(&SharedLayout::wgmma(64, 2), 128, 64, 2).unwrap();
        assert_eq!((a.width, a.row_bytes, a.block_bytes), (64, 128, 16384));
        assert_eq!(a.fixed_bits(true), 1 << 16 | (1024 >> 4) << 32 | 1 << 62);
        let b = Operand::of(&SharedLayout::wgmma(128, 2), 64, 128, 2).unwrap();
        assert_eq!((b.width, b.block_bytes), (64, 8192));
        assert_eq!(
            b.fixed_bits(false),
            (8192 >> 4) << 16 | (1024 >> 4) << 32 | 1 << 62
        );
        // 32-wide K: 64-byte rows, the 64-byte swizzle.
        let a32 = Operand::of(&SharedLayout::wgmma(32, 2), 128, 32, 2).unwrap();
        assert_eq!(a32.swizzle_mode(), 2);
        assert_eq!(a32.fixed_bits(true) >> 32 & 0x3fff, 512 >> 4);
        // Rows of 16 bytes have no swizzle mode (another layout the verifier rules out).
        assert!(Operand::of(&SharedLayout::wgmma(8, 2), 64, 8, 2).is_err());
        // 8-bit operands: 128 columns are one 128-byte block, K steps of 32 bytes.
        let f8 = Operand::of(&SharedLayout::wgmma(128, 1), 256, 128, 1).unwrap();
        assert_eq!((f8.width, f8.row_bytes, f8.block_bytes), (128, 128, 32768));
        assert_eq!(f8.swizzle_mode(), 1);
        let f8_64 = Operand::of(&SharedLayout::wgmma(64, 1), 128, 64, 1).unwrap();
        assert_eq!((f8_64.row_bytes, f8_64.swizzle_mode()), (64, 2));
    }

    /// The layout places every block's 16-byte chunks as the hardware's swizzle modes read
    /// them: within a block starting at a multiple of 1024 bytes, chunk `c` of row `r` is at
    /// byte `r · row + 16 · (c XOR ((byte address / 128) mod (row / 16)))`.
    #[test]
    fn layout_is_the_hardware_swizzle() {
        for (rows, cols) in [(64u64, 128u64), (128, 64), (64, 32), (16, 16), (32, 256)] {
            let l = SharedLayout::wgmma(cols as u32, 2);
            let w = l.block_cols(cols);
            let row_bytes = w * 2;
            for r in 0..rows {
                for c in 0..cols {
                    let byte = l.index(rows, cols, r, c) * 2;
                    let block = c / w;
                    let unswizzled = block * rows * row_bytes + r * row_bytes + (c % w) * 2;
                    // Swizzle<B, 4, 3>: bits 4 .. 4 + B XORed with bits 7 .. 7 + B.
                    let bits = (row_bytes / 16).trailing_zeros();
                    let mask = (1u64 << bits) - 1;
                    let hw = unswizzled ^ (((unswizzled >> 7) & mask) << 4);
                    assert_eq!(byte, hw, "{rows}x{cols} at ({r}, {c})");
                }
            }
        }
    }
}
