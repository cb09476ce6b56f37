//! Builtins that make tiles and change their shape: `arange`, `zeros`, `full`, `expand_dims`,
//! `trans`, `reshape`, `broadcast_to` and `roll`, and the shape argument (`N` or `[M, N]`) they
//! take.

use quote::ToTokens;
use syn::Expr;
use tile_core::ir::{DType, Elem, OpKind, Type};

use super::Builtin;
use crate::frontend::typing::joint_shape;
use crate::frontend::walker::{err, unreachable_ptr, Lowering, Val};

impl Lowering {
    /// `arange(start, end)`: the `i32` tile `start..end`.
    pub(super) fn arange(&mut self, args: &[&Expr], c: &syn::ExprCall) -> syn::Result<Val> {
        let s = self.expr(args[0])?;
        let start = self.const_arg(s, args[0], "the start of `arange`")?;
        let e = self.expr(args[1])?;
        let end = self.const_arg(e, args[1], "the end of `arange`")?;
        let n = i128::from(end) - i128::from(start);
        if n <= 0 || !(n as u128).is_power_of_two() || n > (1 << 20) {
            return Err(err(c, format!("`arange({start}, {end})` has {n} elements; a tile size is a power of two from 1 to 2^20")));
        }
        if i32::try_from(start).is_err() || i32::try_from(end).is_err() {
            return Err(err(c, "`arange` bounds must fit in i32"));
        }
        self.check_elements(&[n as u32], c)?;
        Ok(Val::V(self.push(
            OpKind::Arange { start, end },
            vec![],
            Type::tensor(Elem::Scalar(DType::I32), vec![n as u32]),
        )))
    }

    /// `zeros(shape)` or `full(shape, value)` (`b`): a tile of one value.
    pub(super) fn full(
        &mut self,
        b: Builtin,
        args: &[&Expr],
        c: &syn::ExprCall,
    ) -> syn::Result<Val> {
        let zeros = b == Builtin::Zeros;
        let shape = self.shape_arg(args[0])?;
        let v = if zeros {
            Val::Float(0.0)
        } else {
            self.expr(args[1])?
        };
        let d = match (self.ty(v), v) {
            (Some(t), _) if t.is_tensor() || t.elem.pointee().is_some() => {
                return Err(err(args[1], "the value of `full` is a number"))
            }
            (Some(t), _) => t.dtype().unwrap_or(DType::F32),
            (None, Val::Int(_)) => DType::I32,
            (None, _) => DType::F32,
        };
        let at: &dyn ToTokens = if zeros { c } else { args[1] };
        Ok(Val::V(self.materialize(v, d, &shape, at)?))
    }

    /// A tile shape argument: `N` or `[M, N]`, compile-time powers of two, rank 1 or 2.
    fn shape_arg(&mut self, e: &Expr) -> syn::Result<Vec<u32>> {
        let dims: Vec<&Expr> = match e {
            Expr::Array(a) => a.elems.iter().collect(),
            other => vec![other],
        };
        if dims.is_empty() || dims.len() > 2 {
            return Err(err(
                e,
                "a tile shape has 1 or 2 dimensions: `N` or `[M, N]`",
            ));
        }
        let mut shape = Vec::with_capacity(dims.len());
        for d in dims {
            let v = self.expr(d)?;
            let n = self.const_arg(v, d, "a tile dimension")?;
            if n <= 0 || !(n as u64).is_power_of_two() || n > (1 << 20) {
                return Err(err(
                    d,
                    format!("a tile dimension is a power of two from 1 to 2^20, found {n}"),
                ));
            }
            shape.push(n as u32);
        }
        self.check_elements(&shape, e)?;
        Ok(shape)
    }

    /// `x.expand_dims(axis)`, the method form of [`Lowering::expand_dims`].
    pub(super) fn expand_dims_method(
        &mut self,
        mc: &syn::ExprMethodCall,
        e: &Expr,
    ) -> syn::Result<Val> {
        if mc.args.len() != 1 {
            return Err(err(e, "`.expand_dims(axis)` takes 1 argument (the axis)"));
        }
        let v = self.expr(&mc.receiver)?;
        self.expand_dims(v, &mc.receiver, &mc.args[0])
    }

