//! The scans along an axis: `cumsum`, `cumprod`, `cummax` and `cummin` (functions or methods,
//! with `reverse = …`), and `associative_scan` of one tile or a tuple of tiles with a combiner
//! closure. A combiner that is one of the four (`|a, b| a + b`, `max`, …) becomes that `scan`;
//! any other becomes an `associative_scan` op whose region holds the closure's body lowered on
//! scalars.

use quote::ToTokens;
use syn::{BinOp as SynBinOp, Expr};
use tile_core::ir::{DType, Elem, OpKind, ScanKind, Type, ValueId};

use super::args::{each_named, named_word, split_named};
use super::Builtin;
use crate::frontend::walker::{err, strip_parens, unreachable_ptr, Lowering, Val};

impl Lowering {
    /// `cumsum(t, axis[, reverse = …])` and its siblings (`b`) written as functions.
    pub(super) fn scan_call(
        &mut self,
        b: Builtin,
        args: &[&Expr],
        c: &syn::ExprCall,
    ) -> syn::Result<Val> {
        let name = b.name();
        let Some((recv, rest)) = args.split_first() else {
            return Err(err(
                c,
                format!("`{name}` takes the tile first: `{name}(t, axis)`"),
            ));
        };
        self.scan(b, recv, rest, c)
    }

    /// `associative_scan(t, axis, combine[, reverse = …])` of one tile: its one result.
    pub(super) fn associative_scan(
        &mut self,
        args: &[&Expr],
        c: &syn::ExprCall,
    ) -> syn::Result<Val> {
        let vals = self.associative_scan_multi(args, c)?;
        match vals.as_slice() {
            [v] => Ok(*v),
            vs => Err(err(
                c,
                format!(
                    "`associative_scan` of {} tiles gives {0} tiles: bind them with `let (a, b, …) = associative_scan(…);`",
                    vs.len()
                ),
            )),
        }
    }

    /// `associative_scan(t, axis, combine[, reverse = …])` or `associative_scan((t1, t2, …),
    /// axis, |(a1, a2, …), (b1, b2, …)| (…))`: one result per tile.
    pub(in crate::frontend) fn associative_scan_multi(
        &mut self,
        args: &[&Expr],
        c: &syn::ExprCall,
    ) -> syn::Result<Vec<Val>> {
        let (pos, named) = split_named(args)?;
        if pos.len() != 3 {
            return Err(err(
                c,
                format!(
                    "`associative_scan` takes the tile (or a tuple of tiles), the axis and the combiner: `{}`",
                    Builtin::AssociativeScan.signature()
                ),
            ));
        }
        let tiles: Vec<&Expr> = match strip_parens(pos[0]) {
            Expr::Tuple(t) => t.elems.iter().collect(),
            one => vec![one],
        };
        if tiles.is_empty() {
            return Err(err(pos[0], "`associative_scan` needs at least one tile"));
        }
        if let [one] = tiles.as_slice() {
            if let Some(b) = builtin_combiner(pos[2]) {
                // The axis, then the named arguments, as the `cum*` builtins take them.
                let rest: Vec<&Expr> = std::iter::once(pos[1])
                    .chain(
                        args.iter()
                            .copied()
                            .filter(|a| matches!(a, Expr::Assign(_))),
                    )
                    .collect();
                return Ok(vec![self.scan_as(
                    b,
                    Builtin::AssociativeScan,
                    one,
                    &rest,
                    c,
                )?]);
            }
        }
        let mut reverse = false;
        let unknown = "`associative_scan`'s one named argument is `reverse`";
        each_named(&named, &["reverse"], unknown, |_, n| {
            reverse = named_word(n, &[false, true], |x| if x { "true" } else { "false" })?;
            Ok(())
        })?;
        let mut ids = Vec::with_capacity(tiles.len());
        let mut dtypes = Vec::with_capacity(tiles.len());
        let mut shape: Option<Vec<u32>> = None;
        for &t in &tiles {
            let v = self.expr(t)?;
            let Some(ty) = self.ty(v).filter(|ty| ty.is_tensor()) else {
                return Err(err(t, "`associative_scan` scans tiles; this is a scalar"));
            };
            match ty.dtype() {
                Some(d) if d.is_arith() => dtypes.push(d),
                other => {
                    let found = other.map_or("pointers".to_string(), |d| format!("`{d}`"));
                    return Err(err(
                        t,
                        format!(
                            "`associative_scan` takes tiles of f32 or 32- or 64-bit integers, found {found} (convert with `as f32` or `as i32`)"
                        ),
                    ));
                }
            }
            match &shape {
                None => shape = Some(ty.shape.clone()),
                Some(s) if *s != ty.shape => {
                    return Err(err(
                        t,
                        format!(
                            "the tiles of one `associative_scan` have one shape: {s:?} before, {:?} here",
                            ty.shape
                        ),
                    ))
                }
                Some(_) => {}
            }
            let Val::V(id) = v else { unreachable_ptr() };
            ids.push(id);
        }
        let shape = shape.unwrap_or_default();
        let av = self.expr(pos[1])?;
        let axis = self.const_arg(av, pos[1], "the scan axis")?;
        if axis < 0 || axis as usize >= shape.len() {
            return Err(err(
                pos[1],
                format!(
                    "axis {axis} is out of range for a tile of rank {}",
                    shape.len()
                ),
            ));
        }
        let Expr::Closure(closure) = strip_parens(pos[2]) else {
            return Err(err(
                pos[2],
                "an `associative_scan` combiner is a closure: `|a, b| …` for one tile, `|(a1, a2), (b1, b2)| (…, …)` for a tuple of tiles (or `max`, `min`)",
            ));
        };
        let names = combiner_params(closure, tiles.len())?;
        let types: Vec<Type> = ids.iter().map(|&v| self.f.ty(v).clone()).collect();
        let op = self.f.push_op(
            self.block,
            OpKind::AssociativeScan {
                axis: axis as u32,
                reverse,
            },
            ids,
            types,
        );
        let region = self.f.new_region();
        let body = self.f.new_block(region);
        self.f.ops[op.index()].regions.push(region);
        let outer_scope = self.scope.clone();
        let outer_block = std::mem::replace(&mut self.block, body);
        for (name, d) in names.iter().zip(dtypes.iter().chain(&dtypes)) {
            let a = self.f.add_block_arg(body, Type::scalar(*d));
            if let Some(n) = name {
                self.scope.insert(n.clone(), Val::V(a));
            }
        }
        let yielded = self.combiner_body(&closure.body, &dtypes);
        self.block = outer_block;
        self.scope = outer_scope;
        let yielded = yielded?;
        self.f.push_op(body, OpKind::Yield, yielded, vec![]);
        Ok(self
            .f
            .op(op)
            .results
            .clone()
            .into_iter()
            .map(Val::V)
            .collect())
    }

