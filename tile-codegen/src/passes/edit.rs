//! What the rewriting passes share to edit a kernel: a cursor that inserts ops into a block at a
//! position ([`Builder`]; each pass adds the constructions it needs in its own `impl`), and the
//! use count of every value.

use std::collections::HashMap;

use tile_core::ir::{BlockId, ConstValue, DType, Function, OpId, OpKind, Type, ValueId};

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
