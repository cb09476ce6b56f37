//! Tensor-core `dot`s, decided during `assign-layouts`: which `dot`s run on `mma.sync`, the mma
//! layout of their result (warps per tile), and the conversions of their operands into the mma
//! operand layouts.
//!
//! A `dot` runs on tensor cores when both operands are `f16` (or both `bf16`) and the tile is at
//! least one instruction (`M ≥ 16`, `N ≥ 8`, `K ≥ 16`: `m16n8k16`), both `i8` or both 8-bit
//! floats with `K ≥ 32` (`m16n8k32`; on sm_90a 8-bit operands take `wgmma` only when read K-major),
//! or both are `f32` with
//! `precision = tf32` and `M ≥ 16`, `N ≥ 8`, `K ≥ 8` (`m16n8k8.tf32`); other `f32` operands keep
//! the exact FMA chain. `crate::staging::on_tensor_cores` decides it, for the front end too.
//! The result's class of values (the accumulator, the loop that carries it, the epilogue that is
//! element-wise on it) takes the mma layout, so the accumulator never moves between iterations;
//! `assign-layouts` joins the accumulator to the result and asks for the layout here. Warps tile
//! the result in 16 × 8 instruction units, split the way Triton's `warpsPerTileV2` does: double
//! the warps along M while M has at least as many instruction rows per warp as N has columns (and
//! more rows are left), otherwise along N.

use tile_core::ir::{
    DType, DotOperandLayout, Function, Layout, MmaLayout, OpId, OpKind, Precision, Type,
};
use tile_core::Target;

/// The mma layout of the `dot` `op` of `f`, or `None` when it is not a tensor-core `dot`.
pub fn mma_layout_of(f: &Function, op: OpId) -> Option<MmaLayout> {
    let d = f.op(op);
    let OpKind::Dot { precision } = d.kind else {
        return None;
    };
    let (a, b) = (f.ty(*d.operands.first()?), f.ty(*d.operands.get(1)?));
    if f.target.is_some_and(Target::has_wgmma) && (!is_byte(a) || k_major(f, op)) {
        if let Some(l) = wgmma_layout(a, b, f.num_warps) {
            return Some(l);
        }
    }
    let l = mma_layout(a, b, precision, f.num_warps)?;
    let m = *a.shape.first()?;
    if m.is_multiple_of(16 * f.num_warps) && chained(f, op) {
        return Some(MmaLayout {
            version: 2,
            warps_per_cta: vec![f.num_warps, 1],
        });
    }
    Some(l)
}

/// Whether `t` holds 8-bit tensor-core operands (`i8`, the 8-bit floats).
fn is_byte(t: &Type) -> bool {
    t.dtype().is_some_and(DType::is_byte_operand)
}

/// For a `dot` of 8-bit operands, which `wgmma` reads K-major only: whether its `B` is the
/// transpose of an `N × K` tile (`dot(a, w.trans())`, the layout `torch._scaled_mm` asks of its
/// second operand too) and its `A` is not a transpose. Any other such `dot` takes `mma.sync`'s
/// 8-bit forms, whose operands pass through registers in any layout.
fn k_major(f: &Function, op: OpId) -> bool {
    let d = f.op(op);
    // The defining op, through the conversions `assign-layouts` puts before operands (so the
    // answer is the same before and after them).
    let is_trans = |i: usize| {
        let mut def = d.operands.get(i).and_then(|&v| f.def_op(v));
        while let Some(o) = def.filter(|&o| matches!(f.op(o).kind, OpKind::ConvertLayout)) {
            def = f.def_op(f.op(o).operands[0]);
        }
        def.is_some_and(|o| matches!(f.op(o).kind, OpKind::Trans))
    };
    is_trans(1) && !is_trans(0)
}

