//! Hopper's tensor memory accelerator and its barrier objects, all inline PTX (LLVM 19 has
//! intrinsics for none of the forms used here):
//!
//! - `mbarrier_init %bars`: the issuing thread (one lane of warp 0, `elect.sync`) initializes
//!   each stage's barrier for one arrival
//!   (`mbarrier.init.shared::cta.b64`).
//! - `mbarrier_expect {bytes} %bars, %stage, %pred`: the issuing thread, where `pred` holds,
//!   arrives at the stage's barrier announcing the bytes its copies bring
//!   (`mbarrier.arrive.expect_tx`).
//! - `tma_load {slot} %buf, %stage, %bars, %pred, %row, %col`: the issuing thread, where `pred`
//!   holds, issues one `cp.async.bulk.tensor.2d` per column block of the stage (the [`SharedLayout`]
//!   blocks `wgmma` reads: `R` rows of 32, 64 or 128 bytes, which the tensor map's swizzle of
//!   the same width writes exactly), each completing on the stage's barrier. The tensor map is
//!   the kernel's hidden parameter for `slot` (a `__grid_constant__` `CUtensorMap`: its generic
//!   address, which LLVM takes with `cvta.param`).
//! - `mbarrier_wait %bars, %stage, %phase`: every thread spins on `mbarrier.try_wait.parity`
//!   until the phase of that parity has completed.
//! - `mbarrier_inval %bars`: the issuing thread ends each stage's barrier.
//!
//! Coordinates go to the copy innermost first (`{col, row}`), as the tensor map lists its
//! dimensions.
//!
//! [`SharedLayout`]: tile_core::ir::SharedLayout

use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, IntValue, ValueKind};
use inkwell::IntPredicate;
use tile_core::ir::{Layout, OpData};

use super::lower::{bug, int, pointer, Lowerer, OrBug, OrLlvm, Result};