    /// `expand_dims(x, axis)` / `x.expand_dims(axis)`: `x` with an extent-1 dimension inserted at
    /// `axis` (Triton's `x[:, None]` is `x.expand_dims(1)`). Tiles have rank 2 at most. A scalar
    /// becomes a tile of one element (axis 0), as in Triton: so `t.max(AXIS).expand_dims(AXIS)`
    /// broadcasts against `t` whatever its rank, and tile functions need not tell the ranks apart.
    pub(super) fn expand_dims(&mut self, v: Val, at: &Expr, axis_expr: &Expr) -> syn::Result<Val> {
        let Some(t) = self.ty(v).filter(|t| t.is_tensor()) else {
            let av = self.expr(axis_expr)?;
            let axis = self.const_arg(av, axis_expr, "the axis of `expand_dims`")?;
            if axis != 0 {
                return Err(err(
                    axis_expr,
                    format!("axis {axis} is out of range for expanding a scalar (0)"),
                ));
            }
            let Some(st) = self.ty(v) else {
                return Err(err(at, "`expand_dims` takes a tile or a typed scalar; give this literal a type (`full([1], v)`)"));
            };
            let Val::V(id) = v else { unreachable_ptr() };
            return Ok(Val::V(self.push(
                OpKind::Splat,
                vec![id],
                Type::tensor(st.elem, vec![1]),
            )));
        };
        let av = self.expr(axis_expr)?;
        let axis = self.const_arg(av, axis_expr, "the axis of `expand_dims`")?;
        if axis < 0 || axis as usize > t.shape.len() {
            return Err(err(
                axis_expr,
                format!(
                    "axis {axis} is out of range for expanding a tile of rank {} (0 ..= {})",
                    t.shape.len(),
                    t.shape.len()
                ),
            ));
        }
        if t.shape.len() >= 2 {
            return Err(err(
                at,
                "tiles have at most 2 dimensions; this one has 2 already",
            ));
        }
        let Val::V(id) = v else { unreachable_ptr() };
        let mut shape = t.shape.clone();
        shape.insert(axis as usize, 1);
        Ok(Val::V(self.push(
            OpKind::ExpandDims { axis: axis as u32 },
            vec![id],
            Type::tensor(t.elem, shape),
        )))
    }

    /// `x.trans()`, `x.reshape(shape)` and `x.broadcast_to(shape)` (`b`), the method forms of
    /// [`Lowering::trans`], [`Lowering::reshape`] and [`Lowering::broadcast_to`].
    pub(super) fn shape_method(
        &mut self,
        b: Builtin,
        mc: &syn::ExprMethodCall,
        e: &Expr,
    ) -> syn::Result<Val> {
        let want = usize::from(b != Builtin::Trans);
        if mc.args.len() != want {
            let what = if want == 0 {
                "no arguments"
            } else {
                "1 argument (the shape: `N` or `[M, N]`)"
            };
            return Err(err(
                e,
                format!("`.{}()` takes {what}, found {}", b.name(), mc.args.len()),
            ));
        }
        let v = self.expr(&mc.receiver)?;
        match b {
            Builtin::Trans => self.trans(v, &mc.receiver),
            Builtin::Reshape => self.reshape(v, &mc.receiver, &mc.args[0]),
            _ => self.broadcast_to(v, &mc.receiver, &mc.args[0]),
        }
    }

    /// `trans(x)` / `x.trans()`: the transpose of a 2-D tile (`[i][j]` of the result is
    /// `x[j][i]`).
    pub(super) fn trans(&mut self, v: Val, at: &Expr) -> syn::Result<Val> {
        let t = self.ty(v).filter(|t| t.shape.len() == 2).ok_or_else(|| {
            let what = match self.ty(v) {
                Some(t) if t.is_tensor() => format!("a tile of shape {:?}", t.shape),
                _ => "a scalar".to_string(),
            };
            err(
                at,
                format!("`trans` transposes a 2-D tile; this is {what} (`reshape` changes a 1-D tile's shape)"),
            )
        })?;
        let Val::V(id) = v else { unreachable_ptr() };
        Ok(Val::V(self.push(
            OpKind::Trans,
            vec![id],
            Type::tensor(t.elem, vec![t.shape[1], t.shape[0]]),
        )))
    }

