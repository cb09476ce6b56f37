//! Lowers a kernel body (a block of Rust syntax) to tile-level IR: the statement and expression
//! walker (Triton's `code_generator.py`). It binds names, carries values through loops and `if`s,
//! decides `if`s on compile-time integers, and hands operators to [`super::typing`] and calls to
//! [`super::builtins`]. Every misuse is a `syn::Error` spanning the offending tokens.

use std::collections::HashMap;

use quote::ToTokens;
use syn::{BinOp as SynBin, Expr, Lit, Stmt};
use tile_core::ir::{BlockId, ConstValue, DType, Function, OpId, OpKind, Type, ValueId};

use super::functions::FnTable;
use super::signature::{Param, ParamDecl};

/// A value during lowering: an IR value, a compile-time literal not yet given a type, or a
/// tensor descriptor (its slot; what it describes is in [`Lowering::descs`]), which exists only
/// here: its accesses carry the array's pointer, extents and strides as operands.
#[derive(Clone, Copy, Debug)]
pub(super) enum Val {
    V(ValueId),
    Int(i64),
    Float(f64),
    Desc(u32),
}

pub(super) fn err(t: &dyn ToTokens, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new_spanned(t.to_token_stream(), msg)
}

/// Lowers `body` of a kernel with `params` to a tile-level function, with each constant parameter
/// bound to `consts[i]` (the constants in declaration order), and `fns` the tile functions its
/// body calls.
#[allow(clippy::too_many_arguments)]
pub fn lower_body(
    name: &str,
    params: &[Param],
    consts: &[i64],
    types: &[(String, DType)],
    body: &syn::Block,
    num_warps: u32,
    max_warps: u32,
    fns: &FnTable,
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
                let c = consts
                    .get(const_index)
                    .copied()
                    .unwrap_or_else(|| values.first().copied().unwrap_or(0));
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
        calls: fns.kernel_calls.clone(),
        fns: std::rc::Rc::new(fns.clone()),
        inlining: Vec::new(),
        descs: Vec::new(),
        static_branches: 0,
    };
    for stmt in &body.stmts {
        l.stmt(stmt)?;
    }
    let block = l.block;
    l.f.push_op(block, OpKind::Return, vec![], vec![]);
    Ok((l.f, l.spans))
}

pub(super) struct Lowering {
    pub(super) f: Function,
    pub(super) block: tile_core::ir::BlockId,
    pub(super) scope: HashMap<String, Val>,
    /// The element type each `Type` parameter stands for in this instance.
    pub(super) types: HashMap<String, DType>,
    /// The most warps the kernel may run on (its `num_warps`, or 16 when chosen automatically):
    /// what the elements-per-thread limit divides by.
    pub(super) max_warps: u32,
    /// Source ranges; an op's `loc` indexes this.
    pub(super) spans: Vec<SourceRange>,
    /// The tile functions the kernel reaches.
    pub(super) fns: std::rc::Rc<FnTable>,
    /// The function each call path of the body being lowered names (the kernel's, or the
    /// function's being inlined).
    pub(super) calls: HashMap<String, usize>,
    /// The functions being inlined, outermost first (their indices in `fns`).
    pub(super) inlining: Vec<usize>,
    /// The tensor descriptors made so far, by slot.
    pub(super) descs: Vec<super::builtins::Descriptor>,
    /// How many branches decided at build time enclose the statement being lowered: in one, a
    /// name may be assigned a value of another type (the branch is the only code there is,
    /// as in a constexpr `if`); a loop or runtime `if` around it still checks what it carries.
    pub(super) static_branches: u32,
}

impl Lowering {
    /// Lowers `s`; its ops not located at a subexpression are located at it.
    pub(super) fn stmt(&mut self, s: &Stmt) -> syn::Result<()> {
        let first = self.f.ops.len();
        self.stmt_inner(s)?;
        self.locate(first, s);
        Ok(())
    }

