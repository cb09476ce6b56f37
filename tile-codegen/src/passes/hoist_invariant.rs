//! `hoist-invariant`: a `convert_layout` inside a loop whose operand comes from outside the loop
//! moves to just before the loop, so the conversion runs once instead of every iteration.
//!
//! Why only conversions: LLVM hoists loop-invariant arithmetic itself, but a conversion through
//! shared memory is stores, a barrier and loads (or `ldmatrix`), which it never moves out of a
//! loop. Flash attention's `Q` is the case in point: loaded once, converted into the `dot`
//! operand layout at the `dot` in the loop, it would cross shared memory every iteration. The
//! converted value then lives across the loop, which it does anyway where the loop needs it
//! every iteration — unless the converted value is larger per thread than
//! [`HOIST_BUDGET_WORDS`] (an operand layout may hold copies of a tile in several warps). Nested
//! loops are handled innermost first, so a conversion may climb out of several loops one at a
//! time.

use tile_core::ir::{Function, OpId, OpKind, ValueDef};

use super::pipeline_loads::for_loops;

/// The most 32-bit registers per thread a hoisted conversion's result may take: a `128 × 128`
/// f16 `Q` tile as an `A` operand on 8 warps takes 32.
pub const HOIST_BUDGET_WORDS: u64 = 64;

/// Registers per thread of a tensor type with a layout (`None` without one).
fn words_per_thread(ty: &tile_core::ir::Type) -> Option<u64> {
    let regs = ty.layout.as_ref()?.linear(&ty.shape).ok()?.regs() as u64;
    let bytes = ty.dtype().map_or(8, |d| u64::from(d.size_bytes()));
    Some((regs * bytes).div_ceil(4))
}

/// Runs the pass.
pub fn run(f: &mut Function) {
    // Inner loops first: `for_loops` lists outer before inner.
    for l in for_loops(f).into_iter().rev() {
        hoist(f, l);
    }
}

/// The block an op's result `v` is defined in (a block argument's block for arguments).
fn defining_block(f: &Function, v: tile_core::ir::ValueId) -> tile_core::ir::BlockId {
    match f.values[v.index()].def {
        ValueDef::OpResult(op, _) => f.op(op).block,
        ValueDef::BlockArg(b, _) => b,
    }
}

/// Moves the invariant conversions of `l`'s body to before `l`.
fn hoist(f: &mut Function, l: OpId) {
    let Some(&region) = f.op(l).regions.first() else {
        return;
    };
    let body = f.regions[region.index()].blocks[0];
    let moving: Vec<OpId> = f.blocks[body.index()]
        .ops
        .iter()
        .copied()
        .filter(|&o| {
            let d = f.op(o);
            matches!(d.kind, OpKind::ConvertLayout)
                && d.operands.iter().all(|&v| defining_block(f, v) != body)
                && words_per_thread(f.ty(d.results[0])).is_some_and(|w| w <= HOIST_BUDGET_WORDS)
        })
        .collect();
    if moving.is_empty() {
        return;
    }
    let outer = f.op(l).block;
    for o in moving {
        f.blocks[body.index()].ops.retain(|&x| x != o);
        let Some(at) = f.blocks[outer.index()].ops.iter().position(|&x| x == l) else {
            return;
        };
        f.blocks[outer.index()].ops.insert(at, o);
        f.ops[o.index()].block = outer;
    }
}
