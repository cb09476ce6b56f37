//! Lowers a kernel body (a block of Rust syntax) to tile-level IR: names, typing, broadcasting of
//! scalars to tiles, literal typing, and the DSL's built-in functions. Every misuse is a
//! `syn::Error` spanning the offending tokens.
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

use std::collections::HashMap;

use quote::ToTokens;
use syn::{BinOp as SynBin, Expr, Lit, Stmt, UnOp as SynUn};
use tile_core::ir::{
    BinOp, CmpPred, ConstValue, DType, Elem, Function, MathFn, OpKind, Precision, ReduceKind, Type,
    UnOp, ValueId,
};

use super::signature::{Param, ParamDecl};

/// A value during lowering: an IR value, or a compile-time literal not yet given a type.
#[derive(Clone, Copy, Debug)]
enum Val {
    V(ValueId),
    Int(i64),
    Float(f64),
}

/// The DSL's functions, for "unknown function" messages.
const BUILTINS: &str =
    "program_id, num_programs, arange, zeros, full, expand_dims, load, store, select, min, \
max, exp, exp2, log, log2, sqrt, rsqrt, erf, tanh, sigmoid, abs, floor, ceil, pow, fma; \
and the methods .sum(axis), .max(axis), .min(axis), .argmax(axis), .argmin(axis) (reductions; \
the axis is optional for 1-D tiles), .expand_dims(axis) and the math functions as methods (x.exp())";

fn err(t: &dyn ToTokens, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new_spanned(t.to_token_stream(), msg)
}

/// Lowers `body` of a kernel with `params` to a tile-level function, with each constant parameter
/// bound to `consts[i]` (the constants in declaration order).
pub fn lower_body(
    name: &str,
    params: &[Param],
    consts: &[i64],
    types: &[(String, DType)],
    body: &syn::Block,
    num_warps: u32,
    max_warps: u32,
) -> syn::Result<(Function, Vec<SourceRange>)> {
    let ir_params: Vec<(String, Type)> = params
        .iter()
        .filter_map(|p| match &p.kind {
            ParamDecl::Ptr { dtype, .. } => Some((p.name.clone(), Type::ptr(*dtype))),
            ParamDecl::Scalar(d) => Some((p.name.clone(), Type::scalar(*d))),
            ParamDecl::Const(_) | ParamDecl::Type(_) => None,
        })
        .collect();
    let f = Function::new(name, ir_params, num_warps);
    let mut scope = HashMap::new();
    let mut ir_index = 0;
    let mut const_index = 0;
    for p in params {
        match &p.kind {
            ParamDecl::Const(values) => {
                let c = consts.get(const_index).copied().unwrap_or(values[0]);
                const_index += 1;
                scope.insert(p.name.clone(), Val::Int(c));
            }
            ParamDecl::Ptr { .. } | ParamDecl::Scalar(_) => {
                scope.insert(p.name.clone(), Val::V(f.params()[ir_index]));
                ir_index += 1;
            }
            ParamDecl::Type(_) => {}
        }
    }
    let mut l = Lowering {
        block: f.entry(),
        f,
        scope,
        types: types.iter().cloned().collect(),
        max_warps: max_warps.max(1),
        spans: Vec::new(),
    };
    for stmt in &body.stmts {
        l.stmt(stmt)?;
    }
    let block = l.block;
    l.f.push_op(block, OpKind::Return, vec![], vec![]);
    Ok((l.f, l.spans))
}

struct Lowering {
    f: Function,
    block: tile_core::ir::BlockId,
    scope: HashMap<String, Val>,
    /// The element type each `Type` parameter stands for in this instance.
    types: HashMap<String, DType>,
    /// The most warps the kernel may run on (its `num_warps`, or 16 when chosen automatically):
    /// what the elements-per-thread limit divides by.
    max_warps: u32,
    /// Source ranges; an op's `loc` indexes this.
    spans: Vec<SourceRange>,
}

impl Lowering {
    /// Lowers `s`; its ops not located at a subexpression are located at it.
    fn stmt(&mut self, s: &Stmt) -> syn::Result<()> {
        let first = self.f.ops.len();
        self.stmt_inner(s)?;
        self.locate(first, s);
        Ok(())
    }

