//! `convert_layout` of a 16-bit tile into an mma operand layout, through swizzled shared memory
//! and `ldmatrix`: the path every tensor-core `dot` takes for its operands.
//!
//! **Shared layout.** The tile (`R × C`, row-major: `A` is `M × K`, `B` is `K × N`) is stored in
//! 16-byte chunks of 8 elements, the chunk index XORed with the row's *phase*
//! `(row / per_phase) % max_phase`, where `per_phase = max(1, 128 / row bytes)` rows share one
//! 128-byte line and `max_phase = min(8, C / 8)`: the 8 rows that one `ldmatrix` matrix reads
//! (16 bytes each) then fall on 8 different groups of 4 banks, so the reads have no bank
//! conflicts, and a thread's 8 consecutive elements stay one 16-byte store.
//!
//! **Writes.** Each element once, by its owner (see `layout`): runs of 8 consecutive registers
//! along the columns (a blocked layout with 8 or more elements per thread along the row) as one
//! 16-byte `st.shared`, anything else element by element at its swizzled address. A 16-bit tile
//! whose runs go down its columns (the `.trans()` of a tile loaded row by row) is stored
//! transposed instead, its runs as 16-byte stores, and read with the transposed forms below
//! (`A` by `ldmatrix.trans`, `B` by `ldmatrix`), as the pipeline reads a K-major ring.
//!
//! **Reads.** `ldmatrix.sync.aligned.m8n8.x4.shared.b16` (lane `l` gives the address of row
//! `l % 8` of matrix `l / 8`; register `i` of every lane receives matrix `i`'s fragment: lane `l`
//! holds row `l / 4`, elements `2·(l % 4) + {0, 1}`). `A`, per 16 × 16 tile at `(m0, k0)`: the
//! matrices `(m0, k0)`, `(m0 + 8, k0)`, `(m0, k0 + 8)`, `(m0 + 8, k0 + 8)` are exactly the words
//! `a0 … a3` of the `mma.m16n8k16` operand. `B` (row-major `K × N`, the instruction wants
//! columns): `.trans`, per 16-row step of `K` and two 8-column tiles `j`, `j + 1` of the warp, the
//! matrices `(k0, n_j)`, `(k0 + 8, n_j)`, `(k0, n_{j+1})`, `(k0 + 8, n_{j+1})` are `b0, b1` of tile
//! `j` and of tile `j + 1` (`.x2` when the warp has one tile). Each word is split back into the
//! operand layout's registers, found by their offsets, so `dot` reads them as any operand.
//!
//! **Reads a `K` step at a time.** Every reader takes a window of `K` steps. An operand of more
//! than [`SLICED_WORDS`] registers a thread that only the `mma.sync` `dot` right after it uses
//! is read by that `dot`, each step's matrices just before the step's instructions
//! ([`Lowerer::plan_sliced_reads`]), so a warp never holds the whole operand.

use inkwell::types::{BasicMetadataTypeEnum, BasicType};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, IntValue, StructValue, ValueKind};
use std::collections::HashSet;
use std::ops::Range;

use tile_core::ir::{Elem, InDim, Layout, OpData, OpId, OpKind, Precision};

use super::layout::Distribution;
use super::lower::{bug, int, register_type, Lowerer, OrBug, OrLlvm, Result};

/// The swizzle of a shared tile with rows of `c` 16-bit elements.
#[derive(Clone, Copy, Debug)]
pub(super) struct Swizzle {
    /// Elements per row.
    pub c: u64,
    /// Rows per 128-byte line.
    pub per_phase: u64,
    /// Distinct phases.
    pub max_phase: u64,
    /// Bytes per element.
    pub elem_bytes: u64,
    /// Bytes per swizzled chunk (16, or 32 for [`tile_core::ir::SharedLayout::swizzled_wide`]).
    pub chunk_bytes: u64,
    /// Columns per block (`c` when the rows are not cut into blocks).
    pub block: u64,
    /// Rows of the tile (what a block holds).
    pub rows: u64,
}

impl Swizzle {
    /// The swizzle for rows of `c` elements of `elem_bytes` (rows of at least 16 bytes): 16-byte
    /// chunks (8 elements of 16 bits, 16 of 8).
    pub fn of_bytes(c: u64, elem_bytes: u64) -> Swizzle {
        Swizzle {
            c,
            per_phase: (128 / (elem_bytes * c)).max(1),
            max_phase: (c * elem_bytes / 16).min(8),
            elem_bytes,
            chunk_bytes: 16,
            block: c,
            rows: 0,
        }
    }

    /// Elements per 16-byte chunk (8 for 16-bit types, 16 for 8-bit ones).
    fn chunk_elems(&self) -> u64 {
        16 / self.elem_bytes
    }

    /// The swizzle a shared buffer's layout states, for `rows` rows of `c` elements of
    /// `elem_bytes`.
    pub fn from_layout(
        l: &tile_core::ir::SharedLayout,
        rows: u64,
        c: u64,
        elem_bytes: u32,
    ) -> Swizzle {
        Swizzle {
            c,
            per_phase: u64::from(l.per_phase),
            max_phase: u64::from(l.max_phase),
            elem_bytes: u64::from(elem_bytes),
            chunk_bytes: u64::from(l.vec) * u64::from(elem_bytes),
            block: l.block_cols(c),
            rows,
        }
    }

