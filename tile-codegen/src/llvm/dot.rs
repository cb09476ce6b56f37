//! Lowering of `dot`: on tensor cores when its result has an mma layout (see [`Lowerer::mma_dot`]),
//! otherwise as follows.
//!
//! Without tensor cores, both operands go through shared memory (as `f32`; `i8` as `i32`), and
//! each thread computes the elements of the result it holds with one fused multiply-add per `k`
//! (a wrapping multiply and add for `i8`), in order from `k = 0` — exactly the IR's definition,
//! so the GPU agrees with the interpreter bit for bit.
//!
//! Steps (after the barrier `insert-barriers` places where an earlier user of the bytes may still
//! read them): every element of `a`
//! (`M × K`) and `b` (`K × N`) written once at its row-major index (see
//! `Lowerer::store_tensor`), a barrier, then a loop over `k` carrying the thread's accumulators:
//! per iteration one load of `a[m][k]` per row the thread holds and one of `b[k][n]` per column,
//! then one `fma` per element held. The arrays take `4 · (M·K + K·N)` bytes of the 48 KiB a program
//! may declare; a later lowering (mma/wgmma) replaces this one without changing the op.

use inkwell::types::{BasicMetadataTypeEnum, BasicTypeEnum};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, IntValue};
use tile_core::ir::{DType, Layout, OpData, OpKind, Precision, Type};

/// True for a `dot` with `precision = tf32`.
fn tf32(data: &OpData) -> bool {
    matches!(
        data.kind,
        OpKind::Dot {
            precision: Precision::Tf32
        }
    )
}

use super::layout::Distribution;
use super::lower::{bug, float, int, Lowerer, OrBug, OrLlvm, Result};