    pub(super) fn stmt_inner(&mut self, s: &Stmt) -> syn::Result<()> {
        match s {
            Stmt::Local(local) if matches!(local.pat, syn::Pat::Tuple(_)) => self.let_tuple(local),
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
                let v = self.expr_any(&init.expr)?;
                self.scope.insert(name, v);
                Ok(())
            }
            // A lone `;` (legal Rust: `let m = offs < n; ;`), which syn keeps as an empty
            // statement.
            Stmt::Expr(Expr::Verbatim(tokens), Some(_)) if tokens.is_empty() => Ok(()),
            Stmt::Expr(e, _) => self.expr_stmt(e),
            Stmt::Item(item) => Err(err(
                item,
                "items (fn, struct, use, ...) cannot be declared inside a kernel",
            )),
            Stmt::Macro(m) => Err(err(&m.mac, "macros are not supported inside kernels")),
        }
    }

    /// `let (a, b, _) = e;`: the values of a tuple or of a tile function with several results.
    fn let_tuple(&mut self, local: &syn::Local) -> syn::Result<()> {
        let syn::Pat::Tuple(t) = &local.pat else {
            return Err(err(&local.pat, "expected a tuple of names"));
        };
        let mut names = Vec::with_capacity(t.elems.len());
        for p in &t.elems {
            names.push(match p {
                syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    Some(pi.ident.to_string())
                }
                syn::Pat::Wild(_) => None,
                other => return Err(err(other, "a tuple binding holds names (or `_`)")),
            });
        }
        let Some(init) = &local.init else {
            return Err(err(
                local,
                "a `let` in a kernel needs a value: `let (a, b) = ...;`",
            ));
        };
        if let Some((_, diverge)) = &init.diverge {
            return Err(err(diverge, "`let ... else` is not supported in kernels"));
        }
        let vals = self.expr_multi(&init.expr)?;
        if vals.len() != names.len() {
            return Err(err(
                &local.pat,
                format!("{} name(s) bound to {} value(s)", names.len(), vals.len()),
            ));
        }
        for (n, v) in names.into_iter().zip(vals) {
            if let Some(n) = n {
                self.scope.insert(n, v);
            }
        }
        Ok(())
    }

    pub(super) fn expr_stmt(&mut self, e: &Expr) -> syn::Result<()> {
        match e {
            // `(a, b, _) = f(…)`: the values of a tile function with several results (Rust's
            // destructuring assignment), each name keeping its type.
            Expr::Assign(a) if matches!(strip_parens(&a.left), Expr::Tuple(_)) => {
                let Expr::Tuple(t) = strip_parens(&a.left) else {
                    return Err(err(&a.left, "expected a tuple of names"));
                };
                let mut names = Vec::with_capacity(t.elems.len());
                for x in &t.elems {
                    names.push(match x {
                        Expr::Infer(_) => None,
                        other => Some(self.assign_target(other)?),
                    });
                }
                let vals = self.expr_multi(&a.right)?;
                if vals.len() != names.len() {
                    return Err(err(
                        &a.left,
                        format!("{} name(s) assigned {} value(s)", names.len(), vals.len()),
                    ));
                }
                for ((n, v), x) in names.into_iter().zip(vals).zip(&t.elems) {
                    if let Some(n) = n {
                        self.check_same_kind(self.scope[&n], v, x)?;
                        self.scope.insert(n, v);
                    }
                }
                Ok(())
            }
            Expr::Assign(a) => {
                let name = self.assign_target(&a.left)?;
                let old = self.scope[&name];
                let v = self.expr_any(&a.right)?;
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
            Expr::While(w) => self.while_loop(w),
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
    /// last values after it; everything the body binds with `let` stays inside. `for i in
    /// static_range(a, b)` is unrolled while the kernel is built instead ([`Self::static_loop`]).
    pub(super) fn for_loop(&mut self, fl: &syn::ExprForLoop) -> syn::Result<()> {
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
        if let Expr::Call(c) = strip_parens(&fl.expr) {
            if matches!(&*c.func, Expr::Path(p) if p.path.is_ident("static_range")) {
                return self.static_loop(fl, iv_name, c);
            }
        }
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

        let (carried, inits) = self.carried(&fl.body.stmts, fl)?;
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
        self.close_loop(op, body, &carried, &types, fl, (outer_block, outer_scope))
    }

    /// Ends a loop's body `body` with the `yield` of its carried names' values, returns to the
    /// block and scope outside the loop (`outer`), and binds the names to the loop `op`'s
    /// results there.
    fn close_loop(
        &mut self,
        op: OpId,
        body: BlockId,
        carried: &[String],
        types: &[Type],
        at: &dyn ToTokens,
        outer: (BlockId, HashMap<String, Val>),
    ) -> syn::Result<()> {
        let yielded = self.carried_now(carried, types, at)?;
        self.f.push_op(body, OpKind::Yield, yielded, vec![]);
        (self.block, self.scope) = outer;
        let results = self.f.op(op).results.clone();
        for (n, r) in carried.iter().zip(results) {
            self.scope.insert(n.clone(), Val::V(r));
        }
        Ok(())
    }

    /// The names a loop body `stmts` assigns that are bound before the loop (its carried values,
    /// in a fixed order), and their values before it (literals made values; a tensor descriptor
    /// is an error at its assignment, or at `at`).
    fn carried(
        &mut self,
        stmts: &[Stmt],
        at: &dyn ToTokens,
    ) -> syn::Result<(Vec<String>, Vec<ValueId>)> {
        let mut carried: Vec<String> = Vec::new();
        assigned_names(stmts, &mut Vec::new(), &mut carried);
        carried.retain(|n| self.scope.contains_key(n));
        let mut inits = Vec::with_capacity(carried.len());
        for n in &carried {
            let v = match self.scope[n] {
                Val::V(id) => id,
                lit @ Val::Int(_) => self.materialize(lit, DType::I32, &[], at)?,
                lit @ Val::Float(_) => self.materialize(lit, DType::F32, &[], at)?,
                Val::Desc(_) => {
                    let at = assignment_of(stmts, n).map_or(at, |s| s);
                    return Err(reassigned_desc(n, at, "loop"));
                }
            };
            inits.push(v);
        }
        Ok((carried, inits))
    }

    /// The values the carried names hold at the end of a loop body (what it yields), each of
    /// the type it had before the loop (else an error at `at`).
    fn carried_now(
        &mut self,
        carried: &[String],
        types: &[Type],
        at: &dyn ToTokens,
    ) -> syn::Result<Vec<ValueId>> {
        let mut yielded = Vec::with_capacity(carried.len());
        for (n, t) in carried.iter().zip(types) {
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
                    at,
                    format!(
                        "`{n}` is `{t}` before this loop and {now} at the end of its body; a carried value keeps its type (start a tile with `zeros([..])` or `full([..], v)`)"
                    ),
                ));
            }
            yielded.push(self.materialize(v, d, &t.shape, at)?);
        }
        Ok(yielded)
    }

    /// `while cond { … }`: a `while` op. Names the body assigns that were bound before the loop
    /// are carried, as in a `for` loop; the condition, a scalar `bool` evaluated before each
    /// iteration on the carried values, may call builtins with effects (`atomic_cas` for a spin
    /// lock). It must be the same for every thread of the program, as a scalar of arguments,
    /// carried scalars and scalar atomics is: threads that disagreed would part at the
    /// barriers a body may hold.
    pub(super) fn while_loop(&mut self, w: &syn::ExprWhile) -> syn::Result<()> {
        if let Some(label) = &w.label {
            return Err(err(label, "loop labels are not supported in kernels"));
        }
        if let Expr::Let(l) = strip_parens(&w.cond) {
            return Err(err(
                l,
                "`while let` is not supported in kernels: the condition of a `while` is a scalar \
                 `bool`",
            ));
        }
        let (carried, inits) = self.carried(&w.body.stmts, w)?;
        let types: Vec<Type> = inits.iter().map(|&v| self.f.ty(v).clone()).collect();
        let op = self
            .f
            .push_op(self.block, OpKind::While, inits, types.clone());
        let outer_scope = self.scope.clone();
        let outer_block = self.block;
        let mut blocks = Vec::with_capacity(2);
        for _ in 0..2 {
            let region = self.f.new_region();
            let block = self.f.new_block(region);
            self.f.ops[op.index()].regions.push(region);
            blocks.push(block);
        }
        let enter = |me: &mut Self, block| {
            me.scope = outer_scope.clone();
            me.block = block;
            for (n, t) in carried.iter().zip(&types) {
                let a = me.f.add_block_arg(block, t.clone());
                me.scope.insert(n.clone(), Val::V(a));
            }
        };
        enter(self, blocks[0]);
        let cv =
            match self.static_cond(&w.cond)? {
                Some(true) => return Err(err(
                    &w.cond,
                    "this `while` never ends: its condition is always true, and kernels have no \
                     `break`; make the condition depend on what the body computes",
                )),
                // Decided: the loop runs no iteration.
                Some(false) => Val::V(self.push(
                    OpKind::Constant(ConstValue::Int(0)),
                    vec![],
                    Type::scalar(DType::I1),
                )),
                None => self.expr(&w.cond)?,
            };
        let cond = match (cv, self.ty(cv)) {
            (Val::V(id), Some(t)) if t == Type::scalar(DType::I1) => id,
            (_, t) => {
                let found = t.map_or("a literal".to_string(), |t| format!("`{t}`"));
                return Err(err(
                    &w.cond,
                    format!(
                        "the condition of `while` is a scalar bool, found {found}; reduce a \
                         tile of bools to one first: `select(m, 1, 0).max() == 1` (any), \
                         `select(m, 1, 0).min() == 1` (all)"
                    ),
                ));
            }
        };
        self.f.push_op(blocks[0], OpKind::Yield, vec![cond], vec![]);
        enter(self, blocks[1]);
        for stmt in &w.body.stmts {
            self.stmt(stmt)?;
        }
        self.close_loop(
            op,
            blocks[1],
            &carried,
            &types,
            w,
            (outer_block, outer_scope),
        )
    }

    /// `for k in static_range(a, b[, step])`, Triton's `tl.static_range`: the body lowered once
    /// per value of `k` while the kernel is built (`a`, `b` and `step` compile-time integers, at
    /// most [`STATIC_RANGE_MAX`] values), `k` a compile-time integer in each copy (so
    /// `if k == 0` is decided and `n == k` folds). Names the body assigns that were bound before
    /// hold, after each copy, the values it left; what it binds with `let` stays inside.
    fn static_loop(
        &mut self,
        fl: &syn::ExprForLoop,
        iv_name: Option<String>,
        c: &syn::ExprCall,
    ) -> syn::Result<()> {
        if !(2..=3).contains(&c.args.len()) {
            return Err(err(
                c,
                format!(
                    "`static_range` takes a start, an end and an optional step, found {} argument(s)",
                    c.args.len()
                ),
            ));
        }
        let mut bounds = Vec::with_capacity(3);
        for a in &c.args {
            let v = self.expr(a)?;
            bounds.push(self.const_arg(v, a, "a bound of `static_range`")?);
        }
        let (start, end) = (bounds[0], bounds[1]);
        let step = bounds.get(2).copied().unwrap_or(1);
        if step <= 0 {
            return Err(err(
                &c.args[2],
                format!("the step of `static_range` must be positive, found {step}"),
            ));
        }
        let count = if end > start {
            (i128::from(end) - i128::from(start) + i128::from(step) - 1) / i128::from(step)
        } else {
            0
        };
        if count > i128::from(STATIC_RANGE_MAX) {
            return Err(err(
                c,
                format!(
                    "`static_range` unrolls its body once per value: {count} values, more than the {STATIC_RANGE_MAX} allowed; use a loop over `a..b`"
                ),
            ));
        }
        let mut assigned: Vec<String> = Vec::new();
        assigned_names(&fl.body.stmts, &mut Vec::new(), &mut assigned);
        for i in 0..count as i64 {
            // `start + i·step` stays below `end`, so it fits.
            let k = start + i * step;
            self.scoped(&assigned, |me| {
                if let Some(n) = &iv_name {
                    me.scope.insert(n.clone(), Val::Int(k));
                }
                fl.body.stmts.iter().try_for_each(|stmt| me.stmt(stmt))
            })?;
        }
        Ok(())
    }

    /// Runs `body` as straight-line code in a scope of its own: afterwards the names it bound
    /// with `let` are gone, and of the names bound before, those in `assigned` hold the values
    /// it left (a static branch, a copy of an unrolled loop's body).
    fn scoped(
        &mut self,
        assigned: &[String],
        body: impl FnOnce(&mut Self) -> syn::Result<()>,
    ) -> syn::Result<()> {
        let outer = self.scope.clone();
        body(self)?;
        let inner = std::mem::replace(&mut self.scope, outer);
        for n in assigned {
            if let (Some(slot), Some(&v)) = (self.scope.get_mut(n), inner.get(n)) {
                *slot = v;
            }
        }
        Ok(())
    }

    /// `if cond { … } else { … }` (`else` optional, `else if` chains) on a scalar `bool`: names the
    /// branches assign that were bound before hold, after it, the values of the branch that ran
    /// (an `if` op's results); what a branch binds with `let` stays inside it.
    ///
    /// A condition on compile-time integers alone (`if ACT == 1`, with `ACT` a `Const`) is decided
    /// while the kernel is built: only the branch taken is lowered, with the same scoping.
    pub(super) fn if_stmt(&mut self, ei: &syn::ExprIf) -> syn::Result<()> {
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
                Val::Desc(_) => {
                    let at = assignment_in_if(ei, n).map_or(ei as &dyn ToTokens, |s| s);
                    return Err(reassigned_desc(n, at, "`if`"));
                }
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
    pub(super) fn static_cond(&mut self, e: &Expr) -> syn::Result<Option<bool>> {
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
    pub(super) fn static_if(&mut self, ei: &syn::ExprIf, taken: bool) -> syn::Result<()> {
        let mut assigned = Vec::new();
        assigned_in_if(ei, &[], &mut assigned);
        self.static_branches += 1;
        let done = self.scoped(&assigned, |me| {
            if taken {
                for stmt in &ei.then_branch.stmts {
                    me.stmt(stmt)?;
                }
            } else if let Some((_, e)) = &ei.else_branch {
                match &**e {
                    Expr::Block(b) => {
                        for stmt in &b.block.stmts {
                            me.stmt(stmt)?;
                        }
                    }
                    Expr::If(inner) => me.if_stmt(inner)?,
                    other => return Err(err(other, "expected a block or `if` after `else`")),
                }
            }
            Ok(())
        });
        self.static_branches -= 1;
        done
    }

    pub(super) fn assign_target(&self, left: &Expr) -> syn::Result<String> {
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

    pub(super) fn check_same_kind(&self, old: Val, new: Val, at: &Expr) -> syn::Result<()> {
        if matches!(old, Val::Desc(_)) || matches!(new, Val::Desc(_)) {
            return Err(err(
                at,
                "a tensor descriptor is bound once: give a new descriptor a new name with `let`",
            ));
        }
        match (self.ty(old), self.ty(new)) {
            (Some(a), Some(b)) if a != b && self.static_branches == 0 => Err(err(
                at,
                format!("assignment changes the type from `{a}` to `{b}`"),
            )),
            _ => Ok(()),
        }
    }

    pub(super) fn ty(&self, v: Val) -> Option<Type> {
        match v {
            Val::V(id) => Some(self.f.ty(id).clone()),
            Val::Int(_) | Val::Float(_) | Val::Desc(_) => None,
        }
    }

    pub(super) fn push(&mut self, kind: OpKind, operands: Vec<ValueId>, ty: Type) -> ValueId {
        self.f.push1(self.block, kind, operands, ty)
    }

    /// Lowers `e`, a number or tile (a tensor descriptor is an error here); the ops it makes
    /// (and its subexpressions did not claim) are located at it.
    pub(super) fn expr(&mut self, e: &Expr) -> syn::Result<Val> {
        let v = self.expr_any(e)?;
        if let Val::Desc(_) = v {
            return Err(self.not_a_value(e));
        }
        Ok(v)
    }

    /// Lowers `e` where a tensor descriptor may stand as well as a number or tile: a `let`'s
    /// value, a tile function's argument or result, a method's receiver.
    pub(super) fn expr_any(&mut self, e: &Expr) -> syn::Result<Val> {
        let first = self.f.ops.len();
        let v = self.expr_inner(e)?;
        self.locate(first, e);
        Ok(v)
    }

    /// Gives the ops made since `first` that have no location yet the location of `at`.
    pub(super) fn locate(&mut self, first: usize, at: &dyn ToTokens) {
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

    pub(super) fn expr_inner(&mut self, e: &Expr) -> syn::Result<Val> {
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
            Expr::Paren(p) => self.expr_any(&p.expr),
            Expr::Group(g) => self.expr_any(&g.expr),
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
            Expr::Return(_) if !self.inlining.is_empty() => Err(err(
                e,
                "a tile function returns the value its body ends with; `return` may only be its \
                 last statement",
            )),
            Expr::Return(r) if r.expr.is_some() => Err(err(
                e,
                "a kernel cannot return a value; write results with `store`",
            )),
            Expr::Return(_) => Err(err(
                e,
                "a kernel has no `return`: it runs to its last statement; put what an early \
                 return would skip under `if !cond { … }` (a scalar bool), or mask its loads and \
                 stores",
            )),
            Expr::Break(_) => Err(err(
                e,
                "`break` is not supported in kernels: a `for` loop runs the trip count its range \
                 gives when it starts; bound the range instead (`for k in 0..cdiv(n, BLOCK)`), \
                 mask the loads and stores of the iterations to skip, or loop with \
                 `while cond { … }`, the condition a scalar `bool` that the body updates",
            )),
            Expr::Continue(_) => Err(err(
                e,
                "`continue` is not supported in kernels: put the rest of the iteration under \
                 `if !cond { … }` (a scalar bool), or mask its loads and stores",
            )),
            Expr::Closure(_) => Err(err(e, "closures are not supported in kernels")),
            Expr::ForLoop(_) => Err(err(e, "a `for` loop is a statement, not a value")),
            Expr::While(_) => Err(err(e, "a `while` loop is a statement, not a value")),
            Expr::Loop(_) => Err(err(
                e,
                "`loop` is not supported in kernels (it ends only by `break`): write \
                 `while cond { … }` with a scalar `bool` condition, or `for i in a..b { … }` \
                 (or `(a..b).step_by(S)`) with the count computed before it, such as \
                 `0..cdiv(n, BLOCK)`",
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
}

/// The first statement of `stmts` (nested loops and branches included) that assigns `name`.
fn assignment_of<'a>(stmts: &'a [Stmt], name: &str) -> Option<&'a Stmt> {
    stmts.iter().find_map(|s| {
        let Stmt::Expr(e, _) = s else { return None };
        match e {
            Expr::Assign(a) if is_name(&a.left, name) => Some(s),
            Expr::Binary(b) if compound(&b.op).is_some() && is_name(&b.left, name) => Some(s),
            Expr::ForLoop(fl) => assignment_of(&fl.body.stmts, name),
            Expr::While(w) => assignment_of(&w.body.stmts, name),
            Expr::If(ei) => assignment_in_if(ei, name),
            _ => None,
        }
    })
}

/// [`assignment_of`] in the branches of an `if`.
fn assignment_in_if<'a>(ei: &'a syn::ExprIf, name: &str) -> Option<&'a Stmt> {
    assignment_of(&ei.then_branch.stmts, name).or_else(|| match ei.else_branch.as_ref() {
        Some((_, e)) => match &**e {
            Expr::Block(b) => assignment_of(&b.block.stmts, name),
            Expr::If(inner) => assignment_in_if(inner, name),
            _ => None,
        },
        None => None,
    })
}

/// Whether `e` is the plain name `name`.
fn is_name(e: &Expr, name: &str) -> bool {
    matches!(e, Expr::Path(p) if p.path.is_ident(name))
}

/// The error for a tensor descriptor `name` that a loop or `if` (`what`) assigns.
fn reassigned_desc(name: &str, at: &dyn ToTokens, what: &str) -> syn::Error {
    err(
        at,
        format!(
            "`{name}` is a tensor descriptor, assigned in this {what}; a descriptor is bound once: \
             give a new descriptor a new name with `let`"
        ),
    )
}

/// `(e)` → `e`.
pub(super) fn strip_parens(e: &Expr) -> &Expr {
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
            Stmt::Local(l) => match &l.pat {
                syn::Pat::Ident(pi) => bound.push(pi.ident.to_string()),
                syn::Pat::Tuple(t) => {
                    for p in &t.elems {
                        if let syn::Pat::Ident(pi) = p {
                            bound.push(pi.ident.to_string());
                        }
                    }
                }
                _ => {}
            },
            Stmt::Expr(e, _) => {
                // The assigned expressions: one name, or a tuple's (`(a, b) = f(…)`).
                let targets: Vec<&Expr> = match e {
                    Expr::Assign(a) => match strip_parens(&a.left) {
                        Expr::Tuple(t) => t.elems.iter().collect(),
                        _ => vec![&*a.left],
                    },
                    Expr::Binary(b) if compound(&b.op).is_some() => vec![&*b.left],
                    Expr::ForLoop(fl) => {
                        let mut inner = bound.clone();
                        if let syn::Pat::Ident(pi) = &*fl.pat {
                            inner.push(pi.ident.to_string());
                        }
                        assigned_names(&fl.body.stmts, &mut inner, out);
                        vec![]
                    }
                    Expr::While(w) => {
                        assigned_names(&w.body.stmts, &mut bound.clone(), out);
                        vec![]
                    }
                    Expr::If(ei) => {
                        assigned_in_if(ei, bound, out);
                        vec![]
                    }
                    _ => vec![],
                };
                for target in targets {
                    if let Expr::Path(p) = target {
                        if let Some(id) = p.path.get_ident() {
                            let n = id.to_string();
                            if !bound.contains(&n) && !out.contains(&n) {
                                out.push(n);
                            }
                        }
                    }
                }
            }
            Stmt::Item(_) | Stmt::Macro(_) => {}
        }
    }
}

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
                SynBin::Add(_)
                    | SynBin::Sub(_)
                    | SynBin::Mul(_)
                    | SynBin::Div(_)
                    | SynBin::Rem(_)
                    | SynBin::BitAnd(_)
                    | SynBin::BitOr(_)
                    | SynBin::BitXor(_)
                    | SynBin::Shl(_)
                    | SynBin::Shr(_)
            ) && is_static_int(&b.left)
                && is_static_int(&b.right)
        }
        _ => false,
    }
}

