//! What the rewriting passes share to edit a kernel: a cursor that inserts ops into a block at a
//! position ([`Builder`]; each pass adds the constructions it needs in its own `impl`), the
//! use count of every value, and copies of ops ([`clone_into`], operands [`renamed`]) and of a
//! load under one more
//! mask ([`masked_load`]: a load issued ahead of its iteration).

use std::collections::HashMap;

use tile_core::ir::{
    BinOp, BlockId, ConstValue, DType, Elem, Function, OpId, OpKind, Type, ValueId,
};

/// Inserts ops into `block` from position `at` on, each after the last.
pub(crate) struct Builder {
    pub(crate) block: BlockId,
    pub(crate) at: usize,
}

impl Builder {
    /// An op with one result per type in `tys`.
    pub(crate) fn op(
        &mut self,
        f: &mut Function,
        kind: OpKind,
        operands: Vec<ValueId>,
        tys: Vec<Type>,
    ) -> OpId {
        let op = f.insert_op(self.block, self.at, kind, operands, tys);
        self.at += 1;
        op
    }

    /// An op with one result, of type `ty`.
    pub(crate) fn val(
        &mut self,
        f: &mut Function,
        kind: OpKind,
        operands: Vec<ValueId>,
        ty: Type,
    ) -> ValueId {
        let op = self.op(f, kind, operands, vec![ty]);
        f.op(op).results[0]
    }

    /// The integer constant `c` as a scalar of type `d`.
    pub(crate) fn int(&mut self, f: &mut Function, c: i64, d: DType) -> ValueId {
        self.val(
            f,
            OpKind::Constant(ConstValue::Int(c)),
            vec![],
            Type::scalar(d),
        )
    }
}

/// Every use of every value in the kernel, counted.
pub(crate) fn use_counts(f: &Function) -> HashMap<ValueId, usize> {
    let mut n = HashMap::new();
    for op in f.walk() {
        for &v in &f.op(op).operands {
            *n.entry(v).or_insert(0) += 1;
        }
    }
    n
}

/// `values` with each one `map` names replaced by its image.
pub(crate) fn renamed(map: &HashMap<ValueId, ValueId>, values: &[ValueId]) -> Vec<ValueId> {
    values.iter().map(|v| *map.get(v).unwrap_or(v)).collect()
}

/// Inserts copies of `ops` into `block` at `*at` (advanced past them), operands renamed by
/// `map`, which gains their results.
pub(crate) fn clone_into(
    f: &mut Function,
    ops: &[OpId],
    map: &mut HashMap<ValueId, ValueId>,
    block: BlockId,
    at: &mut usize,
) {
    for &op in ops {
        let d = f.op(op).clone();
        let operands = renamed(map, &d.operands);
        let tys: Vec<Type> = d.results.iter().map(|&r| f.ty(r).clone()).collect();
        let new = f.insert_op(block, *at, d.kind.clone(), operands, tys);
        f.ops[new.index()].loc = d.loc;
        *at += 1;
        for (&r, &n) in d.results.iter().zip(&f.op(new).results.clone()) {
            map.insert(r, n);
        }
    }
}

/// Inserts a copy of `slice` (ending with `load`) with `map`'s renaming, the load masked as well
/// by the `i1` scalar `ok` makes (called after the slice's other ops are in place, at the
/// cursor): its `other`, or zeros, where that is false. Returns the tile.
pub(crate) fn masked_load(
    f: &mut Function,
    slice: &[OpId],
    load: OpId,
    map: &mut HashMap<ValueId, ValueId>,
    ok: impl FnOnce(&mut Function, &mut usize) -> ValueId,
    block: BlockId,
    at: &mut usize,
) -> ValueId {
    let (before, _) = slice.split_at(slice.len().saturating_sub(1));
    clone_into(f, before, map, block, at);
    let ok = ok(f, at);
    let d = f.op(load).clone();
    let operands = renamed(map, &d.operands);
    let ty = f.ty(d.results[0]).clone();
    let mask_ty = ty.with_elem(Elem::Scalar(DType::I1));
    let mut emit = |f: &mut Function, kind: OpKind, operands: Vec<ValueId>, ty: Type| {
        let op = f.insert_op(block, *at, kind, operands, vec![ty]);
        f.ops[op.index()].loc = d.loc;
        *at += 1;
        f.op(op).results[0]
    };
    // A scalar load (a page number) takes the condition itself as its mask.
    let tensor = ty.is_tensor();
    let inside = if tensor {
        emit(f, OpKind::Splat, vec![ok], mask_ty.clone())
    } else {
        ok
    };
    let (mask, other) = if operands.len() == 3 {
        let m = emit(
            f,
            OpKind::Binary(BinOp::And),
            vec![operands[1], inside],
            mask_ty,
        );
        (m, operands[2])
    } else {
        let dt = ty.dtype().unwrap_or(DType::F32);
        let zero = if dt.is_float() {
            ConstValue::Float(0.0)
        } else {
            ConstValue::Int(0)
        };
        let z = emit(f, OpKind::Constant(zero), vec![], Type::scalar(dt));
        let z = if tensor {
            emit(f, OpKind::Splat, vec![z], ty.clone())
        } else {
            z
        };
        (inside, z)
    };
    emit(f, d.kind.clone(), vec![operands[0], mask, other], ty)
}
