//! The atomics: `atomic_add`, `atomic_max`, `atomic_min`, `atomic_and`, `atomic_or`,
//! `atomic_xor`, `atomic_xchg` and `atomic_cas`, with their memory order (`sem`) and scope.

use syn::Expr;
use tile_core::ir::{AtomicOp, DType, Elem, MemScope, MemSem, OpKind};

use super::args::{bind_args, named_word};
use super::memory::conversion;
use super::Builtin;
use crate::frontend::typing::joint_shape;
use crate::frontend::walker::{err, Lowering, Val};

impl Lowering {
    /// `atomic_add(ptrs, values[, mask][, sem = …][, scope = …])` and its siblings;
    /// `atomic_cas(ptrs, cmp, values[, mask]…)`.
    pub(super) fn atomic(
        &mut self,
        b: Builtin,
        args: &[&Expr],
        c: &syn::ExprCall,
    ) -> syn::Result<Val> {
        let name = b.name();
        let op = match b {
            Builtin::AtomicAdd => Some(AtomicOp::Add),
            Builtin::AtomicMax => Some(AtomicOp::Max),
            Builtin::AtomicMin => Some(AtomicOp::Min),
            Builtin::AtomicAnd => Some(AtomicOp::And),
            Builtin::AtomicOr => Some(AtomicOp::Or),
            Builtin::AtomicXor => Some(AtomicOp::Xor),
            Builtin::AtomicXchg => Some(AtomicOp::Xchg),
            _ => None,
        };
        let values = if op.is_some() { 1 } else { 2 };
        let params: &[&str] = if op.is_some() {
            &["ptrs", "values", "mask"]
        } else {
            &["ptrs", "cmp", "values", "mask"]
        };
        let (mut sem, mut scope) = (None, None);
        let (count, bound) = bind_args(
            name,
            args,
            params,
            1 + values,
            &["sem", "scope"],
            |key, n| {
                if key == 0 {
                    sem = Some(named_word(n, &MemSem::ALL, MemSem::name)?);
                } else {
                    scope = Some(named_word(n, &MemScope::ALL, MemScope::name)?);
                }
                Ok(())
            },
        )?;
        if !(1 + values..=2 + values).contains(&count) {
            return Err(err(
                c,
                format!(
                    "`{name}` takes {} to {} arguments (`{}`), found {}",
                    1 + values,
                    2 + values,
                    b.signature(),
                    count
                ),
            ));
        }
        let pos: Vec<&Expr> = bound[..=values].iter().flatten().copied().collect();
        let mask = bound[values + 1];
        let (pid, pty, d) = self.pointer_arg(pos[0], name)?;
        let takes = |t: DType| match op {
            Some(op) => op.takes(t),
            None => tile_core::ir::atomic_cas_takes(t),
        };
        if !takes(d) {
            let ok: Vec<String> = [
                DType::I32,
                DType::I64,
                DType::U32,
                DType::U64,
                DType::F32,
                DType::F64,
                DType::F16,
                DType::BF16,
            ]
            .into_iter()
            .filter(|&t| takes(t))
            .map(|t| format!("`Ptr<{t}>`"))
            .collect();
            return Err(err(
                pos[0],
                format!(
                    "`{name}` takes {}, found pointers to `{d}`",
                    ok.join(" or ")
                ),
            ));
        }
        let mut operands = vec![pid];
        for &a in &pos[1..=values] {
            let v = self.expr(a)?;
            if let Some(t) = self.ty(v) {
                if t.elem != Elem::Scalar(d) {
                    return Err(err(
                        a,
                        format!(
                            "`{name}` of `{}` values through `Ptr<{d}>`; write {}",
                            t.elem,
                            conversion(a, d)
                        ),
                    ));
                }
                if joint_shape(&t.shape, &pty.shape).as_deref() != Some(&pty.shape[..]) {
                    return Err(err(
                        a,
                        format!(
                            "the values have shape {:?}, the pointers {:?}",
                            t.shape, pty.shape
                        ),
                    ));
                }
            }
            operands.push(self.materialize(v, d, &pty.shape, a)?);
        }
        if let Some(m) = mask {
            operands.push(self.mask(m, &pty)?);
        }
        let sem = sem.unwrap_or_default();
        let scope = scope.unwrap_or_default();
        let kind = match op {
            Some(op) => OpKind::AtomicRmw { op, sem, scope },
            None => OpKind::AtomicCas { sem, scope },
        };
        Ok(Val::V(self.push(
            kind,
            operands,
            pty.with_elem(Elem::Scalar(d)),
        )))
    }
}
