//! The typing and broadcasting rules of the kernel language (Triton's `semantic.py`): how
//! literals take types, how shapes broadcast, which element types each operator takes, constant
//! folding with checked arithmetic, conversions, and the limits on a tile's size.
//!
//! Typing rules:
//! - Integer literals take the type the other operand needs (`i32`, `i64` or `f32`), `i32` alone;
//!   float literals are `f32` and never become integers. Two typed operands must have the same
//!   element type: there is no implicit conversion.
//! - Shapes broadcast as in NumPy (and Triton): a scalar is splat to a tile's shape; a 1-D tile
//!   meeting a 2-D one gains a leading dimension of extent 1; then dimensions of extent 1 repeat
//!   to the other operand's extent, and any other difference is a shape mismatch. So
//!   `rows.expand_dims(1) * stride + cols.expand_dims(0)` is a 2-D tile of offsets (Triton's
//!   `rows[:, None] * stride + cols[None, :]`). Tiles have rank 1 or 2.
//! - `ptr + offsets` (and `ptr - offsets`) advance a pointer by integer offsets, giving a tile of
//!   pointers when the offsets are a tile.
//! - Arithmetic on compile-time integers (literals, `Const` parameters) is folded, so `arange`
//!   bounds may be written `arange(0, 2 * BLOCK)`.

use quote::ToTokens;
use syn::{BinOp as SynBin, Expr, UnOp as SynUn};
use tile_core::ir::{BinOp, CmpPred, ConstValue, DType, Elem, OpKind, Type, UnOp, ValueId};

use super::walker::{err, unreachable_ptr, Lowering, Val};

/// The most elements one tile may hold (as Triton's `TRITON_MAX_TENSOR_NUMEL`).
pub const MAX_TILE_ELEMENTS: u64 = 1 << 20;

/// The most elements of one tile one thread may hold: a register each (at 32 bits), half of
/// the 255 a thread has, so that the rest of the program fits beside it (a 128 × 128 f32
/// accumulator on 4 warps is exactly this). Larger tiles spill, and take seconds to minutes to
/// compile.
pub const MAX_ELEMENTS_PER_THREAD: u64 = 128;

impl Lowering {
    /// Gives a literal the element type `d` (and `shape`), or returns the value as it is.
    pub(super) fn materialize(
        &mut self,
        v: Val,
        d: DType,
        shape: &[u32],
        at: &dyn ToTokens,
    ) -> syn::Result<ValueId> {
        let scalar = match v {
            Val::V(id) => id,
            Val::Int(i) => {
                let c = match d {
                    d if d.is_float() => ConstValue::Float(i as f64),
                    DType::I1 => {
                        return Err(err(
                            at,
                            "an integer literal is not a bool; write `true` or `false`",
                        ))
                    }
                    d => {
                        if !d.int_range().is_some_and(|r| r.contains(&i128::from(i))) {
                            return Err(err(at, format!("literal {i} does not fit in {d}")));
                        }
                        ConstValue::Int(i)
                    }
                };
                self.push(OpKind::Constant(c), vec![], Type::scalar(d))
            }
            Val::Float(x) => {
                if !d.is_float() {
                    return Err(err(at, format!("a float literal cannot be used as `{d}`")));
                }
                self.push(
                    OpKind::Constant(ConstValue::Float(x)),
                    vec![],
                    Type::scalar(d),
                )
            }
            Val::Desc(_) => return Err(self.not_a_value(at)),
        };
        self.broadcast(scalar, shape, at)
    }

