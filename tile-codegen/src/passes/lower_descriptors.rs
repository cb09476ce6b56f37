//! `lower-descriptors` (first in the GPU pipeline, on tile-level IR): expands each tensor
//! descriptor access (`desc_load`, `desc_store`) that the Hopper copy path does not keep into
//! the plain tile-level ops a kernel would write by hand. For a 2-D access of block `B0 × B1`
//! at `(c0, c1)` of the array `(ptr, [d0, d1], [s0, s1])`:
//!
//! ```text
//! rows = c0 + arange(0, B0)                          (i64)
//! cols = c1 + arange(0, B1)                          (i64)
//! offs = rows[:, None] * s0 + cols[None, :] * s1     (a factor that is the constant 1 left out)
//! mask = (0 <= rows < d0)[:, None] & (0 <= cols < d1)[None, :]
//! load(ptr + offs, mask, 0)          /  store(ptr + offs, value, mask)
//! ```
//!
//! and the same with one dimension for rank 1. Indices, offsets and bounds are 64-bit, so every
//! coordinate the `i32` operands allow is exact, as the interpreter computes it. A stride that
//! is the constant 1 (a literal, or an argument the unit-stride specialization assumed 1, seen
//! through its widening cast) adds `cols` itself: the axis analysis then sees the contiguous run
//! of `arange` through the cast and the addition, so the access vectorizes, and a `dot` loop
//! over such loads is the form `pipeline-dot` and `pipeline-loads` pipeline.
//!
//! Before the pass, [`imply`] turns the plain loads that read the box of an array (an implied
//! descriptor, [`crate::analysis::implied`]) into `desc_load`s where the copy engine will take
//! them, so that a user's pointer-arithmetic `dot` loop gets the same ring as a descriptor one.
//!
//! The ops a pass inserts take the location of the op they go before: here the descriptor
//! access, so messages about them point at `d.load(..)`.

use tile_core::ir::{
    BinOp, CmpPred, ConstValue, DType, Elem, Evict, Function, OpId, OpKind, Type, ValueId,
};

use super::edit::Builder;
use crate::analysis::descriptors::{desc_operands, desc_rank};
use crate::analysis::implied::{still_implied, ImpliedLoad};

/// Expands every descriptor access of `f` but those the Hopper path keeps for the tensor memory
/// accelerator: the loads of a `dot` loop that `pipeline-dot` will copy with TMA on sm_90a
/// ([`tma_loads`](super::pipeline_dot::tma_loads), decided once on the kernel as it came).
pub fn run(f: &mut Function) {
    let kept = super::pipeline_dot::tma_loads(f);
    let accesses: Vec<OpId> = f
        .walk()
        .into_iter()
        .filter(|&op| {
            matches!(
                f.op(op).kind,
                OpKind::DescLoad { .. } | OpKind::DescStore { .. }
            )
        })
        .collect();
    for op in accesses.into_iter().filter(|op| !kept.contains(op)) {
        expand(f, op);
    }
}

/// Rewrites into `desc_load`s the implied descriptor loads of `f` (found on the tile-level IR
/// `f` was cloned from: [`implied_loads`](crate::analysis::implied::implied_loads)) that the
/// Hopper copy path would take ([`tma_loads`](super::pipeline_dot::tma_loads) on a copy with
/// every one rewritten), so that this pass keeps them for `pipeline-dot`; the others stay the
/// loads the kernel wrote. Run before the GPU-level passes, with the target and the
/// specialization's assumptions set, and `f.desc_slots` counting the implied slots.
pub fn imply(f: &mut Function, implied: &[ImpliedLoad]) {
    if f.target != Some(tile_core::Target::Sm90a) {
        return;
    }
    let found = still_implied(f, implied);
    if found.is_empty() {
        return;
    }
    let mut trial = f.clone();
    let rewritten: Vec<OpId> = found.iter().map(|l| rewrite(&mut trial, l)).collect();
    let kept = super::pipeline_dot::tma_loads(&trial);
    for (l, d) in found.iter().zip(rewritten) {
        if kept.contains(&d) {
            rewrite(f, l);
        }
    }
}