    /// The element index where element `(row, col)` is stored (the specification the generated
    /// code implements).
    #[cfg(test)]
    pub fn index(&self, row: u64, col: u64) -> u64 {
        let phase = (row / self.per_phase) % self.max_phase;
        row * self.c + ((col / 8) ^ phase) * 8 + col % 8
    }
}

impl<'ctx> Lowerer<'_, 'ctx> {
    /// Whether `convert_layout` from `from` to `to` takes the `ldmatrix` path.
    pub(super) fn wants_ldmatrix(from: &tile_core::ir::Type, to: &tile_core::ir::Type) -> bool {
        let Some(Layout::DotOperand(d)) = &to.layout else {
            return false;
        };
        let sixteen = matches!(
            to.elem,
            Elem::Scalar(tile_core::ir::DType::F16 | tile_core::ir::DType::BF16)
        );
        // An 8-bit `A` (`M × K`, K contiguous) reads without `.trans`; an 8-bit `B` stored
        // `K × N` would need its bytes transposed, which `ldmatrix` cannot do.
        let byte_a = to
            .dtype()
            .is_some_and(tile_core::ir::DType::is_byte_operand)
            && d.op_idx == 0;
        let parent_mma = matches!(*d.parent, Layout::Mma(_));
        // At least one instruction tile: A is M × K with M ≥ 16 and K of 32 bytes; B is K × N
        // with K ≥ 16, N ≥ 8 (rows of at least one 16-byte chunk either way).
        let min = match (d.op_idx, byte_a) {
            (0, true) => [16, 32],
            (0, false) => [16, 16],
            _ => [16, 8],
        };
        let shape_ok = to.shape.len() == 2 && to.shape[0] >= min[0] && to.shape[1] >= min[1];
        ((sixteen && d.k_width == 2) || (byte_a && d.k_width == 4))
            && parent_mma
            && shape_ok
            && !matches!(from.layout, Some(Layout::DotOperand(_)))
    }

    /// `convert_layout` into an mma operand layout through swizzled shared memory and `ldmatrix`
    /// (see the module documentation).
    pub(super) fn convert_with_ldmatrix(
        &mut self,
        data: &OpData,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let from = self.operand_type(data, 0);
        let to = self.result_type(data);
        let src = self.tensor_distribution(from);
        let vals = self.operand(data, 0).to_vec();
        let (r, c) = (u64::from(to.shape[0]), u64::from(to.shape[1]));
        let elem_bytes = u64::from(to.dtype().map_or(2, |d| d.size_bytes()));
        let elem_ty = register_type(self.context, from.elem);
        let smem = self.shared_array_up_to_target(elem_ty, r * c)?;

        // Writes, each element once (16-byte runs where a thread holds them), then a barrier.
        // A 16-bit tile whose threads hold runs down its columns (the `.trans()` of a tile
        // loaded row by row, as `K` in `dot(q, k.trans())`) is stored transposed, its runs as
        // 16-byte stores, and read back with the transposed `ldmatrix` forms (as the pipeline
        // reads a K-major ring), rather than stored element by element.
        let (run_dim, run) = src.contiguous_run();
        let chunk = Swizzle::of_bytes(c, elem_bytes).chunk_elems();
        let transposed = run_dim == 0 && run >= chunk && elem_bytes == 2;
        let (sw, dims, form) = if transposed {
            let Some(Layout::DotOperand(d)) = &to.layout else {
                bug("an operand layout");
            };
            let form = if d.op_idx == 0 {
                ReadForm::TransposedA
            } else {
                ReadForm::TransposedB
            };
            (Swizzle::of_bytes(r, elem_bytes), [1, 0], form)
        } else {
            let form = ReadForm::Rows { offset: [0, 0] };
            (Swizzle::of_bytes(c, elem_bytes), [0, 1], form)
        };
        let step = if run_dim == dims[1] && run >= chunk {
            chunk as usize
        } else {
            1
        };
        self.write_swizzled_runs(smem, sw, &src, &vals, step, elem_ty, dims)?;
        let base = self.shared_address(smem)?;
        self.read_or_slice(OperandRead {
            base,
            sw,
            form,
            to: to.clone(),
            elem: from.elem,
        })
    }

    /// The registers of operand read `r` for its `K` steps in `ks`; the others `None`.
    pub(super) fn read_operand(
        &mut self,
        r: &OperandRead<'ctx>,
        ks: Range<u64>,
    ) -> Result<Vec<Option<BasicValueEnum<'ctx>>>> {
        match r.form {
            ReadForm::Rows { offset } => {
                self.ldmatrix_operand(r.base, r.sw, offset, &r.to, r.elem, ks)
            }
            ReadForm::TransposedA => self.ldmatrix_a_transposed(r.base, r.sw, &r.to, ks),
            ReadForm::TransposedB => self.ldmatrix_b_transposed(r.base, r.sw, &r.to, ks),
        }
    }

    /// The op being lowered reads an mma operand with `r`: all of it now, or, where
    /// [`Lowerer::plan_sliced_reads`] chose the op, nothing yet. Its `dot` then reads it one `K`
    /// step at a time ([`Lowerer::sliced_operand`]), and the op's value holds no registers.
    pub(super) fn read_or_slice(
        &mut self,
        r: OperandRead<'ctx>,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let op = self.current_op.or_bug("an op being lowered");
        if self.sliced_ops.contains(&op) {
            self.sliced.insert(self.f.op(op).results[0], r);
            return Ok(Vec::new());
        }
        let k = k_extent(&r.to);
        Ok(loaded(self.read_operand(&r, 0..k)?))
    }

    /// The read of `dot` operand `i` (0: `A`, 1: `B`) when it waits for the `dot`.
    pub(super) fn sliced_operand(&mut self, data: &OpData, i: usize) -> Option<OperandRead<'ctx>> {
        self.sliced.remove(&data.operands[i])
    }

    /// The ops whose mma operand reads wait for their `dot`, read one `K` step (16 elements of
    /// 16 bits) before the instructions that use it instead of all before the first: an operand
    /// that holds more than [`SLICED_WORDS`] registers per thread, read by `local_load` or
    /// `convert_layout` (through shared memory), used only by an `mma.sync` `dot` in the same
    /// block with nothing but other `local_load`s between them (reads of buffers that no op
    /// between writes). A warp that multiplies by a whole `K` block of keys in attention (`Q Kᵀ`
    /// at head dimension 128: 128 × 64 `B` elements, 128 registers of each thread) then holds one
    /// step of it at a time, as Triton's lowering does, where the whole read spilled.
    pub(super) fn plan_sliced_reads(&self) -> HashSet<OpId> {
        let f = self.f;
        let uses = crate::passes::edit::use_counts(f);
        let mut out = HashSet::new();
        for id in f.walk() {
            let dot = f.op(id);
            // tf32 operands are 32-bit and read otherwise (`mma_dot_tf32` takes them whole).
            if !matches!(dot.kind, OpKind::Dot { precision } if precision != Precision::Tf32) {
                continue;
            }
            let mma_sync = matches!(
                &f.ty(dot.results[0]).layout,
                Some(Layout::Mma(m)) if m.version == 2
            );
            if !mma_sync {
                continue;
            }
            let order = &f.blocks[dot.block.index()].ops;
            let Some(at) = order.iter().position(|&o| o == id) else {
                continue;
            };
            for &v in &dot.operands[..2] {
                let Some(x) = f.def_op(v) else { continue };
                let xd = f.op(x);
                let reads = matches!(xd.kind, OpKind::LocalLoad { .. } | OpKind::ConvertLayout);
                if !reads || xd.block != dot.block || uses.get(&v) != Some(&1) {
                    continue;
                }
                let ty = f.ty(v);
                let Some(bytes) = ty.dtype().map(|d| u64::from(d.size_bytes())) else {
                    continue;
                };
                let words = self.tensor_distribution(ty).elems_per_thread() as u64 * bytes / 4;
                let Some(from) = order.iter().position(|&o| o == x) else {
                    continue;
                };
                let between_read_only = order[from + 1..at]
                    .iter()
                    .all(|&o| matches!(f.op(o).kind, OpKind::LocalLoad { .. }));
                if words > SLICED_WORDS && from < at && between_read_only {
                    out.insert(x);
                }
            }
        }
        out
    }

    /// The 32-bit shared-window address of a shared array (what `ldmatrix` and `cp.async` take).
    pub(super) fn shared_address(
        &self,
        p: inkwell::values::PointerValue<'ctx>,
    ) -> Result<IntValue<'ctx>> {
        let b = &self.builder;
        let wide = b.build_ptr_to_int(p, self.context.i64_type(), "").llvm()?;
        b.build_int_truncate(wide, self.context.i32_type(), "")
            .llvm()
    }

    /// Reads the window of `to`'s shape at row `offset[0]`, column `offset[1]` of the swizzled
    /// tile at shared address `base` into the mma operand layout of `to` with `ldmatrix` (see the
    /// module documentation; the window's offsets are multiples of 16 along `K` and of the warps'
    /// extent along `M` or `N`); the tile must be complete and visible (after a barrier).
    pub(super) fn ldmatrix_operand(
        &mut self,
        base: IntValue<'ctx>,
        sw: Swizzle,
        offset: [u64; 2],
        to: &tile_core::ir::Type,
        elem: Elem,
        ks: Range<u64>,
    ) -> Result<Vec<Option<BasicValueEnum<'ctx>>>> {
        let Some(Layout::DotOperand(op)) = &to.layout else {
            bug("an operand layout");
        };
        let (dst, [wm, wn], lane) = self.operand_read(to)?;
        let (r, c) = (u64::from(to.shape[0]), u64::from(to.shape[1]));
        let mut out: Vec<Option<BasicValueEnum<'ctx>>> = vec![None; dst.elems_per_thread()];
        if op.op_idx == 0 {
            let (m, k) = (r, c);
            // Elements per chunk and per 32-bit word (8 and 2 for 16-bit types, 16 and 4 for
            // 8-bit ones: the matrices are 8 rows of 16 bytes either way).
            let (ce, kw) = (sw.chunk_elems(), 4 / sw.elem_bytes);
            let warp_m = self.thread_part(&dst, 0, &[InDim::Warp])?;
            for i in 0..(m / (16 * wm)).max(1) {
                for k0 in (0..k).step_by(2 * ce as usize).filter(|k0| ks.contains(k0)) {
                    // Lane l: row (l / 8 % 2) · 8 + l % 8 of the tile, chunk k0 / ce + l / 16.
                    let row = self.lane_row(lane, warp_m, offset[0] + i * 16 * wm)?;
                    let chunk = self.lane_chunk(lane, (offset[1] + k0) / ce, 16)?;
                    let words = self.ldmatrix(base, sw, row, chunk, 4, false)?;
                    for (w, word) in words.iter().enumerate() {
                        let w = w as u64;
                        for h in 0..kw {
                            let at = [i * 16 * wm + 8 * (w % 2), k0 + h + ce * (w / 2)];
                            self.place(&dst, &mut out, at, *word, h, elem)?;
                        }
                    }
                }
            }
        } else {
            let (k, n) = (r, c);
            let warp_n = self.thread_part(&dst, 1, &[InDim::Warp])?;
            let reps_n = (n / (8 * wn)).max(1);
            for k0 in (0..k).step_by(16).filter(|k0| ks.contains(k0)) {
                for j in (0..reps_n).step_by(2) {
                    let pair = j + 1 < reps_n;
                    let row =
                        self.lane_row(lane, self.context.i32_type().const_zero(), offset[0] + k0)?;
                    // Lane l: column tile j + l / 16 (j alone for `.x2`).
                    let col_tile = if pair {
                        let b = &self.builder;
                        let i32_ty = self.context.i32_type();
                        let hi = b
                            .build_right_shift(lane, i32_ty.const_int(4, false), false, "")
                            .llvm()?;
                        let t = b
                            .build_int_nsw_add(hi, i32_ty.const_int(j, false), "")
                            .llvm()?;
                        let t = b
                            .build_int_nsw_mul(t, i32_ty.const_int(8 * wn, false), "")
                            .llvm()?;
                        b.build_int_nsw_add(t, i32_ty.const_int(offset[1], false), "")
                            .llvm()?
                    } else {
                        self.context
                            .i32_type()
                            .const_int(offset[1] + j * 8 * wn, false)
                    };
                    let col = self
                        .builder
                        .build_int_nsw_add(col_tile, warp_n, "")
                        .llvm()?;
                    let chunk = self
                        .builder
                        .build_right_shift(
                            col,
                            self.context.i32_type().const_int(3, false),
                            false,
                            "",
                        )
                        .llvm()?;
                    let count = if pair { 4 } else { 2 };
                    let words = self.ldmatrix(base, sw, row, chunk, count, true)?;
                    for (w, word) in words.iter().enumerate() {
                        let tile = j + w as u64 / 2;
                        for h in 0..2u64 {
                            let e = 2 * (w as u64 % 2) + h;
                            let at = [k0 + e % 2 + 8 * (e / 2), tile * 8 * wn];
                            self.place(&dst, &mut out, at, *word, h, elem)?;
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// What every `ldmatrix` read of an operand in `to`'s layout starts from: the layout's
    /// distribution, its parent mma layout's warps along both dimensions, and the lane.
    fn operand_read(
        &mut self,
        to: &tile_core::ir::Type,
    ) -> Result<(Distribution, [u64; 2], IntValue<'ctx>)> {
        let Some(Layout::DotOperand(op)) = &to.layout else {
            bug("an operand layout");
        };
        let Layout::Mma(mma) = &*op.parent else {
            bug("an operand layout of an mma parent");
        };
        let warps = [
            u64::from(mma.warps_per_cta[0]),
            u64::from(mma.warps_per_cta[1]),
        ];
        let tid = self.tid()?;
        let i32_ty = self.context.i32_type();
        let lane = self
            .builder
            .build_and(tid, i32_ty.const_int(31, false), "")
            .llvm()?;
        Ok((self.tensor_distribution(to), warps, lane))
    }

    /// Reads a 16-bit `A` operand (`M × K`, the layout of `to`) from the swizzled stage at shared
    /// address `base` that holds it transposed (`K × M`: a tile loaded row by row for
    /// `dot(a.trans(), b)`), with `ldmatrix.trans`: each 8 × 8 matrix is 8 rows of `K` by 8 of
    /// `M`, and lane `l` receives column `l / 4` (a row of `A`), elements `2·(l % 4) + {0, 1}`
    /// along `K`, the `mma.m16n8k16` `A` fragment. Per 16 × 16 tile at `(m0, k0)` the matrices
    /// `(m0, k0)`, `(m0 + 8, k0)`, `(m0, k0 + 8)`, `(m0 + 8, k0 + 8)` are `a0 … a3`: lane `l`
    /// addresses row `k0 + 8·(l / 16) + l % 8`, chunk `(m0 + 8·((l / 8) % 2)) / 8`.
    pub(super) fn ldmatrix_a_transposed(
        &mut self,
        base: IntValue<'ctx>,
        sw: Swizzle,
        to: &tile_core::ir::Type,
        ks: Range<u64>,
    ) -> Result<Vec<Option<BasicValueEnum<'ctx>>>> {
        let (dst, warps, lane) = self.operand_read(to)?;
        let (m, k) = (u64::from(to.shape[0]), u64::from(to.shape[1]));
        let wm = warps[0];
        let i32_ty = self.context.i32_type();
        let c32 = |x: u64| i32_ty.const_int(x, false);
        let warp_m = self.thread_part(&dst, 0, &[InDim::Warp])?;
        let b = &self.builder;
        let l_row = b.build_and(lane, c32(7), "").llvm()?;
        let l_hi = b.build_right_shift(lane, c32(4), false, "").llvm()?;
        let l_k = b.build_int_nuw_mul(l_hi, c32(8), "").llvm()?;
        let l_k = b.build_int_nuw_add(l_k, l_row, "").llvm()?;
        let l_m = b.build_right_shift(lane, c32(3), false, "").llvm()?;
        let l_m = b.build_and(l_m, c32(1), "").llvm()?;
        let l_m = b.build_int_nuw_mul(l_m, c32(8), "").llvm()?;
        let l_m = b.build_int_nuw_add(l_m, warp_m, "").llvm()?;
        let mut out: Vec<Option<BasicValueEnum<'ctx>>> = vec![None; dst.elems_per_thread()];
        for i in 0..(m / (16 * wm)).max(1) {
            for k0 in (0..k).step_by(16).filter(|k0| ks.contains(k0)) {
                let b = &self.builder;
                let row = b.build_int_nuw_add(l_k, c32(k0), "").llvm()?;
                let col = b.build_int_nuw_add(l_m, c32(i * 16 * wm), "").llvm()?;
                let chunk = b.build_right_shift(col, c32(3), false, "").llvm()?;
                let words = self.ldmatrix(base, sw, row, chunk, 4, true)?;
                for (w, word) in words.iter().enumerate() {
                    for h in 0..2u64 {
                        let e = 2 * w as u64 + h;
                        let at = [i * 16 * wm + 8 * ((e / 2) % 2), k0 + e % 2 + 8 * (e / 4)];
                        self.place(&dst, &mut out, at, *word, h, to.elem)?;
                    }
                }
            }
        }
        Ok(out)
    }

    /// Reads a 16-bit `B` operand (`K × N`, the layout of `to`) from the swizzled stage at shared
    /// address `base` that holds it transposed (`N × K`: a tile loaded row by row for
    /// `dot(a, b.trans())`), with `ldmatrix` without `.trans`: each 8 × 8 matrix is 8 rows of `N`
    /// by 8 of `K`, and lane `l` receives row `l / 4`, elements `2·(l % 4) + {0, 1}`, which is
    /// exactly the `mma.m16n8k16` `B` fragment (`k = 2·(l % 4) + {0, 1}`, `n = l / 4`). Per
    /// 16-step of `K` and pair of the warp's 8-column tiles `j`, `j + 1`: the matrices
    /// `(n_j, k0)`, `(n_{j+1}, k0)`, `(n_j, k0 + 8)`, `(n_{j+1}, k0 + 8)` are `b0` of tiles `j`
    /// and `j + 1`, then their `b1` (`.x2` with `b0`, `b1` of tile `j` when the warp has one
    /// tile).
    pub(super) fn ldmatrix_b_transposed(
        &mut self,
        base: IntValue<'ctx>,
        sw: Swizzle,
        to: &tile_core::ir::Type,
        ks: Range<u64>,
    ) -> Result<Vec<Option<BasicValueEnum<'ctx>>>> {
        let (dst, warps, lane) = self.operand_read(to)?;
        let (k, n) = (u64::from(to.shape[0]), u64::from(to.shape[1]));
        let wn = warps[1];
        let i32_ty = self.context.i32_type();
        let c32 = |x: u64| i32_ty.const_int(x, false);
        let warp_n = self.thread_part(&dst, 1, &[InDim::Warp])?;
        let reps_n = (n / (8 * wn)).max(1);
        let mut out: Vec<Option<BasicValueEnum<'ctx>>> = vec![None; dst.elems_per_thread()];
        // Elements per chunk and per word, as in `ldmatrix_operand`.
        let (ce, kw) = (sw.chunk_elems(), 4 / sw.elem_bytes);
        // Lane l addresses row l % 8 of matrix l / 8: with `.x4`, column tile j + (l / 8) % 2
        // and chunk k0 / ce + l / 16; with `.x2`, tile j and chunk k0 / ce + (l / 8) % 2.
        let b = &self.builder;
        let l_row = b.build_and(lane, c32(7), "").llvm()?;
        let l_m = b.build_right_shift(lane, c32(3), false, "").llvm()?;
        let l_odd = b.build_and(l_m, c32(1), "").llvm()?;
        let l_hi = b.build_right_shift(lane, c32(4), false, "").llvm()?;
        for k0 in (0..k).step_by(2 * ce as usize).filter(|k0| ks.contains(k0)) {
            for j in (0..reps_n).step_by(2) {
                let pair = j + 1 < reps_n;
                let b = &self.builder;
                let (tile_add, chunk_add) = if pair { (l_odd, l_hi) } else { (c32(0), l_odd) };
                let tile = b.build_int_nuw_add(tile_add, c32(j), "").llvm()?;
                let row = b.build_int_nuw_mul(tile, c32(8 * wn), "").llvm()?;
                let row = b.build_int_nuw_add(row, warp_n, "").llvm()?;
                let row = b.build_int_nuw_add(row, l_row, "").llvm()?;
                let chunk = b.build_int_nuw_add(chunk_add, c32(k0 / ce), "").llvm()?;
                let count = if pair { 4 } else { 2 };
                let words = self.ldmatrix(base, sw, row, chunk, count, false)?;
                for (w, word) in words.iter().enumerate() {
                    let w = w as u64;
                    let (t, kh) = if pair { (j + w % 2, w / 2) } else { (j, w) };
                    for h in 0..kw {
                        let at = [k0 + h + ce * kh, t * 8 * wn];
                        self.place(&dst, &mut out, at, *word, h, to.elem)?;
                    }
                }
            }
        }
        Ok(out)
    }

    /// Reads operand `A` of a tf32 `dot` (`M × K` f32, 16-byte swizzle) from the window at
    /// `offset` of the tile at shared address `base` with `ldmatrix.x4.b16` on 32-bit data: an 8 × 8 matrix of 16-bit elements
    /// is 8 rows of 4 f32, and lane `l` receives row `l / 4`, element `l % 4` of it — exactly
    /// fragment `a_w` of `mma.m16n8k8.tf32` for the matrices `(m0, k0)`, `(m0 + 8, k0)`,
    /// `(m0, k0 + 4)`, `(m0 + 8, k0 + 4)`.
    pub(super) fn ldmatrix_tf32_a(
        &mut self,
        base: IntValue<'ctx>,
        sw: Swizzle,
        offset: [u64; 2],
        to: &tile_core::ir::Type,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let Some(Layout::DotOperand(op)) = &to.layout else {
            bug("an operand layout");
        };
        let Layout::Mma(mma) = &*op.parent else {
            bug("an operand layout of an mma parent");
        };
        if op.op_idx != 0 || sw.elem_bytes != 4 || sw.chunk_bytes != 16 {
            bug("operand A of 32-bit data in 16-byte chunks");
        }
        let dst = self.tensor_distribution(to);
        let (m, k) = (u64::from(to.shape[0]), u64::from(to.shape[1]));
        let wm = u64::from(mma.warps_per_cta[0]);
        let lane = {
            let tid = self.tid()?;
            let i32_ty = self.context.i32_type();
            self.builder
                .build_and(tid, i32_ty.const_int(31, false), "")
                .llvm()?
        };
        let f32_ty = self.context.f32_type();
        let warp_m = self.thread_part(&dst, 0, &[InDim::Warp])?;
        let mut out: Vec<Option<BasicValueEnum<'ctx>>> = vec![None; dst.elems_per_thread()];
        for i in 0..(m / (16 * wm)).max(1) {
            for k0 in (0..k).step_by(8) {
                // Lane l: row (l / 8 % 2) · 8 + l % 8 of the tile, chunk k0 / 4 + l / 16.
                let row = self.lane_row(lane, warp_m, offset[0] + i * 16 * wm)?;
                let chunk = self.lane_chunk(lane, (offset[1] + k0) / 4, 16)?;
                let words = self.ldmatrix(base, sw, row, chunk, 4, false)?;
                for (w, word) in words.iter().enumerate() {
                    let w = w as u64;
                    let at = [i * 16 * wm + 8 * (w % 2), k0 + 4 * (w / 2)];
                    let reg = dst
                        .reg_at(&at)
                        .unwrap_or_else(|| bug(format_args!("an operand register at {at:?}")));
                    out[reg] = Some(self.builder.build_bit_cast(*word, f32_ty, "").llvm()?);
                }
            }
        }
        Ok(loaded(out))
    }

    /// The row lane `lane` addresses for `ldmatrix`: `base + offset + (lane / 8 % 2) · 8 +
    /// lane % 8`.
    fn lane_row(
        &self,
        lane: IntValue<'ctx>,
        base: IntValue<'ctx>,
        offset: u64,
    ) -> Result<IntValue<'ctx>> {
        let i32_ty = self.context.i32_type();
        let c = |x: u64| i32_ty.const_int(x, false);
        let b = &self.builder;
        let lo = b.build_and(lane, c(15), "").llvm()?;
        let r = b.build_int_nsw_add(base, lo, "").llvm()?;
        b.build_int_nsw_add(r, c(offset), "").llvm()
    }

    /// The chunk lane `lane` addresses: `first + lane / split`.
    fn lane_chunk(&self, lane: IntValue<'ctx>, first: u64, split: u64) -> Result<IntValue<'ctx>> {
        let i32_ty = self.context.i32_type();
        let b = &self.builder;
        let hi = b
            .build_right_shift(
                lane,
                i32_ty.const_int(u64::from(split.trailing_zeros()), false),
                false,
                "",
            )
            .llvm()?;
        b.build_int_nsw_add(hi, i32_ty.const_int(first, false), "")
            .llvm()
    }

    /// The byte offset of element `(row, col)` in a tile with swizzle `sw`.
    pub(super) fn swizzled_byte_offset(
        &self,
        sw: Swizzle,
        row: IntValue<'ctx>,
        col: IntValue<'ctx>,
    ) -> Result<IntValue<'ctx>> {
        let i32_ty = self.context.i32_type();
        let c = |x: u64| i32_ty.const_int(x, false);
        let b = &self.builder;
        let per_chunk = sw.chunk_bytes / sw.elem_bytes;
        let chunk = b
            .build_right_shift(col, c(u64::from(per_chunk.trailing_zeros())), false, "")
            .llvm()?;
        let within = b.build_and(col, c(per_chunk - 1), "").llvm()?;
        let within_bytes = b
            .build_left_shift(within, c(u64::from(sw.elem_bytes.trailing_zeros())), "")
            .llvm()?;
        let at = self.chunk_byte_offset(sw, row, chunk)?;
        self.builder.build_int_nsw_add(at, within_bytes, "").llvm()
    }

    /// The byte offset of logical chunk `chunk` of row `row` (its index XORed with the row's
    /// phase).
    fn chunk_byte_offset(
        &self,
        sw: Swizzle,
        row: IntValue<'ctx>,
        chunk: IntValue<'ctx>,
    ) -> Result<IntValue<'ctx>> {
        let i32_ty = self.context.i32_type();
        let c = |x: u64| i32_ty.const_int(x, false);
        let phase = self.phase(sw, row)?;
        let b = &self.builder;
        // A blocked layout: the block's start, and the chunk within the block.
        let per_block = sw.block * sw.elem_bytes / sw.chunk_bytes;
        let (start, chunk) = if sw.block < sw.c {
            let which = b
                .build_right_shift(chunk, c(u64::from(per_block.trailing_zeros())), false, "")
                .llvm()?;
            let start = b
                .build_int_nsw_mul(which, c(sw.rows * sw.block * sw.elem_bytes), "")
                .llvm()?;
            (
                Some(start),
                b.build_and(chunk, c(per_block - 1), "").llvm()?,
            )
        } else {
            (None, chunk)
        };
        let chunk = b.build_xor(chunk, phase, "").llvm()?;
        let row_bytes = b
            .build_int_nsw_mul(row, c(sw.elem_bytes * sw.block), "")
            .llvm()?;
        let chunk_bytes = b
            .build_left_shift(chunk, c(u64::from(sw.chunk_bytes.trailing_zeros())), "")
            .llvm()?;
        let at = b.build_int_nsw_add(row_bytes, chunk_bytes, "").llvm()?;
        match start {
            Some(s) => b.build_int_nsw_add(s, at, "").llvm(),
            None => Ok(at),
        }
    }

    /// `(row / per_phase) % max_phase`.
    fn phase(&self, sw: Swizzle, row: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        let i32_ty = self.context.i32_type();
        let c = |x: u64| i32_ty.const_int(x, false);
        let b = &self.builder;
        let p = b
            .build_right_shift(row, c(u64::from(sw.per_phase.trailing_zeros())), false, "")
            .llvm()?;
        b.build_and(p, c(sw.max_phase - 1), "").llvm()
    }

    /// `ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16` with this lane's row address
    /// `(row, chunk)` in the swizzled tile: `count` 32-bit words.
    fn ldmatrix(
        &self,
        base: IntValue<'ctx>,
        sw: Swizzle,
        row: IntValue<'ctx>,
        chunk: IntValue<'ctx>,
        count: usize,
        trans: bool,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let ctx = self.context;
        let i32_ty = ctx.i32_type();
        let off = self.chunk_byte_offset(sw, row, chunk)?;
        let addr = self.builder.build_int_add(base, off, "").llvm()?;
        let dsts = (0..count)
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let text = format!(
            "ldmatrix.sync.aligned.m8n8.x{count}{}.shared.b16 {{{dsts}}}, [${count}];",
            if trans { ".trans" } else { "" }
        );
        let mut constraints: Vec<String> = (0..count).map(|_| "=r".to_string()).collect();
        constraints.push("r".into());
        constraints.push("~{memory}".into());
        let params: [BasicMetadataTypeEnum; 1] = [i32_ty.into()];
        let ret = ctx.struct_type(&vec![i32_ty.as_basic_type_enum(); count], false);
        let fn_ty = ret.fn_type(&params, false);
        let asm =
            ctx.create_inline_asm(fn_ty, text, constraints.join(","), true, false, None, false);
        let args: [BasicMetadataValueEnum; 1] = [addr.into()];
        let call = self
            .builder
            .build_indirect_call(fn_ty, asm, &args, "")
            .llvm()?;
        let ValueKind::Basic(v) = call.try_as_basic_value() else {
            bug("a value from `ldmatrix`");
        };
        let s = StructValue::try_from(v).or_bug("a struct from `ldmatrix`");
        (0..count as u32)
            .map(|i| self.builder.build_extract_value(s, i, "").llvm())
            .collect()
    }

    /// Puts half `h` of `word` into the operand register at offset `at` under `dst`.
    fn place(
        &self,
        dst: &Distribution,
        out: &mut [Option<BasicValueEnum<'ctx>>],
        at: [u64; 2],
        word: BasicValueEnum<'ctx>,
        h: u64,
        elem: Elem,
    ) -> Result<()> {
        let reg = dst
            .reg_at(&at)
            .unwrap_or_else(|| bug(format_args!("an operand register at {at:?}")));
        // The word holds 32 bits of elements: two 16-bit ones or four 8-bit ones.
        let elem_ty = register_type(self.context, elem);
        let per_word = 4 / elem.dtype().map_or(2, |d| d.size_bytes());
        let lanes = super::memory::vector_of(elem_ty, per_word as usize);
        let b = &self.builder;
        let pair = b.build_bit_cast(int(word), lanes, "").llvm()?;
        let x = b
            .build_extract_element(
                pair.into_vector_value(),
                self.context.i32_type().const_int(h, false),
                "",
            )
            .llvm()?;
        out[reg] = Some(x);
        Ok(())
    }
}

/// Above this many 32-bit registers per thread, an `mma.sync` operand read from shared memory
/// is read one `K` step at a time by its `dot` (see [`Lowerer::plan_sliced_reads`]).
pub(super) const SLICED_WORDS: u64 = 64;

/// Which reader takes an operand from its swizzled shared tile.
#[derive(Clone, Copy, Debug)]
pub(super) enum ReadForm {
    /// The tile as the operand wants it (`A` `M × K`, `B` `K × N`), from the window at `offset`
    /// ([`Lowerer::ldmatrix_operand`]).
    Rows { offset: [u64; 2] },
    /// `A` from a tile stored `K × M` ([`Lowerer::ldmatrix_a_transposed`]).
    TransposedA,
    /// `B` from a tile stored `N × K` ([`Lowerer::ldmatrix_b_transposed`]).
    TransposedB,
}

/// An mma operand's read from shared memory: where, how, and into which layout.
pub(super) struct OperandRead<'ctx> {
    /// The tile's 32-bit shared address.
    pub(super) base: IntValue<'ctx>,
    pub(super) sw: Swizzle,
    pub(super) form: ReadForm,
    /// The operand's type (an mma operand layout).
    pub(super) to: tile_core::ir::Type,
    /// Its element type in registers.
    pub(super) elem: Elem,
}

