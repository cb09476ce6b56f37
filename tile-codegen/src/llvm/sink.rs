//! Demand-driven instruction order: after `default<O3>`, each basic block is re-emitted so that
//! every pure instruction comes right before the first instruction that needs it.
//!
//! The lowering emits a tile operation for all of a thread's elements before the next one
//! (`v · 0.5` for 128 accumulator elements, then `erf` of all 128, …), so a chain of element-wise
//! operations keeps several whole tiles live at once. NVPTX schedules in source order, and ptxas
//! does not undo it: a GEMM's GELU epilogue on a 128-element accumulator needed 255 registers and
//! spilled. Re-emitted by demand, each element's chain runs to its store before the next element's
//! begins, and at most one tile is live.
//!
//! Only instructions without effects move (arithmetic, comparisons, casts, `select`, address
//! arithmetic, vector element access, inline assembly built without side effects, and calls to
//! the pure intrinsics listed in [`PURE_INTRINSICS`]); loads, stores, inline assembly, barriers and every other call keep their
//! order relative to one another, and phis stay first. An instruction is placed after everything
//! it uses, so the block's meaning is unchanged.

use std::collections::HashSet;

use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::module::Module;
use inkwell::values::{BasicValue, CallSiteValue, InstructionOpcode, InstructionValue, Operand};

/// Intrinsics (by name prefix) that read and write no memory and have no other effect.
const PURE_INTRINSICS: &[&str] = &[
    "llvm.fma.",
    "llvm.fabs.",
    "llvm.maxnum.",
    "llvm.minnum.",
    "llvm.smax.",
    "llvm.smin.",
    "llvm.abs.",
    "llvm.sqrt.",
    "llvm.floor.",
    "llvm.ceil.",
    "llvm.fptosi.sat.",
    "llvm.nvvm.ex2.approx.",
    "llvm.nvvm.lg2.approx.",
    "llvm.nvvm.rcp.approx.",
    "llvm.nvvm.rsqrt.approx.",
];

/// Re-emits every block of every function in `module` in demand order.
pub(super) fn sink_to_uses(context: &Context, module: &Module<'_>) {
    let builder = context.create_builder();
    for f in module.get_functions() {
        for bb in f.get_basic_blocks() {
            reorder(&builder, bb);
        }
    }
}

fn movable(i: InstructionValue<'_>) -> bool {
    use InstructionOpcode as O;
    match i.get_opcode() {
        O::Add
        | O::FAdd
        | O::Sub
        | O::FSub
        | O::Mul
        | O::FMul
        | O::FDiv
        | O::Shl
        | O::LShr
        | O::AShr
        | O::And
        | O::Or
        | O::Xor
        | O::FNeg
        | O::Trunc
        | O::ZExt
        | O::SExt
        | O::FPToUI
        | O::FPToSI
        | O::UIToFP
        | O::SIToFP
        | O::FPTrunc
        | O::FPExt
        | O::PtrToInt
        | O::IntToPtr
        | O::BitCast
        | O::AddrSpaceCast
        | O::ICmp
        | O::FCmp
        | O::Select
        | O::GetElementPtr
        | O::ExtractElement
        | O::InsertElement
        | O::ShuffleVector
        | O::ExtractValue
        | O::InsertValue => true,
        O::Call => pure_asm(i) || pure_intrinsic(i),
        _ => false,
    }
}

/// A call of one of [`PURE_INTRINSICS`].
fn pure_intrinsic(i: InstructionValue<'_>) -> bool {
    CallSiteValue::try_from(i)
        .ok()
        .and_then(|c| c.get_called_fn_value())
        .is_some_and(|f| {
            let name = f.get_name().to_string_lossy();
            PURE_INTRINSICS.iter().any(|p| name.starts_with(p))
        })
}

