//! `#[tile_fn]` and the callback chain through which a kernel (or a tile function) collects the
//! bodies of the tile functions it calls (`tile_codegen::frontend::functions` describes the
//! design; this file is its token plumbing).
//!
//! A caller whose body calls tile functions `f` and `m::g` expands to a request to the first:
//!
//! ```text
//! f! { @tile [::tile::__tile_kernel_resume] {attr} {item} [(f) (m::g)] }
//! ```
//!
//! `f!` (the macro `#[tile_fn]` defined beside `f`) answers by calling the callback with its
//! closure appended: `::tile::__tile_kernel_resume! { {attr} {item} [(f) (m::g)] {f's closure} }`.
//! The callback asks `m::g!` the same way. Once every callee has answered, the functions the
//! caller passes by path to its callees' `Fn` parameters (which only the callees' signatures
//! reveal) are asked for in turn, appended to the paths; then the kernel compiles. A
//! `#[tile_fn]` collects its own callees' closures the same way (callback `__tile_fn_resume`)
//! before it defines its macro. A callee whose definition failed answers
//! `{!}`: the caller then stands in an empty item for itself, so the definition's error is the
//! only one.

use proc_macro2::{Delimiter, Group, Span, TokenStream as Tokens, TokenTree};
use quote::{format_ident, quote, ToTokens};
use syn::ItemFn;
use tile_codegen::frontend::functions::{
    callees, check_definition, closure_of, decode_closure, encode_closure, function_arguments,
    parse_fn_signature, FnParamKind, RawEntry,
};
use tile_core::ir::DType;
use tile_core::runtime::autotune::Fnv;

/// What a resumed chain carries: the caller's attribute and item, the callee paths it asked for,
/// and the closures delivered so far (in the same order).
pub struct Chain {
    /// The caller's attribute arguments.
    pub attr: Tokens,
    /// The caller's item, as written.
    pub item: Tokens,
    /// Every callee path the caller's body names.
    pub paths: Vec<Tokens>,
    /// The closures delivered, `None` for a callee whose definition failed.
    pub closures: Vec<Option<Tokens>>,
}

impl Chain {
    /// Parses the tokens a callback receives.
    pub fn parse(input: Tokens) -> syn::Result<Chain> {
        let trees: Vec<TokenTree> = input.into_iter().collect();
        let group = |i: usize, d: Delimiter| match trees.get(i) {
            Some(TokenTree::Group(g)) if g.delimiter() == d => Ok(g.stream()),
            _ => Err(syn::Error::new(
                Span::call_site(),
                "internal error: a tile function's callback received tokens it cannot read",
            )),
        };
        let attr = group(0, Delimiter::Brace)?;
        let item = group(1, Delimiter::Brace)?;
        let paths = group(2, Delimiter::Bracket)?
            .into_iter()
            .map(|t| match t {
                TokenTree::Group(g) => g.stream(),
                other => other.into_token_stream(),
            })
            .collect();
        let mut closures = Vec::new();
        for i in 3..trees.len() {
            let c = group(i, Delimiter::Brace)?;
            let poisoned = matches!(c.clone().into_iter().next(), Some(TokenTree::Punct(p)) if p.as_char() == '!');
            closures.push((!poisoned).then_some(c));
        }
        Ok(Chain {
            attr,
            item,
            paths,
            closures,
        })
    }

    /// The request to the next callee that has not answered, or `None` when all have.
    pub fn next_request(&self, callback: Tokens) -> Option<Tokens> {
        let next = self.paths.get(self.closures.len())?;
        let (attr, item) = (&self.attr, &self.item);
        let paths = self
            .paths
            .iter()
            .map(|p| Group::new(Delimiter::Parenthesis, p.clone()));
        let closures = self.closures.iter().map(|c| {
            let inner = c.clone().unwrap_or_else(|| quote!(!));
            Group::new(Delimiter::Brace, inner)
        });
        Some(quote! {
            #next ! { @tile [#callback] {#attr} {#item} [#(#paths)*] #(#closures)* }
        })
    }

    /// The call path of each callee asked for ([`path_key`]s), in order.
    pub fn keys(&self) -> Vec<String> {
        self.paths
            .iter()
            .map(|p| p.to_string().replace(' ', ""))
            .collect()
    }