/// True when another `dot` of `op`'s block feeds `op` or is fed by it (flash attention's
/// `S = Q Kᵀ` and `O += P V`). Such `dot`s put every warp along M, as Triton does for chained
/// products: each warp then holds whole rows of both results, so the row statistics between
/// them stay in a warp, and the first result's registers are the second's `A` operand as they
/// are (a register renaming, no shared memory).
fn chained(f: &Function, op: OpId) -> bool {
    let block = &f.blocks[f.op(op).block.index()].ops;
    let is_dot = |o: OpId| o != op && matches!(f.op(o).kind, OpKind::Dot { .. });
    // Forward: the ops of the block after `op` that use what `op` computes, transitively.
    let mut reached: std::collections::HashSet<tile_core::ir::ValueId> =
        f.op(op).results.iter().copied().collect();
    let at = block.iter().position(|&o| o == op).unwrap_or(0);
    for &o in &block[at..] {
        let d = f.op(o);
        if d.operands.iter().any(|v| reached.contains(v)) {
            if is_dot(o) {
                return true;
            }
            reached.extend(d.results.iter().copied());
        }
    }
    // Backward: the ops of the block that `op`'s operands come from, transitively.
    let mut needed: std::collections::HashSet<tile_core::ir::ValueId> =
        f.op(op).operands.iter().copied().collect();
    for &o in block[..at].iter().rev() {
        let d = f.op(o);
        if d.results.iter().any(|v| needed.contains(v)) {
            if is_dot(o) {
                return true;
            }
            needed.extend(d.operands.iter().copied());
        }
    }
    false
}

/// The `k_width` of a tensor-core `dot`'s operand layouts: elements of `K` per 32-bit register
/// (4 for `i8`, 2 for 16-bit types, 1 for tf32).
pub fn k_width(elem: DType) -> u32 {
    4 / elem.size_bytes().clamp(1, 4)
}

/// The mma layout for `dot(a, b, …, precision)` with `num_warps` warps, or `None` when the `dot`
/// stays on FMAs.
pub fn mma_layout(a: &Type, b: &Type, precision: Precision, num_warps: u32) -> Option<MmaLayout> {
    // At least one instruction: m16n8k16 for 16-bit operands, m16n8k8 for tf32.
    if !crate::staging::on_tensor_cores(a, b, precision) {
        return None;
    }
    let (m, n) = (*a.shape.first()?, *b.shape.get(1)?);
    let (mut wm, mut wn) = (1u32, 1u32);
    while wm * wn < num_warps {
        let rows = m / (16 * wm);
        let cols = n / (8 * wn);
        if (rows >= cols && rows > 1) || cols <= 1 {
            wm *= 2;
        } else {
            wn *= 2;
        }
    }
    Some(MmaLayout {
        version: 2,
        warps_per_cta: vec![wm, wn],
    })
}

/// The version-3 (Hopper `wgmma`) mma layout for `dot(a, b, …)` with `num_warps` warps, or
/// `None` when the `dot` does not fit it: f16 or bf16 operands (or 8-bit floats of either kind,
/// or `i8`, which must also be read K-major: [`mma_layout_of`] asks), whole warpgroups (`num_warps` a
/// multiple of 4) stacked along M with 16 rows per warp and repetition (`M` a multiple of `16 ·
/// num_warps`), `K` of at least one instruction step (32 bytes: 16 elements, 32 of 8 bits) and
/// `N` of at least 16. All warps go along M (`[num_warps, 1]`): each warpgroup's `wgmma` spans
/// the whole `N` of the tile, up to 256 columns per instruction.
pub fn wgmma_layout(a: &Type, b: &Type, num_warps: u32) -> Option<MmaLayout> {
    let d = a.dtype()?;
    let min_k = if (d.is_f8() && b.dtype()?.is_f8()) || (d == DType::I8 && b.dtype()? == d) {
        32
    } else if matches!(d, DType::F16 | DType::BF16) && b.dtype()? == d {
        16
    } else {
        return None;
    };
    let (m, k, n) = (*a.shape.first()?, *a.shape.get(1)?, *b.shape.get(1)?);
    let fits = num_warps.is_multiple_of(4)
        && num_warps > 0
        && m.is_multiple_of(16 * num_warps)
        && k >= min_k
        && n >= 16;
    fits.then(|| MmaLayout {
        version: 3,
        warps_per_cta: vec![num_warps, 1],
    })
}