    /// Brings `v` to `shape` by NumPy's rules: a scalar is splat; a tile of lower rank gains
    /// leading dimensions of extent 1 (`expand_dims`), then is repeated along its extent-1
    /// dimensions (`broadcast`). Any other difference is a shape mismatch.
    pub(super) fn broadcast(
        &mut self,
        v: ValueId,
        shape: &[u32],
        at: &dyn ToTokens,
    ) -> syn::Result<ValueId> {
        let ty = self.f.ty(v).clone();
        if ty.shape == shape {
            return Ok(v);
        }
        if ty.shape.is_empty() {
            return Ok(self.push(
                OpKind::Splat,
                vec![v],
                Type::tensor(ty.elem, shape.to_vec()),
            ));
        }
        if joint_shape(&ty.shape, shape).as_deref() != Some(shape) {
            return Err(err(
                at,
                format!(
                    "shape mismatch: a tile of shape {:?} where {:?} is needed",
                    ty.shape, shape
                ),
            ));
        }
        let mut v = v;
        let mut cur = ty.shape.clone();
        while cur.len() < shape.len() {
            cur.insert(0, 1);
            v = self.push(
                OpKind::ExpandDims { axis: 0 },
                vec![v],
                Type::tensor(ty.elem, cur.clone()),
            );
        }
        if cur != shape {
            v = self.push(
                OpKind::Broadcast,
                vec![v],
                Type::tensor(ty.elem, shape.to_vec()),
            );
        }
        Ok(v)
    }

    /// The shape two operands combine to (see [`joint_shape`]), or a spanned mismatch error; the
    /// result holds at most [`MAX_TILE_ELEMENTS`].
    pub(super) fn joint(&self, a: &[u32], b: &[u32], at: &dyn ToTokens) -> syn::Result<Vec<u32>> {
        let shape = joint_shape(a, b).ok_or_else(|| {
            err(
                at,
                format!(
                    "shape mismatch: {a:?} and {b:?} do not broadcast (each dimension must be equal, or 1 on one side)"
                ),
            )
        })?;
        self.check_elements(&shape, at)?;
        Ok(shape)
    }