/// The `K` extent of an operand type: `A`'s columns, `B`'s rows.
pub(super) fn k_extent(to: &tile_core::ir::Type) -> u64 {
    match &to.layout {
        Some(Layout::DotOperand(op)) if op.op_idx == 0 => u64::from(to.shape[1]),
        _ => u64::from(to.shape[0]),
    }
}

/// The registers an operand read placed, in order (every one placed: a read that misses one is
/// a compiler bug).
fn loaded<'ctx>(out: Vec<Option<BasicValueEnum<'ctx>>>) -> Vec<BasicValueEnum<'ctx>> {
    out.into_iter()
        .enumerate()
        .map(|(i, v)| v.unwrap_or_else(|| bug(format_args!("operand register {i} loaded"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The swizzle is a permutation of each row's chunks, keeps 8-element runs together, and the 8
    /// rows of any aligned 8-row group (what one `ldmatrix` matrix reads) put a given logical
    /// chunk on 8 different 16-byte bank groups.
    #[test]
    fn swizzle_is_conflict_free_for_ldmatrix() {
        for c in [8u64, 16, 32, 64, 128, 256] {
            let sw = Swizzle::of_bytes(c, 2);
            for row in 0..64u64 {
                let mut seen = vec![false; c as usize];
                for col in 0..c {
                    let i = sw.index(row, col);
                    assert!(i / c == row, "c {c}: row {row} col {col} leaves its row");
                    assert!(!seen[(i % c) as usize]);
                    seen[(i % c) as usize] = true;
                    if col % 8 != 0 {
                        assert_eq!(i, sw.index(row, col - 1) + 1);
                    }
                }
            }
            for r0 in (0..64u64).step_by(8) {
                for chunk in 0..c / 8 {
                    // The 16-byte group of the 128-byte bank line each of the 8 rows falls on.
                    let groups: std::collections::HashSet<u64> = (r0..r0 + 8)
                        .map(|row| (sw.index(row, chunk * 8) * 2 / 16) % 8)
                        .collect();
                    assert_eq!(groups.len(), 8, "c {c}: rows {r0}.. chunk {chunk}");
                }
            }
        }
    }

    /// The 32-byte swizzle of f32 rows (a tf32 `B` operand): the reads of one `ld.shared` (row
    /// `t` of 4 aligned rows, 8 aligned consecutive columns per row) hit 32 different banks, and
    /// the 16-byte halves of a chunk stay contiguous (one `cp.async` each).
    #[test]
    fn wide_swizzle_is_conflict_free_for_tf32_b() {
        for cols in [8u32, 16, 32, 64, 128, 256] {
            let l = tile_core::ir::SharedLayout::swizzled_wide(cols, 4);
            let c = u64::from(cols);
            for r0 in (0..64u64).step_by(4) {
                for c0 in (0..c).step_by(8) {
                    let banks: std::collections::HashSet<u64> = (r0..r0 + 4)
                        .flat_map(|row| (c0..c0 + 8).map(move |col| (row, col)))
                        .map(|(row, col)| l.index(64, c, row, col) % 32)
                        .collect();
                    assert_eq!(banks.len(), 32, "cols {cols}: rows {r0}.., columns {c0}..");
                }
            }
            for row in 0..16u64 {
                for col in (0..c).step_by(4) {
                    let i = l.index(64, c, row, col);
                    assert_eq!(i % 4, 0);
                    for j in 1..4 {
                        assert_eq!(l.index(64, c, row, col + j), i + j);
                    }
                }
            }
        }
    }
}