    /// Lowers a combiner's body (in the region's block): statements, then a tuple of one scalar
    /// per tile (or the one scalar), each given its tile's element type.
    fn combiner_body(&mut self, e: &Expr, dtypes: &[DType]) -> syn::Result<Vec<ValueId>> {
        match e {
            Expr::Paren(p) => self.combiner_body(&p.expr, dtypes),
            Expr::Block(b) => {
                let Some((last, stmts)) = b.block.stmts.split_last() else {
                    return Err(err(e, "a combiner gives a value: `|a, b| a + b`"));
                };
                for s in stmts {
                    let first = self.f.ops.len();
                    self.stmt(s)?;
                    self.check_combiner_ops(first, s)?;
                }
                match last {
                    syn::Stmt::Expr(tail, None) => self.combiner_body(tail, dtypes),
                    other => Err(err(
                        other,
                        "a combiner's block ends with its value (no `;`)",
                    )),
                }
            }
            Expr::Tuple(t) if dtypes.len() > 1 => {
                if t.elems.len() != dtypes.len() {
                    return Err(err(
                        e,
                        format!(
                            "the combiner gives {} value(s) for {} tiles",
                            t.elems.len(),
                            dtypes.len()
                        ),
                    ));
                }
                t.elems
                    .iter()
                    .zip(dtypes)
                    .enumerate()
                    .map(|(i, (x, &d))| self.combiner_value(x, d, i))
                    .collect()
            }
            one if dtypes.len() == 1 => Ok(vec![self.combiner_value(one, dtypes[0], 0)?]),
            other => Err(err(
                other,
                format!(
                    "the combiner of {} tiles gives a tuple of {0} values: `(…, …)`",
                    dtypes.len()
                ),
            )),
        }
    }

    /// One value of a combiner's result: a scalar of element type `d` (tile `i`'s).
    fn combiner_value(&mut self, e: &Expr, d: DType, i: usize) -> syn::Result<ValueId> {
        let first = self.f.ops.len();
        let v = self.expr(e)?;
        self.check_combiner_ops(first, e)?;
        if let Some(t) = self.ty(v) {
            if t != Type::scalar(d) {
                return Err(err(
                    e,
                    format!(
                        "the combiner's value #{i} must be a scalar of tile #{i}'s element type, `{d}`; found `{t}`"
                    ),
                ));
            }
        }
        self.materialize(v, d, &[], e)
    }