    /// A spanned error when a tile of `shape` would hold more than [`MAX_TILE_ELEMENTS`], or more
    /// than [`MAX_ELEMENTS_PER_THREAD`] per thread on the most warps the kernel may have.
    pub(super) fn check_elements(&self, shape: &[u32], at: &dyn ToTokens) -> syn::Result<()> {
        let n = shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(u64::from(d)));
        let Some(n) = n.filter(|&n| n <= MAX_TILE_ELEMENTS) else {
            return Err(err(
                at,
                format!(
                    "a tile of shape {shape:?} holds more than {MAX_TILE_ELEMENTS} elements, the most one tile may hold"
                ),
            ));
        };
        let threads = 32 * u64::from(self.max_warps);
        if n > MAX_ELEMENTS_PER_THREAD * threads {
            return Err(err(
                at,
                format!(
                    "a tile of shape {shape:?} is {} elements per thread on {} warps; a thread holds at most {MAX_ELEMENTS_PER_THREAD} (use smaller tiles and a loop, or more warps)",
                    n / threads,
                    self.max_warps
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn fold_int(op: SynBin, a: i64, b: i64) -> Option<Val> {
        let v = match op {
            SynBin::Add(_) => a.checked_add(b)?,
            SynBin::Sub(_) => a.checked_sub(b)?,
            SynBin::Mul(_) => a.checked_mul(b)?,
            SynBin::Div(_) => a.checked_div(b)?,
            SynBin::Rem(_) => a.checked_rem(b)?,
            SynBin::BitAnd(_) => a & b,
            SynBin::BitOr(_) => a | b,
            SynBin::BitXor(_) => a ^ b,
            // A shift of constants keeps every bit, or it is an error.
            SynBin::Shl(_) if (0..63).contains(&b) && (a << b) >> b == a => a << b,
            SynBin::Shr(_) if (0..64).contains(&b) => a >> b,
            _ => return None,
        };
        Some(Val::Int(v))
    }

    pub(super) fn binary(&mut self, op: SynBin, l: Val, r: Val, at: &Expr) -> syn::Result<Val> {
        if let (Val::Int(a), Val::Int(b)) = (l, r) {
            if let Some(v) = Self::fold_int(op, a, b) {
                return Ok(v);
            }
            if matches!(
                op,
                SynBin::Add(_) | SynBin::Sub(_) | SynBin::Mul(_) | SynBin::Div(_) | SynBin::Rem(_)
            ) {
                let why = if b == 0 && matches!(op, SynBin::Div(_) | SynBin::Rem(_)) {
                    "this constant expression divides by zero"
                } else {
                    "this constant expression overflows i64"
                };
                return Err(err(at, why));
            }
            if matches!(op, SynBin::Shl(_) | SynBin::Shr(_)) {
                return Err(err(
                    at,
                    "this constant shift loses bits or shifts by a negative amount or by 64 or more",
                ));
            }
        }
        let (lt, mut rt) = (self.ty(l), self.ty(r));
        // A shift's amount may be of another integer type (as in Rust); it converts to the
        // shifted value's (a negative amount becomes a large unsigned one: past the width).
        let mut r = r;
        if let (SynBin::Shl(_) | SynBin::Shr(_), Some(a), Some(b), Val::V(id)) = (op, &lt, &rt, r) {
            let ints = a.dtype().is_some_and(DType::is_int) && b.dtype().is_some_and(DType::is_int);
            if ints && a.elem != b.elem && b.elem != Elem::Scalar(DType::I1) {
                let t = b.with_elem(a.elem);
                r = Val::V(self.push(OpKind::Cast, vec![id], t.clone()));
                rt = Some(t);
            }
        }
        let shape_of = |t: &Option<Type>| t.as_ref().map(|t| t.shape.clone()).unwrap_or_default();
        let shape = self.joint(&shape_of(&lt), &shape_of(&rt), at)?;
        // Pointer arithmetic.
        let lptr = lt.as_ref().and_then(|t| t.elem.pointee());
        let rptr = rt.as_ref().and_then(|t| t.elem.pointee());
        if lptr.is_some() || rptr.is_some() {
            let (p, off, pty) = match (lptr, rptr, op) {
                (Some(_), None, SynBin::Add(_) | SynBin::Sub(_)) => (l, r, lt.clone()),
                (None, Some(_), SynBin::Add(_)) => (r, l, rt.clone()),
                _ => {
                    return Err(err(
                        at,
                        "pointers support only `ptr + offsets` and `ptr - offsets` with integer offsets",
                    ))
                }
            };
            let Val::V(p) = p else { unreachable_ptr() };
            let pty = pty.unwrap_or_else(|| Type::ptr(DType::F32));
            let off_d = match self.ty(off) {
                None => DType::I32,
                Some(t) => match t.elem {
                    Elem::Scalar(d @ (DType::I32 | DType::I64)) => d,
                    other => {
                        return Err(err(
                            at,
                            format!("a pointer offset must be `i32` or `i64`, found `{other}`"),
                        ))
                    }
                },
            };
            if matches!(off, Val::Float(_)) {
                return Err(err(at, "a pointer offset must be an integer"));
            }
            let mut off = self.materialize(off, off_d, &shape, at)?;
            if matches!(op, SynBin::Sub(_)) {
                let t = self.f.ty(off).clone();
                off = self.push(OpKind::Unary(UnOp::Neg), vec![off], t);
            }
            let p = self.broadcast(p, &shape, at)?;
            return Ok(Val::V(self.push(
                OpKind::AddPtr,
                vec![p, off],
                Type::tensor(pty.elem, shape),
            )));
        }
        // Element type: a typed operand decides; literals adapt.
        let d = match (&lt, &rt, l, r) {
            (Some(a), Some(b), _, _) => {
                if a.elem != b.elem {
                    return Err(err(
                        at,
                        format!("mismatched element types `{}` and `{}`; there are no implicit conversions", a.elem, b.elem),
                    ));
                }
                a.dtype()
            }
            (Some(a), None, _, _) => a.dtype(),
            (None, Some(b), _, _) => b.dtype(),
            (None, None, Val::Float(_), _) | (None, None, _, Val::Float(_)) => Some(DType::F32),
            (None, None, _, _) => Some(DType::I32),
        };
        let Some(d) = d else { unreachable_ptr() };
        let a = self.materialize(l, d, &shape, at)?;
        let b = self.materialize(r, d, &shape, at)?;
        let ty = Type::tensor(Elem::Scalar(d), shape.clone());
        let arith = |me: &mut Self, bop: BinOp| -> syn::Result<Val> {
            if d.is_storage_float() && !bop.is_bitwise() {
                return Err(err(
                    at,
                    format!("`{d}` is a storage type; convert with `as f32` before arithmetic"),
                ));
            }
            if d != DType::I1 && d.is_int() && !d.is_arith() && !bop.is_bitwise() {
                return Err(err(
                    at,
                    format!(
                        "`{d}` is a storage type; convert with `as i32` (or `as u32`) before \
                         arithmetic"
                    ),
                ));
            }
            if d == DType::I1 && !bop.is_bitwise() {
                return Err(err(at, format!("`{}` is not defined on bools", bop.name())));
            }
            if bop.is_bitwise() && !d.is_int() {
                return Err(err(at, format!("`{}` is not defined on `{d}`", bop.name())));
            }
            Ok(Val::V(me.push(OpKind::Binary(bop), vec![a, b], ty.clone())))
        };
        let cmp = |me: &mut Self, p: CmpPred| -> syn::Result<Val> {
            if d.is_f8() {
                return Err(err(
                    at,
                    format!("`{d}` is a storage type; convert with `as f32` before comparing"),
                ));
            }
            Ok(Val::V(me.push(
                OpKind::Cmp(p),
                vec![a, b],
                Type::tensor(Elem::Scalar(DType::I1), shape.clone()),
            )))
        };
        match op {
            SynBin::Add(_) => arith(self, BinOp::Add),
            SynBin::Sub(_) => arith(self, BinOp::Sub),
            SynBin::Mul(_) => arith(self, BinOp::Mul),
            SynBin::Div(_) => arith(self, BinOp::Div),
            SynBin::Rem(_) if d.is_float() => Err(err(
                at,
                "`%` on floats is not supported yet (the GPU's `frem` is not exact `fmod`)",
            )),
            SynBin::Rem(_) => arith(self, BinOp::Rem),
            SynBin::BitAnd(_) => arith(self, BinOp::And),
            SynBin::BitOr(_) => arith(self, BinOp::Or),
            SynBin::BitXor(_) => arith(self, BinOp::Xor),
            SynBin::Shl(_) | SynBin::Shr(_) if !(d.is_int() && d.is_arith()) => Err(err(
                at,
                format!("shifts take 32- or 64-bit integers, found `{d}`"),
            )),
            SynBin::Shl(_) => arith(self, BinOp::Shl),
            SynBin::Shr(_) => arith(self, BinOp::Shr),
            SynBin::And(_) | SynBin::Or(_) => {
                if d != DType::I1 {
                    return Err(err(
                        at,
                        format!("`&&` and `||` take bools (masks), found `{d}`"),
                    ));
                }
                arith(
                    self,
                    if matches!(op, SynBin::And(_)) {
                        BinOp::And
                    } else {
                        BinOp::Or
                    },
                )
            }
            SynBin::Lt(_) => cmp(self, CmpPred::Lt),
            SynBin::Le(_) => cmp(self, CmpPred::Le),
            SynBin::Gt(_) => cmp(self, CmpPred::Gt),
            SynBin::Ge(_) => cmp(self, CmpPred::Ge),
            SynBin::Eq(_) => cmp(self, CmpPred::Eq),
            SynBin::Ne(_) => cmp(self, CmpPred::Ne),
            _ => Err(err(at, "this operator is not supported in kernels")),
        }
    }

    pub(super) fn unary(&mut self, op: &SynUn, v: Val, at: &Expr) -> syn::Result<Val> {
        match (op, v) {
            (SynUn::Neg(_), Val::Int(i)) => {
                return i
                    .checked_neg()
                    .map(Val::Int)
                    .ok_or_else(|| err(at, "this constant overflows i64"))
            }
            (SynUn::Neg(_), Val::Float(x)) => return Ok(Val::Float(-x)),
            (SynUn::Not(_), Val::Int(_) | Val::Float(_)) => {
                return Err(err(
                    at,
                    "`!` takes a bool or an integer value, not a literal",
                ))
            }
            _ => {}
        }
        let Val::V(id) = v else {
            return Err(err(at, "this operator is not supported in kernels"));
        };
        let ty = self.f.ty(id).clone();
        let (kind, ok) = match op {
            SynUn::Neg(_) => (
                UnOp::Neg,
                matches!(
                    ty.elem,
                    Elem::Scalar(DType::I32 | DType::I64 | DType::F32 | DType::F64)
                ),
            ),
            SynUn::Not(_) => (UnOp::Not, matches!(ty.elem, Elem::Scalar(d) if d.is_int())),
            _ => return Err(err(at, "this operator is not supported in kernels")),
        };
        if !ok {
            let hint = match ty.elem.dtype() {
                Some(d) if d.is_storage_float() => {
                    format!("; `{d}` is a storage type: convert with `as f32` first")
                }
                _ => String::new(),
            };
            return Err(err(
                at,
                format!("`{}` is not defined on `{}`{hint}", kind.name(), ty.elem),
            ));
        }
        Ok(Val::V(self.push(OpKind::Unary(kind), vec![id], ty)))
    }

    /// The element type a type in the kernel names (`u32`, `f16`, `bool`, a `Type` parameter).
    pub(super) fn element_type(&self, ty: &syn::Type) -> syn::Result<DType> {
        let name = match ty {
            syn::Type::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        };
        match name.as_deref() {
            Some(t) if self.types.contains_key(t) => Some(self.types[t]),
            Some(t) => super::signature::dtype_named(t),
            None => None,
        }
        .ok_or_else(|| {
            err(
                ty,
                "an element type is f32, f16, bf16, i8, i16, i32, i64, u8, u32, u64, bool or a \
                 `Type` parameter",
            )
        })
    }

    /// `bitcast(x, T)` / `x.bitcast(T)`: the bits of `x` read as `T`, of the same width.
    pub(super) fn bitcast(&mut self, v: Val, at: &Expr, ty: &Expr) -> syn::Result<Val> {
        let Expr::Path(p) = ty else {
            return Err(err(
                ty,
                "the second argument of `bitcast` is an element type (`u32`)",
            ));
        };
        let to = self.element_type(&syn::Type::Path(syn::TypePath {
            qself: None,
            path: p.path.clone(),
        }))?;
        let Val::V(id) = v else {
            return Err(err(
                at,
                "`bitcast` takes a tile or a scalar value; a literal has no bits yet (write \
                 `x as T` first)",
            ));
        };
        let t = self.f.ty(id).clone();
        let from = match t.elem {
            Elem::Scalar(d) if d != DType::I1 => d,
            other => {
                let found = if other == Elem::Scalar(DType::I1) {
                    "bools".to_string()
                } else {
                    format!("`{other}`")
                };
                return Err(err(
                    at,
                    format!("`bitcast` reinterprets numbers, found {found}"),
                ));
            }
        };
        if to == DType::I1 {
            return Err(err(
                ty,
                "`bitcast` to `bool` is not defined; compare with 0",
            ));
        }
        if from.size_bytes() != to.size_bytes() {
            return Err(err(
                ty,
                format!(
                    "`bitcast` keeps the width: `{from}` has {} bits, `{to}` {}",
                    8 * from.size_bytes(),
                    8 * to.size_bytes()
                ),
            ));
        }
        if from == to {
            return Ok(v);
        }
        Ok(Val::V(self.push(
            OpKind::Bitcast,
            vec![id],
            t.with_elem(Elem::Scalar(to)),
        )))
    }

    /// `x as T`: element-wise conversion to any element type (see `OpKind::Cast`); `x as
    /// Ptr<T>` converts `i64` or `u64` addresses into pointers (`OpKind::IntToPtr`).
    pub(super) fn cast(&mut self, c: &syn::ExprCast) -> syn::Result<Val> {
        if let Some(pointee) = pointer_type(&c.ty) {
            let d = self.element_type(pointee)?;
            let v = self.expr(&c.expr)?;
            let id =
                match v {
                    Val::V(id) => id,
                    _ => return Err(err(
                        &c.expr,
                        "only an `i64` or `u64` value computed by the kernel (an address loaded \
                         from memory) converts to a pointer",
                    )),
                };
            let t = self.f.ty(id).clone();
            if !matches!(t.elem, Elem::Scalar(DType::I64 | DType::U64)) {
                return Err(err(
                    &c.expr,
                    format!("an address is `i64` or `u64`, not `{}`", t.elem),
                ));
            }
            return Ok(Val::V(self.push(
                OpKind::IntToPtr,
                vec![id],
                t.with_elem(Elem::Ptr(d)),
            )));
        }
        let d = self.element_type(&c.ty)?;
        let v = self.expr(&c.expr)?;
        match v {
            Val::Int(_) | Val::Float(_) | Val::Desc(_) => {
                // A literal takes the target type directly (a float literal only as a float).
                Ok(Val::V(self.materialize(v, d, &[], c)?))
            }
            Val::V(id) => {
                let t = self.f.ty(id).clone();
                if t.elem.pointee().is_some() {
                    return Err(err(&c.expr, "pointers cannot be converted"));
                }
                if t.elem == Elem::Scalar(d) {
                    return Ok(v);
                }
                Ok(Val::V(self.push(
                    OpKind::Cast,
                    vec![id],
                    t.with_elem(Elem::Scalar(d)),
                )))
            }
        }
    }

    /// The common element type and shape of two operands (no pointers).
    pub(super) fn common(
        &self,
        a: Val,
        b: Val,
        at: &dyn ToTokens,
    ) -> syn::Result<(DType, Vec<u32>)> {
        let (at_, bt) = (self.ty(a), self.ty(b));
        for t in [&at_, &bt].into_iter().flatten() {
            if t.elem.pointee().is_some() {
                return Err(err(at, "pointers cannot be used here"));
            }
        }
        let shape_of = |t: &Option<Type>| t.as_ref().map(|t| t.shape.clone()).unwrap_or_default();
        let shape = self.joint(&shape_of(&at_), &shape_of(&bt), at)?;
        let d = match (&at_, &bt) {
            (Some(x), Some(y)) if x.elem != y.elem => {
                return Err(err(
                    at,
                    format!("mismatched element types `{}` and `{}`", x.elem, y.elem),
                ))
            }
            (Some(x), _) => x.dtype(),
            (_, Some(y)) => y.dtype(),
            _ if matches!(a, Val::Float(_)) || matches!(b, Val::Float(_)) => Some(DType::F32),
            _ => Some(DType::I32),
        };
        Ok((d.unwrap_or(DType::I32), shape))
    }
}

/// The shape two operands of `a` and `b` combine to, by NumPy's rules: the shorter shape gains
/// leading 1s, then each dimension must be equal or 1 on one side (a scalar has shape `[]`).
pub(super) fn joint_shape(a: &[u32], b: &[u32]) -> Option<Vec<u32>> {
    let rank = a.len().max(b.len());
    let pad = |s: &[u32]| {
        let mut p = vec![1; rank - s.len()];
        p.extend_from_slice(s);
        p
    };
    let (a, b) = (pad(a), pad(b));
    a.iter()
        .zip(&b)
        .map(|(&x, &y)| match (x, y) {
            _ if x == y => Some(x),
            (1, _) => Some(y),
            (_, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// `T` where `ty` is `Ptr<T>` (the type of `x as Ptr<T>`).
fn pointer_type(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Ptr" || p.qself.is_some() {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first() {
        Some(syn::GenericArgument::Type(t)) if args.args.len() == 1 => Some(t),
        _ => None,
    }
}
