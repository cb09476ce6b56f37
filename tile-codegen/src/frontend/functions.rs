//! Tile functions: `#[tile_fn]` items that kernels and other tile functions call, inlined into
//! the caller's tile IR at each call (Triton's `@triton.jit` helpers, CubeCL's `#[cube]` ones).
//!
//! # How a caller sees a callee's body
//!
//! A procedural macro sees only its own item's tokens, and Rust resolves names after macros
//! run. So each `#[tile_fn]` also defines a `macro_rules!` macro under the function's own name
//! (in the macro namespace: `use mylib::swizzle2d;` imports the function and its macro at once),
//! which hands its body to whoever asks. A caller's macro finds the calls in its body that are
//! not builtins and asks each callee's macro in turn (the callback pattern): `swizzle2d! { @tile
//! [callback] state }` expands to `callback! { state {swizzle2d's closure} }`, and when every
//! callee has answered, the callback compiles the kernel with the bodies it has collected.
//! Rust resolves every callee path where it is written, with Rust's own rules for `use`,
//! privacy and crates, and rebuilds callers when a callee changes.
//!
//! A function's macro delivers its *closure*: its own body first, then the closures of its
//! callees, collected the same way when the `#[tile_fn]` expanded — at the function's own
//! definition, where its callees' paths resolve. Each entry of a closure carries the map from the
//! call paths written in its body to the entries they name, so a callee called `helper` in one
//! crate and another `helper` in another never meet. [`encode_closure`] and [`decode_closure`]
//! are the token format both macros share.
//!
//! # The language of a tile function
//!
//! Parameters are `x: Tile` (any value: a tile, a scalar, a pointer or pointer tile),
//! `n: i32` / `i64` / `f32` / `bool` (a scalar of that type; a literal is given that type),
//! `N: Const` (a compile-time integer, usable wherever a kernel's `Const` is) and
//! `T: Type` (an element type: the caller passes `f16`, or a `Type` parameter of its own). The
//! result is the tail expression: nothing, one value (`-> Tile`, `-> i32`, …) or a tuple
//! (`-> (Tile, Tile)`), which the caller binds with `let (a, b) = f(…);`. The body sees its
//! parameters only (no caller's names), and is lowered at each call with the arguments' types, as
//! a generic function is instantiated: a type error inside is reported at the function's tokens,
//! with a second error at the call that instantiated it.

use std::collections::HashMap;
use std::rc::Rc;

use proc_macro2::{Delimiter, Group, Literal, Punct, Spacing, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Expr, FnArg, Pat, Stmt};
use tile_core::ir::{DType, Type};

use super::builtins::{self, Form};
use super::signature::dtype_named;
use super::walker::{err, Lowering, Val};

/// How deep calls may nest in one kernel (a kernel calling `f` calling `g` is depth 2).
pub const MAX_CALL_DEPTH: usize = 32;

/// What a tile function's parameter takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FnParamKind {
    /// `Tile`: any value.
    Value,
    /// `i32`, `i64`, `f32`, `bool`: a scalar of this type.
    Scalar(DType),
    /// `Const`: a compile-time integer.
    Const,
    /// `Type`: an element type.
    Type,
    /// `Fn`: a tile function, passed by its path; the body calls the parameter's name as it
    /// would call the function (FlexAttention's `score_mod`, Triton's `constexpr` functions).
    Func,
}

/// One parameter of a tile function.
#[derive(Clone, Debug)]
pub struct FnParam {
    /// Its name.
    pub name: String,
    /// What it takes.
    pub kind: FnParamKind,
    /// Its declaration, for messages.
    pub decl: TokenStream,
}

/// A tile function as a caller's lowering uses it.
#[derive(Debug)]
pub struct TileFn {
    /// The item (attributes and visibility removed).
    pub item: syn::ItemFn,
    /// Its parameters.
    pub params: Vec<FnParam>,
    /// Its results: `None` when it returns nothing, else one kind per value (one for `-> T`).
    pub results: Option<Vec<FnParamKind>>,
    /// Whether the result is a tuple (`-> (A, B)`, even of one element) rather than one value.
    pub tuple: bool,
    /// The function each call path written in its body names: an index into [`FnTable::fns`].
    pub calls: HashMap<String, usize>,
}

impl TileFn {
    /// Its name as written.
    pub fn name(&self) -> String {
        syn::ext::IdentExt::unraw(&self.item.sig.ident).to_string()
    }
}