    /// `interleave(a, b)`, or with `join` `join(a, b)`: the two tiles (`a` at `at_a`, `b` at
    /// `at_b`) of one shape and element type merged along their last dimension, as the
    /// `interleave` op; `join` of 1-D tiles reshapes that to `[n, 2]`.
    pub(super) fn interleave(
        &mut self,
        join: bool,
        a: Val,
        b: Val,
        at_a: &Expr,
        at_b: &Expr,
    ) -> syn::Result<Val> {
        let name = if join { "join" } else { "interleave" };
        let tile = |me: &Self, v: Val, at: &Expr| {
            me.ty(v).filter(|t| t.is_tensor()).ok_or_else(|| {
                err(
                    at,
                    format!("`{name}` takes two tiles; this is a scalar (`full(shape, x)` makes a tile of one value)"),
                )
            })
        };
        let (ta, tb) = (tile(self, a, at_a)?, tile(self, b, at_b)?);
        if ta.shape != tb.shape || ta.elem != tb.elem {
            let hint = match ta.elem.dtype() {
                Some(d) if ta.shape == tb.shape => format!(" (`as {d}` converts it)"),
                _ => String::new(),
            };
            return Err(err(
                at_b,
                format!(
                    "`{name}` takes two tiles of one shape and element type: the first is {} of shape {:?}, this one {} of shape {:?}{hint}",
                    ta.elem, ta.shape, tb.elem, tb.shape
                ),
            ));
        }
        if join && ta.shape.len() != 1 {
            return Err(err(
                at_a,
                format!(
                    "`join` stacks 1-D tiles along a new last dimension, and tiles have at most 2 dimensions; this tile has shape {:?} (`interleave(a, b)` merges tiles along their last dimension)",
                    ta.shape
                ),
            ));
        }
        let mut shape = ta.shape.clone();
        if let Some(last) = shape.last_mut() {
            *last = last.checked_mul(2).ok_or_else(|| {
                err(
                    at_a,
                    format!(
                        "`{name}` of tiles of shape {:?} has too many elements",
                        ta.shape
                    ),
                )
            })?;
        }
        self.check_elements(&shape, at_a)?;
        let (Val::V(x), Val::V(y)) = (a, b) else {
            unreachable_ptr()
        };
        let merged = self.push(OpKind::Interleave, vec![x, y], Type::tensor(ta.elem, shape));
        if !join {
            return Ok(Val::V(merged));
        }
        Ok(Val::V(self.push(
            OpKind::Reshape,
            vec![merged],
            Type::tensor(ta.elem, vec![ta.shape[0], 2]),
        )))
    }

    /// `let (a, b) = split(t)` / `t.split()`: the two columns of `t` (at `at`), a 2-D tile whose
    /// last extent is 2, as a `reshape` to one dimension and a `deinterleave`.
    pub(in crate::frontend) fn split(&mut self, v: Val, at: &Expr) -> syn::Result<Vec<Val>> {
        let t = self
            .ty(v)
            .filter(|t| t.shape.len() == 2 && t.shape[1] == 2)
            .ok_or_else(|| {
                let what = match self.ty(v) {
                    Some(t) if t.is_tensor() => format!("a tile of shape {:?}", t.shape),
                    _ => "a scalar".to_string(),
                };
                err(
                    at,
                    format!("`split` takes a 2-D tile whose last extent is 2 (as `join` makes); this is {what} (`split(t.reshape([n, 2]))` splits the even and odd positions of a 1-D tile)"),
                )
            })?;
        let Val::V(id) = v else { unreachable_ptr() };
        let n = t.shape[0];
        let flat = self.push(OpKind::Reshape, vec![id], Type::tensor(t.elem, vec![2 * n]));
        let half = Type::tensor(t.elem, vec![n]);
        let op = self.f.push_op(
            self.block,
            OpKind::Deinterleave,
            vec![flat],
            vec![half.clone(), half],
        );
        Ok(self.f.op(op).results.iter().map(|&r| Val::V(r)).collect())
    }

    /// The error for `split` used as one value.
    pub(in crate::frontend) fn split_one_value(&self, at: &dyn ToTokens) -> syn::Error {
        err(
            at,
            "`split` gives 2 tiles: bind them with `let (a, b) = split(t);` (or `t.split()`)",
        )
    }

