//! How many warps a variant runs on: a kernel's own, or [`ELEMENTWISE_COPY_WARPS`] where its
//! tensor-core operands are copied into shared memory in pieces too small for its registers to
//! hold beside the accumulator (read from the variant's GPU-level IR).

use tile_core::ir::{Function, OpKind};

/// Warps for a variant whose tensor-core operands are copied element by element.
pub(super) const ELEMENTWISE_COPY_WARPS: u32 = 8;

/// True when `g` should run on [`ELEMENTWISE_COPY_WARPS`] warps: it copies element by element
/// ([`copies_elementwise`]), or it copies less than 16 bytes at a time (four times the addresses
/// of the aligned variant, or more) while each thread holds 128 or more accumulator elements (a
/// 128 × 128 tile on 4 warps: a GELU epilogue then spilled on 4-byte copies).
pub(super) fn wants_more_warps(g: &Function) -> bool {
    copies_elementwise(g)
        || (narrowest_copy(g, false).is_some_and(|bytes| bytes < 16)
            && accumulator_per_thread(g) >= 128)
}

/// True when `g` fills a shared buffer with copies under 4 bytes: unaligned 16-bit operands,
/// which `cp.async` cannot move, copied synchronously with a 64-bit address and a predicate per
/// element. Those registers come on top of the accumulator, so such a variant runs with
/// [`ELEMENTWISE_COPY_WARPS`] warps (each thread holding half as much of every tile as with 4):
/// a 128 × 128 GEMM tile on 4 warps spilled otherwise. The aligned variants keep the kernel's
/// warps; the launch reads each variant's own.
///
/// The fallback loops of `version-alignment` (run only when loaded addresses are unaligned)
/// count where each thread holds 64 or more accumulator elements (their copies' registers would
/// spill beside it: a 128 × 128 tile on 4 warps), and not below, so that a small tile keeps its
/// warps (and, on Hopper, `wgmma`) for the aligned loop that runs in the common case.
pub(super) fn copies_elementwise(g: &Function) -> bool {
    let counted = if accumulator_per_thread(g) >= 64 {
        narrowest_copy(g, false)
    } else {
        narrowest_copy(g, true)
    };
    counted.is_some_and(|bytes| bytes < 4)
}

/// The fewest bytes one `async_copy` instruction of `g` moves, if it has any (leaving out
/// `version-alignment`'s fallback loops with `skip_fallback`).
fn narrowest_copy(g: &Function, skip_fallback: bool) -> Option<u32> {
    let fallback = if skip_fallback {
        crate::passes::version_alignment::fallback_blocks(g)
    } else {
        Default::default()
    };
    g.walk()
        .into_iter()
        .filter_map(|op| {
            let d = g.op(op);
            if fallback.contains(&d.block) {
                return None;
            }
            let OpKind::AsyncCopy { vec } = d.kind else {
                return None;
            };
            let size = d
                .operands
                .first()
                .and_then(|&b| g.ty(b).dtype())
                .map_or(4, |t| t.size_bytes());
            Some(vec * size)
        })
        .min()
}

/// The most elements of one tensor-core `dot` result that a thread holds.
fn accumulator_per_thread(g: &Function) -> u64 {
    let threads = 32 * u64::from(g.num_warps.max(1));
    g.walk()
        .into_iter()
        .filter(|&op| matches!(g.op(op).kind, OpKind::Dot { .. }))
        .filter_map(|op| g.op(op).results.first().map(|&r| g.ty(r)))
        .filter(|t| matches!(t.layout, Some(tile_core::ir::Layout::Mma(_))))
        .map(|t| t.numel() / threads)
        .max()
        .unwrap_or(0)
}