    /// The ops made since `first` (at `at`) are element-wise ops on scalars, as a combiner's
    /// region holds.
    fn check_combiner_ops(&self, first: usize, at: &dyn ToTokens) -> syn::Result<()> {
        for d in &self.f.ops[first..] {
            let element_wise = d.kind.fits_combiner() && !matches!(d.kind, OpKind::Yield);
            let tile = d
                .operands
                .iter()
                .chain(&d.results)
                .any(|&v| self.f.ty(v).is_tensor() || self.f.ty(v).elem.pointee().is_some());
            if tile {
                return Err(err(
                    at,
                    "a combiner works on the scalar elements it is given (and scalars from outside); it cannot use tiles or pointers",
                ));
            }
            if !element_wise {
                return Err(err(
                    at,
                    format!(
                        "a combiner holds element-wise arithmetic only; `{}` is not allowed in it",
                        d.kind.name()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `t.cumsum(axis[, reverse = …])` and its siblings (`args` after the tile `recv`).
    pub(super) fn scan(
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
            Some(d) if d.is_arith() => {}
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
                    format!("`{name}` takes tiles of f32 or 32- or 64-bit integers, found {found}"),
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

/// The `cum*` builtin an `associative_scan` combiner of one tile stands for: `max` or `min` by
/// name, or a closure of two parameters whose body is `a + b`, `a * b`, `max(a, b)` or
/// `min(a, b)` (either order; the four are commutative). `None` for any other combiner.
fn builtin_combiner(e: &Expr) -> Option<Builtin> {
    let path_name = |e: &Expr| match e {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    };
    if let Some(name) = path_name(e) {
        return match name.as_str() {
            "max" => Some(Builtin::Cummax),
            "min" => Some(Builtin::Cummin),
            _ => None,
        };
    }
    let Expr::Closure(c) = strip_parens(e) else {
        return None;
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
        return None;
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
            SynBinOp::Add(_) => Some(Builtin::Cumsum),
            SynBinOp::Mul(_) => Some(Builtin::Cumprod),
            _ => None,
        },
        Expr::Call(call) if call.args.len() == 2 && is_pair(&call.args[0], &call.args[1]) => {
            match path_name(&call.func).as_deref() {
                Some("max") => Some(Builtin::Cummax),
                Some("min") => Some(Builtin::Cummin),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The names a combiner closure binds, earlier tuple then later (`None` for `_`): `|a, b|` for
/// one tile, `|(a1, a2, …), (b1, b2, …)|` for `n`.
fn combiner_params(c: &syn::ExprClosure, n: usize) -> syn::Result<Vec<Option<String>>> {
    let shape = if n == 1 {
        "`|a, b| …`".to_string()
    } else {
        let t = |x: &str| {
            (1..=n)
                .map(|i| format!("{x}{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!("`|({}), ({})| (…)`", t("a"), t("b"))
    };
    let wrong = |at: &dyn ToTokens| {
        err(
            at,
            format!("a combiner of {n} tile(s) takes two parameters: {shape}"),
        )
    };
    let name = |p: &syn::Pat| -> syn::Result<Option<String>> {
        match p {
            syn::Pat::Ident(i) if i.subpat.is_none() && i.by_ref.is_none() => {
                Ok(Some(i.ident.to_string()))
            }
            syn::Pat::Wild(_) => Ok(None),
            syn::Pat::Type(t) => Err(err(
                &t.ty,
                "type annotations are not supported in kernels; a combiner's parameters have their tiles' element types",
            )),
            other => Err(wrong(other)),
        }
    };
    if c.inputs.len() != 2 {
        return Err(wrong(&c.inputs));
    }
    let mut out = Vec::with_capacity(2 * n);
    for p in &c.inputs {
        if n == 1 {
            out.push(name(p)?);
            continue;
        }
        let syn::Pat::Tuple(t) = p else {
            return Err(wrong(p));
        };
        if t.elems.len() != n {
            return Err(wrong(p));
        }
        for e in &t.elems {
            out.push(name(e)?);
        }
    }
    let mut seen: Vec<&String> = Vec::new();
    for n in out.iter().flatten() {
        if seen.contains(&n) {
            return Err(err(
                &c.inputs,
                format!("`{n}` is bound twice in the combiner's parameters"),
            ));
        }
        seen.push(n);
    }
    Ok(out)
}
