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

/// A call's arguments bound to its parameters `params` (their names, in order). Positional
/// arguments fill them from the first; those from `params[named_from]` on may be written by name
/// instead (`mask = m`, Triton's spelling), in any order after the positional ones. A named
/// argument whose key is one of `extra` (an option such as `evict`) goes to `take` with its
/// index in `extra`. A parameter given twice, or any other key, is an error at the key that
/// lists the accepted names.
///
/// Returns how many arguments were positional (for the caller's count check) and the value
/// bound to each parameter.
pub(super) fn bind_args<'a>(
    name: &str,
    args: &[&'a Expr],
    params: &[&str],
    named_from: usize,
    extra: &[&str],
    mut take: impl FnMut(usize, &'a syn::ExprAssign) -> syn::Result<()>,
) -> syn::Result<(usize, Vec<Option<&'a Expr>>)> {
    let (pos, named) = split_named(args)?;
    let mut bound: Vec<Option<&'a Expr>> = (0..params.len()).map(|i| pos.get(i).copied()).collect();
    let mut seen_extra = vec![false; extra.len()];
    let keys: Vec<&str> = params[named_from..].iter().chain(extra).copied().collect();
    for n in named {
        let key = named_key(n);
        let key = key.as_deref();
        if let Some(i) = params[named_from..].iter().position(|&p| Some(p) == key) {
            let i = named_from + i;
            if bound[i].is_some() {
                let how = if i < pos.len() {
                    format!(" (it is argument {} too)", i + 1)
                } else {
                    String::new()
                };
                return Err(err(&n.left, format!("`{}` is given twice{how}", params[i])));
            }
            bound[i] = Some(&n.right);
        } else if let Some(i) = extra.iter().position(|&k| Some(k) == key) {
            if seen_extra[i] {
                return Err(err(&n.left, format!("`{}` is given twice", extra[i])));
            }
            seen_extra[i] = true;
            take(i, n)?;
        } else {
            let written = key.map_or_else(|| n.left.to_token_stream().to_string(), str::to_string);
            let mut list: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
            let last = list.pop().unwrap_or_default();
            let list = if list.is_empty() {
                format!("its one named argument is {last}")
            } else {
                format!("its named arguments are {} and {last}", list.join(", "))
            };
            return Err(err(
                &n.left,
                format!("`{name}` has no argument `{written}`; {list}"),
            ));
        }
    }
    Ok((pos.len(), bound))
}