/// The tile functions a kernel may call, with their callees.
#[derive(Debug, Default, Clone)]
pub struct FnTable {
    /// Every function the kernel reaches.
    pub fns: Vec<Rc<TileFn>>,
    /// The function each call path in the kernel's body names.
    pub kernel_calls: HashMap<String, usize>,
}

/// One entry of a closure as the macros pass it: a function and the entry each of its call paths
/// names (an index into the same closure).
#[derive(Clone, Debug)]
pub struct RawEntry {
    /// The function item.
    pub item: syn::ItemFn,
    /// Call path ([`path_key`]) → index of the entry in the closure.
    pub calls: Vec<(String, usize)>,
}

/// The key of a call path: its tokens without spaces (`mylib::swizzle2d`).
pub fn path_key(p: &syn::Path) -> String {
    p.to_token_stream().to_string().replace(' ', "")
}

/// Whether `name` (a single identifier) is a builtin function of the kernel language, or a
/// word of its syntax written as a call (`static_range` in a `for` loop).
pub fn is_builtin(name: &str) -> bool {
    builtins::lookup(name, Form::Function).is_some() || name == "static_range"
}

/// The calls in `item`'s body that name no builtin, no local name and no `Fn` parameter: each
/// distinct path once, in order of appearance. These are the tile functions the caller's macro
/// asks for first. (A call of a local name, such as a closure bound by `let`, is left to the
/// lowering, which refuses it.)
pub fn callees(item: &syn::ItemFn) -> Vec<syn::Path> {
    calls_in(&item.block, &fn_params(item))
}