/// Replaces the load of `l` by its `desc_load` (operands in `i64`, coordinates `i32`, a left-out
/// stride 1 and coordinate 0 made constants); returns the new op.
fn rewrite(f: &mut Function, l: &ImpliedLoad) -> OpId {
    let d = f.op(l.load).clone();
    let at = f.blocks[d.block.index()]
        .ops
        .iter()
        .position(|&o| o == l.load)
        .unwrap_or(0);
    let mut b = Builder { block: d.block, at };
    let wide = |f: &mut Function, b: &mut Builder, v: Option<ValueId>, default: i64| match v {
        Some(v) if f.ty(v) == &Type::scalar(DType::I64) => v,
        Some(v) => b.val(f, OpKind::Cast, vec![v], Type::scalar(DType::I64)),
        None => b.int(f, default, DType::I64),
    };
    let dims = l.dims.map(|v| wide(f, &mut b, Some(v), 0));
    let strides = l.strides.map(|v| wide(f, &mut b, v, 1));
    let coords = l
        .coords
        .map(|c| c.unwrap_or_else(|| b.int(f, 0, DType::I32)));
    let mut operands = vec![l.ptr];
    operands.extend(dims);
    operands.extend(strides);
    operands.extend(coords);
    let ty = f.ty(d.results[0]).clone();
    let op = b.op(
        f,
        OpKind::DescLoad { slot: l.host.slot },
        operands,
        vec![ty],
    );
    let v = f.op(op).results[0];
    f.replace_all_uses(d.results[0], v);
    f.detach(l.load);
    op
}

/// Whether `v` is the integer 1 (a constant, possibly widened by a cast).
fn is_one(f: &Function, v: ValueId) -> bool {
    match f.constant_of(v) {
        Some(ConstValue::Int(1)) => true,
        Some(_) => false,
        None => f.def_op(v).is_some_and(|d| {
            let d = f.op(d);
            matches!(d.kind, OpKind::Cast)
                && f.ty(d.operands[0]).dtype().is_some_and(DType::is_int)
                && is_one(f, d.operands[0])
        }),
    }
}

