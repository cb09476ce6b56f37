//! How many bytes of scratch shared memory each op's lowering uses: the back end's answer to the
//! shared-memory allocation (`analysis::shared_alloc`, which takes it as its
//! [`ScratchBytes`](crate::analysis::ScratchBytes) function), asked before anything is lowered
//! for the ops that declare scratch use ([`OpKind::uses_scratch`]). Each answer is the lowering
//! module's own (`shared`, `reduce`, `scan`, `roll`, `gather`, `dot`, `atomic`), decided from the
//! op's types and layouts as that lowering decides it; the lowering checks every array it carves
//! against the region it was given, so a disagreement is an error, never an overlap.

use tile_core::ir::{Function, OpId, OpKind};

use super::lower::{bug, OrBug};

/// Scratch bytes `op` of `f` needs while it is lowered (0 for most ops); `Err` where its types
/// and layouts are beyond what the lowering takes (which the lowering reports the same way). A
/// verified kernel has the operands and results read here, and every op that declares scratch
/// use has an answer; anything else is a bug in tile (a panic the pipeline reports as an internal
/// error).
pub fn scratch_bytes(f: &Function, op: OpId) -> Result<u64, String> {
    let d = f.op(op);
    let operand = |i: usize| {
        d.operands
            .get(i)
            .map(|&v| f.ty(v))
            .or_bug("the operands the verifier gives the op")
    };
    let result = || {
        d.results
            .first()
            .map(|&v| f.ty(v))
            .or_bug("the result the verifier gives the op")
    };
    match &d.kind {
        OpKind::ConvertLayout => Ok(super::shared::convert_scratch_bytes(operand(0), result())),
        OpKind::Reduce { axis, .. } => super::reduce::scratch_bytes(operand(0), *axis),
        OpKind::Roll { axis, shift } => super::roll::scratch_bytes(result(), *axis, *shift),
        OpKind::Scan { axis, .. } => super::scan::scratch_bytes([operand(0)], *axis),
        OpKind::AssociativeScan { axis, .. } => {
            super::scan::scratch_bytes(d.operands.iter().map(|&v| f.ty(v)), *axis)
        }
        OpKind::Gather { axis } => Ok(super::gather::scratch_bytes(operand(0), result(), *axis)),
        OpKind::AtomicRmw { .. } | OpKind::AtomicCas { .. } => super::atomic::scratch_bytes(f, op),
        OpKind::Dot { .. } => Ok(super::dot::scratch_bytes(operand(0), operand(1), result())),
        kind if kind.uses_scratch() => bug(format_args!(
            "a scratch size for `{}`, which declares scratch memory",
            kind.name()
        )),
        // Every other op declares none (`OpKind::shared_memory_use`).
        _ => Ok(0),
    }
}