/// The names of `item`'s parameters declared `Fn` (read loosely: the signature is checked
/// elsewhere).
fn fn_params(item: &syn::ItemFn) -> Vec<String> {
    item.sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(pt) => match (&*pt.pat, &*pt.ty) {
                (Pat::Ident(pi), syn::Type::Path(t)) if t.path.is_ident("Fn") => {
                    Some(syn::ext::IdentExt::unraw(&pi.ident).to_string())
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The calls in `block` that name no builtin, no local name and none of `skip`.
fn calls_in(block: &syn::Block, skip: &[String]) -> Vec<syn::Path> {
    #[derive(Default)]
    struct Finder {
        calls: Vec<syn::Path>,
        locals: Vec<String>,
    }
    impl<'a> syn::visit::Visit<'a> for Finder {
        fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
            if let Expr::Path(p) = &*c.func {
                let builtin = p
                    .path
                    .get_ident()
                    .is_some_and(|i| is_builtin(&i.to_string()));
                if !builtin
                    && p.qself.is_none()
                    && !self.calls.iter().any(|q| path_key(q) == path_key(&p.path))
                {
                    self.calls.push(p.path.clone());
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
            self.locals.push(p.ident.to_string());
            syn::visit::visit_pat_ident(self, p);
        }
        // Items inside a body are refused by the lowering; their calls are not requests.
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut f = Finder::default();
    syn::visit::Visit::visit_block(&mut f, block);
    let Finder { calls, locals } = f;
    calls
        .into_iter()
        .filter(|p| {
            !p.get_ident().is_some_and(|i| {
                let i = i.to_string();
                locals.contains(&i) || skip.contains(&i)
            })
        })
        .collect()
}

/// The tile functions `item`'s body passes by path to the `Fn` parameters of its callees, that
/// are not among `known` (call path → the callee's item, for the callees delivered so far):
/// each distinct path once, in order of appearance. The caller's macro asks for these once its
/// callees have answered, since only their signatures say which arguments are functions. An
/// argument that names one of `item`'s own `Fn` parameters passes it on and is not asked for.
pub fn function_arguments(item: &syn::ItemFn, known: &[(String, &syn::ItemFn)]) -> Vec<syn::Path> {
    struct Finder<'k> {
        known: &'k [(String, &'k syn::ItemFn)],
        own: Vec<String>,
        found: Vec<syn::Path>,
    }
    impl<'a> syn::visit::Visit<'a> for Finder<'_> {
        fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
            if let Expr::Path(p) = &*c.func {
                let key = path_key(&p.path);
                if let Some((_, callee)) = self.known.iter().find(|(k, _)| *k == key) {
                    for (input, arg) in callee.sig.inputs.iter().zip(&c.args) {
                        let FnArg::Typed(pt) = input else { continue };
                        let is_fn = matches!(&*pt.ty, syn::Type::Path(t) if t.path.is_ident("Fn"));
                        let Expr::Path(a) = arg else { continue };
                        if !is_fn || a.qself.is_some() {
                            continue;
                        }
                        let k = path_key(&a.path);
                        let own = a
                            .path
                            .get_ident()
                            .is_some_and(|i| self.own.contains(&i.to_string()));
                        if !own
                            && !self.known.iter().any(|(q, _)| *q == k)
                            && !self.found.iter().any(|q| path_key(q) == k)
                        {
                            self.found.push(a.path.clone());
                        }
                    }
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut f = Finder {
        known,
        own: fn_params(item),
        found: Vec::new(),
    };
    syn::visit::Visit::visit_block(&mut f, &item.block);
    f.found
}

/// Checks a tile function's signature and returns its parameters and results. Every misuse is
/// an error at its tokens.
#[allow(clippy::type_complexity)]
pub fn parse_fn_signature(
    item: &syn::ItemFn,
) -> syn::Result<(Vec<FnParam>, Option<Vec<FnParamKind>>, bool)> {
    let sig = &item.sig;
    let refuse = |t: &dyn ToTokens, what: &str| {
        Err(syn::Error::new_spanned(
            t.to_token_stream(),
            format!("a tile function cannot be {what}"),
        ))
    };
    if let Some(c) = &sig.constness {
        return refuse(c, "`const`");
    }
    if let Some(a) = &sig.asyncness {
        return refuse(a, "`async`");
    }
    if let Some(u) = &sig.unsafety {
        return refuse(u, "`unsafe`");
    }
    if let Some(a) = &sig.abi {
        return refuse(a, "`extern`");
    }
    if let Some(v) = &sig.variadic {
        return refuse(v, "variadic");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new_spanned(
            &sig.generics,
            "a tile function has no generic parameters: declare a compile-time integer as \
             `N: Const` and an element type as `T: Type`",
        ));
    }
    let name = syn::ext::IdentExt::unraw(&sig.ident).to_string();
    if is_builtin(&name) {
        return Err(syn::Error::new_spanned(
            &sig.ident,
            format!("`{name}` is a builtin of the kernel language; give the function another name"),
        ));
    }
    let mut params = Vec::new();
    for input in &sig.inputs {
        let FnArg::Typed(pt) = input else {
            return Err(syn::Error::new_spanned(
                input,
                "a tile function takes no `self`",
            ));
        };
        let Pat::Ident(pi) = &*pt.pat else {
            return Err(syn::Error::new_spanned(
                &pt.pat,
                "a tile function's parameter is a name",
            ));
        };
        if pi.by_ref.is_some() || pi.subpat.is_some() {
            return Err(syn::Error::new_spanned(
                &pt.pat,
                "a tile function's parameter is a name",
            ));
        }
        let pname = syn::ext::IdentExt::unraw(&pi.ident).to_string();
        if params.iter().any(|p: &FnParam| p.name == pname) {
            return Err(syn::Error::new_spanned(
                &pi.ident,
                format!("`{pname}` is declared twice"),
            ));
        }
        params.push(FnParam {
            name: pname,
            kind: kind_of(&pt.ty, true)?,
            decl: input.to_token_stream(),
        });
    }
    let (results, tuple) = match &sig.output {
        syn::ReturnType::Default => (None, false),
        syn::ReturnType::Type(_, ty) => match &**ty {
            syn::Type::Tuple(t) if t.elems.is_empty() => (None, false),
            syn::Type::Tuple(t) => (
                Some(
                    t.elems
                        .iter()
                        .map(|e| kind_of(e, false))
                        .collect::<syn::Result<Vec<_>>>()?,
                ),
                true,
            ),
            other => (Some(vec![kind_of(other, false)?]), false),
        },
    };
    Ok((params, results, tuple))
}

/// The kind a parameter or result type stands for.
fn kind_of(ty: &syn::Type, param: bool) -> syn::Result<FnParamKind> {
    let help = if param {
        "a tile function's parameter is `Tile` (any value), `i32`, `i64`, `f32` or `bool` (a \
         scalar), `Const` (a compile-time integer), `Type` (an element type) or `Fn` (a tile \
         function)"
    } else {
        "a tile function returns `Tile` (any value), `i32`, `i64`, `f32` or `bool` (a scalar), or \
         a tuple of these"
    };
    let name = match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    };
    match name.as_deref() {
        Some("Tile") => Ok(FnParamKind::Value),
        Some("Const") if param => Ok(FnParamKind::Const),
        Some("Type") if param => Ok(FnParamKind::Type),
        Some("Fn") if param => Ok(FnParamKind::Func),
        Some(n @ ("i32" | "i64" | "f32" | "bool")) => {
            Ok(FnParamKind::Scalar(dtype_named(n).unwrap_or(DType::I32)))
        }
        _ => Err(syn::Error::new_spanned(ty, help)),
    }
}

/// Checks what a `#[tile_fn]` can check alone, without a caller: the signature, that the body
/// calls neither itself nor something that is not a function, and that a function with results
/// ends in an expression.
pub fn check_definition(item: &syn::ItemFn) -> syn::Result<()> {
    let (_, results, _) = parse_fn_signature(item)?;
    let name = syn::ext::IdentExt::unraw(&item.sig.ident).to_string();
    for p in callees(item) {
        if p.get_ident()
            .is_some_and(|i| syn::ext::IdentExt::unraw(i) == name)
        {
            return Err(syn::Error::new_spanned(
                &p,
                format!(
                    "`{name}` calls itself: tile functions are inlined at each call, so \
                     recursion is not supported"
                ),
            ));
        }
    }
    if results.is_some() && tail(&item.block).is_none() {
        let at = item
            .block
            .stmts
            .last()
            .map_or_else(|| item.block.to_token_stream(), |s| s.to_token_stream());
        return Err(syn::Error::new_spanned(
            at,
            "this function declares a result: end its body with the value (an expression \
             without `;`)",
        ));
    }
    Ok(())
}

/// The value expression that ends `block`: a tail expression or a final `return e;`.
pub fn tail(block: &syn::Block) -> Option<&Expr> {
    match block.stmts.last()? {
        Stmt::Expr(Expr::Return(r), _) => r.expr.as_deref(),
        Stmt::Expr(e, None) => Some(e),
        _ => None,
    }
}

/// The tokens of a closure: per entry, `( "path" = index, … ) { fn … }`.
pub fn encode_closure(entries: &[RawEntry]) -> TokenStream {
    let mut out = TokenStream::new();
    for e in entries {
        let mut map = TokenStream::new();
        for (k, (path, index)) in e.calls.iter().enumerate() {
            if k > 0 {
                map.extend([TokenTree::Punct(Punct::new(',', Spacing::Alone))]);
            }
            map.extend([
                TokenTree::Literal(Literal::string(path)),
                TokenTree::Punct(Punct::new('=', Spacing::Alone)),
                TokenTree::Literal(Literal::usize_unsuffixed(*index)),
            ]);
        }
        out.extend([
            TokenTree::Group(Group::new(Delimiter::Parenthesis, map)),
            TokenTree::Group(Group::new(Delimiter::Brace, e.item.to_token_stream())),
        ]);
    }
    out
}

/// The entries of a closure's tokens ([`encode_closure`]'s format).
pub fn decode_closure(tokens: TokenStream) -> syn::Result<Vec<RawEntry>> {
    let bad = |t: &dyn ToTokens| {
        syn::Error::new_spanned(
            t.to_token_stream(),
            "internal error: a tile function's macro delivered tokens tile cannot read (are \
             `tile` and the crate that defines the function built by the same version?)",
        )
    };
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut entries = Vec::new();
    for pair in trees.chunks(2) {
        let [TokenTree::Group(map), TokenTree::Group(body)] = pair else {
            return Err(bad(&pair.iter().cloned().collect::<TokenStream>()));
        };
        if map.delimiter() != Delimiter::Parenthesis || body.delimiter() != Delimiter::Brace {
            return Err(bad(map));
        }
        let item: syn::ItemFn = syn::parse2(body.stream())?;
        let mut calls = Vec::new();
        let parsed = syn::parse::Parser::parse2(
            syn::punctuated::Punctuated::<CallEntry, syn::Token![,]>::parse_terminated,
            map.stream(),
        )
        .map_err(|_| bad(map))?;
        for c in parsed {
            calls.push((c.path.value(), c.index.base10_parse::<usize>()?));
        }
        entries.push(RawEntry { item, calls });
    }
    for e in &entries {
        if e.calls.iter().any(|(_, i)| *i >= entries.len()) {
            return Err(bad(&e.item.sig.ident));
        }
    }
    Ok(entries)
}

struct CallEntry {
    path: syn::LitStr,
    index: syn::LitInt,
}

impl syn::parse::Parse for CallEntry {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let path = input.parse()?;
        input.parse::<syn::Token![=]>()?;
        let index = input.parse()?;
        Ok(CallEntry { path, index })
    }
}

/// A closure for the function `item` whose callees, named by the call paths `keys` (those of
/// [`callees`], then those of [`function_arguments`]; [`path_key`]s), delivered `closures`: the
/// function first, each callee's closure after it.
pub fn closure_of(
    item: &syn::ItemFn,
    keys: &[String],
    closures: &[Vec<RawEntry>],
) -> Vec<RawEntry> {
    closure_from(item, keys.iter().cloned().zip(closures.iter().cloned()))
}

/// The closure of `item` given its callees' closures by call path: the function first, each
/// callee's closure after it, its indices moved past what comes before.
fn closure_from(
    item: &syn::ItemFn,
    callees: impl Iterator<Item = (String, Vec<RawEntry>)>,
) -> Vec<RawEntry> {
    let mut entries = vec![RawEntry {
        item: item.clone(),
        calls: Vec::new(),
    }];
    for (key, closure) in callees {
        let base = entries.len();
        entries[0].calls.push((key, base));
        entries.extend(closure.into_iter().map(|e| e.moved(base)));
    }
    entries
}

impl RawEntry {
    /// The entry with the indices of its calls moved by `base` (its closure placed at `base`).
    fn moved(self, base: usize) -> RawEntry {
        RawEntry {
            item: self.item,
            calls: self.calls.into_iter().map(|(p, i)| (p, i + base)).collect(),
        }
    }
}

/// The closures of the callees of `block` (a body whose `Fn` parameters are `skip`) found by
/// name (their path's last segment) in `library`, by call path; a callee not found is left out
/// (its calls stay unknown functions). Functions passed by path as arguments are found the same
/// way.
fn found_by_name(
    block: &syn::Block,
    skip: &[String],
    library: &[syn::ItemFn],
    depth: usize,
) -> Vec<(String, Vec<RawEntry>)> {
    if depth >= MAX_CALL_DEPTH {
        return Vec::new();
    }
    let mut paths = calls_in(block, skip);
    for p in path_arguments(block) {
        if !paths.iter().any(|q| path_key(q) == path_key(&p)) {
            paths.push(p);
        }
    }
    paths
        .iter()
        .filter_map(|path| {
            let last = path.segments.last()?;
            let f = library.iter().find(|f| f.sig.ident == last.ident)?;
            let sub = found_by_name(&f.block, &fn_params(f), library, depth + 1);
            Some((path_key(path), closure_from(f, sub.into_iter())))
        })
        .collect()
}

/// Every argument of a call in `block` written as a plain path.
fn path_arguments(block: &syn::Block) -> Vec<syn::Path> {
    #[derive(Default)]
    struct Finder(Vec<syn::Path>);
    impl<'a> syn::visit::Visit<'a> for Finder {
        fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
            for a in &c.args {
                if let Expr::Path(p) = a {
                    if p.qself.is_none() {
                        self.0.push(p.path.clone());
                    }
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let mut f = Finder::default();
    syn::visit::Visit::visit_block(&mut f, block);
    f.0
}

impl FnTable {
    /// The table of a kernel compiled without the macros (by `tile-fuzz`, say): each callee is
    /// found by its name (the last segment of its path) among `library`, the tile functions the
    /// tool collected, instead of by Rust's name resolution. A callee not found stays unknown.
    pub fn by_name(kernel: &syn::Block, library: &[syn::ItemFn]) -> syn::Result<FnTable> {
        FnTable::from_closures(found_by_name(kernel, &[], library, 0))
    }

    /// The table for a kernel whose callees, named by the call paths `keys` (see
    /// [`closure_of`]), delivered `closures`. Each function's signature is checked.
    pub fn new(keys: &[String], closures: &[Vec<RawEntry>]) -> syn::Result<FnTable> {
        FnTable::from_closures(keys.iter().cloned().zip(closures.iter().cloned()))
    }

    /// The table of the kernel's callees' closures, by call path.
    fn from_closures(
        callees: impl IntoIterator<Item = (String, Vec<RawEntry>)>,
    ) -> syn::Result<FnTable> {
        let mut table = FnTable::default();
        for (key, closure) in callees {
            let base = table.fns.len();
            table.kernel_calls.insert(key, base);
            for e in closure {
                let e = e.moved(base);
                let (params, results, tuple) = parse_fn_signature(&e.item)?;
                table.fns.push(Rc::new(TileFn {
                    item: e.item,
                    params,
                    results,
                    tuple,
                    calls: e.calls.into_iter().collect(),
                }));
            }
        }
        Ok(table)
    }
}

/// What a call of a tile function gave: nothing, or its values in order.
pub(super) type Results = Option<Vec<Val>>;

impl Lowering {
    /// The tile function the call path `p` names in the body being lowered, if any.
    pub(super) fn tile_fn(&self, p: &syn::Path) -> Option<usize> {
        self.calls.get(&path_key(p)).copied()
    }

    /// Inlines the call `c` of tile function `index`: its arguments are lowered in the caller's
    /// scope, its body in a scope of its parameters only. An error inside the body is reported
    /// where the body says, with a second error at this call naming the function.
    pub(super) fn inline_call(&mut self, index: usize, c: &syn::ExprCall) -> syn::Result<Results> {
        let f = self.fns.fns[index].clone();
        let name = f.name();
        if self.inlining.len() >= MAX_CALL_DEPTH {
            return Err(err(
                c,
                format!(
                    "calls nest more than {MAX_CALL_DEPTH} deep here (through `{name}`), the \
                     most a kernel may"
                ),
            ));
        }
        if c.args.len() != f.params.len() {
            return Err(err(
                c,
                format!(
                    "`{name}` takes {} argument(s), found {}",
                    f.params.len(),
                    c.args.len()
                ),
            ));
        }
        let mut scope = HashMap::new();
        let mut types = HashMap::new();
        let mut calls = f.calls.clone();
        for (p, a) in f.params.iter().zip(&c.args) {
            match &p.kind {
                FnParamKind::Func => {
                    let target = match a {
                        Expr::Path(path) if path.qself.is_none() => self.tile_fn(&path.path),
                        _ => None,
                    };
                    let target = target.ok_or_else(|| {
                        err(
                            a,
                            format!(
                                "`{}` is a `Fn` parameter of `{name}`: pass a tile function (a \
                                 `#[tile_fn]`) by its path, or a `Fn` parameter",
                                p.name
                            ),
                        )
                    })?;
                    calls.insert(p.name.clone(), target);
                }
                FnParamKind::Type => {
                    let d = self.type_arg(a).ok_or_else(|| {
                        err(
                            a,
                            format!(
                                "`{}` is a `Type` parameter of `{name}`: pass an element type \
                                 (`f32`, `f16`, `bf16`, `i32`, `i64`, `bool`) or a `Type` \
                                 parameter",
                                p.name
                            ),
                        )
                    })?;
                    types.insert(p.name.clone(), d);
                }
                kind => {
                    let v = self.expr_any(a)?;
                    let v = self.check_arg(v, kind, a, &p.name, &name)?;
                    scope.insert(p.name.clone(), v);
                }
            }
        }
        let outer_scope = std::mem::replace(&mut self.scope, scope);
        let outer_types = std::mem::replace(&mut self.types, types);
        let outer_calls = std::mem::replace(&mut self.calls, calls);
        // The callee's own statements are not in the caller's build-time branches.
        let outer_static = std::mem::replace(&mut self.static_branches, 0);
        self.inlining.push(index);
        let body = self.fn_body(&f);
        self.inlining.pop();
        self.static_branches = outer_static;
        self.scope = outer_scope;
        self.types = outer_types;
        self.calls = outer_calls;
        body.map_err(|mut e| {
            e.combine(err(
                &c.func,
                format!("the error above is in `{name}`, called here"),
            ));
            e
        })
    }

    /// The statements of `f`'s body and its results, in the current scope (its parameters).
    fn fn_body(&mut self, f: &TileFn) -> syn::Result<Results> {
        let stmts = &f.item.block.stmts;
        let Some(kinds) = &f.results else {
            for s in stmts {
                self.stmt(s)?;
            }
            return Ok(None);
        };
        let Some(value) = tail(&f.item.block) else {
            return Err(err(
                &f.item.sig.output,
                "this function declares a result: end its body with the value",
            ));
        };
        for s in &stmts[..stmts.len() - 1] {
            self.stmt(s)?;
        }
        let first = self.f.ops.len();
        let vals = if f.tuple {
            self.expr_multi(value)?
        } else {
            vec![self.expr_any(value)?]
        };
        self.locate(first, value);
        if vals.len() != kinds.len() {
            return Err(err(
                value,
                format!(
                    "`{}` declares {} result(s); this gives {}",
                    f.name(),
                    kinds.len(),
                    vals.len()
                ),
            ));
        }
        let mut out = Vec::with_capacity(vals.len());
        for (v, k) in vals.into_iter().zip(kinds) {
            out.push(self.check_arg(v, k, value, "the result", &f.name())?);
        }
        Ok(Some(out))
    }

    /// The values of `e` where several may stand: a tuple `(a, b)`, or a call of a tile function
    /// with several results; else the one value of `e`.
    pub(super) fn expr_multi(&mut self, e: &Expr) -> syn::Result<Vec<Val>> {
        match e {
            Expr::Paren(p) => self.expr_multi(&p.expr),
            Expr::Tuple(t) => t.elems.iter().map(|x| self.expr_any(x)).collect(),
            Expr::Call(c) if matches!(&*c.func, Expr::Path(p) if p.path.is_ident("associative_scan")) =>
            {
                let first = self.f.ops.len();
                let args: Vec<&Expr> = c.args.iter().collect();
                let r = self.associative_scan_multi(&args, c)?;
                self.locate(first, e);
                Ok(r)
            }
            Expr::Call(c) if matches!(&*c.func, Expr::Path(p) if p.path.is_ident("split")) => {
                let first = self.f.ops.len();
                let [arg] = c.args.iter().collect::<Vec<_>>()[..] else {
                    return Err(err(
                        c,
                        format!(
                            "`split` takes 1 argument (the tile, whose last extent is 2), found {}",
                            c.args.len()
                        ),
                    ));
                };
                let v = self.expr(arg)?;
                let r = self.split(v, arg)?;
                self.locate(first, e);
                Ok(r)
            }
            Expr::MethodCall(mc) if mc.method == "split" => {
                let first = self.f.ops.len();
                if !mc.args.is_empty() {
                    return Err(err(
                        e,
                        format!("`.split()` takes no arguments, found {}", mc.args.len()),
                    ));
                }
                let v = self.expr(&mc.receiver)?;
                let r = self.split(v, &mc.receiver)?;
                self.locate(first, e);
                Ok(r)
            }
            Expr::Call(c) => {
                let target = match &*c.func {
                    Expr::Path(p) => self.tile_fn(&p.path),
                    _ => None,
                };
                match target {
                    Some(i) => {
                        let first = self.f.ops.len();
                        let r = self.inline_call(i, c)?;
                        self.locate(first, e);
                        r.ok_or_else(|| err(e, "this function returns nothing, so it has no value"))
                    }
                    None => Ok(vec![self.expr_any(e)?]),
                }
            }
            other => Ok(vec![self.expr_any(other)?]),
        }
    }

    /// The element type an argument for a `Type` parameter names.
    fn type_arg(&self, a: &Expr) -> Option<DType> {
        let Expr::Path(p) = a else { return None };
        let n = p.path.get_ident()?.to_string();
        self.types.get(&n).copied().or_else(|| dtype_named(&n))
    }

    /// Checks value `v` (given at `at`) against what parameter (or result) `what` of `func`
    /// takes; a literal for a scalar parameter is given its type.
    fn check_arg(
        &mut self,
        v: Val,
        kind: &FnParamKind,
        at: &Expr,
        what: &str,
        func: &str,
    ) -> syn::Result<Val> {
        let what = if what == "the result" {
            format!("the result of `{func}`")
        } else {
            format!("`{what}` of `{func}`")
        };
        match kind {
            FnParamKind::Value | FnParamKind::Type | FnParamKind::Func => Ok(v),
            FnParamKind::Const => match v {
                Val::Int(_) => Ok(v),
                _ => Err(err(
                    at,
                    format!("{what} is a `Const`: it takes a compile-time integer (a literal or a `Const`)"),
                )),
            },
            FnParamKind::Scalar(d) => match self.ty(v) {
                None => Ok(Val::V(self.materialize(v, *d, &[], at)?)),
                Some(t) if t == Type::scalar(*d) => Ok(v),
                Some(t) => Err(err(
                    at,
                    format!("{what} is a scalar `{d}`, found `{t}`"),
                )),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(src: &str) -> syn::ItemFn {
        syn::parse_str(src).unwrap()
    }

    #[test]
    fn callees_skip_builtins_and_repeat_once() {
        let f =
            item("fn k(x: Tile) { let a = load(x); let b = mylib::f(a, g(a)); store(x, g(b)); }");
        let keys: Vec<String> = callees(&f).iter().map(path_key).collect();
        assert_eq!(keys, ["mylib::f", "g"]);
    }

    #[test]
    fn functions_passed_by_path_are_asked_for_after_their_callee() {
        // `apply` calls its `Fn` parameter: that call is no request.
        let apply = item("fn apply(x: Tile, F: Fn) -> Tile { F(x) + g(x) }");
        let keys: Vec<String> = callees(&apply).iter().map(path_key).collect();
        assert_eq!(keys, ["g"]);
        // A caller passing `m::double` (and forwarding its own `G`) asks for `m::double` once
        // `apply` has answered; `apply`'s plain arguments are not functions.
        let k = item(
            "fn k(x: Tile, G: Fn) { let y = apply(x, m::double); let z = apply(y, G); \
             store(x, apply(z, m::double)); }",
        );
        assert_eq!(
            callees(&k).iter().map(path_key).collect::<Vec<_>>(),
            ["apply"]
        );
        let extra = function_arguments(&k, &[("apply".to_string(), &apply)]);
        assert_eq!(
            extra.iter().map(path_key).collect::<Vec<_>>(),
            ["m::double"]
        );
        let known = [
            ("apply".to_string(), &apply),
            ("m::double".to_string(), &apply),
        ];
        assert!(function_arguments(&k, &known).is_empty());
    }

    #[test]
    fn closures_round_trip_and_nest() {
        let g = item("fn g(x: Tile) -> Tile { x * 2 }");
        let g_closure = closure_of(&g, &[], &[]);
        let f = item("fn f(x: Tile) -> (Tile, Tile) { (g(x), x) }");
        let f_closure = closure_of(&f, &["g".to_string()], &[g_closure]);
        let decoded = decode_closure(encode_closure(&f_closure)).unwrap();
        assert_eq!(decoded.len(), 2);
        assert_eq!(decoded[0].calls, [("g".to_string(), 1)]);
        assert_eq!(decoded[1].item.sig.ident, "g");
        let table = FnTable::new(&["f".to_string()], &[decoded]).unwrap();
        assert_eq!(table.kernel_calls["f"], 0);
        assert_eq!(table.fns[0].calls["g"], 1);
        assert_eq!(table.fns[0].results, Some(vec![FnParamKind::Value; 2]));
    }

    #[test]
    fn tools_resolve_callees_by_name() {
        let lib = [
            item("fn g(x: Tile) -> Tile { x * 2 }"),
            item("fn f(x: Tile) -> Tile { g(x) + missing(x) }"),
        ];
        let k = item("fn k(x: Ptr<f32>) { store(x, lib::f(load(x))); unknown(x); }");
        let table = FnTable::by_name(&k.block, &lib).unwrap();
        assert_eq!(table.kernel_calls.len(), 1);
        assert_eq!(table.kernel_calls["lib::f"], 0);
        assert_eq!(table.fns[0].calls["g"], 1);
        assert!(!table.fns[0].calls.contains_key("missing"));
        // A function passed by path is found by name too.
        let lib = [
            item("fn sq(x: Tile) -> Tile { x * x }"),
            item("fn apply(x: Tile, F: Fn) -> Tile { F(x) }"),
        ];
        let k = item("fn k(x: Ptr<f32>) { store(x, apply(load(x), sq)); }");
        let table = FnTable::by_name(&k.block, &lib).unwrap();
        assert_eq!(
            table.fns[table.kernel_calls["apply"]].params[1].kind,
            FnParamKind::Func
        );
        assert!(table.kernel_calls.contains_key("sq"));
        assert!(table.fns[table.kernel_calls["apply"]].calls.is_empty());
    }

    #[test]
    fn definitions_are_checked() {
        for (src, msg) in [
            ("fn f(x: Tile) -> Tile { f(x) }", "calls itself"),
            ("fn load(x: Tile) -> Tile { x }", "builtin"),
            ("fn f<T>(x: Tile) -> Tile { x }", "no generic parameters"),
            ("fn f(x: Vec<f32>) -> Tile { x }", "parameter is `Tile`"),
            ("fn f(x: Tile) -> Tile { let y = x; }", "declares a result"),
        ] {
            let e = check_definition(&item(src)).unwrap_err().to_string();
            assert!(e.contains(msg), "{src}: {e}");
        }
        check_definition(&item(
            "fn f(x: Tile, N: Const, T: Type) -> (Tile, i32) { (x, 1) }",
        ))
        .unwrap();
    }
}
