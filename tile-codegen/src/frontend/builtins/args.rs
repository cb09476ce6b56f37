//! Reading a builtin call's arguments: compile-time integers, the count of positional arguments,
//! and named arguments (`key = value`, after the positional ones), with the messages every
//! builtin shares.

use quote::ToTokens;
use syn::Expr;

use crate::frontend::walker::{err, Lowering, Val};

impl Lowering {
    /// The compile-time integer `v` (the value of `at`); `what` names it in the error otherwise.
    pub(in crate::frontend) fn const_arg(&self, v: Val, at: &Expr, what: &str) -> syn::Result<i64> {
        match v {
            Val::Int(i) => Ok(i),
            _ => Err(err(
                at,
                format!("{what} must be a compile-time integer (a literal or a `Const` parameter)"),
            )),
        }
    }
}

/// Checks that the call `c` of `name` has `count` positional arguments (`found` of them), which
/// `what` describes in the error ("`name` takes `what`, found …").
pub(super) fn check_count(
    c: &dyn ToTokens,
    name: &str,
    found: usize,
    count: std::ops::RangeInclusive<usize>,
    what: &str,
) -> syn::Result<()> {
    if count.contains(&found) {
        Ok(())
    } else {
        Err(err(
            c,
            format!("`{name}` takes {what}, found {found} argument(s)"),
        ))
    }
}

/// `args` split into the positional arguments and the trailing named ones (`key = value`); a
/// positional argument after a named one is an error.
pub(super) fn split_named<'a>(
    args: &[&'a Expr],
) -> syn::Result<(Vec<&'a Expr>, Vec<&'a syn::ExprAssign>)> {
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
pub(super) fn named_key(n: &syn::ExprAssign) -> Option<String> {
    match &*n.left {
        Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}

/// The value of a named argument that is one of `options`' words (`name` gives a word).
pub(super) fn named_word<T: Copy>(
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

/// Walks a call's named arguments in order: each of `keys` may come once (`take` reads it, with
/// its index in `keys`), a second time is an error, and any other key is the error `unknown`.
pub(super) fn each_named(
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