/// [`assigned_names`] of both branches of an `if` (and of `else if` chains).
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

/// The most values a `static_range` loop may unroll its body for.
pub const STATIC_RANGE_MAX: i64 = 1024;

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
        // `std::f32::consts::…` (or `core::…`), at f32 precision as Rust's constants.
        t if float_const(t).is_some() => Val::Float(float_const(t).unwrap_or_default()),
        _ => {
            return Err(err(
                p,
                "paths are not supported in kernels; use a local or parameter name, or a constant \
                 such as `f32::INFINITY`, `f32::NAN`, `i32::MAX`, `std::f32::consts::PI`",
            ))
        }
    })
}

/// The value of `std::f32::consts::NAME` (or `core::f32::consts::NAME`), as Rust rounds it to
/// f32.
fn float_const(path: &str) -> Option<f64> {
    use std::f32::consts as c;
    let name = path
        .strip_prefix("std::f32::consts::")
        .or_else(|| path.strip_prefix("core::f32::consts::"))?;
    let v = match name {
        "PI" => c::PI,
        "TAU" => c::TAU,
        "E" => c::E,
        "LN_2" => c::LN_2,
        "LN_10" => c::LN_10,
        "LOG2_E" => c::LOG2_E,
        "LOG10_E" => c::LOG10_E,
        "LOG2_10" => c::LOG2_10,
        "LOG10_2" => c::LOG10_2,
        "SQRT_2" => c::SQRT_2,
        "FRAC_1_SQRT_2" => c::FRAC_1_SQRT_2,
        "FRAC_2_SQRT_PI" => c::FRAC_2_SQRT_PI,
        "FRAC_1_PI" => c::FRAC_1_PI,
        "FRAC_2_PI" => c::FRAC_2_PI,
        "FRAC_PI_2" => c::FRAC_PI_2,
        "FRAC_PI_4" => c::FRAC_PI_4,
        _ => return None,
    };
    Some(f64::from(v))
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

/// Where a typed value is required and the code above has established it is one.
#[cold]
pub(super) fn unreachable_ptr() -> ! {
    unreachable!("a typed value was checked just before")
}
