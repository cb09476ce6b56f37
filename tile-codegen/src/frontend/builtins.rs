//! The kernel language's built-in functions and methods (Triton's `core.py`): one declaration per
//! builtin with its name, how it is written, its signature and its documentation, from which the
//! front end's dispatch (an exhaustive match), the "unknown function" messages and the language
//! table in the crate documentation are derived.

use quote::ToTokens;
use syn::{BinOp as SynBinOp, Expr};
use tile_core::ir::{
    AtomicOp, BinOp, CmpPred, ConstValue, DType, Elem, Evict, MathFn, MemScope, MemSem, OpKind,
    Precision, ReduceKind, ScanKind, Type, ValueId,
};

use super::typing::joint_shape;
use super::walker::{err, unreachable_ptr, Lowering, Val};

/// How a builtin is written in a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `f(x, …)`.
    Function,
    /// `x.f(…)`.
    Method,
    /// Either.
    Both,
}

impl Form {
    /// Whether a builtin of this form may be written as `call` (a function or a method).
    fn allows(self, call: Form) -> bool {
        self == Form::Both || self == call
    }
}

/// Declares [`Builtin`]: per builtin its variant, name, [`Form`], signature and documentation
/// (the doc comment, the language reference's row). The dispatch in [`Lowering::call`] and
/// [`Lowering::method_call`] matches on it exhaustively; the names in "unknown function"
/// messages and the crate documentation's table are checked against it.
macro_rules! builtins {
    ($( $(#[doc = $doc:literal])* $V:ident $name:literal $form:ident $sig:literal; )*) => {
        /// A built-in function or method of the kernel language (besides the math functions,
        /// [`MathFn`], which are written both ways).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Builtin {
            $( $(#[doc = $doc])* $V, )*
        }

        impl Builtin {
            /// Every builtin, in declaration order.
            pub const ALL: [Builtin; [$($name),*].len()] = [$(Builtin::$V),*];

            /// Its name in kernels.
            pub fn name(self) -> &'static str {
                match self {
                    $( Builtin::$V => $name, )*
                }
            }

            /// How it is written.
            pub fn form(self) -> Form {
                match self {
                    $( Builtin::$V => Form::$form, )*
                }
            }

            /// How it is called, as the language reference writes it.
            pub fn signature(self) -> &'static str {
                match self {
                    $( Builtin::$V => $sig, )*
                }
            }

            /// What it does.
            pub fn doc(self) -> &'static str {
                match self {
                    $( Builtin::$V => concat!($($doc),*), )*
                }
            }
        }
    };
}

builtins! {
    /// This program's index along grid axis 0, 1 or 2 (`i32`).
    ProgramId "program_id" Function "program_id(axis)";
    /// The grid's size along axis 0, 1 or 2 (`i32`).
    NumPrograms "num_programs" Function "num_programs(axis)";
    /// The `i32` tile `start..end`: compile-time bounds, a power-of-two length.
    Arange "arange" Function "arange(start, end)";
    /// An f32 tile of zeros; `shape` is `N` or `[M, N]`.
    Zeros "zeros" Function "zeros(shape)";
    /// A tile of `value` (its type, or `i32`/`f32` for a literal).
    Full "full" Function "full(shape, value)";
    /// Inserts an extent-1 dimension at `axis` (Triton's `t[:, None]` is `t.expand_dims(1)`).
    ExpandDims "expand_dims" Both "expand_dims(t, axis)";
    /// Reads through a pointer or tile of pointers; masked-off lanes touch no memory and give
    /// `other` (default 0).
    /// `evict = first` (data not read again soon) or `evict = last` asks the caches to evict its
    /// lines first or last (Triton's `eviction_policy`); a hint, the values are the same.
    Load "load" Function "load(ptrs[, mask[, other]][, evict = normal | first | last])";
    /// Writes where the mask is true; `evict = first | last` as for `load`.
    Store "store" Function "store(ptrs, values[, mask][, evict = normal | first | last])";
    /// `a` where the mask is true, else `b` (Triton's `where`).
    Select "select" Function "select(mask, a, b)";
    /// Element-wise minimum; for floats a NaN operand yields the other.
    Min "min" Function "min(a, b)";
    /// Element-wise maximum; for floats a NaN operand yields the other.
    Max "max" Function "max(a, b)";
    /// `acc + a @ b` for an `M × K` and a `K × N` tile of one float type, f32 result (tensor
    /// cores for f16/bf16; `precision = tf32` opts f32 tiles into them).
    Dot "dot" Function "dot(a, b[, acc][, precision = ieee | tf32])";
    /// Sum along `axis` (`i32`, `i64`, `f32`); a 1-D tile may leave the axis out.
    Sum "sum" Method "t.sum(axis)";
    /// Maximum along `axis` (NaN ignored).
    MaxOf "max" Method "t.max(axis)";
    /// Minimum along `axis` (NaN ignored).
    MinOf "min" Method "t.min(axis)";
    /// The `i32` index of the first maximum along `axis` (NaN ignored; 0 where all are NaN).
    Argmax "argmax" Method "t.argmax(axis)";
    /// The `i32` index of the first minimum along `axis` (NaN ignored; 0 where all are NaN).
    Argmin "argmin" Method "t.argmin(axis)";
    /// Rotates along `axis` (NumPy's `roll`); `shift` and `axis` are compile-time integers.
    Roll "roll" Method "t.roll(shift, axis)";
    /// The high 32 bits of the product of two `i32` values read as unsigned (CUDA's `__umulhi`).
    UMulHi "umulhi" Function "umulhi(a, b)";
    /// Uniform `f32` in `[0, 1)` from Philox-4x32-10, Triton's `tl.rand` stream bit for bit.
    Rand "rand" Function "rand(seed, offsets)";
    /// 32 random bits (an `i32`) from Philox-4x32-10, Triton's `tl.randint` stream bit for bit.
    Randint "randint" Function "randint(seed, offsets)";
    /// Word `k` (0 to 3) of Triton's `tl.randint4x(seed, offsets)`; the four words of one seed
    /// and offsets share one Philox evaluation.
    Randint4x "randint4x" Function "randint4x(seed, offsets, k)";
    /// Word `k` (0 to 3) of Triton's `tl.rand4x(seed, offsets)`: uniform `f32` in `[0, 1)`.
    Rand4x "rand4x" Function "rand4x(seed, offsets, k)";
    /// A standard normal `f32` as Triton's `tl.randn` makes it: Box–Muller on Philox words 0 and
    /// 1 (`u1 = max(1e-7, u₀)`, `sqrt(−2 log u1) · cos(2π u₂)`).
    Randn "randn" Function "randn(seed, offsets)";
    /// Adds to the pointed-to elements where the mask is true, each in one indivisible step;
    /// returns the old values (0 where masked off). `i32`, `i64`, `f32`, `f16`, `bf16`. `sem` is `relaxed`,
    /// `acquire`, `release` or `acq_rel` (default), `scope` is `cta`, `gpu` (default) or `sys`.
    AtomicAdd "atomic_add" Function "atomic_add(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic maximum (integers signed; floats with `-0 < +0`); returns the old values.
    AtomicMax "atomic_max" Function "atomic_max(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic minimum; returns the old values.
    AtomicMin "atomic_min" Function "atomic_min(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic bitwise and (`i32`, `i64`); returns the old values.
    AtomicAnd "atomic_and" Function "atomic_and(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic bitwise or (`i32`, `i64`); returns the old values.
    AtomicOr "atomic_or" Function "atomic_or(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic bitwise exclusive or (`i32`, `i64`); returns the old values.
    AtomicXor "atomic_xor" Function "atomic_xor(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic exchange: writes the values, returns the old ones.
    AtomicXchg "atomic_xchg" Function "atomic_xchg(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic compare-and-swap: writes `values` where the element equals `cmp` (bitwise);
    /// returns the values found.
    AtomicCas "atomic_cas" Function "atomic_cas(ptrs, cmp, values[, mask][, sem = …][, scope = …])";
    /// Running sum along `axis` (a 1-D tile may leave it out); `reverse = true` sums from the
    /// end. Bools count as `i32` 0 and 1.
    Cumsum "cumsum" Both "t.cumsum(axis[, reverse = true])";
    /// Running product along `axis`.
    Cumprod "cumprod" Both "t.cumprod(axis[, reverse = true])";
    /// Running maximum along `axis` (NaN ignored).
    Cummax "cummax" Both "t.cummax(axis[, reverse = true])";
    /// Running minimum along `axis` (NaN ignored).
    Cummin "cummin" Both "t.cummin(axis[, reverse = true])";
    /// Inclusive scan along `axis` with an associative combiner: `|a, b| a + b`, `|a, b| a * b`,
    /// `max` or `min` (also as `|a, b| max(a, b)`), the same as `cumsum`, `cumprod`, `cummax` and
    /// `cummin` (Triton's `tl.associative_scan` with those combiners).
    AssociativeScan "associative_scan" Function "associative_scan(t, axis, combine[, reverse = true])";
}

