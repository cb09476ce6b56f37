//! How many bytes of scratch shared memory each op's lowering uses: what the shared-memory
//! allocation (`passes::shared_alloc`) reserves per op before anything is lowered. Each answer is
//! the lowering module's own (`shared`, `reduce`, `scan`, `roll`, `dot`, `atomic`), decided from the op's types and
//! layouts as that lowering decides it; the lowering checks every array it carves against the
//! region it was given, so a disagreement is an error, never an overlap.

use tile_core::ir::{Function, OpId, OpKind};

/// Scratch bytes `op` of `f` needs while it is lowered (0 for most ops); `Err` where its types
/// are not what the lowering takes (the lowering reports the same).
pub(crate) fn scratch_bytes(f: &Function, op: OpId) -> Result<u64, String> {
    let d = f.op(op);
    let operand = |i: usize| {
        d.operands
            .get(i)
            .map(|&v| f.ty(v))
            .ok_or_else(|| format!("`{}` is missing operand {i}", d.kind.name()))
    };
    let result = || {
        d.results
            .first()
            .map(|&v| f.ty(v))
            .ok_or_else(|| format!("`{}` has no result", d.kind.name()))
    };
    match &d.kind {
        OpKind::ConvertLayout => Ok(super::shared::convert_scratch_bytes(operand(0)?, result()?)),
        OpKind::Reduce { axis, .. } => super::reduce::scratch_bytes(operand(0)?, *axis),
        OpKind::Roll { axis, shift } => super::roll::scratch_bytes(result()?, *axis, *shift),
        OpKind::Scan { axis, .. } => super::scan::scratch_bytes(operand(0)?, *axis),
        OpKind::AtomicRmw { .. } | OpKind::AtomicCas { .. } => super::atomic::scratch_bytes(f, op),
        OpKind::Dot { .. } => Ok(super::dot::scratch_bytes(
            operand(0)?,
            operand(1)?,
            result()?,
        )),
        OpKind::Constant(_)
        | OpKind::ProgramId { .. }
        | OpKind::NumPrograms { .. }
        | OpKind::Arange { .. }
        | OpKind::Splat
        | OpKind::ExpandDims { .. }
        | OpKind::Broadcast
        | OpKind::Binary(_)
        | OpKind::Cmp(_)
        | OpKind::Unary(_)
        | OpKind::Select
        | OpKind::AddPtr
        | OpKind::Math(_)
        | OpKind::Cast
        | OpKind::Load { .. }
        | OpKind::Store { .. }
        | OpKind::For
        | OpKind::If
        | OpKind::Yield
        | OpKind::Return
        | OpKind::LocalAlloc
        | OpKind::AsyncCopy { .. }
        | OpKind::AsyncCommit
        | OpKind::AsyncWait { .. }
        | OpKind::Barrier
        | OpKind::LocalLoad { .. }
        | OpKind::WarpGroupDot
        | OpKind::WarpGroupWait { .. }
        | OpKind::FenceAsyncShared => Ok(0),
    }
}