/// Inserts, before the tensor-core `dot` `op` (whose result already has its mma layout), the
/// conversions of its operands into the operand layouts of that mma layout.
pub fn convert_operands(f: &mut Function, op: OpId) {
    let d = f.op(op).clone();
    let Some(parent) = f.ty(d.results[0]).layout.clone() else {
        return;
    };
    let Some(block_pos) = f.blocks[d.block.index()].ops.iter().position(|&o| o == op) else {
        return;
    };
    let mut at = block_pos;
    for i in 0..2 {
        let v = d.operands[i];
        let want = Layout::DotOperand(DotOperandLayout {
            op_idx: i as u32,
            parent: Box::new(parent.clone()),
            k_width: k_width(f.ty(v).dtype().unwrap_or(DType::F16)),
        });
        if f.ty(v).layout.as_ref() == Some(&want) {
            continue;
        }
        let ty = Type {
            elem: f.ty(v).elem,
            shape: f.ty(v).shape.clone(),
            layout: Some(want),
        };
        let conv = f.insert_op(d.block, at, OpKind::ConvertLayout, vec![v], vec![ty]);
        at += 1;
        let c = f.op(conv).results[0];
        f.ops[op.index()].operands[i] = c;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tile_core::ir::Elem;

    fn t(d: DType, shape: &[u32]) -> Type {
        Type::tensor(Elem::Scalar(d), shape.to_vec())
    }

    #[test]
    fn warps_per_tile() {
        let w = |m, n, k, warps| {
            mma_layout(
                &t(DType::F16, &[m, k]),
                &t(DType::F16, &[k, n]),
                Precision::Ieee,
                warps,
            )
            .map(|l| l.warps_per_cta)
        };
        assert_eq!(w(128, 128, 32, 4), Some(vec![2, 2]));
        assert_eq!(w(128, 128, 32, 8), Some(vec![2, 4]));
        assert_eq!(w(128, 256, 64, 8), Some(vec![2, 4]));
        assert_eq!(w(64, 64, 32, 4), Some(vec![2, 2]));
        assert_eq!(w(16, 128, 32, 4), Some(vec![1, 4]));
        assert_eq!(w(128, 8, 32, 4), Some(vec![4, 1]));
        // Tiles smaller than one instruction, or f32 operands, stay on FMAs.
        assert_eq!(w(8, 128, 32, 4), None);
        assert_eq!(w(128, 128, 8, 4), None);
        let f32_tiles = |m, k, n, p| {
            mma_layout(&t(DType::F32, &[m, k]), &t(DType::F32, &[k, n]), p, 4)
                .map(|l| l.warps_per_cta)
        };
        assert_eq!(f32_tiles(64, 32, 64, Precision::Ieee), None);
        assert_eq!(
            mma_layout(
                &t(DType::F16, &[64, 32]),
                &t(DType::BF16, &[32, 64]),
                Precision::Ieee,
                4
            ),
            None
        );
        assert_eq!(f32_tiles(64, 32, 64, Precision::Tf32), Some(vec![2, 2]));
        // tf32: one instruction is 16 × 8 × 8 (a single-instruction tile on 4 warps: copies).
        assert_eq!(f32_tiles(16, 8, 8, Precision::Tf32), Some(vec![4, 1]));
        assert_eq!(f32_tiles(16, 4, 8, Precision::Tf32), None);
    }

    #[test]
    fn warpgroups_per_tile() {
        let w = |m, n, k, warps, d| {
            wgmma_layout(&t(d, &[m, k]), &t(d, &[k, n]), warps).map(|l| l.warps_per_cta)
        };
        assert_eq!(w(128, 128, 64, 4, DType::F16), Some(vec![4, 1]));
        assert_eq!(w(128, 256, 64, 8, DType::BF16), Some(vec![8, 1]));
        assert_eq!(w(64, 16, 16, 4, DType::F16), Some(vec![4, 1]));
        // Fewer rows than the warpgroups need, a partial warpgroup, narrow tiles, tf32.
        assert_eq!(w(64, 128, 64, 8, DType::F16), None);
        assert_eq!(w(128, 128, 64, 2, DType::F16), None);
        assert_eq!(w(128, 8, 64, 4, DType::F16), None);
        assert_eq!(w(128, 128, 8, 4, DType::F16), None);
        assert_eq!(w(128, 128, 64, 4, DType::F32), None);
    }
}