impl<'ctx> Lowerer<'_, 'ctx> {
    /// `dot %a, %b, %acc`: the result's elements this thread holds.
    pub(super) fn dot(&mut self, data: &OpData) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let (aty, bty) = (self.operand_type(data, 0), self.operand_type(data, 1));
        let rty = self.result_type(data);
        if let Some(Layout::Mma(mma)) = &rty.layout {
            let warps = (mma.warps_per_cta[0], mma.warps_per_cta[1]);
            return self.mma_dot(data, warps);
        }
        let (m, k, n) = (
            u64::from(aty.shape[0]),
            u64::from(aty.shape[1]),
            u64::from(bty.shape[1]),
        );
        // `i8` tiles multiply exactly in `i32`; the others in `f32`.
        let int_dot = rty.dtype() == Some(DType::I32);
        let f32_ty: BasicTypeEnum<'ctx> = if int_dot {
            self.context.i32_type().into()
        } else {
            self.context.f32_type().into()
        };
        let sa = self.shared_array_up_to_target(f32_ty, m * k)?;
        let sb = self.shared_array_up_to_target(f32_ty, k * n)?;
        let (da, db) = (self.tensor_distribution(aty), self.tensor_distribution(bty));
        let (mut va, mut vb) = (
            self.operand(data, 0).to_vec(),
            self.operand(data, 1).to_vec(),
        );
        if tf32(data) {
            for v in va.iter_mut().chain(vb.iter_mut()) {
                *v = self.round_tf32(*v)?;
            }
        }
        // 8-bit floats (held as their bits) by their exact `f32` values.
        for (vals, t) in [(&mut va, aty), (&mut vb, bty)] {
            if let Some(d) = t.dtype().filter(|d| d.is_f8()) {
                for v in vals.iter_mut() {
                    *v = self.f8_to_f32(d, int(*v))?.into();
                }
            }
        }
        self.store_tensor(sa, f32_ty, &da, &va, Self::widen)?;
        self.store_tensor(sb, f32_ty, &db, &vb, Self::widen)?;
        self.barrier()?;

        // The rows and columns this thread holds, each with its index, and per element of the
        // result which row and column it is.
        let dst = self.tensor_distribution(rty);
        let t = self.thread_coords(&dst)?;
        let mut rows: Vec<(u64, IntValue<'ctx>)> = Vec::new();
        let mut cols: Vec<(u64, IntValue<'ctx>)> = Vec::new();
        let mut at = Vec::with_capacity(dst.elems_per_thread());
        for slot in 0..dst.elems_per_thread() {
            let off = dst.reg_offset(slot);
            let (rk, ck) = (off[0], off[1]);
            let r = match rows.iter().position(|&(o, _)| o == rk) {
                Some(i) => i,
                None => {
                    rows.push((rk, self.index_along(&dst, &t, 0, slot)?));
                    rows.len() - 1
                }
            };
            let c = match cols.iter().position(|&(o, _)| o == ck) {
                Some(i) => i,
                None => {
                    cols.push((ck, self.index_along(&dst, &t, 1, slot)?));
                    cols.len() - 1
                }
            };
            at.push((r, c));
        }
        let i32_ty = self.context.i32_type();
        let c = |x: u64| i32_ty.const_int(x, false);
        let b = &self.builder;
        let mut row_base = Vec::with_capacity(rows.len());
        for &(_, r) in &rows {
            row_base.push(b.build_int_nsw_mul(r, c(k), "").llvm()?);
        }
        let acc = self.operand(data, 2).to_vec();
        let trips = self.context.i64_type().const_int(k, false);
        self.counted_loop(trips, acc, |me, kk, acc| {
            let b = &me.builder;
            let kk = b.build_int_truncate(kk, i32_ty, "").llvm()?;
            let mut a_vals = Vec::with_capacity(row_base.len());
            for &base in &row_base {
                let i = b.build_int_nsw_add(base, kk, "").llvm()?;
                a_vals.push(me.shared_load(sa, f32_ty, i)?);
            }
            let b = &me.builder;
            let b_row = b.build_int_nsw_mul(kk, c(n), "").llvm()?;
            let mut b_vals = Vec::with_capacity(cols.len());
            for &(_, col) in &cols {
                let i = me.builder.build_int_nsw_add(b_row, col, "").llvm()?;
                b_vals.push(me.shared_load(sb, f32_ty, i)?);
            }
            let mut next = Vec::with_capacity(acc.len());
            for (&(r, col), &s) in at.iter().zip(&acc) {
                if int_dot {
                    let b = &me.builder;
                    let p = b
                        .build_int_mul(int(a_vals[r]), int(b_vals[col]), "")
                        .llvm()?;
                    next.push(b.build_int_add(int(s), p, "").llvm()?.into());
                    continue;
                }
                let args: [BasicMetadataValueEnum; 3] =
                    [a_vals[r].into(), b_vals[col].into(), s.into()];
                next.push(me.intrinsic("llvm.fma", &[f32_ty], &args)?);
            }
            Ok(next)
        })
    }

    /// `dot` on tensor cores: the operands are in the mma operand layouts and the accumulator in
    /// the mma layout (the verifier's rule 22), so each thread already holds its fragments; one
    /// `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}` per 16 × 8 result tile of its warp and
    /// 16-wide step of `K`, with `K` outermost so that consecutive instructions write different
    /// tiles (independent accumulators between dependent ones). Registers are found by their offsets in the linear layouts: operand `A`'s
    /// fragment `a_e` of the tile at `(m0, k0)` is the register at `(m0 + 8·((e/2)%2),
    /// k0 + e%2 + 8·(e/4))`, `B`'s `b_e` at `(k0 + e%2 + 8·(e/2), n0)`, the accumulator's `c_e`
    /// at `(m0 + 8·(e/2), n0 + e%2)` (the PTX ISA's fragment tables).
    pub(super) fn mma_dot(
        &mut self,
        data: &OpData,
        warps: (u32, u32),
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let (aty, bty) = (self.operand_type(data, 0), self.operand_type(data, 1));
        let rty = self.result_type(data);
        let f8_name = |d: DType| if d == DType::F8E5M2 { "e5m2" } else { "e4m3" };
        let (a_elem, b_elem) = (
            aty.dtype().or_bug("an `A` element type"),
            bty.dtype().or_bug("a `B` element type"),
        );
        // 8-bit floats where the tensor cores take them: `m16n8k32` on their bytes. Elsewhere
        // (sm_80) each 32-wide `K` step is two `m16n8k16.f16` on their exact `f16` values, `K`
        // renumbered within the step: the `f16` fragment's `K` index `2q + j + 8c` (lane `q` of
        // its quad, word `c`) is the 8-bit fragment's `4q + 2c + j`, in both operands alike, so
        // each product pairs the same elements and the sum is over the same 32.
        let f8 = a_elem.is_f8();
        let widen_f8 = f8 && !self.f.target.is_some_and(tile_core::Target::has_f8_mma);
        let shape = match a_elem {
            DType::F16 => "m16n8k16.row.col.f32.f16.f16.f32".to_string(),
            DType::BF16 => "m16n8k16.row.col.f32.bf16.bf16.f32".to_string(),
            DType::I8 => "m16n8k32.row.col.s32.s8.s8.s32".to_string(),
            _ if widen_f8 => "m16n8k16.row.col.f32.f16.f16.f32".to_string(),
            _ if f8 => format!(
                "m16n8k32.row.col.f32.{}.{}.f32",
                f8_name(a_elem),
                f8_name(b_elem)
            ),
            DType::F32 if tf32(data) => return self.mma_dot_tf32(data, warps),
            other => bug(format_args!(
                "f16, bf16, i8, 8-bit float or tf32 operands of a tensor-core `dot`, found {other:?}"
            )),
        };
        // Elements per 32-bit word, and the K of one instruction (32 bytes).
        let kw: u64 = if a_elem.is_byte_operand() { 4 } else { 2 };
        let k_step = 8 * kw;
        // The instructions of one K step: their offsets along `K` within it, and per word the
        // `K` offset of its first element (`A`'s word `w` also `8·(w % 2)` rows down) and the
        // elements per word.
        let (subs, a_k, b_k, per_word): (Vec<u64>, [u64; 4], [u64; 2], u64) = if widen_f8 {
            (vec![0, 16], [0, 0, 2, 2], [0, 2], 2)
        } else {
            (vec![0], [0, 0, 4 * kw, 4 * kw], [0, 4 * kw], kw)
        };
        let (da, db, dc) = (
            self.tensor_distribution(aty),
            self.tensor_distribution(bty),
            self.tensor_distribution(rty),
        );
        let (m, k, n) = (
            u64::from(aty.shape[0]),
            u64::from(aty.shape[1]),
            u64::from(bty.shape[1]),
        );
        let (wm, wn) = (u64::from(warps.0), u64::from(warps.1));
        // Each operand's registers, or the read that gives them one K step at a time (see
        // `Lowerer::plan_sliced_reads`).
        let slices = [self.sliced_operand(data, 0), self.sliced_operand(data, 1)];
        let mut held: [Vec<Option<BasicValueEnum<'ctx>>>; 2] = [0, 1].map(|i| match &slices[i] {
            Some(_) => Vec::new(),
            None => self.operand(data, i).iter().map(|&v| Some(v)).collect(),
        });
        let mut acc = self.operand(data, 2).to_vec();
        let reg = |d: &Distribution, at: [u64; 2], what: &str| -> usize {
            d.reg_at(&at)
                .unwrap_or_else(|| bug(format_args!("a {what} register at {at:?}")))
        };
        let value = |held: &[Option<BasicValueEnum<'ctx>>], r: usize, what: &str| {
            held.get(r)
                .copied()
                .flatten()
                .unwrap_or_else(|| bug(format_args!("{what} register {r} read")))
        };
        // Instruction tiles of one warp: M and N repetitions (at least one: a smaller tile is
        // held by several warps as copies).
        let reps_m = (m / (16 * wm)).max(1);
        let reps_n = (n / (8 * wn)).max(1);
        for k0 in (0..k).step_by(k_step as usize) {
            for (h, read) in held.iter_mut().zip(&slices) {
                if let Some(r) = read {
                    *h = self.read_operand(r, k0..k0 + k_step)?;
                }
            }
            let (va, vb) = (&held[0], &held[1]);
            for &sub in &subs {
                let k1 = k0 + sub;
                // This instruction's A fragments per M repetition and B fragments per N
                // repetition, as 32-bit words of `per_word` consecutive K elements: A's word `w`
                // at row `8·(w % 2)`, K `a_k[w]`; B's word `w` at K `b_k[w]`.
                let mut a_words = Vec::with_capacity(reps_m as usize);
                for i in 0..reps_m {
                    let m0 = i * 16 * wm;
                    let mut words = Vec::with_capacity(4);
                    for w in 0..4 {
                        let mut elems = Vec::with_capacity(per_word as usize);
                        for e in 0..per_word {
                            let at = [m0 + 8 * (w % 2), k1 + e + a_k[w as usize]];
                            let v = value(va, reg(&da, at, "A"), "A");
                            elems.push(self.f8_as_f16(widen_f8, a_elem, v)?);
                        }
                        words.push(self.pack_word(&elems)?);
                    }
                    a_words.push(words);
                }
                let mut b_words = Vec::with_capacity(reps_n as usize);
                for j in 0..reps_n {
                    let n0 = j * 8 * wn;
                    let mut words = Vec::with_capacity(2);
                    for bk in b_k {
                        let mut elems = Vec::with_capacity(per_word as usize);
                        for e in 0..per_word {
                            let v = value(vb, reg(&db, [k1 + e + bk, n0], "B"), "B");
                            elems.push(self.f8_as_f16(widen_f8, b_elem, v)?);
                        }
                        words.push(self.pack_word(&elems)?);
                    }
                    b_words.push(words);
                }
                for i in 0..reps_m {
                    for j in 0..reps_n {
                        let (m0, n0) = (i * 16 * wm, j * 8 * wn);
                        let c_regs = (0..4)
                            .map(|e| reg(&dc, [m0 + 8 * (e / 2), n0 + e % 2], "accumulator"))
                            .collect::<Vec<_>>();
                        let c: Vec<_> = c_regs.iter().map(|&r| acc[r]).collect();
                        let d =
                            self.mma_sync(&shape, &a_words[i as usize], &b_words[j as usize], &c)?;
                        for (&r, v) in c_regs.iter().zip(d) {
                            acc[r] = v;
                        }
                    }
                }
            }
        }
        Ok(acc)
    }

    /// `v` as it enters an `mma`: an 8-bit float (its bits) as its exact `f16` value where
    /// `widen` (a target whose tensor cores do not take 8-bit floats), else itself.
    fn f8_as_f16(
        &self,
        widen: bool,
        d: DType,
        v: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        if !widen {
            return Ok(v);
        }
        Ok(self.f8_to_f16(d, int(v))?.into())
    }

    /// `dot` of `f32` tiles with `precision = tf32` on tensor cores: one
    /// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32` per 16 × 8 result tile of its warp
    /// and 8-wide step of `K` (`K` outermost, as in [`Lowerer::mma_dot`]). Each operand element
    /// is rounded to tf32 first (as the interpreter does) and is one 32-bit word: `A`'s `a_e` of
    /// the tile at `(m0, k0)` at `(m0 + 8·(e%2), k0 + 4·(e/2))`, `B`'s `b_e` at `(k0 + 4·e, n0)`,
    /// the accumulator as for 16-bit operands (the PTX ISA's m16n8k8 tf32 fragment tables).
    fn mma_dot_tf32(
        &mut self,
        data: &OpData,
        warps: (u32, u32),
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let (aty, bty) = (self.operand_type(data, 0), self.operand_type(data, 1));
        let rty = self.result_type(data);
        let (da, db, dc) = (
            self.tensor_distribution(aty),
            self.tensor_distribution(bty),
            self.tensor_distribution(rty),
        );
        let (m, k, n) = (
            u64::from(aty.shape[0]),
            u64::from(aty.shape[1]),
            u64::from(bty.shape[1]),
        );
        let (wm, wn) = (u64::from(warps.0), u64::from(warps.1));
        let i32_ty = self.context.i32_type();
        let words = |me: &mut Self, vals: &[BasicValueEnum<'ctx>]| -> Result<Vec<_>> {
            vals.iter()
                .map(|&v| {
                    let r = me.round_tf32(v)?;
                    me.builder.build_bit_cast(r, i32_ty, "").llvm()
                })
                .collect()
        };
        let va = self.operand(data, 0).to_vec();
        let vb = self.operand(data, 1).to_vec();
        let (wa, wb) = (words(self, &va)?, words(self, &vb)?);
        let mut acc = self.operand(data, 2).to_vec();
        let reg = |d: &Distribution, at: [u64; 2], what: &str| -> usize {
            d.reg_at(&at)
                .unwrap_or_else(|| bug(format_args!("a {what} register at {at:?}")))
        };
        let reps_m = (m / (16 * wm)).max(1);
        let reps_n = (n / (8 * wn)).max(1);
        for k0 in (0..k).step_by(8) {
            for i in 0..reps_m {
                let m0 = i * 16 * wm;
                let a = (0..4)
                    .map(|e| wa[reg(&da, [m0 + 8 * (e % 2), k0 + 4 * (e / 2)], "A")])
                    .collect::<Vec<_>>();
                for j in 0..reps_n {
                    let n0 = j * 8 * wn;
                    let b = (0..2)
                        .map(|e| wb[reg(&db, [k0 + 4 * e, n0], "B")])
                        .collect::<Vec<_>>();
                    let c_regs = (0..4)
                        .map(|e| reg(&dc, [m0 + 8 * (e / 2), n0 + e % 2], "accumulator"))
                        .collect::<Vec<_>>();
                    let c: Vec<_> = c_regs.iter().map(|&r| acc[r]).collect();
                    let d = self.mma_m16n8k8_tf32(&a, &b, &c)?;
                    for (&r, v) in c_regs.iter().zip(d) {
                        acc[r] = v;
                    }
                }
            }
        }
        Ok(acc)
    }

    /// `x` rounded to tf32 as [`tile_core::ir::round_tf32`] does, in integer operations (so the
    /// GPU and the interpreter agree bit for bit): NaN → the canonical NaN, otherwise
    /// `(bits + 0x1000) & !0x1fff`.
    pub(super) fn round_tf32(&self, x: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let ctx = self.context;
        let (i32_ty, f32_ty) = (ctx.i32_type(), ctx.f32_type());
        let b = &self.builder;
        let x = float(x);
        let bits = b.build_bit_cast(x, i32_ty, "").llvm()?.into_int_value();
        let up = b
            .build_int_add(bits, i32_ty.const_int(0x1000, false), "")
            .llvm()?;
        let cut = b
            .build_and(up, i32_ty.const_int(0xffff_e000, false), "")
            .llvm()?;
        let r = b.build_bit_cast(cut, f32_ty, "").llvm()?.into_float_value();
        let nan = b
            .build_float_compare(inkwell::FloatPredicate::UNO, x, x, "")
            .llvm()?;
        let canonical = b
            .build_bit_cast(i32_ty.const_int(0x7fc0_0000, false), f32_ty, "")
            .llvm()?;
        b.build_select(nan, canonical, r.into(), "").llvm()
    }

    /// One `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`: `d = a · b + c` for one 16 × 8
    /// tile, `a` four words, `b` two, `c` four `f32`.
    fn mma_m16n8k8_tf32(
        &self,
        a: &[BasicValueEnum<'ctx>],
        b: &[BasicValueEnum<'ctx>],
        c: &[BasicValueEnum<'ctx>],
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        self.mma_asm(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};",
            a,
            b,
            c,
        )
    }

    /// Elements (two 16-bit or four 8-bit ones) as one 32-bit word, the first in the low bits.
    pub(super) fn pack_word(&self, elems: &[BasicValueEnum<'ctx>]) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.builder;
        let first = elems.first().or_bug("elements to pack");
        let i32_ty = self.context.i32_type();
        let mut v = super::memory::vector_of(first.get_type(), elems.len()).get_poison();
        for (i, &e) in elems.iter().enumerate() {
            v = b
                .build_insert_element(v, e, i32_ty.const_int(i as u64, false), "")
                .llvm()?;
        }
        b.build_bit_cast(v, i32_ty, "").llvm()
    }

    /// One `mma.sync.aligned.{shape}` (`m16n8k16.row.col.f32.f16.f16.f32`,
    /// `m16n8k32.row.col.s32.s8.s8.s32`, …; inline PTX): `d = a · b + c` for one 16 × 8 tile, `a`
    /// four words, `b` two, `c` four `f32` (`i32`).
    fn mma_sync(
        &self,
        shape: &str,
        a: &[BasicValueEnum<'ctx>],
        b: &[BasicValueEnum<'ctx>],
        c: &[BasicValueEnum<'ctx>],
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let text = format!(
            "mma.sync.aligned.{shape} {{$0, $1, $2, $3}}, {{$4, $5, $6, $7}}, {{$8, $9}}, {{$10, $11, $12, $13}};"
        );
        self.mma_asm(&text, a, b, c)
    }

    /// An `mma` of four `a` words, two `b` words and four `f32` (or `i32`) accumulators (inline
    /// PTX `text` with `$0…$3` the results, `$4…$9` the words, `$10…$13` tied to the results).
    fn mma_asm(
        &self,
        text: &str,
        a: &[BasicValueEnum<'ctx>],
        b: &[BasicValueEnum<'ctx>],
        c: &[BasicValueEnum<'ctx>],
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let ctx = self.context;
        let i32_ty = ctx.i32_type();
        let acc_ty = c.first().or_bug("accumulators").get_type();
        let int_acc = acc_ty.is_int_type();
        let constraints = if int_acc {
            "=r,=r,=r,=r,r,r,r,r,r,r,0,1,2,3"
        } else {
            "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3"
        };
        let mut params: Vec<BasicMetadataTypeEnum> = vec![i32_ty.into(); 6];
        params.extend([BasicMetadataTypeEnum::from(acc_ty); 4]);
        // Marked as having effects, though it has none, so that the `mma`s keep the place the
        // IR gives them among the `ldmatrix`es, copies and barriers (`prefetch-dot` puts a slice
        // of them before a barrier): neither LLVM nor the demand-order sink (`sink.rs`) moves it.
        let args: Vec<BasicMetadataValueEnum> = a
            .iter()
            .chain(b)
            .chain(c)
            .map(|&v| BasicMetadataValueEnum::from(v))
            .collect();
        self.tied_asm(text, constraints, &params, &args, 4, acc_ty)
    }

    /// An `f32`, `f16` or `bf16` element as `f32`, an `i8` as `i32` (exact).
    fn widen(
        &self,
        v: BasicValueEnum<'ctx>,
        f32_ty: BasicTypeEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        if let BasicValueEnum::IntValue(x) = v {
            let wide = f32_ty.into_int_type();
            return Ok(self.builder.build_int_s_extend(x, wide, "").llvm()?.into());
        }
        let x = float(v);
        if x.get_type() == f32_ty.into_float_type() {
            return Ok(v);
        }
        Ok(self
            .builder
            .build_float_ext(x, f32_ty.into_float_type(), "")
            .llvm()?
            .into())
    }
}

/// The shared memory `dot` of `a` (`M × K`) and `b` (`K × N`) into `result` needs, in bytes:
/// none on tensor cores (an mma result: the operands arrive in registers), else both operands
/// widened to f32, each array 16-byte aligned.
pub(super) fn scratch_bytes(a: &Type, b: &Type, result: &Type) -> u64 {
    if matches!(result.layout, Some(Layout::Mma(_))) {
        return 0;
    }
    crate::staging::dot_bytes(a, b, false)
}