/// Replaces the descriptor access `op` by its expansion (see the module documentation).
fn expand(f: &mut Function, op: OpId) {
    let d = f.op(op).clone();
    let rank = desc_rank(f, op);
    let (ptr, dims, strides, coords) = desc_operands(&d.operands, rank);
    let (ptr, dims, strides, coords) = (ptr, dims.to_vec(), strides.to_vec(), coords.to_vec());
    let block = d.block;
    let at = f.blocks[block.index()]
        .ops
        .iter()
        .position(|&o| o == op)
        .unwrap_or(0);
    let mut b = Builder { block, at };
    let (shape, elem) = match d.kind {
        OpKind::DescLoad { .. } => {
            let t = f.ty(d.results[0]);
            (t.shape.clone(), t.elem)
        }
        _ => {
            let t = f.ty(*d.operands.last().unwrap_or(&ptr));
            (t.shape.clone(), t.elem)
        }
    };
    let i64s = |n: u32| Type::tensor(Elem::Scalar(DType::I64), vec![n]);
    let zero = b.int(f, 0, DType::I64);
    let mut offs: Option<ValueId> = None;
    let mut mask: Option<ValueId> = None;
    for dim in 0..rank {
        let n = shape[dim];
        // The tile's indices along `dim`, in 64 bits.
        let range = b.val(
            f,
            OpKind::Arange {
                start: 0,
                end: i64::from(n),
            },
            vec![],
            Type::tensor(Elem::Scalar(DType::I32), vec![n]),
        );
        let range = b.val(f, OpKind::Cast, vec![range], i64s(n));
        let c = b.val(f, OpKind::Cast, vec![coords[dim]], Type::scalar(DType::I64));
        let c = b.val(f, OpKind::Splat, vec![c], i64s(n));
        let idx = b.val(f, OpKind::Binary(BinOp::Add), vec![c, range], i64s(n));
        // Offsets along `dim`, and which indices lie inside the extent.
        let off = if is_one(f, strides[dim]) {
            idx
        } else {
            let s = b.val(f, OpKind::Splat, vec![strides[dim]], i64s(n));
            b.val(f, OpKind::Binary(BinOp::Mul), vec![idx, s], i64s(n))
        };
        let bools = Type::tensor(Elem::Scalar(DType::I1), vec![n]);
        let z = b.val(f, OpKind::Splat, vec![zero], i64s(n));
        let lo = b.val(f, OpKind::Cmp(CmpPred::Ge), vec![idx, z], bools.clone());
        let ext = b.val(f, OpKind::Splat, vec![dims[dim]], i64s(n));
        let hi = b.val(f, OpKind::Cmp(CmpPred::Lt), vec![idx, ext], bools.clone());
        let inside = b.val(f, OpKind::Binary(BinOp::And), vec![lo, hi], bools);
        // Placed along `dim` of the tile and repeated along the others.
        let off = place(f, &mut b, off, dim, &shape);
        let inside = place(f, &mut b, inside, dim, &shape);
        offs = Some(match offs {
            None => off,
            Some(o) => b.val(
                f,
                OpKind::Binary(BinOp::Add),
                vec![o, off],
                f.ty(off).clone(),
            ),
        });
        mask = Some(match mask {
            None => inside,
            Some(m) => b.val(
                f,
                OpKind::Binary(BinOp::And),
                vec![m, inside],
                f.ty(inside).clone(),
            ),
        });
    }
    let (Some(offs), Some(mask)) = (offs, mask) else {
        return;
    };
    let ptr_ty = f.ty(ptr).clone();
    let ptrs_ty = Type::tensor(ptr_ty.elem, shape.clone());
    let base = b.val(f, OpKind::Splat, vec![ptr], ptrs_ty.clone());
    let ptrs = b.val(f, OpKind::AddPtr, vec![base, offs], ptrs_ty);
    match d.kind {
        OpKind::DescLoad { .. } => {
            let dt = elem.dtype_or_i32();
            let z = b.int_or_float_zero(f, dt);
            let other = b.val(
                f,
                OpKind::Splat,
                vec![z],
                Type::tensor(Elem::Scalar(dt), shape.clone()),
            );
            let load = b.val(
                f,
                OpKind::Load {
                    vec: 1,
                    evict: Evict::Normal,
                },
                vec![ptrs, mask, other],
                Type::tensor(elem, shape),
            );
            f.replace_all_uses(d.results[0], load);
        }
        _ => {
            let value = *d.operands.last().unwrap_or(&ptr);
            b.op(
                f,
                OpKind::Store {
                    vec: 1,
                    evict: Evict::Normal,
                },
                vec![ptrs, value, mask],
                vec![],
            );
        }
    }
    f.detach(op);
}

/// The 1-D tensor `v` (extent `shape[dim]`) as a tensor of `shape`: along `dim`, repeated along
/// the other dimension (a no-op for rank 1).
fn place(f: &mut Function, b: &mut Builder, v: ValueId, dim: usize, shape: &[u32]) -> ValueId {
    if shape.len() == 1 {
        return v;
    }
    let elem = f.ty(v).elem;
    // Rank 2: the other dimension gets extent 1 first (`v[:, None]` for rows, `v[None, :]`).
    let axis = 1 - dim as u32;
    let mut one = shape.to_vec();
    one[1 - dim] = 1;
    let e = b.val(
        f,
        OpKind::ExpandDims { axis },
        vec![v],
        Type::tensor(elem, one),
    );
    b.val(
        f,
        OpKind::Broadcast,
        vec![e],
        Type::tensor(elem, shape.to_vec()),
    )
}

trait ElemDType {
    /// The element's number type (`i32` for a pointer element, which no descriptor has).
    fn dtype_or_i32(self) -> DType;
}

impl ElemDType for Elem {
    fn dtype_or_i32(self) -> DType {
        match self {
            Elem::Scalar(d) => d,
            Elem::Ptr(_) => DType::I32,
        }
    }
}

impl Builder {
    /// The zero of number type `d`, as a scalar constant.
    fn int_or_float_zero(&mut self, f: &mut Function, d: DType) -> ValueId {
        let c = if d.is_float() {
            ConstValue::Float(0.0)
        } else {
            ConstValue::Int(0)
        };
        self.val(f, OpKind::Constant(c), vec![], Type::scalar(d))
    }
}