    /// `reshape(x, shape)` / `x.reshape(shape)`: the elements of `x` in row-major order in
    /// `shape`, which holds as many.
    pub(super) fn reshape(&mut self, v: Val, at: &Expr, shape_expr: &Expr) -> syn::Result<Val> {
        let Some(t) = self.ty(v).filter(|t| t.is_tensor()) else {
            return Err(err(
                at,
                "`reshape` changes a tile's shape; this is a scalar (`full` or `broadcast_to` make a tile of one value)",
            ));
        };
        let shape = self.shape_arg(shape_expr)?;
        let count = |s: &[u32]| s.iter().map(|&d| u64::from(d)).product::<u64>();
        if count(&shape) != count(&t.shape) {
            return Err(err(
                shape_expr,
                format!(
                    "`reshape` keeps the element count: a tile of shape {:?} ({} elements) cannot take the shape {shape:?} ({} elements)",
                    t.shape,
                    count(&t.shape),
                    count(&shape)
                ),
            ));
        }
        let Val::V(id) = v else { unreachable_ptr() };
        if shape == t.shape {
            return Ok(v);
        }
        Ok(Val::V(self.push(
            OpKind::Reshape,
            vec![id],
            Type::tensor(t.elem, shape),
        )))
    }

    /// `broadcast_to(x, shape)` / `x.broadcast_to(shape)`: `x` repeated to `shape` by NumPy's
    /// rules (leading dimensions added, extent-1 dimensions repeated), through `expand_dims` and
    /// `broadcast`; a scalar (a literal: `i32` or `f32`) is splat.
    pub(super) fn broadcast_to(
        &mut self,
        v: Val,
        at: &Expr,
        shape_expr: &Expr,
    ) -> syn::Result<Val> {
        let shape = self.shape_arg(shape_expr)?;
        let Some(t) = self.ty(v) else {
            let d = if matches!(v, Val::Int(_)) {
                DType::I32
            } else {
                DType::F32
            };
            return Ok(Val::V(self.materialize(v, d, &shape, at)?));
        };
        if t.is_tensor() && joint_shape(&t.shape, &shape).as_deref() != Some(&shape[..]) {
            return Err(err(
                shape_expr,
                format!(
                    "a tile of shape {:?} does not broadcast to {shape:?}: aligned from the last dimension, each of its extents must be 1 or the target's, and it may not have more dimensions",
                    t.shape
                ),
            ));
        }
        let Val::V(id) = v else { unreachable_ptr() };
        Ok(Val::V(self.broadcast(id, &shape, at)?))
    }

    /// `x.roll(shift, axis)`: `x` rotated by `shift` positions toward higher indices along `axis`
    /// (NumPy's `roll`; a negative shift rotates the other way). Both are compile-time integers.
    fn roll(&mut self, v: Val, at: &Expr, shift_expr: &Expr, axis_expr: &Expr) -> syn::Result<Val> {
        let Some(t) = self.ty(v).filter(|t| t.is_tensor()) else {
            return Err(err(at, "`roll` rotates a tile; this is a scalar"));
        };
        let av = self.expr(axis_expr)?;
        let axis = self.const_arg(av, axis_expr, "the axis of `roll`")?;
        if axis < 0 || axis as usize >= t.shape.len() {
            return Err(err(
                axis_expr,
                format!(
                    "axis {axis} is out of range for a tile of rank {} (0 ..= {})",
                    t.shape.len(),
                    t.shape.len() - 1
                ),
            ));
        }
        let sv = self.expr(shift_expr)?;
        let shift = self.const_arg(sv, shift_expr, "the shift of `roll`")?;
        let n = i64::from(t.shape[axis as usize]);
        let Val::V(id) = v else { unreachable_ptr() };
        Ok(Val::V(self.push(
            OpKind::Roll {
                axis: axis as u32,
                shift: shift.rem_euclid(n) as u32,
            },
            vec![id],
            t,
        )))
    }

    /// `x.roll(shift, axis)` as written: checks the count, then [`Lowering::roll`].
    pub(super) fn roll_method(&mut self, mc: &syn::ExprMethodCall, e: &Expr) -> syn::Result<Val> {
        if mc.args.len() != 2 {
            return Err(err(
                e,
                "`.roll(shift, axis)` takes 2 arguments (the shift and the axis)",
            ));
        }
        let v = self.expr(&mc.receiver)?;
        self.roll(v, &mc.receiver, &mc.args[0], &mc.args[1])
    }
}