/// A call of inline assembly that computes values only: built without side effects (the lowering
/// gives them to every store, barrier and synchronizing instruction), without a memory operand
/// (the global loads are side-effect free so that LLVM may merge them, but they stay where the
/// lowering and `hoist-loads` put them), and not a tensor-core `mma` (the main loop's schedule).
fn pure_asm(i: InstructionValue<'_>) -> bool {
    use inkwell::llvm_sys::core::{
        LLVMGetCalledValue, LLVMGetInlineAsmAsmString, LLVMGetInlineAsmHasSideEffects,
        LLVMIsAInlineAsm,
    };
    use inkwell::values::AsValueRef;
    // SAFETY: `i` is a live call instruction (its opcode is `Call`), so its called operand is a
    // valid value; `LLVMIsAInlineAsm` returns null unless that value is inline assembly, and only
    // then is it asked for its flags and text. The text pointer and length come from LLVM and
    // stay valid while the value lives, which outlasts this call.
    unsafe {
        let callee = LLVMGetCalledValue(i.as_value_ref());
        if callee.is_null()
            || LLVMIsAInlineAsm(callee).is_null()
            || LLVMGetInlineAsmHasSideEffects(callee) != 0
        {
            return false;
        }
        let mut len = 0usize;
        let text = LLVMGetInlineAsmAsmString(callee, &mut len);
        if text.is_null() {
            return false;
        }
        let text = std::slice::from_raw_parts(text.cast::<u8>(), len);
        !text.contains(&b'[') && !text.windows(3).any(|w| w == b"mma")
    }
}

/// The instructions of `bb` that instruction `i` uses.
fn operands_in<'ctx>(
    i: InstructionValue<'ctx>,
    bb: BasicBlock<'ctx>,
) -> Vec<InstructionValue<'ctx>> {
    i.get_operands()
        .flatten()
        .filter_map(|o| match o {
            Operand::Value(v) => v.as_instruction_value(),
            Operand::Block(_) => None,
        })
        .filter(|d| d.get_parent() == Some(bb))
        .collect()
}

fn reorder<'ctx>(builder: &Builder<'ctx>, bb: BasicBlock<'ctx>) {
    let Some(term) = bb.get_terminator() else {
        return;
    };
    let original: Vec<InstructionValue<'ctx>> = bb.get_instructions().collect();
    let mut placed: HashSet<InstructionValue<'ctx>> = HashSet::with_capacity(original.len());
    let mut order = Vec::with_capacity(original.len());
    // Places `root` after the not yet placed movable instructions it needs (depth first, by an
    // explicit stack: chains can be thousands long).
    let demand = |root: InstructionValue<'ctx>,
                  placed: &mut HashSet<InstructionValue<'ctx>>,
                  order: &mut Vec<InstructionValue<'ctx>>| {
        let mut stack = vec![(root, false)];
        while let Some((i, expanded)) = stack.pop() {
            if placed.contains(&i) {
                continue;
            }
            if expanded {
                placed.insert(i);
                order.push(i);
                continue;
            }
            stack.push((i, true));
            // A phi's operands come from the ends of predecessors (this block's own end, for a
            // loop's back edge), not from before it.
            if i.get_opcode() == InstructionOpcode::Phi {
                continue;
            }
            for d in operands_in(i, bb).into_iter().rev() {
                if movable(d) && !placed.contains(&d) {
                    stack.push((d, false));
                }
            }
        }
    };
    for &i in &original {
        if i == term {
            // What no later instruction of the block asked for (used in other blocks, or not at
            // all) goes before the terminator, in its original order.
            for &rest in &original {
                if movable(rest) {
                    demand(rest, &mut placed, &mut order);
                }
            }
        }
        if !movable(i) {
            demand(i, &mut placed, &mut order);
        }
    }
    if order == original {
        return;
    }
    for &i in &order {
        if i == term {
            continue;
        }
        i.remove_from_basic_block();
        builder.position_before(&term);
        builder.insert_instruction(&i, None);
    }
}