/// What a name called in a kernel refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callee {
    /// A builtin of the table.
    Builtin(Builtin),
    /// A math function (`exp(x)` or `x.exp()`).
    Math(MathFn),
}

/// The builtin `name` written as `form` ([`Form::Function`] or [`Form::Method`]); failing that, a
/// builtin of that name written the other way (which the caller reports as such).
pub fn lookup(name: &str, form: Form) -> Option<Callee> {
    let named = || Builtin::ALL.into_iter().filter(|b| b.name() == name);
    named()
        .find(|b| b.form().allows(form))
        .or_else(|| named().next())
        .map(Callee::Builtin)
        .or_else(|| MathFn::from_name(name).map(Callee::Math))
}

/// The names that may be written as `form`, for "unknown function" messages.
pub fn names(form: Form) -> String {
    let mut out: Vec<&str> = Builtin::ALL
        .into_iter()
        .filter(|b| b.form().allows(form))
        .map(Builtin::name)
        .collect();
    out.extend(MathFn::ALL.into_iter().map(MathFn::name));
    out.join(", ")
}

impl Lowering {
    pub(super) fn const_arg(&self, v: Val, at: &Expr, what: &str) -> syn::Result<i64> {
        match v {
            Val::Int(i) => Ok(i),
            _ => Err(err(
                at,
                format!("{what} must be a compile-time integer (a literal or a `Const` parameter)"),
            )),
        }
    }

