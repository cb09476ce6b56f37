//! Tensor-core `dot`s, decided during `assign-layouts`: which `dot`s run on `mma.sync`, the mma
//! layout of their result (warps per tile), and the conversions of their operands into the mma
//! operand layouts.
//!
//! A `dot` runs on tensor cores when both operands are `f16` (or both `bf16`) and the tile is at
//! least one instruction (`M ≥ 16`, `N ≥ 8`, `K ≥ 16`); `f32` operands keep the exact FMA chain.
//! The result's class of values (the accumulator, the loop that carries it, the epilogue that is
//! element-wise on it) takes the mma layout, so the accumulator never moves between iterations;
//! `assign-layouts` joins the accumulator to the result and asks for the layout here. Warps tile
//! the result in 16 × 8 instruction units, split the way Triton's `warpsPerTileV2` does: double
//! the warps along M while M has at least as many instruction rows per warp as N has columns (and
//! more rows are left), otherwise along N.

use tile_core::ir::{DType, DotOperandLayout, Function, Layout, MmaLayout, OpId, OpKind, Type};

/// The mma layout for `dot(a, b, …)` with `num_warps` warps, or `None` when the `dot` stays on
/// FMAs.
pub fn mma_layout(a: &Type, b: &Type, num_warps: u32) -> Option<MmaLayout> {
    let d = a.dtype()?;
    if !matches!(d, DType::F16 | DType::BF16) || b.dtype()? != d {
        return None;
    }
    let (m, k, n) = (*a.shape.first()?, *a.shape.get(1)?, *b.shape.get(1)?);
    if m < 16 || n < 8 || k < 16 {
        return None;
    }
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
            k_width: 2,
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
            mma_layout(&t(DType::F16, &[m, k]), &t(DType::F16, &[k, n]), warps)
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
        assert_eq!(
            mma_layout(&t(DType::F32, &[64, 32]), &t(DType::F32, &[32, 64]), 4),
            None
        );
        assert_eq!(
            mma_layout(&t(DType::F16, &[64, 32]), &t(DType::BF16, &[32, 64]), 4),
            None
        );
    }
}
