//! The scans along an axis: `cumsum`, `cumprod`, `cummax` and `cummin` (functions or methods,
//! with `reverse = …`), and `associative_scan`, whose combiner names one of them.

use quote::ToTokens;
use syn::{BinOp as SynBinOp, Expr};
use tile_core::ir::{DType, Elem, OpKind, ScanKind, Type};

use super::args::{each_named, named_word, split_named};
use super::Builtin;
use crate::frontend::walker::{err, unreachable_ptr, Lowering, Val};

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

    /// `associative_scan(t, axis, combine[, reverse = …])`: the `cum*` scan its combiner names.
    pub(super) fn associative_scan(
        &mut self,
        args: &[&Expr],
        c: &syn::ExprCall,
    ) -> syn::Result<Val> {
        let (pos, _) = split_named(args)?;
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