    pub(super) fn call(&mut self, c: &syn::ExprCall) -> syn::Result<Val> {
        let Expr::Path(p) = &*c.func else {
            return Err(err(
                &c.func,
                "only the DSL's functions can be called in kernels",
            ));
        };
        let name = p
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_else(|| p.to_token_stream().to_string());
        let args: Vec<&Expr> = c.args.iter().collect();
        let arity = |range: std::ops::RangeInclusive<usize>, sig: &str| -> syn::Result<()> {
            if range.contains(&args.len()) {
                Ok(())
            } else {
                Err(err(
                    c,
                    format!("`{name}` takes {sig}, found {} argument(s)", args.len()),
                ))
            }
        };
        let Some(callee) = lookup(&name, Form::Function) else {
            return Err(err(
                &c.func,
                format!(
                    "unknown function `{name}`; the kernel language has: {}; and methods: {}",
                    names(Form::Function),
                    names(Form::Method)
                ),
            ));
        };
        match callee {
            Callee::Builtin(Builtin::ProgramId | Builtin::NumPrograms) => {
                arity(1..=1, "1 argument (the grid axis)")?;
                let v = self.expr(args[0])?;
                let axis = self.const_arg(v, args[0], "the grid axis")?;
                if !(0..=2).contains(&axis) {
                    return Err(err(args[0], "the grid axis is 0, 1 or 2"));
                }
                let kind = if name == "program_id" {
                    OpKind::ProgramId { axis: axis as u32 }
                } else {
                    OpKind::NumPrograms { axis: axis as u32 }
                };
                Ok(Val::V(self.push(kind, vec![], Type::scalar(DType::I32))))
            }
            Callee::Builtin(Builtin::Arange) => {
                arity(2..=2, "2 arguments (start, end)")?;
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
            Callee::Builtin(Builtin::Load) => {
                let what = "1 to 3 arguments (pointers, mask, other)";
                let (args, evict) = evict_arg(&args, "load", 1..=3, what, c)?;
                let (pid, pty, d) = self.pointer_arg(args[0], "load")?;
                let mut operands = vec![pid];
                if args.len() >= 2 {
                    let m = self.mask(args[1], &pty)?;
                    let other = if args.len() == 3 {
                        self.expr(args[2])?
                    } else if d == DType::I1 {
                        // Masked-off bools read `false`.
                        Val::V(self.push(
                            OpKind::Constant(ConstValue::Int(0)),
                            vec![],
                            Type::scalar(DType::I1),
                        ))
                    } else {
                        Val::Int(0)
                    };
                    let other_at: &dyn ToTokens = if args.len() == 3 { args[2] } else { c };
                    if let Some(t) = self.ty(other) {
                        if t.elem != Elem::Scalar(d) {
                            return Err(err(
                                other_at,
                                format!("`other` is `{}`, the loaded elements are `{d}`", t.elem),
                            ));
                        }
                    }
                    let o = self.materialize(other, d, &pty.shape, other_at)?;
                    operands.push(m);
                    operands.push(o);
                } else if args.len() == 3 {
                    return Err(err(c, "`other` needs a mask"));
                }
                Ok(Val::V(self.push(
                    OpKind::Load { vec: 1, evict },
                    operands,
                    pty.with_elem(Elem::Scalar(d)),
                )))
            }
            Callee::Builtin(Builtin::Store) => {
                let what = "2 or 3 arguments (pointers, values, mask)";
                let (args, evict) = evict_arg(&args, "store", 2..=3, what, c)?;
                let (pid, pty, d) = self.pointer_arg(args[0], "store")?;
                let v = self.expr(args[1])?;
                if let Some(t) = self.ty(v) {
                    if t.elem != Elem::Scalar(d) {
                        return Err(err(
                            args[1],
                            format!("cannot store `{}` values through `Ptr<{d}>`", t.elem),
                        ));
                    }
                    if joint_shape(&t.shape, &pty.shape).as_deref() != Some(&pty.shape[..]) {
                        return Err(err(
                            args[1],
                            format!(
                                "the values have shape {:?}, the pointers {:?}",
                                t.shape, pty.shape
                            ),
                        ));
                    }
                }
                let val = self.materialize(v, d, &pty.shape, args[1])?;
                let mut operands = vec![pid, val];
                if args.len() == 3 {
                    operands.push(self.mask(args[2], &pty)?);
                }
                self.f.push_op(
                    self.block,
                    OpKind::Store { vec: 1, evict },
                    operands,
                    vec![],
                );
                Ok(Val::Int(0))
            }
            Callee::Builtin(Builtin::Select) => {
                arity(3..=3, "3 arguments (mask, if true, if false)")?;
                let cv = self.expr(args[0])?;
                let a = self.expr(args[1])?;
                let b = self.expr(args[2])?;
                let cty = self
                    .ty(cv)
                    .filter(|t| t.elem == Elem::Scalar(DType::I1))
                    .ok_or_else(|| {
                        err(
                            args[0],
                            "the first argument of `select` must be a bool or a mask",
                        )
                    })?;
                // Shape and element type as for a binary op on (a, b), then the mask joins.
                let probe = self.common(a, b, c)?;
                let shape = self.joint(&cty.shape, &probe.1, c)?;
                let Val::V(cid) = cv else { unreachable_ptr() };
                let cid = self.broadcast(cid, &shape, args[0])?;
                let a = self.materialize(a, probe.0, &shape, args[1])?;
                let b = self.materialize(b, probe.0, &shape, args[2])?;
                Ok(Val::V(self.push(
                    OpKind::Select,
                    vec![cid, a, b],
                    Type::tensor(Elem::Scalar(probe.0), shape),
                )))
            }
            Callee::Builtin(Builtin::Zeros | Builtin::Full) => {
                let (n, sig) = if name == "zeros" {
                    (1, "1 argument (the shape: `N` or `[M, N]`)")
                } else {
                    (2, "2 arguments (the shape, the value)")
                };
                arity(n..=n, sig)?;
                let shape = self.shape_arg(args[0])?;
                let v = if name == "zeros" {
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
                let at: &dyn ToTokens = if n == 2 { args[1] } else { c };
                Ok(Val::V(self.materialize(v, d, &shape, at)?))
            }
            Callee::Builtin(Builtin::Dot) => {
                // A trailing `precision = …` is the one named argument.
                let (args, precision) = match args.split_last() {
                    Some((Expr::Assign(named), rest)) => {
                        (rest.to_vec(), Some(precision_arg(named)?))
                    }
                    _ => (args.clone(), None),
                };
                if let Some(named) = args.iter().find(|a| matches!(a, Expr::Assign(_))) {
                    return Err(err(
                        *named,
                        "`precision = …` comes after the tiles and the accumulator",
                    ));
                }
                if !(2..=3).contains(&args.len()) {
                    return Err(err(
                        c,
                        format!(
                            "`dot` takes 2 or 3 arguments (a, b[, accumulator]) and optionally `precision = ieee | tf32`, found {} argument(s)",
                            args.len()
                        ),
                    ));
                }
                let mut tiles = Vec::with_capacity(2);
                for a in &args[..2] {
                    let v = self.expr(a)?;
                    match (v, self.ty(v)) {
                        (Val::V(id), Some(t)) if t.shape.len() == 2 => tiles.push((id, t)),
                        (_, t) => {
                            let found = t.map_or("a literal".to_string(), |t| format!("`{t}`"));
                            return Err(err(
                                *a,
                                format!("`dot` multiplies 2-D tiles; this is {found}"),
                            ));
                        }
                    }
                }
                let ((a, at), (b, bt)) = (tiles[0].clone(), tiles[1].clone());
                if at.shape[1] != bt.shape[0] {
                    return Err(err(
                        c,
                        format!(
                            "`dot` of tiles {}×{} and {}×{}: the inner dimensions ({} and {}) differ",
                            at.shape[0], at.shape[1], bt.shape[0], bt.shape[1], at.shape[1], bt.shape[0]
                        ),
                    ));
                }
                if at.elem != bt.elem
                    || !matches!(at.dtype(), Some(DType::F32 | DType::F16 | DType::BF16))
                {
                    return Err(err(
                        c,
                        format!(
                            "`dot` takes two tiles of one float type (f32, f16 or bf16), found `{}` and `{}`",
                            at.elem, bt.elem
                        ),
                    ));
                }
                // `precision = tf32` changes only f32 operands; 16-bit ones are exact in tf32.
                let precision = match precision {
                    Some(Precision::Tf32) if at.dtype() == Some(DType::F32) => Precision::Tf32,
                    _ => Precision::Ieee,
                };
                // Both operands pass through shared memory: as f32 for the FMA chain (see
                // `llvm::dot`), as themselves on tensor cores (`llvm::ldmatrix`; a pipelined
                // loop's ring is dynamic shared memory, checked per target).
                let per_elem = if crate::passes::accelerate_dot::mma_layout(&at, &bt, precision, 1)
                    .is_some()
                {
                    u64::from(at.dtype().map_or(4, |d| d.size_bytes()))
                } else {
                    4
                };
                let staged = per_elem
                    * (u64::from(at.shape[0]) * u64::from(at.shape[1])
                        + u64::from(bt.shape[0]) * u64::from(bt.shape[1]));
                let limit = tile_core::Target::STATIC_SHARED_BYTES;
                if staged > limit {
                    return Err(err(
                        c,
                        format!(
                            "`dot` of tiles {}×{} and {}×{} stages {staged} bytes through shared memory; a program may declare {limit}: use smaller tiles (loop over K)",
                            at.shape[0], at.shape[1], bt.shape[0], bt.shape[1]
                        ),
                    ));
                }
                let shape = vec![at.shape[0], bt.shape[1]];
                self.check_elements(&shape, c)?;
                let acc = match args.get(2) {
                    Some(e) => {
                        let v = self.expr(e)?;
                        if let Some(t) = self.ty(v) {
                            if t.elem != Elem::Scalar(DType::F32) {
                                return Err(err(
                                    *e,
                                    format!("the accumulator of `dot` is f32, found `{}`", t.elem),
                                ));
                            }
                        }
                        self.materialize(v, DType::F32, &shape, *e)?
                    }
                    None => self.materialize(Val::Float(0.0), DType::F32, &shape, c)?,
                };
                Ok(Val::V(self.push(
                    OpKind::Dot { precision },
                    vec![a, b, acc],
                    Type::tensor(Elem::Scalar(DType::F32), shape),
                )))
            }
            Callee::Builtin(Builtin::ExpandDims) => {
                arity(2..=2, "2 arguments (tile, axis)")?;
                let v = self.expr(args[0])?;
                self.expand_dims(v, args[0], args[1])
            }
            Callee::Builtin(Builtin::Min | Builtin::Max) => {
                arity(2..=2, "2 arguments")?;
                let a = self.expr(args[0])?;
                let b = self.expr(args[1])?;
                if let (Val::Int(x), Val::Int(y)) = (a, b) {
                    return Ok(Val::Int(if name == "min" { x.min(y) } else { x.max(y) }));
                }
                let (d, shape) = self.common(a, b, c)?;
                if d == DType::I1 {
                    return Err(err(c, format!("`{name}` is not defined on bools")));
                }
                let x = self.materialize(a, d, &shape, args[0])?;
                let y = self.materialize(b, d, &shape, args[1])?;
                let op = if name == "min" {
                    BinOp::Min
                } else {
                    BinOp::Max
                };
                Ok(Val::V(self.push(
                    OpKind::Binary(op),
                    vec![x, y],
                    Type::tensor(Elem::Scalar(d), shape),
                )))
            }
            Callee::Math(m) => {
                let n = m.arity();
                arity(n..=n, &format!("{n} argument(s)"))?;
                let vals = args
                    .iter()
                    .map(|a| self.expr(a))
                    .collect::<syn::Result<Vec<_>>>()?;
                self.math(m, &vals, &args, c)
            }
            Callee::Builtin(Builtin::UMulHi) => {
                arity(2..=2, "2 arguments")?;
                let a = self.expr(args[0])?;
                let b = self.expr(args[1])?;
                let (d, shape) = self.common(a, b, c)?;
                if d != DType::I32 {
                    return Err(err(c, format!("`umulhi` takes i32, found `{d}`")));
                }
                let x = self.materialize(a, d, &shape, args[0])?;
                let y = self.materialize(b, d, &shape, args[1])?;
                Ok(Val::V(self.push(
                    OpKind::Binary(BinOp::UMulHi),
                    vec![x, y],
                    Type::tensor(Elem::Scalar(d), shape),
                )))
            }
            Callee::Builtin(b @ (Builtin::Rand | Builtin::Randint)) => {
                arity(2..=2, "2 arguments (the seed, the offsets)")?;
                let bits = self.philox(args[0], args[1])?[0];
                if b == Builtin::Randint {
                    return Ok(Val::V(bits));
                }
                Ok(Val::V(self.uniform(bits)))
            }
            Callee::Builtin(Builtin::Randn) => {
                arity(2..=2, "2 arguments (the seed, the offsets)")?;
                let w = self.philox(args[0], args[1])?;
                let (u1, u2) = (self.uniform(w[0]), self.uniform(w[1]));
                Ok(Val::V(self.box_muller(u1, u2)))
            }
            Callee::Builtin(b @ (Builtin::Rand4x | Builtin::Randint4x)) => {
                arity(
                    3..=3,
                    "3 arguments (the seed, the offsets, the word 0 to 3)",
                )?;
                let kv = self.expr(args[2])?;
                let k = self.const_arg(kv, args[2], "the word")?;
                let Some(k) = usize::try_from(k).ok().filter(|&k| k < 4) else {
                    return Err(err(args[2], format!("the word is 0, 1, 2 or 3, found {k}")));
                };
                let bits = self.philox(args[0], args[1])?[k];
                if b == Builtin::Randint4x {
                    return Ok(Val::V(bits));
                }
                Ok(Val::V(self.uniform(bits)))
            }
            Callee::Builtin(
                b @ (Builtin::AtomicAdd
                | Builtin::AtomicMax
                | Builtin::AtomicMin
                | Builtin::AtomicAnd
                | Builtin::AtomicOr
                | Builtin::AtomicXor
                | Builtin::AtomicXchg
                | Builtin::AtomicCas),
            ) => self.atomic(b, &args, c),
            Callee::Builtin(
                b @ (Builtin::Cumsum | Builtin::Cumprod | Builtin::Cummax | Builtin::Cummin),
            ) => {
                let Some((recv, rest)) = args.split_first() else {
                    return Err(err(
                        c,
                        format!("`{name}` takes the tile first: `{name}(t, axis)`"),
                    ));
                };
                self.scan(b, recv, rest, c)
            }
            Callee::Builtin(Builtin::AssociativeScan) => {
                let (pos, _) = split_named(&args)?;
                if pos.len() != 3 {
                    return Err(err(
                        c,
                        format!(
                            "`associative_scan` takes the tile, the axis and the combiner: `{}`",
                            Builtin::AssociativeScan.signature()
                        ),
                    ));
                }
                let b = scan_combiner(pos[2])?;
                // The axis, then the named arguments, as the `cum*` builtins take them.
                let rest: Vec<&Expr> = std::iter::once(pos[1])
                    .chain(
                        args.iter()
                            .copied()
                            .filter(|a| matches!(a, Expr::Assign(_))),
                    )
                    .collect();
                self.scan_as(b, Builtin::AssociativeScan, pos[0], &rest, c)
            }
            Callee::Builtin(
                b @ (Builtin::Sum
                | Builtin::MaxOf
                | Builtin::MinOf
                | Builtin::Argmax
                | Builtin::Argmin
                | Builtin::Roll),
            ) => Err(err(
                &c.func,
                format!("`{name}` is a method: `{}`", b.signature()),
            )),
        }
    }

    /// `exp(x)`, `pow(a, b)`, `fma(a, b, c)`, …: operands share one shape and `f32` (integers
    /// for `abs`); literals adapt.
    pub(super) fn math(
        &mut self,
        m: MathFn,
        vals: &[Val],
        at: &[&Expr],
        call: &dyn ToTokens,
    ) -> syn::Result<Val> {
        let mut d = None;
        let mut shape: Vec<u32> = Vec::new();
        for (v, e) in vals.iter().zip(at) {
            if let Some(t) = self.ty(*v) {
                let Some(vd) = t.dtype() else {
                    return Err(err(
                        *e,
                        format!("`{}` takes numbers, not pointers", m.name()),
                    ));
                };
                if d.is_some_and(|d| d != vd) {
                    return Err(err(
                        call,
                        "mismatched element types; there are no implicit conversions",
                    ));
                }
                d = Some(vd);
                shape = self.joint(&shape, &t.shape, call)?;
            }
        }
        let d = d.unwrap_or(DType::F32);
        let ok = d == DType::F32 || (m == MathFn::Abs && matches!(d, DType::I32 | DType::I64));
        if !ok {
            let hint = if matches!(d, DType::F16 | DType::BF16) {
                "; convert with `as f32` first"
            } else {
                ""
            };
            return Err(err(
                call,
                format!(
                    "`{}` takes f32{}, found `{d}`{hint}",
                    m.name(),
                    if m == MathFn::Abs { ", i32 or i64" } else { "" }
                ),
            ));
        }
        let ops = vals
            .iter()
            .zip(at)
            .map(|(v, e)| self.materialize(*v, d, &shape, *e))
            .collect::<syn::Result<Vec<_>>>()?;
        Ok(Val::V(self.push(
            OpKind::Math(m),
            ops,
            Type::tensor(Elem::Scalar(d), shape),
        )))
    }

    /// `x.sum()`, `x.max()`, `x.min()` (reductions, optional axis), and math functions written as
    /// methods (`x.exp()`, `a.pow(b)`, `a.fma(b, c)`).
    pub(super) fn method_call(&mut self, mc: &syn::ExprMethodCall, e: &Expr) -> syn::Result<Val> {
        let name = mc.method.to_string();
        let Some(callee) = lookup(&name, Form::Method) else {
            return Err(err(
                &mc.method,
                format!(
                    "unknown method `{name}`; the kernel language has the methods {}; and the functions {}",
                    names(Form::Method),
                    names(Form::Function)
                ),
            ));
        };
        // `argmax`/`argmin` are built from a reduction, a comparison and a `min` of indices.
        let (kind, arg) = match callee {
            Callee::Builtin(Builtin::ExpandDims) => {
                if mc.args.len() != 1 {
                    return Err(err(e, "`.expand_dims(axis)` takes 1 argument (the axis)"));
                }
                let v = self.expr(&mc.receiver)?;
                return self.expand_dims(v, &mc.receiver, &mc.args[0]);
            }
            Callee::Builtin(Builtin::Roll) => {
                if mc.args.len() != 2 {
                    return Err(err(
                        e,
                        "`.roll(shift, axis)` takes 2 arguments (the shift and the axis)",
                    ));
                }
                let v = self.expr(&mc.receiver)?;
                return self.roll(v, &mc.receiver, &mc.args[0], &mc.args[1]);
            }
            Callee::Builtin(
                b @ (Builtin::Cumsum | Builtin::Cumprod | Builtin::Cummax | Builtin::Cummin),
            ) => {
                let args: Vec<&Expr> = mc.args.iter().collect();
                return self.scan(b, &mc.receiver, &args, e);
            }
            Callee::Builtin(Builtin::Sum) => (ReduceKind::Sum, false),
            Callee::Builtin(Builtin::MaxOf) => (ReduceKind::Max, false),
            Callee::Builtin(Builtin::MinOf) => (ReduceKind::Min, false),
            Callee::Builtin(Builtin::Argmax) => (ReduceKind::Max, true),
            Callee::Builtin(Builtin::Argmin) => (ReduceKind::Min, true),
            Callee::Math(m) => return self.math_method(m, mc, e),
            Callee::Builtin(
                b @ (Builtin::ProgramId
                | Builtin::NumPrograms
                | Builtin::Arange
                | Builtin::Zeros
                | Builtin::Full
                | Builtin::Load
                | Builtin::Store
                | Builtin::Select
                | Builtin::Min
                | Builtin::Max
                | Builtin::Dot
                | Builtin::UMulHi
                | Builtin::Rand
                | Builtin::Randint
                | Builtin::Rand4x
                | Builtin::Randint4x
                | Builtin::Randn
                | Builtin::AtomicAdd
                | Builtin::AtomicMax
                | Builtin::AtomicMin
                | Builtin::AtomicAnd
                | Builtin::AtomicOr
                | Builtin::AtomicXor
                | Builtin::AtomicXchg
                | Builtin::AtomicCas
                | Builtin::AssociativeScan),
            ) => {
                return Err(err(
                    &mc.method,
                    format!("`{name}` is a function: `{}`", b.signature()),
                ))
            }
        };
        {
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
                Some(DType::I32 | DType::I64 | DType::F32) => {}
                other => {
                    let found = other.map_or("pointers".to_string(), |d| format!("`{d}`"));
                    return Err(err(
                        e,
                        format!("`.{name}()` takes i32, i64 or f32 tiles, found {found}"),
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
    }

    /// The four words of Philox-4x32 with 10 rounds, as Triton's `randint4x` computes them (word
    /// 0 is the stream of `tl.rand` and `tl.randint`, bit for bit): the key is the seed's 64 bits (an `i32` seed
    /// sign-extended, as Triton's `seed.to(tl.uint64)`), the counter `(low 32 bits of the offset,
    /// its high 32 bits for an `i64` offset and 0 for an `i32` one, 0, 0)`. `i32` words carry the
    /// unsigned words' bits: wrapping `mul`, `xor` and `umulhi` are the same on both.
    fn philox(&mut self, seed_at: &Expr, offs_at: &Expr) -> syn::Result<[ValueId; 4]> {
        const ROUND_A: u32 = 0xD251_1F53;
        const ROUND_B: u32 = 0xCD9E_8D57;
        const KEY_A: u32 = 0x9E37_79B9;
        const KEY_B: u32 = 0xBB67_AE85;
        let seed = self.expr(seed_at)?;
        let offs = self.expr(offs_at)?;
        let i32c = |v: u32| Val::Int(i64::from(v as i32));
        // The key's two words, scalars.
        let (k0, k1) = match (seed, self.ty(seed)) {
            (Val::Int(s), _) => (i32c(s as u32), i32c((s >> 32) as u32)),
            (Val::V(id), Some(t)) if t.shape.is_empty() && t.elem == Elem::Scalar(DType::I32) => {
                let neg = self.cmp_scalar(id, CmpPred::Lt, 0, DType::I32);
                let minus1 = self.materialize(Val::Int(-1), DType::I32, &[], seed_at)?;
                let zero = self.materialize(Val::Int(0), DType::I32, &[], seed_at)?;
                let hi = self.push(
                    OpKind::Select,
                    vec![neg, minus1, zero],
                    Type::scalar(DType::I32),
                );
                (Val::V(id), Val::V(hi))
            }
            (Val::V(id), Some(t)) if t.shape.is_empty() && t.elem == Elem::Scalar(DType::I64) => {
                let (lo, hi) = self.split_words(id, &[], seed_at)?;
                (Val::V(lo), Val::V(hi))
            }
            (_, t) => {
                let found = t.map_or("a float literal".to_string(), |t| format!("`{t}`"));
                return Err(err(
                    seed_at,
                    format!("the seed is an i32 or i64 scalar, found {found}"),
                ));
            }
        };
        // The counter's first two words, of the offsets' shape.
        let (shape, c0, c1) = match (offs, self.ty(offs)) {
            (Val::Int(o), _) => {
                let lo = self.materialize(i32c(o as u32), DType::I32, &[], offs_at)?;
                let hi = self.materialize(i32c((o >> 32) as u32), DType::I32, &[], offs_at)?;
                (Vec::new(), lo, hi)
            }
            (Val::V(id), Some(t)) if t.elem == Elem::Scalar(DType::I32) => {
                let zero = self.materialize(Val::Int(0), DType::I32, &t.shape, offs_at)?;
                (t.shape.clone(), id, zero)
            }
            (Val::V(id), Some(t)) if t.elem == Elem::Scalar(DType::I64) => {
                let (lo, hi) = self.split_words(id, &t.shape, offs_at)?;
                (t.shape.clone(), lo, hi)
            }
            (_, t) => {
                let found = t.map_or("a float literal".to_string(), |t| format!("`{t}`"));
                return Err(err(
                    offs_at,
                    format!("the offsets are i32 or i64 (a scalar or a tile), found {found}"),
                ));
            }
        };
        let ty = Type::tensor(Elem::Scalar(DType::I32), shape.clone());
        let zero = self.materialize(Val::Int(0), DType::I32, &shape, offs_at)?;
        let (mut c0, mut c1, mut c2, mut c3) = (c0, c1, zero, zero);
        let a = self.materialize(i32c(ROUND_A), DType::I32, &shape, offs_at)?;
        let b = self.materialize(i32c(ROUND_B), DType::I32, &shape, offs_at)?;
        let (mut k0, mut k1) = (k0, k1);
        for round in 0..10 {
            let bin = |l: &mut Self, op: BinOp, x: ValueId, y: ValueId| {
                l.push(OpKind::Binary(op), vec![x, y], ty.clone())
            };
            let k0t = self.materialize(k0, DType::I32, &shape, seed_at)?;
            let k1t = self.materialize(k1, DType::I32, &shape, seed_at)?;
            // The key first: where a round's product is uniform (round 2's `a · k0` for an `i32`
            // offset), product and key make one loop-invariant value, and the remaining `xor`
            // takes a single uniform operand (ptxas moved the other one into a register per
            // turn). `xor` is associative: the words are unchanged.
            let hb = bin(self, BinOp::UMulHi, b, c2);
            let hb = bin(self, BinOp::Xor, hb, k0t);
            let n0 = bin(self, BinOp::Xor, hb, c1);
            let ha = bin(self, BinOp::UMulHi, a, c0);
            let ha = bin(self, BinOp::Xor, ha, k1t);
            let n2 = bin(self, BinOp::Xor, ha, c3);
            let n1 = bin(self, BinOp::Mul, b, c2);
            let n3 = bin(self, BinOp::Mul, a, c0);
            (c0, c1, c2, c3) = (n0, n1, n2, n3);
            if round < 9 {
                k0 = self.add_scalar(k0, KEY_A, seed_at)?;
                k1 = self.add_scalar(k1, KEY_B, seed_at)?;
            }
        }
        Ok([c0, c1, c2, c3])
    }

    /// `x < c` for a scalar `x` of type `d`.
    fn cmp_scalar(&mut self, x: ValueId, p: CmpPred, c: i64, d: DType) -> ValueId {
        let k = self.push(
            OpKind::Constant(ConstValue::Int(c)),
            vec![],
            Type::scalar(d),
        );
        self.push(OpKind::Cmp(p), vec![x, k], Type::scalar(DType::I1))
    }

    /// A key word plus a constant, wrapping (folded when the word is a literal).
    fn add_scalar(&mut self, k: Val, c: u32, at: &Expr) -> syn::Result<Val> {
        Ok(match k {
            Val::V(id) => {
                let cv = self.materialize(Val::Int(i64::from(c as i32)), DType::I32, &[], at)?;
                Val::V(self.push(
                    OpKind::Binary(BinOp::Add),
                    vec![id, cv],
                    Type::scalar(DType::I32),
                ))
            }
            Val::Int(i) => Val::Int(i64::from((i as u32).wrapping_add(c) as i32)),
            Val::Float(_) => k,
        })
    }

    /// The low and high 32-bit words of `i64` values `x` of `shape`, as `i32`: the low one by
    /// truncation, the high one as `(x - (x & 0xFFFFFFFF)) / 2^32`, a division that is exact.
    fn split_words(
        &mut self,
        x: ValueId,
        shape: &[u32],
        at: &Expr,
    ) -> syn::Result<(ValueId, ValueId)> {
        let t64 = Type::tensor(Elem::Scalar(DType::I64), shape.to_vec());
        let t32 = Type::tensor(Elem::Scalar(DType::I32), shape.to_vec());
        let mask = self.materialize(Val::Int(0xFFFF_FFFF), DType::I64, shape, at)?;
        let pow = self.materialize(Val::Int(1 << 32), DType::I64, shape, at)?;
        let low = self.push(OpKind::Binary(BinOp::And), vec![x, mask], t64.clone());
        let top = self.push(OpKind::Binary(BinOp::Sub), vec![x, low], t64.clone());
        let top = self.push(OpKind::Binary(BinOp::Div), vec![top, pow], t64);
        let lo = self.push(OpKind::Cast, vec![x], t32.clone());
        let hi = self.push(OpKind::Cast, vec![top], t32);
        Ok((lo, hi))
    }

    /// Triton's `uint_to_uniform_float` of 32 random bits: negative words `x` become `-x - 1`
    /// (`!x`), the result in `[0, 2^31)` converts to `f32` (to nearest) and is multiplied by the
    /// `f32` nearest `4.6566127342e-10` (`2^-31 · (1 - 2^-24)`): `[0, 1)`.
    fn uniform(&mut self, x: ValueId) -> ValueId {
        let shape = self.f.ty(x).shape.clone();
        let ti = Type::tensor(Elem::Scalar(DType::I32), shape.clone());
        let tf = Type::tensor(Elem::Scalar(DType::F32), shape.clone());
        let tb = Type::tensor(Elem::Scalar(DType::I1), shape.clone());
        let zero = self.splat_const(ConstValue::Int(0), DType::I32, &shape);
        let ones = self.splat_const(ConstValue::Int(-1), DType::I32, &shape);
        let neg = self.push(OpKind::Cmp(CmpPred::Lt), vec![x, zero], tb);
        let flipped = self.push(OpKind::Binary(BinOp::Xor), vec![x, ones], ti.clone());
        let y = self.push(OpKind::Select, vec![neg, flipped, x], ti);
        let f = self.push(OpKind::Cast, vec![y], tf.clone());
        let scale = f64::from(tile_core::random::UNIFORM_SCALE_32);
        let s = self.splat_const(ConstValue::Float(scale), DType::F32, &shape);
        self.push(OpKind::Binary(BinOp::Mul), vec![f, s], tf)
    }

    /// The constant `c` of type `d`: a scalar, or splat to `shape` when it has dimensions.
    fn splat_const(&mut self, c: ConstValue, d: DType, shape: &[u32]) -> ValueId {
        let k = self.push(OpKind::Constant(c), vec![], Type::scalar(d));
        if shape.is_empty() {
            k
        } else {
            let t = Type::tensor(Elem::Scalar(d), shape.to_vec());
            self.push(OpKind::Splat, vec![k], t)
        }
    }

    /// Triton's `pair_uniform_to_normal`, first half: `sqrt(−2 · log(max(1e-7, u1))) ·
    /// cos(6.283185307179586 · u2)`, in that order of `f32` operations.
    fn box_muller(&mut self, u1: ValueId, u2: ValueId) -> ValueId {
        let shape = self.f.ty(u1).shape.clone();
        let tf = Type::tensor(Elem::Scalar(DType::F32), shape.clone());
        let splat = |l: &mut Self, v: f64| l.splat_const(ConstValue::Float(v), DType::F32, &shape);
        let floor = splat(self, f64::from(1.0e-7f32));
        let u1 = self.push(OpKind::Binary(BinOp::Max), vec![floor, u1], tf.clone());
        let two_pi = splat(self, f64::from(std::f32::consts::TAU));
        let th = self.push(OpKind::Binary(BinOp::Mul), vec![two_pi, u2], tf.clone());
        let minus_two = splat(self, -2.0);
        let log = self.push(OpKind::Math(MathFn::Log), vec![u1], tf.clone());
        let r2 = self.push(OpKind::Binary(BinOp::Mul), vec![minus_two, log], tf.clone());
        let r = self.push(OpKind::Math(MathFn::Sqrt), vec![r2], tf.clone());
        let c = self.push(OpKind::Math(MathFn::Cos), vec![th], tf.clone());
        self.push(OpKind::Binary(BinOp::Mul), vec![r, c], tf)
    }

    /// A math function written as a method: `x.exp()`, `a.pow(b)`, `a.fma(b, c)`.
    fn math_method(&mut self, m: MathFn, mc: &syn::ExprMethodCall, e: &Expr) -> syn::Result<Val> {
        let name = m.name();
        if mc.args.len() + 1 != m.arity() {
            return Err(err(
                e,
                format!(
                    "`.{name}()` takes {} argument(s), found {}",
                    m.arity() - 1,
                    mc.args.len()
                ),
            ));
        }
        let mut exprs: Vec<&Expr> = vec![&mc.receiver];
        exprs.extend(mc.args.iter());
        let vals = exprs
            .iter()
            .map(|a| self.expr(a))
            .collect::<syn::Result<Vec<_>>>()?;
        self.math(m, &vals, &exprs, e)
    }

    /// The `i32` index along `axis` of the first element of `x` (type `t`) equal to `extreme`, its
    /// maximum or minimum along `axis` (shape `rshape`): the smallest index `i` with
    /// `x[.., i, ..] == extreme`, by a `min` reduction of the indices where that holds and the
    /// extent elsewhere. NaN elements never equal the extreme (`max`/`min` ignore them); where
    /// every element is NaN the result is 0.
    pub(super) fn arg_index(
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

    /// A tile shape argument: `N` or `[M, N]`, compile-time powers of two, rank 1 or 2.
    pub(super) fn shape_arg(&mut self, e: &Expr) -> syn::Result<Vec<u32>> {
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

    /// `expand_dims(x, axis)` / `x.expand_dims(axis)`: `x` with an extent-1 dimension inserted at
    /// `axis` (Triton's `x[:, None]` is `x.expand_dims(1)`). Tiles have rank 2 at most.
    pub(super) fn expand_dims(&mut self, v: Val, at: &Expr, axis_expr: &Expr) -> syn::Result<Val> {
        let Some(t) = self.ty(v).filter(|t| t.is_tensor()) else {
            return Err(err(at, "`expand_dims` takes a tile; this is a scalar"));
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

    /// `x.roll(shift, axis)`: `x` rotated by `shift` positions toward higher indices along `axis`
    /// (NumPy's `roll`; a negative shift rotates the other way). Both are compile-time integers.
    pub(super) fn roll(
        &mut self,
        v: Val,
        at: &Expr,
        shift_expr: &Expr,
        axis_expr: &Expr,
    ) -> syn::Result<Val> {
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

    /// Lowers the pointer argument of `load`/`store`: its value, type and pointee type.
    pub(super) fn pointer_arg(
        &mut self,
        e: &Expr,
        func: &str,
    ) -> syn::Result<(ValueId, Type, DType)> {
        let p = self.expr(e)?;
        match (p, self.ty(p)) {
            (Val::V(id), Some(t)) => match t.elem.pointee() {
                Some(d) => Ok((id, t, d)),
                None => Err(err(
                    e,
                    format!(
                        "the first argument of `{func}` must be a pointer or a tile of pointers"
                    ),
                )),
            },
            _ => Err(err(
                e,
                format!("the first argument of `{func}` must be a pointer or a tile of pointers"),
            )),
        }
    }

    /// Lowers a mask argument for pointers of type `pty`: a bool or a mask of the same shape.
    pub(super) fn mask(&mut self, m: &Expr, pty: &Type) -> syn::Result<ValueId> {
        let v = self.expr(m)?;
        let t = self
            .ty(v)
            .filter(|t| t.elem == Elem::Scalar(DType::I1))
            .ok_or_else(|| {
                err(
                    m,
                    "a mask must be a bool or a tile of bools (a comparison such as `offs < n`)",
                )
            })?;
        if joint_shape(&t.shape, &pty.shape).as_deref() != Some(&pty.shape[..]) {
            return Err(err(
                m,
                format!(
                    "the mask has shape {:?} but the pointer tile has shape {:?}",
                    t.shape, pty.shape
                ),
            ));
        }
        let Val::V(id) = v else { unreachable_ptr() };
        self.broadcast(id, &pty.shape, m)
    }

    /// `atomic_add(ptrs, values[, mask][, sem = …][, scope = …])` and its siblings;
    /// `atomic_cas(ptrs, cmp, values[, mask]…)`.
    fn atomic(&mut self, b: Builtin, args: &[&Expr], c: &syn::ExprCall) -> syn::Result<Val> {
        let name = b.name();
        let (pos, named) = split_named(args)?;
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
        if !(1 + values..=2 + values).contains(&pos.len()) {
            return Err(err(
                c,
                format!(
                    "`{name}` takes {} to {} arguments (`{}`), found {}",
                    1 + values,
                    2 + values,
                    b.signature(),
                    pos.len()
                ),
            ));
        }
        let (mut sem, mut scope) = (None, None);
        let unknown = format!("`{name}`'s named arguments are `sem` and `scope`");
        each_named(&named, &["sem", "scope"], &unknown, |key, n| {
            if key == 0 {
                sem = Some(named_word(n, &MemSem::ALL, MemSem::name)?);
            } else {
                scope = Some(named_word(n, &MemScope::ALL, MemScope::name)?);
            }
            Ok(())
        })?;
        let (pid, pty, d) = self.pointer_arg(pos[0], name)?;
        let takes = |t: DType| match op {
            Some(op) => op.takes(t),
            None => tile_core::ir::atomic_cas_takes(t),
        };
        if !takes(d) {
            let ok: Vec<String> = [DType::I32, DType::I64, DType::F32, DType::F16, DType::BF16]
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
                        format!("`{name}` of `{}` values through `Ptr<{d}>`", t.elem),
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
        if let Some(m) = pos.get(values + 1) {
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

    /// `t.cumsum(axis[, reverse = …])` and its siblings (`args` after the tile `recv`).
    fn scan(
        &mut self,
        b: Builtin,
        recv: &Expr,
        args: &[&Expr],
        at: &dyn ToTokens,
    ) -> syn::Result<Val> {
        self.scan_as(b, b, recv, args, at)
    }

    /// The scan of `cum*` builtin `b`, written as builtin `shown` (which the messages name).
    fn scan_as(
        &mut self,
        b: Builtin,
        shown: Builtin,
        recv: &Expr,
        args: &[&Expr],
        at: &dyn ToTokens,
    ) -> syn::Result<Val> {
        let name = shown.name();
        let kind = match b {
            Builtin::Cumsum => ScanKind::Sum,
            Builtin::Cumprod => ScanKind::Prod,
            Builtin::Cummax => ScanKind::Max,
            _ => ScanKind::Min,
        };
        let (pos, named) = split_named(args)?;
        if pos.len() > 1 {
            return Err(err(
                pos[1],
                format!(
                    "`{name}` takes the tile, an axis and `reverse = …`: `{}`",
                    shown.signature()
                ),
            ));
        }
        let mut reverse = None;
        let unknown = format!("`{name}`'s one named argument is `reverse`");
        each_named(&named, &["reverse"], &unknown, |_, n| {
            reverse = Some(named_word(n, &[false, true], |x| {
                if x {
                    "true"
                } else {
                    "false"
                }
            })?);
            Ok(())
        })?;
        let v = self.expr(recv)?;
        let Some(t) = self.ty(v).filter(|t| t.is_tensor()) else {
            return Err(err(
                recv,
                format!("`{name}` scans a tile; this is a scalar"),
            ));
        };
        let axis = match pos.first() {
            None if t.shape.len() == 1 => 0,
            None => {
                return Err(err(
                    at,
                    format!(
                        "`{name}` of a {}-D tile needs an axis (0 … {})",
                        t.shape.len(),
                        t.shape.len() - 1
                    ),
                ))
            }
            Some(a) => {
                let av = self.expr(a)?;
                self.const_arg(av, a, "the scan axis")?
            }
        };
        if axis < 0 || axis as usize >= t.shape.len() {
            let at: &dyn ToTokens = match pos.first() {
                Some(a) => a,
                None => at,
            };
            return Err(err(
                at,
                format!(
                    "axis {axis} is out of range for a tile of rank {}",
                    t.shape.len()
                ),
            ));
        }
        let Val::V(mut id) = v else { unreachable_ptr() };
        let mut elem = t.elem;
        match t.dtype() {
            Some(DType::I32 | DType::I64 | DType::F32) => {}
            // Bools count: 0 and 1 as `i32` (a running count of a mask).
            Some(DType::I1) if kind == ScanKind::Sum => {
                elem = Elem::Scalar(DType::I32);
                id = self.push(OpKind::Cast, vec![id], Type::tensor(elem, t.shape.clone()));
            }
            other => {
                let found = match other {
                    None => "pointers".to_string(),
                    Some(DType::I1) => "bools".to_string(),
                    Some(d) => format!("`{d}`"),
                };
                return Err(err(
                    recv,
                    format!("`{name}` takes i32, i64 or f32 tiles, found {found}"),
                ));
            }
        }
        Ok(Val::V(self.push(
            OpKind::Scan {
                kind,
                axis: axis as u32,
                reverse: reverse.unwrap_or(false),
            },
            vec![id],
            Type::tensor(elem, t.shape.clone()),
        )))
    }
}

/// `args` split into the positional arguments and the trailing named ones (`key = value`); a
/// positional argument after a named one is an error.
fn split_named<'a>(args: &[&'a Expr]) -> syn::Result<(Vec<&'a Expr>, Vec<&'a syn::ExprAssign>)> {
    let first_named = args
        .iter()
        .position(|a| matches!(a, Expr::Assign(_)))
        .unwrap_or(args.len());
    let mut named = Vec::new();
    for a in &args[first_named..] {
        match a {
            Expr::Assign(n) => named.push(n),
            other => {
                return Err(err(
                    *other,
                    "positional arguments come before the named ones (`key = value`)",
                ))
            }
        }
    }
    Ok((args[..first_named].to_vec(), named))
}

/// The key of a named argument, if it is a plain name.
fn named_key(n: &syn::ExprAssign) -> Option<String> {
    match &*n.left {
        Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}

/// The value of a named argument that is one of `options`' words (`name` gives a word).
fn named_word<T: Copy>(
    n: &syn::ExprAssign,
    options: &[T],
    name: impl Fn(T) -> &'static str,
) -> syn::Result<T> {
    let word = match &*n.right {
        Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Bool(b),
            ..
        }) => Some(b.value.to_string()),
        _ => None,
    };
    let key = named_key(n).unwrap_or_default();
    options
        .iter()
        .copied()
        .find(|&o| word.as_deref() == Some(name(o)))
        .ok_or_else(|| {
            let all: Vec<&str> = options.iter().map(|&o| name(o)).collect();
            err(&n.right, format!("`{key}` is one of: {}", all.join(", ")))
        })
}

/// `load`'s or `store`'s positional arguments (`count` of them, which `what` describes) and its
/// one named argument, `evict = normal | first | last` (normal when absent).
fn evict_arg<'a>(
    args: &[&'a Expr],
    name: &str,
    count: std::ops::RangeInclusive<usize>,
    what: &str,
    c: &syn::ExprCall,
) -> syn::Result<(Vec<&'a Expr>, Evict)> {
    let (pos, named) = split_named(args)?;
    let mut evict = Evict::Normal;
    let unknown = format!("`{name}`'s one named argument is `evict` (`evict = first`)");
    each_named(&named, &["evict"], &unknown, |_, n| {
        evict = named_word(n, &Evict::ALL, Evict::name)?;
        Ok(())
    })?;
    if !count.contains(&pos.len()) {
        return Err(err(
            c,
            format!(
                "`{name}` takes {what} and optionally `evict = …`, found {}",
                pos.len()
            ),
        ));
    }
    Ok((pos, evict))
}

/// Walks a call's named arguments in order: each of `keys` may come once (`take` reads it, with
/// its index in `keys`), a second time is an error, and any other key is the error `unknown`.
fn each_named(
    named: &[&syn::ExprAssign],
    keys: &[&str],
    unknown: &str,
    mut take: impl FnMut(usize, &syn::ExprAssign) -> syn::Result<()>,
) -> syn::Result<()> {
    let mut seen = vec![false; keys.len()];
    for n in named {
        let key = named_key(n);
        match keys.iter().position(|&k| key.as_deref() == Some(k)) {
            Some(i) if !seen[i] => {
                seen[i] = true;
                take(i, n)?;
            }
            Some(i) => return Err(err(&n.left, format!("`{}` is given twice", keys[i]))),
            None => return Err(err(&n.left, unknown)),
        }
    }
    Ok(())
}

/// The value of `dot`'s named argument `precision = ieee | tf32`.
fn precision_arg(named: &syn::ExprAssign) -> syn::Result<Precision> {
    let is = |e: &Expr, want: &str| matches!(e, Expr::Path(p) if p.path.is_ident(want));
    if !is(&named.left, "precision") {
        return Err(err(
            &named.left,
            "`dot`'s one named argument is `precision` (`precision = tf32`)",
        ));
    }
    Precision::ALL
        .into_iter()
        .find(|p| is(&named.right, p.name()))
        .ok_or_else(|| {
            err(
                &named.right,
                "the precision is `ieee` (the default) or `tf32`",
            )
        })
}

/// The `cum*` builtin an `associative_scan` combiner stands for: `max` or `min` by name, or a
/// closure of two parameters whose body is `a + b`, `a * b`, `max(a, b)` or `min(a, b)` (either
/// order; the four are commutative).
fn scan_combiner(e: &Expr) -> syn::Result<Builtin> {
    let unsupported = || {
        err(
            e,
            "`associative_scan` combines with `+`, `*`, `max` or `min`: write `|a, b| a + b`, \
             `|a, b| a * b`, `max` or `min` (other combiners are not in the language yet)",
        )
    };
    let path_name = |e: &Expr| match e {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    };
    if let Some(name) = path_name(e) {
        return match name.as_str() {
            "max" => Ok(Builtin::Cummax),
            "min" => Ok(Builtin::Cummin),
            _ => Err(unsupported()),
        };
    }
    let Expr::Closure(c) = e else {
        return Err(unsupported());
    };
    let params: Vec<String> = c
        .inputs
        .iter()
        .filter_map(|p| match p {
            syn::Pat::Ident(i) if i.subpat.is_none() && i.by_ref.is_none() => {
                Some(i.ident.to_string())
            }
            _ => None,
        })
        .collect();
    if params.len() != 2 || c.inputs.len() != 2 || params[0] == params[1] {
        return Err(err(
            &c.inputs,
            "an `associative_scan` combiner takes two parameters: `|a, b| …`",
        ));
    }
    let mut body = &*c.body;
    while let Expr::Paren(p) = body {
        body = &p.expr;
    }
    if let Expr::Block(b) = body {
        if let [syn::Stmt::Expr(inner, None)] = b.block.stmts.as_slice() {
            body = inner;
        }
    }
    let is_pair = |x: &Expr, y: &Expr| {
        let (x, y) = (path_name(x), path_name(y));
        let (a, b) = (Some(params[0].clone()), Some(params[1].clone()));
        (x == a && y == b) || (x == b && y == a)
    };
    match body {
        Expr::Binary(bin) if is_pair(&bin.left, &bin.right) => match bin.op {
            SynBinOp::Add(_) => Ok(Builtin::Cumsum),
            SynBinOp::Mul(_) => Ok(Builtin::Cumprod),
            _ => Err(unsupported()),
        },
        Expr::Call(call) if call.args.len() == 2 && is_pair(&call.args[0], &call.args[1]) => {
            match path_name(&call.func).as_deref() {
                Some("max") => Ok(Builtin::Cummax),
                Some("min") => Ok(Builtin::Cummin),
                _ => Err(unsupported()),
            }
        }
        _ => Err(unsupported()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The language reference (the `tile` crate's documentation) has a row for every builtin and
    /// math function, written as the table declares it.
    #[test]
    fn reference_documents_every_builtin() {
        let reference = include_str!("../../../src/lib.rs");
        for b in Builtin::ALL {
            let sig = b.signature();
            let head = &sig[..sig.find('(').unwrap_or(sig.len()) + 1];
            assert!(
                reference.contains(&format!("`{head}")),
                "src/lib.rs does not document `{}` (as `{sig}`)",
                b.name()
            );
        }
        for m in MathFn::ALL {
            assert!(
                reference.contains(m.name()),
                "src/lib.rs does not document `{}`",
                m.name()
            );
        }
    }

    /// A name resolves to the builtin written its way, or reports the other form.
    #[test]
    fn lookup_by_form() {
        assert_eq!(
            lookup("max", Form::Function),
            Some(Callee::Builtin(Builtin::Max))
        );
        assert_eq!(
            lookup("max", Form::Method),
            Some(Callee::Builtin(Builtin::MaxOf))
        );
        assert_eq!(
            lookup("sum", Form::Function),
            Some(Callee::Builtin(Builtin::Sum))
        );
        assert_eq!(lookup("exp", Form::Method), Some(Callee::Math(MathFn::Exp)));
        assert_eq!(lookup("softplus", Form::Function), None);
        assert!(names(Form::Function).contains("dot"));
        assert!(names(Form::Method).contains("roll"));
    }
}
