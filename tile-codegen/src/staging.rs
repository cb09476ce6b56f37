//! What a `dot` stages through shared memory, answered once for the front end (the most bytes a
//! program may declare), `pipeline-dot` (the size of a ring's stage) and the lowering (the FMA
//! `dot`'s scratch, the `ldmatrix` conversion's tile). It reads only the IR's types, so it
//! depends on neither the passes nor the back end.
//!
//! A `dot` runs on tensor cores (`mma.sync`, or `wgmma` on sm_90a, whose tiles are a subset) when
//! both operands are f16 (or both bf16) and the tile is at least one `m16n8k16` instruction
//! (`M ≥ 16`, `N ≥ 8`, `K ≥ 16`), both are `i8` and the tile is at least one `m16n8k32.s8`
//! (`K ≥ 32`; `mma.sync` on both targets), both are 8-bit floats (`f8e4m3`, `f8e5m2`, in any
//! pairing) and `K ≥ 32` (`mma.sync`'s or `wgmma`'s FP8 forms on sm_90a; sm_80 has none and
//! multiplies their exact f16 values), or both are f32 with `precision = tf32` and the tile
//! is at least one `m16n8k8` (`K ≥ 8`); its operands then pass through shared memory as
//! themselves. Every other `dot` is the exact FMA chain, whose operands pass through as f32 (as
//! `i32` for `i8`).

use tile_core::ir::{DType, Precision, Type};

/// Whether `dot(a, b, …, precision)` runs on tensor cores (see the module documentation); `a` is
/// `M × K`, `b` is `K × N`.
pub fn on_tensor_cores(a: &Type, b: &Type, precision: Precision) -> bool {
    let Some(d) = a.dtype() else {
        return false;
    };
    let tensor = match d {
        DType::F16 | DType::BF16 | DType::I8 => b.dtype() == Some(d),
        // Either 8-bit float by either.
        DType::F8E4M3 | DType::F8E5M2 => b.dtype().is_some_and(DType::is_f8),
        DType::F32 => precision == Precision::Tf32 && b.dtype() == Some(d),
        DType::I1
        | DType::I16
        | DType::I32
        | DType::I64
        | DType::U8
        | DType::U32
        | DType::U64
        | DType::F64 => false,
    };
    if !tensor {
        return false;
    }
    // One instruction's K: 32 bytes (16 for 16-bit operands, 32 for 8-bit ones), 8 for tf32.
    let min_k = match d {
        DType::F32 => 8,
        d if d.is_byte_operand() => 32,
        _ => 16,
    };
    match (a.shape.first(), a.shape.get(1), b.shape.get(1)) {
        (Some(&m), Some(&k), Some(&n)) => m >= 16 && n >= 8 && k >= min_k,
        _ => false,
    }
}

/// The bytes operand `t` of a `dot` takes in shared memory: its elements as themselves on tensor
/// cores (`tensor_cores`), as f32 on the FMA chain.
pub fn operand_bytes(t: &Type, tensor_cores: bool) -> u64 {
    let per_elem = match t.dtype() {
        Some(d) if tensor_cores => u64::from(d.size_bytes()),
        _ => 4,
    };
    t.numel() * per_elem
}

/// The bytes `dot(a, b)` stages through shared memory, its operands side by side: `a`'s rounded
/// up to 16 bytes (where `b`'s begin), then `b`'s. `tensor_cores` as [`on_tensor_cores`] decides.
pub fn dot_bytes(a: &Type, b: &Type, tensor_cores: bool) -> u64 {
    operand_bytes(a, tensor_cores).next_multiple_of(16) + operand_bytes(b, tensor_cores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tile_core::ir::Elem;

    fn tile(d: DType, shape: [u32; 2]) -> Type {
        Type::tensor(Elem::Scalar(d), shape.to_vec())
    }

    /// 16-bit operands from one `m16n8k16` up run on tensor cores; f32 only with tf32, from one
    /// `m16n8k8` up; mixed types never.
    #[test]
    fn tensor_cores_from_one_instruction() {
        let (ieee, tf32) = (Precision::Ieee, Precision::Tf32);
        let on = |d, m, k, n, p| on_tensor_cores(&tile(d, [m, k]), &tile(d, [k, n]), p);
        assert!(on(DType::F16, 16, 16, 8, ieee));
        assert!(on(DType::BF16, 64, 32, 64, ieee));
        assert!(!on(DType::F16, 8, 16, 8, ieee));
        assert!(!on(DType::F16, 16, 8, 8, ieee));
        assert!(!on(DType::F16, 16, 16, 4, ieee));
        assert!(!on(DType::F32, 16, 8, 8, ieee));
        assert!(on(DType::F32, 16, 8, 8, tf32));
        assert!(on(DType::I8, 16, 32, 8, ieee));
        assert!(!on(DType::I8, 16, 16, 8, ieee));
        assert!(!on(DType::F32, 16, 4, 8, tf32));
        let mixed = on_tensor_cores(
            &tile(DType::F16, [16, 16]),
            &tile(DType::BF16, [16, 8]),
            ieee,
        );
        assert!(!mixed);
        let f8 = |a, b, k| on_tensor_cores(&tile(a, [16, k]), &tile(b, [k, 8]), ieee);
        assert!(f8(DType::F8E4M3, DType::F8E4M3, 32));
        assert!(f8(DType::F8E4M3, DType::F8E5M2, 64));
        assert!(!f8(DType::F8E5M2, DType::F8E5M2, 16));
        assert!(!f8(DType::F8E4M3, DType::F16, 32));
    }

    /// Tensor-core operands stage as themselves, FMA operands as f32, `a`'s part 16-byte aligned.
    #[test]
    fn bytes_per_path() {
        let (a, b) = (tile(DType::F16, [128, 128]), tile(DType::F16, [128, 128]));
        assert_eq!(dot_bytes(&a, &b, true), 2 * 2 * 128 * 128);
        assert_eq!(dot_bytes(&a, &b, false), 2 * 4 * 128 * 128);
        let (a, b) = (tile(DType::F32, [1, 2]), tile(DType::F32, [2, 4]));
        assert_eq!(dot_bytes(&a, &b, false), 16 + 32);
        assert_eq!(operand_bytes(&tile(DType::BF16, [64, 32]), true), 4096);
    }
}
