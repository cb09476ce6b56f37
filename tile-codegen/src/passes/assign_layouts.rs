//! `assign-layouts`: the step from the tile level to the GPU level. Every tensor type gets a
//! blocked layout; all tensors of one shape share it, so no layout conversions are needed.
//!
//! The layout is chosen for coalesced, wide memory accesses: each thread holds `spt` consecutive
//! elements, where `spt` is the widest access any load or store of the kernel may make (see
//! [`super::vectorize::access_width`]), capped so that the `32 × num_warps` threads do not
//! outnumber the tile's elements when that can be avoided. Consecutive lanes hold consecutive
//! chunks, so a warp's access covers `32 × spt` contiguous elements.

use tile_core::ir::{BlockedLayout, Function, Layout};

use super::axis_info::analyze;
use super::vectorize::access_width;

/// Runs the pass on a tile-level kernel.
pub fn run(f: &mut Function) {
    let info = analyze(f);
    let widest = f
        .walk()
        .into_iter()
        .map(|op| access_width(f, &info, op))
        .max()
        .unwrap_or(1)
        .max(1);
    let threads = 32 * f.num_warps;
    for v in &mut f.values {
        if !v.ty.is_tensor() {
            continue;
        }
        let n = v.ty.shape.iter().product::<u32>();
        let rank = v.ty.shape.len();
        let spt = widest.min((n / threads).max(1));
        let mut size_per_thread = vec![1; rank];
        let mut threads_per_warp = vec![1; rank];
        let mut warps_per_cta = vec![1; rank];
        // Innermost dimension gets the lanes and warps (rank 1 today).
        size_per_thread[rank - 1] = spt;
        threads_per_warp[rank - 1] = 32;
        warps_per_cta[rank - 1] = f.num_warps;
        let order = (0..rank as u32).rev().collect();
        v.ty.layout = Some(Layout::Blocked(BlockedLayout {
            size_per_thread,
            threads_per_warp,
            warps_per_cta,
            order,
        }));
    }
}
