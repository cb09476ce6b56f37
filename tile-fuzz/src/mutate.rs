//! Token-level mutation of the repository's own kernels: every `#[tile_kernel]` function in
//! `examples/`, `tests/` (UI cases included) and `tile-bench/`, with tokens deleted, duplicated,
//! swapped, replaced by extreme literals or by other names of the same kernel, and operators
//! inserted.

use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;

use crate::rng::Rng;

/// Every `#[tile_kernel]` function under `root`'s kernel directories, as text.
pub fn corpus(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for dir in ["examples", "tests", "tile-bench/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let Ok(file) = syn::parse_file(&text) else {
            continue;
        };
        collect(&file.items, &mut out);
    }
    out
}

/// Every `#[tile_fn]` function of the repository (the standard library, the examples', the
/// tests' and the tutorials'), as text: what kernels of the corpus call, which `case` resolves
/// by name (`FnTable::by_name`) since no macro resolves them here.
pub fn library(root: &Path) -> String {
    let mut files = Vec::new();
    for dir in ["src", "examples", "tests", "tutorials", "tile-bench/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let Ok(file) = syn::parse_file(&text) else {
            continue;
        };
        collect_marked(&file.items, "tile_fn", &mut out);
    }
    out.join("\n")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn collect(items: &[syn::Item], out: &mut Vec<String>) {
    collect_marked(items, "tile_kernel", out);
}

/// The functions of `items` (and of their inline modules) marked `#[attr]`, as text.
fn collect_marked(items: &[syn::Item], attr: &str, out: &mut Vec<String>) {
    for item in items {
        match item {
            syn::Item::Fn(f)
                if f.attrs
                    .iter()
                    .any(|a| a.path().segments.last().is_some_and(|s| s.ident == attr)) =>
            {
                out.push(f.to_token_stream().to_string());
            }
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    collect_marked(items, attr, out);
                }
            }
            _ => {}
        }
    }
}

/// One token of a flattened stream: a leaf's text, or a delimiter.
fn flatten(ts: TokenStream, out: &mut Vec<String>) {
    for t in ts {
        match t {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::None => ("", ""),
                };
                out.push(open.into());
                flatten(g.stream(), out);
                out.push(close.into());
            }
            TokenTree::Punct(p) => {
                // Joint punctuation (`..`, `<=`, `::`) stays joined when printed back.
                let s = p.as_char().to_string();
                if p.spacing() == proc_macro2::Spacing::Joint {
                    out.push(format!("{s}\u{0}"));
                } else {
                    out.push(s);
                }
            }
            other => out.push(other.to_string()),
        }
    }
}

fn unflatten(tokens: &[String]) -> String {
    let mut s = String::new();
    for t in tokens {
        if let Some(joint) = t.strip_suffix('\u{0}') {
            s.push_str(joint);
        } else {
            s.push_str(t);
            s.push(' ');
        }
    }
    s
}

const EXTREMES: [&str; 14] = [
    "0",
    "-1",
    "1",
    "3",
    "100",
    "2147483647",
    "2147483648",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "1048576",
    "1e39",
    "0.0",
    "1e-400",
];
const INSERTS: [&str; 14] = [
    "*", "-", "!", ";", ".", ",", "&", "+", "as", "=", "..", "?", "let", "mut",
];

/// `base` with 1 to 3 token-level mutations.
pub fn mutate(r: &mut Rng, base: &str) -> String {
    let Ok(ts) = base.parse::<TokenStream>() else {
        return base.to_string();
    };
    let mut toks = Vec::new();
    flatten(ts, &mut toks);
    let idents: Vec<String> = toks
        .iter()
        .filter(|t| {
            t.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
        })
        .cloned()
        .collect();
    // Delimiters stay (most programs with unbalanced ones are not Rust, which rustc reports).
    let is_delim = |t: &str| matches!(t, "(" | ")" | "{" | "}" | "[" | "]" | "");
    for _ in 0..1 + r.below(3) {
        if toks.is_empty() {
            break;
        }
        let i = r.below(toks.len());
        if is_delim(&toks[i]) || (i + 1 < toks.len() && is_delim(&toks[i + 1])) && r.below(2) == 0 {
            continue;
        }
        match r.below(7) {
            0 => {
                toks.remove(i);
            }
            1 => {
                let t = toks[i].clone();
                toks.insert(i, t);
            }
            2 if i + 1 < toks.len() => toks.swap(i, i + 1),
            3 | 4 => {
                // Literals get extreme values; other tokens sometimes too.
                let numeric = toks[i].chars().next().is_some_and(|c| c.is_ascii_digit());
                if numeric || r.below(4) == 0 {
                    toks[i] = EXTREMES[r.below(EXTREMES.len())].into();
                }
            }
            5 if !idents.is_empty() => toks[i] = idents[r.below(idents.len())].clone(),
            _ => toks.insert(i, INSERTS[r.below(INSERTS.len())].into()),
        }
    }
    unflatten(&toks)
}

/// [`flatten`], for the minimizer.
pub fn flatten_public(ts: TokenStream, out: &mut Vec<String>) {
    flatten(ts, out);
}

/// [`unflatten`], for the minimizer.
pub fn unflatten_public(tokens: &[String]) -> String {
    unflatten(tokens)
}