impl<'ctx> Lowerer<'_, 'ctx> {
    /// A void inline-asm statement with side effects on memory.
    fn tma_asm(
        &self,
        text: &str,
        constraints: &str,
        args: &[BasicMetadataValueEnum<'ctx>],
    ) -> Result<()> {
        let ctx = self.context;
        let params: Vec<BasicMetadataTypeEnum> = args
            .iter()
            .map(|a| match a {
                BasicMetadataValueEnum::IntValue(v) => v.get_type().into(),
                _ => bug("integer inline-asm operands"),
            })
            .collect();
        let fn_ty = ctx.void_type().fn_type(&params, false);
        let asm = ctx.create_inline_asm(
            fn_ty,
            text.to_string(),
            format!("{constraints},~{{memory}}"),
            true,
            false,
            None,
            false,
        );
        self.builder
            .build_indirect_call(fn_ty, asm, args, "")
            .llvm()?;
        Ok(())
    }

    /// Whether this thread is the program's issuing thread, an `i1`: one lane of warp 0 chosen
    /// by `elect.sync`, read once in the entry block where every thread of the program runs. ptxas
    /// then knows a single lane issues each copy and emits it straight; with `tid == 0` it
    /// cannot tell, and wraps every `cp.async.bulk.tensor` in a loop over the lanes' distinct
    /// operands (four such loops an iteration in tutorial 06's attention loop).
    pub(super) fn elect_leader(&mut self) -> Result<IntValue<'ctx>> {
        let i32_ty = self.context.i32_type();
        let bool_ty = self.context.bool_type();
        let tid = self.tid()?;
        let fn_ty = bool_ty.fn_type(&[], false);
        // A predicate output (`b`), so the elected lane reaches each copy's guard through
        // predicate logic ptxas can follow.
        let asm = self.context.create_inline_asm(
            fn_ty,
            "elect.sync _|$0, -1;".to_string(),
            "=b".to_string(),
            true,
            false,
            None,
            false,
        );
        let b = &self.builder;
        let ValueKind::Basic(elected) = b
            .build_indirect_call(fn_ty, asm, &[], "")
            .llvm()?
            .try_as_basic_value()
        else {
            bug("the elected lane's asm to return a value");
        };
        let warp0 = b
            .build_int_compare(IntPredicate::ULT, tid, i32_ty.const_int(32, false), "")
            .llvm()?;
        b.build_and(warp0, int(elected), "").llvm()
    }

    /// The program's issuing thread ([`Self::elect_leader`]) where `pred` (an `i1`) holds, as
    /// an `i1` (an inline-asm operand of constraint `b`: a predicate register).
    fn leader(&mut self, pred: Option<IntValue<'ctx>>) -> Result<IntValue<'ctx>> {
        let lead = self
            .tma_leader
            .or_bug("the issuing thread, chosen in the entry block");
        match pred {
            Some(p) => self.builder.build_and(lead, p, "").llvm(),
            None => Ok(lead),
        }
    }

    /// Bytes between barrier objects in the buffer that is operand `i` (one per stage, at its
    /// start).
    fn barrier_stride(&self, data: &OpData, i: usize) -> u64 {
        let ty = self.f.ty(data.operands[i]);
        let elem = u64::from(ty.dtype().map_or(8, |d| d.size_bytes()));
        u64::from(ty.shape[1]) * u64::from(ty.shape[2]) * elem
    }

    /// The shared address of barrier `stage` (an `i32`, or `None` for the first) of the
    /// barrier buffer that is operand `i`.
    fn barrier_address(
        &self,
        data: &OpData,
        i: usize,
        stage: Option<IntValue<'ctx>>,
    ) -> Result<IntValue<'ctx>> {
        let buf = pointer(self.scalar_operand(data, i));
        match stage {
            Some(stage) => self.stage_address(buf, stage, self.f.ty(data.operands[i])),
            None => self.shared_address(buf),
        }
    }

    /// The number of barriers (stages) of the buffer that is operand `i`.
    fn barrier_count(&self, data: &OpData, i: usize) -> u64 {
        u64::from(self.f.ty(data.operands[i]).shape[0])
    }

    /// `instr` (`mbarrier.init…` or `mbarrier.inval…` with its operands after the address) on
    /// every barrier of the buffer that is operand 0, from the issuing thread.
    fn each_barrier(&mut self, data: &OpData, instr: &str, rest: &str) -> Result<()> {
        let lead = self.leader(None)?;
        let base = self.barrier_address(data, 0, None)?;
        let stride = self.barrier_stride(data, 0);
        for s in 0..self.barrier_count(data, 0) {
            self.tma_asm(
                &format!("@$1 {instr} [$0+{}]{rest};", s * stride),
                "r,b",
                &[base.into(), lead.into()],
            )?;
        }
        Ok(())
    }

    /// `mbarrier_init`: each barrier completes a phase at one arrival (and its bytes).
    pub(super) fn mbarrier_init(&mut self, data: &OpData) -> Result<()> {
        self.each_barrier(data, "mbarrier.init.shared::cta.b64", ", 1")
    }

    /// `mbarrier_inval`.
    pub(super) fn mbarrier_inval(&mut self, data: &OpData) -> Result<()> {
        self.each_barrier(data, "mbarrier.inval.shared::cta.b64", "")
    }

    /// `mbarrier_expect`.
    pub(super) fn mbarrier_expect(&mut self, data: &OpData, bytes: u32) -> Result<()> {
        let pred = int(self.scalar_operand(data, 2));
        let lead = self.leader(Some(pred))?;
        let stage = int(self.scalar_operand(data, 1));
        let bar = self.barrier_address(data, 0, Some(stage))?;
        self.tma_asm(
            &format!(
                "{{ .reg .b64 state; \
                 @$1 mbarrier.arrive.expect_tx.shared::cta.b64 state, [$0], {bytes}; }}"
            ),
            "r,b",
            &[bar.into(), lead.into()],
        )
    }

    /// `mbarrier_wait`.
    pub(super) fn mbarrier_wait(&mut self, data: &OpData) -> Result<()> {
        let stage = int(self.scalar_operand(data, 1));
        let phase = int(self.scalar_operand(data, 2));
        let bar = self.barrier_address(data, 0, Some(stage))?;
        self.tma_asm(
            "{ .reg .pred done; \
             tile_wait_${:uid}: \
             mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1; \
             @!done bra.uni tile_wait_${:uid}; }",
            "r,r",
            &[bar.into(), phase.into()],
        )
    }

    /// `tma_load`.
    pub(super) fn tma_load(&mut self, data: &OpData, slot: u32) -> Result<()> {
        let buf_ty = self.f.ty(data.operands[0]).clone();
        let Some(Layout::Shared(layout)) = &buf_ty.layout else {
            bug("a shared buffer to copy into");
        };
        if buf_ty.shape.len() != 3 || data.operands.len() != 6 {
            bug("a 2-D stage and two coordinates");
        }
        let (rows, cols) = (u64::from(buf_ty.shape[1]), u64::from(buf_ty.shape[2]));
        let elem = u64::from(buf_ty.dtype().map_or(2, |d| d.size_bytes()));
        let width = layout.block_cols(cols);
        let block_bytes = rows * width * elem;

        let pred = int(self.scalar_operand(data, 3));
        let lead = self.leader(Some(pred))?;
        let stage = int(self.scalar_operand(data, 1));
        let bar = self.barrier_address(data, 2, Some(stage))?;
        let row = int(self.scalar_operand(data, 4));
        let col = int(self.scalar_operand(data, 5));
        let i32_ty = self.context.i32_type();
        let i64_ty = self.context.i64_type();
        let dst = self.stage_base(data, &buf_ty)?;
        let function = self
            .builder
            .get_insert_block()
            .and_then(|b| b.get_parent())
            .or_bug("the kernel function");
        let index = self.f.params().len() as u32 + slot;
        let map = function
            .get_nth_param(index)
            .or_bug("the tensor map parameter of the descriptor");
        let map = self
            .builder
            .build_ptr_to_int(map.into_pointer_value(), i64_ty, "")
            .llvm()?;
        for j in 0..cols / width {
            let b = &self.builder;
            let c = b
                .build_int_add(col, i32_ty.const_int(j * width, false), "")
                .llvm()?;
            self.tma_asm(
                &format!(
                    "@$1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \
                     [$0+{}], [$2, {{$3, $4}}], [$5];",
                    j * block_bytes
                ),
                "r,b,l,r,r,r",
                &[
                    dst.into(),
                    lead.into(),
                    map.into(),
                    c.into(),
                    row.into(),
                    bar.into(),
                ],
            )?;
        }
        Ok(())
    }
}