    /// Once every callee has answered: the request for the first of the tile functions that the
    /// caller `item` passes by path to its callees' `Fn` parameters and has not asked for yet
    /// (only the callees' signatures say which arguments are functions), or `None` when there
    /// are none (or a callee failed, or `item` does not parse: the caller reports that).
    pub fn function_request(&mut self, callback: Tokens) -> Option<Tokens> {
        let item: ItemFn = syn::parse2(self.item.clone()).ok()?;
        let closures = self.decoded().ok()??;
        let keys = self.keys();
        let known: Vec<(String, &ItemFn)> = keys
            .into_iter()
            .zip(closures.iter().map(|c| &c[0].item))
            .collect();
        let extra = function_arguments(&item, &known);
        if extra.is_empty() {
            return None;
        }
        self.paths.extend(extra.iter().map(|p| p.to_token_stream()));
        self.next_request(callback)
    }

    /// The delivered closures, decoded; `None` if some callee's definition failed.
    pub fn decoded(&self) -> syn::Result<Option<Vec<Vec<RawEntry>>>> {
        let mut out = Vec::new();
        for c in &self.closures {
            match c {
                Some(t) => out.push(decode_closure(t.clone())?),
                None => return Ok(None),
            }
        }
        Ok(Some(out))
    }
}

/// The first request of a caller whose body calls tile functions, or `None` when it calls none.
pub fn start(attr: Tokens, item: Tokens, f: &ItemFn, callback: Tokens) -> Option<Tokens> {
    let paths: Vec<Tokens> = callees(f).iter().map(|p| p.to_token_stream()).collect();
    if paths.is_empty() {
        return None;
    }
    Chain {
        attr,
        item,
        paths,
        closures: Vec::new(),
    }
    .next_request(callback)
}

/// `#[tile_fn]` on `item`: checks the definition, then either asks for its callees' closures or
/// defines the function's macro.
pub fn tile_fn(attr: Tokens, item: Tokens) -> Tokens {
    let f: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => return e.to_compile_error(),
    };
    if !attr.is_empty() {
        return syn::Error::new_spanned(attr, "`#[tile_fn]` takes no arguments").to_compile_error();
    }
    if let Err(e) = check_attrs(&f).and_then(|()| check_definition(&f)) {
        return define(&f, None, Some(e));
    }
    match start(Tokens::new(), item, &f, quote!(::tile::__tile_fn_resume)) {
        Some(request) => request,
        None => define(&f, Some(closure_of(&f, &[], &[])), None),
    }
}

/// The callback of a `#[tile_fn]` collecting its callees.
pub fn fn_resume(input: Tokens) -> Tokens {
    let mut chain = match Chain::parse(input) {
        Ok(c) => c,
        Err(e) => return e.to_compile_error(),
    };
    if let Some(request) = chain.next_request(quote!(::tile::__tile_fn_resume)) {
        return request;
    }
    if let Some(request) = chain.function_request(quote!(::tile::__tile_fn_resume)) {
        return request;
    }
    let f: ItemFn = match syn::parse2(chain.item.clone()) {
        Ok(f) => f,
        Err(e) => return e.to_compile_error(),
    };
    match chain.decoded() {
        Ok(Some(closures)) => define(&f, Some(closure_of(&f, &chain.keys(), &closures)), None),
        Ok(None) => define(&f, None, None),
        Err(e) => define(&f, None, Some(e)),
    }
}

/// Only documentation and `cfg` attributes go on a tile function.
fn check_attrs(f: &ItemFn) -> syn::Result<()> {
    for a in &f.attrs {
        let p = a.path();
        if !(p.is_ident("doc") || p.is_ident("cfg") || p.is_ident("cfg_attr")) {
            return Err(syn::Error::new_spanned(
                a,
                "a tile function takes documentation and `cfg` attributes only",
            ));
        }
    }
    Ok(())
}