    fn stmt_inner(&mut self, s: &Stmt) -> syn::Result<()> {
        match s {
            Stmt::Local(local) => {
                let name = match &local.pat {
                    syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                        pi.ident.to_string()
                    }
                    syn::Pat::Type(pt) => {
                        return Err(err(
                            &pt.ty,
                            "type annotations are not supported in kernels; types are inferred",
                        ))
                    }
                    other => {
                        return Err(err(
                            other,
                            "only `let name = ...;` bindings are supported in kernels",
                        ))
                    }
                };
                let Some(init) = &local.init else {
                    return Err(err(
                        local,
                        "a `let` in a kernel needs a value: `let name = ...;`",
                    ));
                };
                if let Some((_, diverge)) = &init.diverge {
                    return Err(err(diverge, "`let ... else` is not supported in kernels"));
                }
                let v = self.expr(&init.expr)?;
                self.scope.insert(name, v);
                Ok(())
            }
            Stmt::Expr(e, _) => self.expr_stmt(e),
            Stmt::Item(item) => Err(err(
                item,
                "items (fn, struct, use, ...) cannot be declared inside a kernel",
            )),
            Stmt::Macro(m) => Err(err(&m.mac, "macros are not supported inside kernels")),
        }
    }

    fn expr_stmt(&mut self, e: &Expr) -> syn::Result<()> {
        match e {
            Expr::Assign(a) => {
                let name = self.assign_target(&a.left)?;
                let old = self.scope[&name];
                let v = self.expr(&a.right)?;
                self.check_same_kind(old, v, e)?;
                self.scope.insert(name, v);
                Ok(())
            }
            Expr::Binary(b) if compound(&b.op).is_some() => {
                let name = self.assign_target(&b.left)?;
                let old = self.scope[&name];
                let rhs = self.expr(&b.right)?;
                let v = self.binary(
                    compound(&b.op).unwrap_or(SynBin::Add(Default::default())),
                    old,
                    rhs,
                    e,
                )?;
                self.check_same_kind(old, v, e)?;
                self.scope.insert(name, v);
                Ok(())
            }
            Expr::ForLoop(fl) => self.for_loop(fl),
            Expr::If(ei) => self.if_stmt(ei),
            _ => {
                self.expr(e)?;
                Ok(())
            }
        }
    }

    /// `for i in a..b { … }` or `for i in (a..b).step_by(S) { … }`: the bounds are `i32` values,
    /// the step a positive compile-time integer. Names the body assigns that were bound before the
    /// loop are carried from one iteration to the next (a `for` op's carried values) and hold their
    /// last values after it; everything the body binds with `let` stays inside.
    fn for_loop(&mut self, fl: &syn::ExprForLoop) -> syn::Result<()> {
        if let Some(label) = &fl.label {
            return Err(err(label, "loop labels are not supported in kernels"));
        }
        let iv_name = match &*fl.pat {
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                Some(pi.ident.to_string())
            }
            syn::Pat::Wild(_) => None,
            other => return Err(err(other, "a loop variable is a name (or `_`)")),
        };
        let (range, step) = match &*fl.expr {
            Expr::MethodCall(mc) if mc.method == "step_by" => {
                if mc.args.len() != 1 {
                    return Err(err(&fl.expr, "`step_by` takes 1 argument (the step)"));
                }
                let sv = self.expr(&mc.args[0])?;
                let step = self.const_arg(sv, &mc.args[0], "the step of a loop")?;
                if step <= 0 || i32::try_from(step).is_err() {
                    return Err(err(
                        &mc.args[0],
                        format!("the step of a loop must be a positive i32, found {step}"),
                    ));
                }
                (strip_parens(&mc.receiver), step)
            }
            other => (other, 1),
        };
        let Expr::Range(r) = range else {
            return Err(err(
                &fl.expr,
                "a kernel loop runs over a range: `a..b` or `(a..b).step_by(S)`",
            ));
        };
        let (Some(start), Some(end), syn::RangeLimits::HalfOpen(_)) = (&r.start, &r.end, &r.limits)
        else {
            return Err(err(
                r,
                "a kernel loop runs over a half-open range with both ends: `a..b`",
            ));
        };
        let mut bounds = Vec::with_capacity(3);
        for (e, v) in [
            (&**start, None),
            (&**end, None),
            (&*fl.expr, Some(Val::Int(step))),
        ] {
            let v = match v {
                Some(v) => v,
                None => self.expr(e)?,
            };
            if let Some(t) = self.ty(v) {
                if t != Type::scalar(DType::I32) {
                    return Err(err(
                        e,
                        format!("a loop bound must be an `i32` scalar, found `{t}`"),
                    ));
                }
            }
            bounds.push(self.materialize(v, DType::I32, &[], e)?);
        }

        // The carried names, in a fixed order, and their values before the loop.
        let mut carried: Vec<String> = Vec::new();
        assigned_names(&fl.body.stmts, &mut Vec::new(), &mut carried);
        carried.retain(|n| self.scope.contains_key(n));
        let mut inits = Vec::with_capacity(carried.len());
        for n in &carried {
            let v = match self.scope[n] {
                Val::V(id) => id,
                lit @ Val::Int(_) => self.materialize(lit, DType::I32, &[], fl)?,
                lit @ Val::Float(_) => self.materialize(lit, DType::F32, &[], fl)?,
            };
            inits.push(v);
        }
        let types: Vec<Type> = inits.iter().map(|&v| self.f.ty(v).clone()).collect();
        let mut operands = bounds;
        operands.extend(&inits);
        let op = self
            .f
            .push_op(self.block, OpKind::For, operands, types.clone());
        let region = self.f.new_region();
        let body = self.f.new_block(region);
        self.f.ops[op.index()].regions.push(region);
        let iv = self.f.add_block_arg(body, Type::scalar(DType::I32));
        let outer_scope = self.scope.clone();
        let outer_block = std::mem::replace(&mut self.block, body);
        if let Some(n) = &iv_name {
            self.scope.insert(n.clone(), Val::V(iv));
        }
        for (n, t) in carried.iter().zip(&types) {
            let a = self.f.add_block_arg(body, t.clone());
            self.scope.insert(n.clone(), Val::V(a));
        }
        for stmt in &fl.body.stmts {
            self.stmt(stmt)?;
        }
        let mut yielded = Vec::with_capacity(carried.len());
        for (n, t) in carried.iter().zip(&types) {
            let v = self.scope[n];
            let d = t.dtype().unwrap_or(DType::I32);
            let changed = match self.ty(v) {
                Some(vt) => vt != *t,
                None => t.elem.pointee().is_some(),
            };
            if changed {
                let now = self
                    .ty(v)
                    .map_or("a literal".to_string(), |vt| format!("`{vt}`"));
                return Err(err(
                    fl,
                    format!(
                        "`{n}` is `{t}` before this loop and {now} at the end of its body; a carried value keeps its type (start a tile with `zeros([..])` or `full([..], v)`)"
                    ),
                ));
            }
            yielded.push(self.materialize(v, d, &t.shape, fl)?);
        }
        self.f.push_op(body, OpKind::Yield, yielded, vec![]);
        self.block = outer_block;
        self.scope = outer_scope;
        let results = self.f.op(op).results.clone();
        for (n, r) in carried.iter().zip(results) {
            self.scope.insert(n.clone(), Val::V(r));
        }
        Ok(())
    }

    /// `if cond { … } else { … }` (`else` optional, `else if` chains) on a scalar `bool`: names the
    /// branches assign that were bound before hold, after it, the values of the branch that ran
    /// (an `if` op's results); what a branch binds with `let` stays inside it.
    ///
    /// A condition on compile-time integers alone (`if ACT == 1`, with `ACT` a `Const`) is decided
    /// while the kernel is built: only the branch taken is lowered, with the same scoping.
    fn if_stmt(&mut self, ei: &syn::ExprIf) -> syn::Result<()> {
        if let Some(taken) = self.static_cond(&ei.cond)? {
            return self.static_if(ei, taken);
        }
        let cv = self.expr(&ei.cond)?;
        let cond = match (cv, self.ty(cv)) {
            (Val::V(id), Some(t)) if t == Type::scalar(DType::I1) => id,
            (_, t) => {
                let found = t.map_or("a literal".to_string(), |t| format!("`{t}`"));
                return Err(err(
                    &ei.cond,
                    format!("the condition of `if` is a scalar bool, found {found}; for a mask use `select(mask, a, b)`"),
                ));
            }
        };
        let mut assigned = Vec::new();
        assigned_in_if(ei, &[], &mut assigned);
        assigned.retain(|n| self.scope.contains_key(n));
        let mut before = Vec::with_capacity(assigned.len());
        for n in &assigned {
            let v = match self.scope[n] {
                Val::V(id) => id,
                lit @ Val::Int(_) => self.materialize(lit, DType::I32, &[], ei)?,
                lit @ Val::Float(_) => self.materialize(lit, DType::F32, &[], ei)?,
            };
            self.scope.insert(n.clone(), Val::V(v));
            before.push(v);
        }
        let types: Vec<Type> = before.iter().map(|&v| self.f.ty(v).clone()).collect();
        let op = self
            .f
            .push_op(self.block, OpKind::If, vec![cond], types.clone());
        let outer_scope = self.scope.clone();
        let outer_block = self.block;
        for branch in 0..2 {
            let region = self.f.new_region();
            let block = self.f.new_block(region);
            self.f.ops[op.index()].regions.push(region);
            self.block = block;
            self.scope = outer_scope.clone();
            match (branch, &ei.else_branch) {
                (0, _) => {
                    for stmt in &ei.then_branch.stmts {
                        self.stmt(stmt)?;
                    }
                }
                (_, Some((_, e))) => match &**e {
                    Expr::Block(b) => {
                        for stmt in &b.block.stmts {
                            self.stmt(stmt)?;
                        }
                    }
                    Expr::If(inner) => self.if_stmt(inner)?,
                    other => return Err(err(other, "expected a block or `if` after `else`")),
                },
                (_, None) => {}
            }
            let mut yielded = Vec::with_capacity(assigned.len());
            for (n, t) in assigned.iter().zip(&types) {
                let v = self.scope[n];
                if self.ty(v).is_some_and(|vt| vt != *t) {
                    let vt = self.ty(v).map(|x| x.to_string()).unwrap_or_default();
                    return Err(err(
                        ei,
                        format!("`{n}` is `{t}` before this `if` and `{vt}` after a branch; a value assigned in a branch keeps its type"),
                    ));
                }
                let d = t.dtype().unwrap_or(DType::I32);
                yielded.push(self.materialize(v, d, &t.shape, ei)?);
            }
            self.f.push_op(block, OpKind::Yield, yielded, vec![]);
        }
        self.block = outer_block;
        self.scope = outer_scope;
        let results = self.f.op(op).results.clone();
        for (n, r) in assigned.iter().zip(results) {
            self.scope.insert(n.clone(), Val::V(r));
        }
        Ok(())
    }

    /// The value of a condition made of comparisons of compile-time integers (with `!`, `&&`,
    /// `||` and parentheses), or `None` when it depends on run-time values.
    fn static_cond(&mut self, e: &Expr) -> syn::Result<Option<bool>> {
        match e {
            Expr::Paren(p) => self.static_cond(&p.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => {
                Ok(self.static_cond(&u.expr)?.map(|b| !b))
            }
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Bool(b),
                ..
            }) => Ok(Some(b.value)),
            Expr::Binary(b) => match b.op {
                SynBin::And(_) | SynBin::Or(_) => {
                    let (l, r) = (self.static_cond(&b.left)?, self.static_cond(&b.right)?);
                    Ok(match (l, r) {
                        (Some(l), Some(r)) if matches!(b.op, SynBin::And(_)) => Some(l && r),
                        (Some(l), Some(r)) => Some(l || r),
                        _ => None,
                    })
                }
                SynBin::Eq(_)
                | SynBin::Ne(_)
                | SynBin::Lt(_)
                | SynBin::Le(_)
                | SynBin::Gt(_)
                | SynBin::Ge(_) => {
                    if !is_static_int(&b.left) || !is_static_int(&b.right) {
                        return Ok(None);
                    }
                    let (Val::Int(l), Val::Int(r)) = (self.expr(&b.left)?, self.expr(&b.right)?)
                    else {
                        return Ok(None);
                    };
                    Ok(Some(match b.op {
                        SynBin::Eq(_) => l == r,
                        SynBin::Ne(_) => l != r,
                        SynBin::Lt(_) => l < r,
                        SynBin::Le(_) => l <= r,
                        SynBin::Gt(_) => l > r,
                        _ => l >= r,
                    }))
                }
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// An `if` whose condition was decided at build time: the taken branch's statements, with
    /// what they bind by `let` dropped after it and what they assign to outer names kept.
    fn static_if(&mut self, ei: &syn::ExprIf, taken: bool) -> syn::Result<()> {
        let mut assigned = Vec::new();
        assigned_in_if(ei, &[], &mut assigned);
        let outer = self.scope.clone();
        if taken {
            for stmt in &ei.then_branch.stmts {
                self.stmt(stmt)?;
            }
        } else if let Some((_, e)) = &ei.else_branch {
            match &**e {
                Expr::Block(b) => {
                    for stmt in &b.block.stmts {
                        self.stmt(stmt)?;
                    }
                }
                Expr::If(inner) => self.if_stmt(inner)?,
                other => return Err(err(other, "expected a block or `if` after `else`")),
            }
        }
        let inner = std::mem::replace(&mut self.scope, outer);
        for n in assigned {
            if let (Some(slot), Some(&v)) = (self.scope.get_mut(&n), inner.get(&n)) {
                *slot = v;
            }
        }
        Ok(())
    }

    fn assign_target(&self, left: &Expr) -> syn::Result<String> {
        let Expr::Path(p) = left else {
            return Err(err(left, "only a local name can be assigned to"));
        };
        let name = p
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        if !self.scope.contains_key(&name) {
            return Err(err(left, format!("cannot find `{name}` in this kernel")));
        }
        Ok(name)
    }

    fn check_same_kind(&self, old: Val, new: Val, at: &Expr) -> syn::Result<()> {
        match (self.ty(old), self.ty(new)) {
            (Some(a), Some(b)) if a != b => Err(err(
                at,
                format!("assignment changes the type from `{a}` to `{b}`"),
            )),
            _ => Ok(()),
        }
    }

    fn ty(&self, v: Val) -> Option<Type> {
        match v {
            Val::V(id) => Some(self.f.ty(id).clone()),
            Val::Int(_) | Val::Float(_) => None,
        }
    }

    fn push(&mut self, kind: OpKind, operands: Vec<ValueId>, ty: Type) -> ValueId {
        self.f.push1(self.block, kind, operands, ty)
    }

    /// Lowers `e`; the ops it makes (and its subexpressions did not claim) are located at it.
    fn expr(&mut self, e: &Expr) -> syn::Result<Val> {
        let first = self.f.ops.len();
        let v = self.expr_inner(e)?;
        self.locate(first, e);
        Ok(v)
    }

    /// Gives the ops made since `first` that have no location yet the location of `at`.
    fn locate(&mut self, first: usize, at: &dyn ToTokens) {
        if first == self.f.ops.len() {
            return;
        }
        let id = self.spans.len() as u32;
        // The first and last tokens' spans: an error between them underlines the expression.
        let tokens = at.to_token_stream();
        let mut it = tokens.into_iter();
        let start = it
            .next()
            .map_or_else(proc_macro2::Span::call_site, |t| t.span());
        let end = it.last().map_or(start, |t| t.span());
        self.spans.push(SourceRange { start, end });
        for op in &mut self.f.ops[first..] {
            op.loc.get_or_insert(id);
        }
    }

    fn expr_inner(&mut self, e: &Expr) -> syn::Result<Val> {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Int(i) => {
                    if !i.suffix().is_empty() {
                        return Err(err(
                            i,
                            "literals take no suffix in kernels; their type is inferred",
                        ));
                    }
                    Ok(Val::Int(i.base10_parse::<i64>()?))
                }
                Lit::Float(x) => {
                    if !x.suffix().is_empty() {
                        return Err(err(
                            x,
                            "literals take no suffix in kernels; their type is inferred",
                        ));
                    }
                    Ok(Val::Float(x.base10_parse::<f64>()?))
                }
                Lit::Bool(b) => Ok(Val::V(self.push(
                    OpKind::Constant(ConstValue::Int(b.value as i64)),
                    vec![],
                    Type::scalar(DType::I1),
                ))),
                other => Err(err(
                    other,
                    "only integer, float and bool literals are supported in kernels",
                )),
            },
            Expr::Path(p) => {
                let Some(id) = p.path.get_ident() else {
                    return named_constant(p);
                };
                self.scope
                    .get(&id.to_string())
                    .copied()
                    .ok_or_else(|| err(p, format!("cannot find `{id}` in this kernel")))
            }
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Binary(b) => {
                if compound(&b.op).is_some() {
                    return Err(err(e, "compound assignment is a statement, not a value"));
                }
                let l = self.expr(&b.left)?;
                let r = self.expr(&b.right)?;
                self.binary(b.op, l, r, e)
            }
            Expr::Unary(u) => {
                let v = self.expr(&u.expr)?;
                self.unary(&u.op, v, e)
            }
            Expr::Call(c) => self.call(c),
            Expr::Return(_) => Err(err(
                e,
                "a kernel cannot return a value; write results with `store`",
            )),
            Expr::Closure(_) => Err(err(e, "closures are not supported in kernels")),
            Expr::ForLoop(_) => Err(err(e, "a `for` loop is a statement, not a value")),
            Expr::Loop(_) | Expr::While(_) => Err(err(
                e,
                "only `for i in a..b { … }` loops (optionally `(a..b).step_by(S)`) are supported in kernels",
            )),
            Expr::If(_) => Err(err(
                e,
                "`if` is a statement in kernels, not a value; for a value per element use `select(mask, a, b)`",
            )),
            Expr::Match(_) => Err(err(
                e,
                "`match` is not supported in kernels; use `if` on a scalar or `select(mask, a, b)`",
            )),
            Expr::MethodCall(m) => self.method_call(m, e),
            Expr::Cast(c) => self.cast(c),
            Expr::Macro(m) => Err(err(&m.mac, "macros are not supported inside kernels")),
            Expr::Index(_) => Err(err(
                e,
                "indexing is not supported; offset a pointer and `load` instead",
            )),
            other => Err(err(other, "this expression is not supported in kernels")),
        }
    }

    /// Gives a literal the element type `d` (and `shape`), or returns the value as it is.
    fn materialize(
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
                    DType::F32 | DType::F16 | DType::BF16 => ConstValue::Float(i as f64),
                    DType::I32 => {
                        if i32::try_from(i).is_err() {
                            return Err(err(at, format!("literal {i} does not fit in i32")));
                        }
                        ConstValue::Int(i)
                    }
                    DType::I64 => ConstValue::Int(i),
                    DType::I1 => {
                        return Err(err(
                            at,
                            "an integer literal is not a bool; write `true` or `false`",
                        ))
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
        };
        self.broadcast(scalar, shape, at)
    }

    /// Brings `v` to `shape` by NumPy's rules: a scalar is splat; a tile of lower rank gains
    /// leading dimensions of extent 1 (`expand_dims`), then is repeated along its extent-1
    /// dimensions (`broadcast`). Any other difference is a shape mismatch.
    fn broadcast(&mut self, v: ValueId, shape: &[u32], at: &dyn ToTokens) -> syn::Result<ValueId> {
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
    fn joint(&self, a: &[u32], b: &[u32], at: &dyn ToTokens) -> syn::Result<Vec<u32>> {
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
    fn check_elements(&self, shape: &[u32], at: &dyn ToTokens) -> syn::Result<()> {
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

    fn fold_int(op: SynBin, a: i64, b: i64) -> Option<Val> {
        let v = match op {
            SynBin::Add(_) => a.checked_add(b)?,
            SynBin::Sub(_) => a.checked_sub(b)?,
            SynBin::Mul(_) => a.checked_mul(b)?,
            SynBin::Div(_) => a.checked_div(b)?,
            SynBin::Rem(_) => a.checked_rem(b)?,
            _ => return None,
        };
        Some(Val::Int(v))
    }

    fn binary(&mut self, op: SynBin, l: Val, r: Val, at: &Expr) -> syn::Result<Val> {
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
        }
        let (lt, rt) = (self.ty(l), self.ty(r));
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
            if matches!(d, DType::F16 | DType::BF16) && !bop.is_bitwise() {
                return Err(err(
                    at,
                    format!("`{d}` is a storage type; convert with `as f32` before arithmetic"),
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

    fn unary(&mut self, op: &SynUn, v: Val, at: &Expr) -> syn::Result<Val> {
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
                matches!(ty.elem, Elem::Scalar(DType::I32 | DType::I64 | DType::F32)),
            ),
            SynUn::Not(_) => (UnOp::Not, matches!(ty.elem, Elem::Scalar(d) if d.is_int())),
            _ => return Err(err(at, "this operator is not supported in kernels")),
        };
        if !ok {
            return Err(err(
                at,
                format!("`{}` is not defined on `{}`", kind.name(), ty.elem),
            ));
        }
        Ok(Val::V(self.push(OpKind::Unary(kind), vec![id], ty)))
    }

    fn const_arg(&self, v: Val, at: &Expr, what: &str) -> syn::Result<i64> {
        match v {
            Val::Int(i) => Ok(i),
            _ => Err(err(
                at,
                format!("{what} must be a compile-time integer (a literal or a `Const` parameter)"),
            )),
        }
    }

    fn call(&mut self, c: &syn::ExprCall) -> syn::Result<Val> {
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
        match name.as_str() {
            "program_id" | "num_programs" => {
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
            "arange" => {
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
            "load" => {
                arity(1..=3, "1 to 3 arguments (pointers, mask, other)")?;
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
                    OpKind::Load { vec: 1 },
                    operands,
                    pty.with_elem(Elem::Scalar(d)),
                )))
            }
            "store" => {
                arity(2..=3, "2 or 3 arguments (pointers, values, mask)")?;
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
                self.f
                    .push_op(self.block, OpKind::Store { vec: 1 }, operands, vec![]);
                Ok(Val::Int(0))
            }
            "select" => {
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
            "zeros" | "full" => {
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
            "dot" => {
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
                if staged > 48 * 1024 {
                    return Err(err(
                        c,
                        format!(
                            "`dot` of tiles {}×{} and {}×{} stages {staged} bytes through shared memory; a program may declare 49152: use smaller tiles (loop over K)",
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
            "expand_dims" => {
                arity(2..=2, "2 arguments (tile, axis)")?;
                let v = self.expr(args[0])?;
                self.expand_dims(v, args[0], args[1])
            }
            "min" | "max" => {
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
            other => match MathFn::ALL.into_iter().find(|m| m.name() == other) {
                Some(m) => {
                    let n = m.arity();
                    arity(n..=n, &format!("{n} argument(s)"))?;
                    let vals = args
                        .iter()
                        .map(|a| self.expr(a))
                        .collect::<syn::Result<Vec<_>>>()?;
                    self.math(m, &vals, &args, c)
                }
                None => Err(err(
                    &c.func,
                    format!("unknown function `{name}`; the kernel language has: {BUILTINS}"),
                )),
            },
        }
    }

    /// `exp(x)`, `pow(a, b)`, `fma(a, b, c)`, …: operands share one shape and `f32` (integers
    /// for `abs`); literals adapt.
    fn math(
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
    fn method_call(&mut self, mc: &syn::ExprMethodCall, e: &Expr) -> syn::Result<Val> {
        let name = mc.method.to_string();
        if name == "expand_dims" {
            if mc.args.len() != 1 {
                return Err(err(e, "`.expand_dims(axis)` takes 1 argument (the axis)"));
            }
            let v = self.expr(&mc.receiver)?;
            return self.expand_dims(v, &mc.receiver, &mc.args[0]);
        }
        if name == "roll" {
            if mc.args.len() != 2 {
                return Err(err(
                    e,
                    "`.roll(shift, axis)` takes 2 arguments (the shift and the axis)",
                ));
            }
            let v = self.expr(&mc.receiver)?;
            return self.roll(v, &mc.receiver, &mc.args[0], &mc.args[1]);
        }
        // `argmax`/`argmin` are built from a reduction, a comparison and a `min` of indices.
        let arg = match name.as_str() {
            "argmax" => Some(ReduceKind::Max),
            "argmin" => Some(ReduceKind::Min),
            _ => None,
        };
        let kind = ReduceKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .or(arg);
        if let Some(kind) = kind {
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
            if arg.is_none() {
                return Ok(Val::V(reduced));
            }
            return Ok(Val::V(self.arg_index(id, &t, axis as u32, reduced, &shape)));
        }
        if let Some(m) = MathFn::ALL.into_iter().find(|m| m.name() == name) {
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
            return self.math(m, &vals, &exprs, e);
        }
        Err(err(
            &mc.method,
            format!("unknown method `{name}`; the kernel language has: {BUILTINS}"),
        ))
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

    /// `expand_dims(x, axis)` / `x.expand_dims(axis)`: `x` with an extent-1 dimension inserted at
    /// `axis` (Triton's `x[:, None]` is `x.expand_dims(1)`). Tiles have rank 2 at most.
    fn expand_dims(&mut self, v: Val, at: &Expr, axis_expr: &Expr) -> syn::Result<Val> {
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

    /// `x as T`: element-wise conversion to `f32`, `f16`, `bf16`, `i32`, `i64` or `bool`.
    fn cast(&mut self, c: &syn::ExprCast) -> syn::Result<Val> {
        let target = match &*c.ty {
            syn::Type::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        };
        let d = match target.as_deref() {
            Some("f32") => DType::F32,
            Some("f16") => DType::F16,
            Some("bf16") => DType::BF16,
            Some("i32") => DType::I32,
            Some("i64") => DType::I64,
            Some("bool") => DType::I1,
            Some(t) if self.types.contains_key(t) => self.types[t],
            _ => {
                return Err(err(
                    &c.ty,
                    "a kernel converts to f32, f16, bf16, i32, i64, bool or a `Type` parameter",
                ))
            }
        };
        let v = self.expr(&c.expr)?;
        match v {
            Val::Int(_) | Val::Float(_) => {
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

    /// Lowers the pointer argument of `load`/`store`: its value, type and pointee type.
    fn pointer_arg(&mut self, e: &Expr, func: &str) -> syn::Result<(ValueId, Type, DType)> {
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

    /// The common element type and shape of two operands (no pointers).
    fn common(&self, a: Val, b: Val, at: &dyn ToTokens) -> syn::Result<(DType, Vec<u32>)> {
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

    /// Lowers a mask argument for pointers of type `pty`: a bool or a mask of the same shape.
    fn mask(&mut self, m: &Expr, pty: &Type) -> syn::Result<ValueId> {
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
}

/// `(e)` → `e`.
fn strip_parens(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_parens(&p.expr),
        other => other,
    }
}

/// The names that `stmts` assign (`x = …`, `x += …`), in order of first assignment, that are not
/// bound by a `let` of these statements first (`bound` holds those); nested loops included.
fn assigned_names(stmts: &[Stmt], bound: &mut Vec<String>, out: &mut Vec<String>) {
    for s in stmts {
        match s {
            Stmt::Local(l) => {
                if let syn::Pat::Ident(pi) = &l.pat {
                    bound.push(pi.ident.to_string());
                }
            }
            Stmt::Expr(e, _) => {
                let target = match e {
                    Expr::Assign(a) => Some(&*a.left),
                    Expr::Binary(b) if compound(&b.op).is_some() => Some(&*b.left),
                    Expr::ForLoop(fl) => {
                        let mut inner = bound.clone();
                        if let syn::Pat::Ident(pi) = &*fl.pat {
                            inner.push(pi.ident.to_string());
                        }
                        assigned_names(&fl.body.stmts, &mut inner, out);
                        None
                    }
                    Expr::If(ei) => {
                        assigned_in_if(ei, bound, out);
                        None
                    }
                    _ => None,
                };
                if let Some(Expr::Path(p)) = target {
                    if let Some(id) = p.path.get_ident() {
                        let n = id.to_string();
                        if !bound.contains(&n) && !out.contains(&n) {
                            out.push(n);
                        }
                    }
                }
            }
            Stmt::Item(_) | Stmt::Macro(_) => {}
        }
    }
}

/// [`assigned_names`] of both branches of an `if` (and of `else if` chains).
/// Whether `e` can only be a compile-time integer: literals, paths (a `Const` parameter, or else
/// a run-time name the caller then sees is not an integer constant) and arithmetic of them, with
/// no call or load that building it would emit.
fn is_static_int(e: &Expr) -> bool {
    match e {
        Expr::Lit(l) => matches!(l.lit, syn::Lit::Int(_)),
        Expr::Path(_) => true,
        Expr::Paren(p) => is_static_int(&p.expr),
        Expr::Group(g) => is_static_int(&g.expr),
        Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && is_static_int(&u.expr),
        Expr::Binary(b) => {
            matches!(
                b.op,
                SynBin::Add(_) | SynBin::Sub(_) | SynBin::Mul(_) | SynBin::Div(_) | SynBin::Rem(_)
            ) && is_static_int(&b.left)
                && is_static_int(&b.right)
        }
        _ => false,
    }
}

fn assigned_in_if(ei: &syn::ExprIf, bound: &[String], out: &mut Vec<String>) {
    assigned_names(&ei.then_branch.stmts, &mut bound.to_vec(), out);
    if let Some((_, e)) = &ei.else_branch {
        match &**e {
            Expr::Block(b) => assigned_names(&b.block.stmts, &mut bound.to_vec(), out),
            Expr::If(inner) => assigned_in_if(inner, bound, out),
            _ => {}
        }
    }
}

/// The shape two operands of `a` and `b` combine to, by NumPy's rules: the shorter shape gains
/// leading 1s, then each dimension must be equal or 1 on one side (a scalar has shape `[]`).
fn joint_shape(a: &[u32], b: &[u32]) -> Option<Vec<u32>> {
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

/// `f32::INFINITY`, `i32::MAX` and the like, as literals.
fn named_constant(p: &syn::ExprPath) -> syn::Result<Val> {
    let text = p.to_token_stream().to_string().replace(' ', "");
    Ok(match text.as_str() {
        "f32::INFINITY" => Val::Float(f64::INFINITY),
        "f32::NEG_INFINITY" => Val::Float(f64::NEG_INFINITY),
        "f32::NAN" => Val::Float(f64::NAN),
        "f32::MAX" => Val::Float(f32::MAX as f64),
        "f32::MIN" => Val::Float(f32::MIN as f64),
        "f32::EPSILON" => Val::Float(f32::EPSILON as f64),
        "i32::MAX" => Val::Int(i32::MAX as i64),
        "i32::MIN" => Val::Int(i32::MIN as i64),
        "i64::MAX" => Val::Int(i64::MAX),
        "i64::MIN" => Val::Int(i64::MIN),
        _ => {
            return Err(err(
                p,
                "paths are not supported in kernels; use a local or parameter name, or a constant \
                 such as `f32::INFINITY`, `f32::NAN`, `i32::MAX`",
            ))
        }
    })
}

/// The operator of a compound assignment (`+=` → `+`).
fn compound(op: &SynBin) -> Option<SynBin> {
    Some(match op {
        SynBin::AddAssign(_) => SynBin::Add(Default::default()),
        SynBin::SubAssign(_) => SynBin::Sub(Default::default()),
        SynBin::MulAssign(_) => SynBin::Mul(Default::default()),
        SynBin::DivAssign(_) => SynBin::Div(Default::default()),
        SynBin::RemAssign(_) => SynBin::Rem(Default::default()),
        _ => return None,
    })
}

/// The most elements one tile may hold (as Triton's `TRITON_MAX_TENSOR_NUMEL`).
pub const MAX_TILE_ELEMENTS: u64 = 1 << 20;

/// Where an op came from: the spans of the first and last tokens of its expression.
#[derive(Clone, Copy, Debug)]
pub struct SourceRange {
    /// The first token's span.
    pub start: proc_macro2::Span,
    /// The last token's span.
    pub end: proc_macro2::Span,
}

impl SourceRange {
    /// An error that underlines the whole range (as `syn::Error::new_spanned` does for tokens).
    pub fn error(&self, msg: impl std::fmt::Display) -> syn::Error {
        let ends = [
            proc_macro2::Ident::new("start", self.start),
            proc_macro2::Ident::new("end", self.end),
        ];
        syn::Error::new_spanned(quote::quote!(#(#ends)*), msg)
    }
}

/// The most elements of one tile one thread may hold: a register each (at 32 bits), half of
/// the 255 a thread has, so that the rest of the program fits beside it (a 128 × 128 f32
/// accumulator on 4 warps is exactly this). Larger tiles spill, and take seconds to minutes to
/// compile.
pub const MAX_ELEMENTS_PER_THREAD: u64 = 128;

/// Where a typed value is required and the code above has established it is one.
#[cold]
fn unreachable_ptr() -> ! {
    unreachable!("a typed value was checked just before")
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
