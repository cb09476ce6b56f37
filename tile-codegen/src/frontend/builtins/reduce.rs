//! The reductions along an axis, written as methods: `sum`, `max`, `min`, and `argmax` and
//! `argmin`, which are composed of a reduction, a comparison and a `min` of indices.

use quote::ToTokens;
use syn::Expr;
use tile_core::ir::{CmpPred, ConstValue, DType, Elem, OpKind, ReduceKind, Type, ValueId};

use crate::frontend::walker::{err, unreachable_ptr, Lowering, Val};

impl Lowering {
    /// `x.sum(axis)` and its siblings: the `kind` reduction of the receiver along `axis` (which a
    /// 1-D tile may leave out), or with `arg` the index of its first extreme.
    pub(super) fn reduce_method(
        &mut self,
        kind: ReduceKind,
        arg: bool,
        mc: &syn::ExprMethodCall,
        e: &Expr,
    ) -> syn::Result<Val> {
        let name = mc.method.to_string();
        if mc.args.len() > 1 {
            return Err(err(
                e,
                format!("`.{name}()` takes at most 1 argument (the axis)"),
            ));
        }
        let v = self.expr(&mc.receiver)?;
        let Some(t) = self.ty(v).filter(|t| t.is_tensor()) else {
            return Err(err(
                &mc.receiver,
                format!("`.{name}()` reduces a tile; this is a scalar"),
            ));
        };
        let axis = match mc.args.first() {
            None if t.shape.len() == 1 => 0,
            None => {
                return Err(err(
                    e,
                    format!(
                        "`.{name}()` of a {}-D tile needs an axis: `.{name}(0)` … `.{name}({})`",
                        t.shape.len(),
                        t.shape.len() - 1
                    ),
                ))
            }
            Some(a) => {
                let av = self.expr(a)?;
                self.const_arg(av, a, "the reduction axis")?
            }
        };
        if axis < 0 || axis as usize >= t.shape.len() {
            let at: &dyn ToTokens = match mc.args.first() {
                Some(a) => a,
                None => e,
            };
            return Err(err(
                at,
                format!(
                    "axis {axis} is out of range for a tile of rank {}",
                    t.shape.len()
                ),
            ));
        }
        match t.dtype() {
            Some(d) if d.is_arith() => {}
            other => {
                let found = other.map_or("pointers".to_string(), |d| format!("`{d}`"));
                return Err(err(
                    e,
                    format!(
                        "`.{name}()` takes tiles of f32 or 32- or 64-bit integers, found {found}"
                    ),
                ));
            }
        }
        let Val::V(id) = v else { unreachable_ptr() };
        let mut shape = t.shape.clone();
        shape.remove(axis as usize);
        let reduced = self.push(
            OpKind::Reduce {
                kind,
                axis: axis as u32,
            },
            vec![id],
            Type::tensor(t.elem, shape.clone()),
        );
        if !arg {
            return Ok(Val::V(reduced));
        }
        Ok(Val::V(self.arg_index(id, &t, axis as u32, reduced, &shape)))
    }

    /// The `i32` index along `axis` of the first element of `x` (type `t`) equal to `extreme`, its
    /// maximum or minimum along `axis` (shape `rshape`): the smallest index `i` with
    /// `x[.., i, ..] == extreme`, by a `min` reduction of the indices where that holds and the
    /// extent elsewhere. NaN elements never equal the extreme (`max`/`min` ignore them); where
    /// every element is NaN the result is 0.
    fn arg_index(
        &mut self,
        x: ValueId,
        t: &Type,
        axis: u32,
        extreme: ValueId,
        rshape: &[u32],
    ) -> ValueId {
        let i1 = |shape: &[u32]| Type::tensor(Elem::Scalar(DType::I1), shape.to_vec());
        let i32t = |shape: &[u32]| Type::tensor(Elem::Scalar(DType::I32), shape.to_vec());
        let n = t.shape[axis as usize];
        // The indices along `axis`, broadcast to the tile's shape.
        let mut idx = self.push(
            OpKind::Arange {
                start: 0,
                end: i64::from(n),
            },
            vec![],
            i32t(&[n]),
        );
        if t.shape.len() == 2 {
            let mut e = vec![n];
            e.insert(1 - axis as usize, 1);
            idx = self.push(OpKind::ExpandDims { axis: 1 - axis }, vec![idx], i32t(&e));
            idx = self.push(OpKind::Broadcast, vec![idx], i32t(&t.shape));
        }
        // The extreme, broadcast back along `axis`.
        let mut ext = extreme;
        if rshape.is_empty() {
            ext = self.push(OpKind::Splat, vec![ext], t.clone());
        } else {
            let mut e = rshape.to_vec();
            e.insert(axis as usize, 1);
            ext = self.push(
                OpKind::ExpandDims { axis },
                vec![ext],
                Type::tensor(t.elem, e),
            );
            ext = self.push(OpKind::Broadcast, vec![ext], t.clone());
        }
        let hit = self.push(OpKind::Cmp(CmpPred::Eq), vec![x, ext], i1(&t.shape));
        let n_c = self.push(
            OpKind::Constant(ConstValue::Int(i64::from(n))),
            vec![],
            Type::scalar(DType::I32),
        );
        let n_t = self.push(OpKind::Splat, vec![n_c], i32t(&t.shape));
        let cand = self.push(OpKind::Select, vec![hit, idx, n_t], i32t(&t.shape));
        let first = self.push(
            OpKind::Reduce {
                kind: ReduceKind::Min,
                axis,
            },
            vec![cand],
            i32t(rshape),
        );
        // Where nothing matched (all NaN): 0.
        let (n_r, zero) = if rshape.is_empty() {
            let z = self.push(
                OpKind::Constant(ConstValue::Int(0)),
                vec![],
                Type::scalar(DType::I32),
            );
            (n_c, z)
        } else {
            let z = self.push(
                OpKind::Constant(ConstValue::Int(0)),
                vec![],
                Type::scalar(DType::I32),
            );
            let nr = self.push(OpKind::Splat, vec![n_c], i32t(rshape));
            let zr = self.push(OpKind::Splat, vec![z], i32t(rshape));
            (nr, zr)
        };
        let none = self.push(OpKind::Cmp(CmpPred::Eq), vec![first, n_r], i1(rshape));
        self.push(OpKind::Select, vec![none, zero, first], i32t(rshape))
    }
}
