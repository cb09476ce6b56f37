//! Tensor descriptors as the launch sees them: which `make_tensor_descriptor` slots describe an
//! array known from the arguments alone ([`host_descriptors`], on tile-level IR), and which
//! slots a module copies with the tensor memory accelerator, with what box and swizzle
//! ([`tma_copies`], on GPU-level IR). The macro writes both into the kernel's static metadata
//! (`DescSpec`, `TmaSpec`), from which the launch encodes the tensor maps.

use tile_core::ir::{BinOp, ConstValue, DType, Function, OpKind, ValueDef, ValueId};
use tile_core::runtime::DescScalar;

/// A descriptor whose array the launch can describe: pointer, extents and strides are kernel
/// parameters, constants, or products of them ([`DescScalar::Product`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostDesc {
    /// The `make_tensor_descriptor` slot.
    pub slot: u32,
    /// The pointer parameter's index among the kernel's parameters.
    pub ptr: u32,
    /// Element type.
    pub dtype: DType,
    /// Extents, outermost first.
    pub dims: Vec<DescScalar>,
    /// Strides in elements, outermost first.
    pub strides: Vec<DescScalar>,
    /// Whether the compiler found it in a pointer load ([`implied`](super::implied)) rather than
    /// the kernel declaring it: the launch then never refuses the arguments for it, and a
    /// variant that copies it gives way where its tensor map cannot be encoded.
    pub implied: bool,
}

/// One slot a module copies with the tensor memory accelerator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TmaCopy {
    /// The slot.
    pub slot: u32,
    /// The box of one copy, outermost first.
    pub box_dims: Vec<u32>,
    /// The swizzle in bytes (0, 32, 64 or 128).
    pub swizzle: u32,
}

/// The parameter, constant or product of them `v` is, looking through integer casts (a widened
/// `i32` argument keeps its value).
pub fn scalar_source(f: &Function, v: ValueId) -> Option<DescScalar> {
    match f.values[v.index()].def {
        ValueDef::BlockArg(b, i) if b == f.entry() => Some(DescScalar::Param(i)),
        ValueDef::BlockArg(..) => None,
        ValueDef::OpResult(op, _) => {
            let d = f.op(op);
            match &d.kind {
                OpKind::Constant(ConstValue::Int(c)) => Some(DescScalar::Const(*c)),
                OpKind::Cast if f.ty(d.operands[0]).dtype().is_some_and(DType::is_int) => {
                    scalar_source(f, d.operands[0])
                }
                // `Z * H * N_CTX`: a product the launch computes from the arguments.
                OpKind::Binary(BinOp::Mul) => {
                    let bits = match f.ty(d.results[0]).dtype() {
                        Some(DType::I32) => 32,
                        Some(DType::I64) => 64,
                        _ => return None,
                    };
                    let a = scalar_source(f, d.operands[0])?;
                    let b = scalar_source(f, d.operands[1])?;
                    a.times(b, bits)
                }
                _ => None,
            }
        }
    }
}

/// The operands of a `desc_load`/`desc_store` of rank `rank`: pointer, extents, strides,
/// coordinates.
pub fn desc_operands(
    operands: &[ValueId],
    rank: usize,
) -> (ValueId, &[ValueId], &[ValueId], &[ValueId]) {
    (
        operands[0],
        &operands[1..1 + rank],
        &operands[1 + rank..1 + 2 * rank],
        &operands[1 + 2 * rank..1 + 3 * rank],
    )
}

/// The rank of a descriptor access: its result's (`desc_load`) or its value's (`desc_store`).
pub fn desc_rank(f: &Function, op: tile_core::ir::OpId) -> usize {
    let d = f.op(op);
    match d.kind {
        OpKind::DescLoad { .. } => f.ty(d.results[0]).shape.len(),
        _ => f
            .ty(*d.operands.last().expect("desc_store has a value"))
            .shape
            .len(),
    }
}

/// The slots of `f` (tile level) whose every access names the same pointer parameter, extents
/// and strides, each a parameter or constant: the arrays the launch can describe.
pub fn host_descriptors(f: &Function) -> Vec<HostDesc> {
    let mut found: Vec<Option<Option<HostDesc>>> = vec![None; f.desc_slots as usize];
    for op in f.walk() {
        let d = f.op(op);
        let slot = match d.kind {
            OpKind::DescLoad { slot } | OpKind::DescStore { slot } => slot,
            _ => continue,
        };
        let Some(entry) = found.get_mut(slot as usize) else {
            continue;
        };
        let rank = desc_rank(f, op);
        let (ptr, dims, strides, _) = desc_operands(&d.operands, rank);
        let dtype = f.ty(ptr).elem.pointee();
        let this = match (scalar_source(f, ptr), dtype) {
            (Some(DescScalar::Param(p)), Some(dtype)) => {
                let dims: Option<Vec<_>> = dims.iter().map(|&v| scalar_source(f, v)).collect();
                let strides: Option<Vec<_>> =
                    strides.iter().map(|&v| scalar_source(f, v)).collect();
                dims.zip(strides).map(|(dims, strides)| HostDesc {
                    slot,
                    ptr: p,
                    dtype,
                    dims,
                    strides,
                    implied: false,
                })
            }
            _ => None,
        };
        *entry = match entry.take() {
            None => Some(this),
            Some(prev) => Some(if prev == this { prev } else { None }),
        };
    }
    found.into_iter().flatten().flatten().collect()
}

/// The slots a GPU-level module copies with `tma_load`, with the box and swizzle of its
/// destination buffer (one copy per column block of the buffer's `wgmma` layout).
pub fn tma_copies(f: &Function) -> Vec<TmaCopy> {
    let mut out: Vec<TmaCopy> = Vec::new();
    for op in f.walk() {
        let d = f.op(op);
        let OpKind::TmaLoad { slot } = d.kind else {
            continue;
        };
        let buf = f.ty(d.operands[0]);
        let Some(tile_core::ir::Layout::Shared(s)) = &buf.layout else {
            continue;
        };
        let (rows, cols) = (buf.shape[1], buf.shape[2]);
        let width = s.block_cols(u64::from(cols)) as u32;
        let elem = buf.dtype().map_or(2, DType::size_bytes);
        let row_bytes = width * elem;
        let swizzle = if s.max_phase > 1 {
            row_bytes.min(128)
        } else {
            0
        };
        let copy = TmaCopy {
            slot,
            box_dims: vec![rows, width],
            swizzle,
        };
        if !out.contains(&copy) {
            out.push(copy);
        }
    }
    out
}