/// The items a tile function expands to: its macro (answering with `closure`, or `{!}` when
/// its definition failed), the macro's import under the function's name, and a function of the
/// same signature for documentation (which panics if Rust code calls it). `error`, if any, is
/// reported too.
fn define(f: &ItemFn, closure: Option<Vec<RawEntry>>, error: Option<syn::Error>) -> Tokens {
    let name = &f.sig.ident;
    let vis = &f.vis;
    let body = match closure {
        Some(mut entries) => {
            // The closure carries the function without attributes or visibility.
            entries[0].item.attrs.clear();
            entries[0].item.vis = syn::Visibility::Inherited;
            encode_closure(&entries)
        }
        None => quote!(!),
    };
    let hidden = format_ident!(
        "__tile_fn_{}_{:016x}",
        syn::ext::IdentExt::unraw(name),
        hash(&f.to_token_stream().to_string()),
        span = name.span()
    );
    let cfgs: Vec<&syn::Attribute> = f
        .attrs
        .iter()
        .filter(|a| !a.path().is_ident("doc"))
        .collect();
    let docs: Vec<&syn::Attribute> = f
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let stub = stub(f);
    // The stub lives in a module of its own, re-exported: there a parameter `BLOCK` is a
    // binding even where the function's module has a constant `BLOCK` (in the module itself
    // the identifier pattern would name that constant).
    let stub_mod = format_ident!(
        "__tile_doc_{}_{:016x}",
        syn::ext::IdentExt::unraw(name),
        hash(&f.to_token_stream().to_string())
    );
    let documented = if stub.is_empty() {
        // A signature that does not parse has nothing to document.
        Tokens::new()
    } else {
        quote! {
            #(#cfgs)*
            #[doc(hidden)]
            #[allow(non_snake_case)]
            mod #stub_mod {
                #stub
            }
            // The documentation goes on the re-export, whose links resolve in this module
            // (the stand-in's module sees none of the function's neighbours).
            #(#cfgs)*
            #(#docs)*
            #[allow(unused_imports)]
            #vis use #stub_mod::#name;
        }
    };
    let error = error.map(|e| e.to_compile_error());
    quote! {
        #error
        #(#cfgs)*
        #[doc(hidden)]
        #[macro_export]
        macro_rules! #hidden {
            (@tile [$($cb:tt)*] $($state:tt)*) => { $($cb)* ! { $($state)* { #body } } };
        }
        #(#cfgs)*
        #[doc(hidden)]
        #[allow(unused_imports)]
        #vis use #hidden as #name;
        #documented
    }
}

/// The documentation stand-in: the function's signature with its kinds as the `tile::lang`
/// marker types, and a body that panics.
fn stub(f: &ItemFn) -> Tokens {
    let name = &f.sig.ident;
    let Ok((params, results, tuple)) = parse_fn_signature(f) else {
        return Tokens::new();
    };
    let kind = |k: &FnParamKind| match k {
        FnParamKind::Value => quote!(::tile::lang::Tile),
        FnParamKind::Const => quote!(::tile::lang::Const),
        FnParamKind::Type => quote!(::tile::lang::Type),
        FnParamKind::Func => quote!(::tile::lang::Fn),
        FnParamKind::Scalar(DType::I1) => quote!(bool),
        FnParamKind::Scalar(DType::I64) => quote!(i64),
        FnParamKind::Scalar(DType::F32) => quote!(f32),
        FnParamKind::Scalar(_) => quote!(i32),
    };
    let args = params.iter().map(|p| {
        let n = format_ident!("{}", p.name);
        let t = kind(&p.kind);
        quote!(#n: #t)
    });
    let ret = match (&results, tuple) {
        (None, _) => Tokens::new(),
        (Some(ks), true) => {
            let ks = ks.iter().map(kind);
            quote!(-> (#(#ks,)*))
        }
        (Some(ks), false) => {
            let k = kind(&ks[0]);
            quote!(-> #k)
        }
    };
    let msg = format!(
        "`{}` is a tile function: it runs inside `#[tile_kernel]` kernels only",
        syn::ext::IdentExt::unraw(name)
    );
    quote! {
        #[allow(non_snake_case, unused_variables, dead_code, clippy::too_many_arguments)]
        pub fn #name(#(#args),*) #ret {
            ::core::panic!(#msg)
        }
    }
}

/// The macro name's suffix, unique per definition in a crate: a hash of the definition's
/// tokens and its place.
fn hash(text: &str) -> u64 {
    let place = format!("{:?}", proc_macro::Span::call_site());
    Fnv::new()
        .write(text.as_bytes())
        .write(place.as_bytes())
        .finish()
}
