//! `vectorize`: sets each load's and store's `vec`, the elements one thread moves with one
//! instruction, to the widest access axis analysis proves safe: at most 16 bytes, no more than the
//! pointers' contiguity, the addresses aligned to the access size, the mask constant over the
//! access, and within the elements a thread holds contiguously in the layout along the innermost
//! dimension (the one axis analysis describes).

use tile_core::ir::{Function, OpKind};

use crate::analysis::axis_info::{analyze, AxisInfo};

/// The widest safe access, in elements, for the load or store `op` (ignoring the layout).
pub fn access_width(f: &Function, info: &[AxisInfo], op: tile_core::ir::OpId) -> u32 {
    width(f, info, op, true)
}

/// The longest run of consecutive addresses `op` makes, up to 16 bytes: its pointers'
/// contiguity, whatever their alignment and mask. A thread holding runs this long addresses
/// each run from one pointer, even where alignment or the mask keeps the accesses narrow.
pub fn run_width(f: &Function, info: &[AxisInfo], op: tile_core::ir::OpId) -> u32 {
    width(f, info, op, false)
}

fn width(f: &Function, info: &[AxisInfo], op: tile_core::ir::OpId, aligned_only: bool) -> u32 {
    let d = f.op(op);
    let (ptr, mask) = match d.kind {
        OpKind::Load { .. } => (d.operands[0], d.operands.get(1).copied()),
        OpKind::Store { .. } => (d.operands[0], d.operands.get(2).copied()),
        _ => return 1,
    };
    let pty = f.ty(ptr);
    if !pty.is_tensor() {
        return 1;
    }
    let Some(elem) = pty.elem.pointee() else {
        return 1;
    };
    let size = elem.size_bytes() as u64;
    let p = info[ptr.index()];
    let mut w = (16 / size).min(p.contiguity);
    if aligned_only {
        w = w.min((p.divisibility / size).max(1));
        if let Some(m) = mask {
            w = w.min(info[m.index()].constancy);
        }
    }
    // Booleans are moved one byte at a time.
    if elem == tile_core::ir::DType::I1 {
        w = 1;
    }
    // Keep a power of two.
    let w = w.max(1);
    (1u64 << (63 - w.leading_zeros())) as u32
}

/// Runs the pass on a GPU-level kernel.
pub fn run(f: &mut Function) {
    let info = analyze(f);
    for op in f.walk() {
        let w = access_width(f, &info, op);
        let d = f.op(op);
        let spt = match d.kind {
            OpKind::Load { .. } | OpKind::Store { .. } => {
                let pty = f.ty(d.operands[0]);
                let inner = pty.shape.len().saturating_sub(1);
                // A thread's run of consecutive elements in its registers. Axis analysis
                // describes the innermost dimension only: a run along another one (a
                // column-major layout of a row-major access, after a transpose) holds elements
                // a row apart in memory, which one vector access would not read.
                match pty.layout.as_ref().map(|l| l.linear(&pty.shape)) {
                    Some(Ok(ll)) => match ll.contiguous_run() {
                        (dim, run) if dim == inner => u32::try_from(run).unwrap_or(1),
                        _ => 1,
                    },
                    Some(Err(_)) | None => 1,
                }
            }
            _ => continue,
        };
        let vec = w.min(spt);
        match &mut f.ops[op.index()].kind {
            OpKind::Load { vec: v, .. } | OpKind::Store { vec: v, .. } => *v = vec,
            _ => {}
        }
    }
}
