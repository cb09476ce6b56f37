//! The kernel's signature: which parameters are pointers (with their declared extents), numbers, or
//! compile-time constants, and the attribute's options. Every rejected form is a spanned error.
//!
//! Accepted parameter types:
//!
//! | written                    | meaning                                                        |
//! |----------------------------|----------------------------------------------------------------|
//! | `Ptr<f32>`                 | a buffer of `f32` (also `f16`, `bf16`, `i32`, `i64`, `bool`), no extent |
//! | `Ptr<f32, n>`              | a buffer of at least `n` elements, `n` an integer parameter    |
//! | `Ptr<f32, { 2 * n + 1 }>`  | likewise with an expression of integer parameters and literals |
//! | `i32`, `i64`, `f32`        | a number passed by value                                        |
//! | `Const<1024>`              | a compile-time `i32` constant, folded into the kernel           |
//! | `Const<{[512, 4096]}>`     | one of these, chosen at launch: each value is compiled (a specialization) |
//! | `T: Type<{[f32, f16]}>`    | an element type, one of these: `Ptr<T>` and `as T` use it; each is compiled, and the launch picks the one of its buffers |

use proc_macro2::Span;
use syn::{Expr, FnArg, GenericArgument, Pat, PathArguments, Type as SynType};
use tile_core::ir::DType;

/// One parameter of the kernel as declared.
#[derive(Clone, Debug)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// The name's span, for messages.
    pub span: Span,
    /// What it is.
    pub kind: ParamDecl,
}

/// The declared kind of a parameter.
#[derive(Clone, Debug)]
pub enum ParamDecl {
    /// A buffer of `dtype`; `extent` is its declared minimum length in elements.
    Ptr {
        /// Element type (for `Ptr<T>` with a type parameter `T`, the type of the instance being
        /// compiled; the first declared one until then).
        dtype: DType,
        /// Declared extent, an integer expression of other parameters.
        extent: Option<Box<Expr>>,
        /// The type parameter the element type is written as, if any.
        elem_param: Option<String>,
    },
    /// A number by value.
    Scalar(DType),
    /// A compile-time constant: one value, or several (each compiled; the launch picks one).
    Const(Vec<i64>),
    /// A compile-time element type: one of these (each compiled; the launch picks the one its
    /// buffers have).
    Type(Vec<DType>),
}

/// Options of `#[tile_kernel(...)]`.
#[derive(Clone, Debug)]
pub struct KernelOptions {
    /// Warps per program; `None` (`num_warps = auto`) picks 4, 8 or 16 from the largest tile.
    pub num_warps: Option<u32>,
    /// With `num_warps = auto(E)`: per instance, as many warps (1 to 16) as give each thread `E`
    /// elements of the instance's largest tile.
    pub elems_per_thread: Option<u32>,
    /// With `num_warps = auto(E, max = W)`: at most `W` warps (a power of two up to 16; 16 when
    /// not given). `auto(8, max = 8)` is Triton's `min(max(BLOCK // 256, 1), 8)`.
    pub max_auto_warps: u32,
    /// Shared-memory stages of a pipelined `dot` loop (`num_stages = S`, 1 to 8; 1, as in
    /// Triton, asks for no software pipelining); `None` lets the compiler choose.
    pub num_stages: Option<u32>,
    /// Where `num_stages` is given (its value's tokens), for the warning when it pipelines
    /// nothing.
    pub stages_span: Option<Span>,
    /// `specialize = aligned`: only the first specialization is compiled (every pointer 16-byte
    /// aligned, the integers that matter multiples of what keeps its code), and a launch whose
    /// arguments break it is an `Err` naming them, as a CUTLASS kernel refuses a problem its
    /// alignment cannot implement. For kernels whose unaligned form cannot be compiled well (a
    /// `128 × 256` GEMM tile with a GELU epilogue spills when its operands are copied element by
    /// element).
    pub aligned_only: bool,
    /// `specialize = unit`: [`KernelOptions::aligned_only`], and the one specialization also
    /// assumes 1 for the integers that, assumed 1, widen an access (unit strides, as Triton
    /// specializes them); a launch with another stride is an `Err` naming it. For kernels whose
    /// tiles fit the registers only when their copies are vectors (Triton's tutorial matmul at
    /// `128 × 256 × 64`, every stride an argument).
    pub unit_only: bool,
    /// `math = fast`: `f32` division, `exp` and `sqrt` in their approximate forms, as Triton's
    /// `/`, `tl.exp` and `tl.sqrt` are (`math = precise`, the default, keeps them exact or
    /// within the IR's documented bounds).
    pub fast_math: bool,
    /// `autotune(configs = [...], key = [...])`: the configurations to compile and choose among
    /// at launch.
    pub autotune: Option<Autotune>,
}

/// `autotune(configs = [{ BM = 128, num_warps = 4, … }, …], key = [m, n], prune = f,
/// heuristic = g)`: each config is compiled (an instance of the kernel), and the launch picks one
/// per key by timing them (`tile::autotune`).
#[derive(Clone, Debug)]
pub struct Autotune {
    /// The configurations, in order (the first is the interpreter's and the deterministic
    /// mode's choice).
    pub configs: Vec<TuneConfig>,
    /// The integer parameters whose values key the choice.
    pub key: Vec<syn::Ident>,
    /// `fn(&[i64]) -> Vec<usize>`: the configs worth timing for a key.
    pub prune: Option<syn::Path>,
    /// `fn(&[i64]) -> usize`: picks a config for a key without timing.
    pub heuristic: Option<syn::Path>,
    /// The `autotune` keyword, for errors about the whole option.
    pub span: Span,
}

/// One configuration of [`Autotune`].
#[derive(Clone, Debug)]
pub struct TuneConfig {
    /// The value of each constant it sets.
    pub consts: Vec<(syn::Ident, i64)>,
    /// Its warps, if it sets them (else the kernel's `num_warps`).
    pub num_warps: Option<u32>,
    /// Its stages, if it sets them (else the kernel's `num_stages`).
    pub num_stages: Option<u32>,
    /// Its tokens (`{ … }`), for errors.
    pub tokens: proc_macro2::TokenStream,
}

impl TuneConfig {
    /// How messages and the cache name it: `BM = 128, BN = 64, num_warps = 4, num_stages = 3`.
    pub fn label(&self) -> String {
        let mut parts: Vec<String> = self
            .consts
            .iter()
            .map(|(n, v)| format!("{n} = {v}"))
            .collect();
        if let Some(w) = self.num_warps {
            parts.push(format!("num_warps = {w}"));
        }
        if let Some(s) = self.num_stages {
            parts.push(format!("num_stages = {s}"));
        }
        parts.join(", ")
    }
}

impl syn::parse::Parse for TuneConfig {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let tokens: proc_macro2::TokenStream =
            quote::ToTokens::to_token_stream(&input.fork().parse::<proc_macro2::Group>()?);
        let inner;
        syn::braced!(inner in input);
        let mut c = TuneConfig {
            consts: Vec::new(),
            num_warps: None,
            num_stages: None,
            tokens,
        };
        let items =
            syn::punctuated::Punctuated::<syn::MetaNameValue, syn::Token![,]>::parse_terminated(
                &inner,
            )?;
        for item in items {
            let Some(name) = item.path.get_ident().cloned() else {
                return Err(syn::Error::new_spanned(
                    &item.path,
                    "expected a constant's name, `num_warps` or `num_stages`",
                ));
            };
            let v = const_int(unblock(&item.value)).ok_or_else(|| {
                syn::Error::new_spanned(&item.value, "expected an integer literal")
            })?;
            let dup = c.consts.iter().any(|(n, _)| *n == name)
                || (name == "num_warps" && c.num_warps.is_some())
                || (name == "num_stages" && c.num_stages.is_some());
            if dup {
                return Err(syn::Error::new_spanned(
                    &name,
                    format!("`{name}` is set twice in this config"),
                ));
            }
            if name == "num_warps" {
                let ok = u32::try_from(v)
                    .ok()
                    .filter(|w| (1..=32).contains(w) && w.is_power_of_two());
                c.num_warps = Some(ok.ok_or_else(|| {
                    syn::Error::new_spanned(&item.value, "`num_warps` must be 1, 2, 4, 8, 16 or 32")
                })?);
            } else if name == "num_stages" {
                let ok = u32::try_from(v).ok().filter(|s| (1..=8).contains(s));
                c.num_stages = Some(ok.ok_or_else(|| {
                    syn::Error::new_spanned(
                        &item.value,
                        "`num_stages` must be 1 to 8 (1: no software pipelining)",
                    )
                })?);
            } else {
                c.consts.push((name, v));
            }
        }
        Ok(c)
    }
}

/// Parses the inside of `autotune(…)`.
fn parse_autotune(
    kw: &proc_macro2::Ident,
    body: proc_macro2::TokenStream,
) -> syn::Result<Autotune> {
    use syn::parse::Parser;
    let mut tune = Autotune {
        configs: Vec::new(),
        key: Vec::new(),
        prune: None,
        heuristic: None,
        span: kw.span(),
    };
    let mut seen_configs = false;
    let parser = |input: syn::parse::ParseStream| -> syn::Result<()> {
        while !input.is_empty() {
            let name: syn::Ident = input.parse()?;
            input.parse::<syn::Token![=]>()?;
            match name.to_string().as_str() {
                "configs" => {
                    let list;
                    syn::bracketed!(list in input);
                    let configs = syn::punctuated::Punctuated::<TuneConfig, syn::Token![,]>::parse_terminated(&list)?;
                    tune.configs = configs.into_iter().collect();
                    seen_configs = true;
                }
                "key" => {
                    let list;
                    syn::bracketed!(list in input);
                    let key = syn::punctuated::Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated(&list)?;
                    tune.key = key.into_iter().collect();
                }
                "prune" => tune.prune = Some(input.parse()?),
                "heuristic" => tune.heuristic = Some(input.parse()?),
                _ => {
                    return Err(syn::Error::new_spanned(
                        &name,
                        "`autotune` takes `configs = [{ … }, …]`, `key = [names]`, `prune = path` and `heuristic = path`",
                    ))
                }
            }
            if input.is_empty() {
                break;
            }
            input.parse::<syn::Token![,]>()?;
        }
        Ok(())
    };
    parser.parse2(body)?;
    if !seen_configs || tune.configs.is_empty() {
        return Err(syn::Error::new(
            kw.span(),
            "`autotune` needs `configs = [{ … }, …]` with at least one config",
        ));
    }
    Ok(tune)
}

impl Default for KernelOptions {
    fn default() -> Self {
        KernelOptions {
            num_warps: Some(4),
            elems_per_thread: None,
            max_auto_warps: 16,
            num_stages: None,
            stages_span: None,
            aligned_only: false,
            unit_only: false,
            fast_math: false,
            autotune: None,
        }
    }
}

/// The value of an integer literal option, or `msg` at the expression.
fn int_literal(e: &Expr, msg: &str) -> syn::Result<u32> {
    match e {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse::<u32>(),
        other => Err(syn::Error::new_spanned(other, msg)),
    }
}

/// What each option takes, for the messages about its value.
fn option_help(key: &str) -> &'static str {
    match key {
        "num_warps" => {
            "`num_warps` takes an integer literal (1, 2, 4, 8, 16 or 32), `auto` or `auto(E)`"
        }
        "num_stages" => "`num_stages` takes an integer literal, 1 to 8 (1: no software pipelining)",
        "math" => "`math` takes `fast` (Triton's approximate `/`, `exp` and `sqrt` for `f32`) or `precise` (the default)",
        _ => "`specialize` takes `aligned` (only the aligned specialization), `unit` (only the aligned one with unit strides) or `all`",
    }
}

/// The options the attribute accepts, for the message about an unknown one.
const OPTIONS_HELP: &str =
    "the accepted options are `num_warps = N`, `num_stages = S`, `specialize = aligned`, `math = fast` and `autotune(configs = [..], key = [..])`";

/// One `name = value` of the attribute, its value parsed.
enum OptionItem {
    /// `name = value`.
    Value {
        key: proc_macro2::Ident,
        value: Expr,
    },
    /// `autotune(…)`.
    Autotune(Autotune),
}

/// Splits the attribute's tokens into `name = value` items at their top-level commas (a trailing
/// comma allowed). Each malformed item is an error at its offending tokens, not at the attribute
/// as a whole: a missing or stray token, an unknown name, a value that does not parse (the error
/// then spans the value and says what the option takes).
fn option_items(args: proc_macro2::TokenStream) -> Vec<syn::Result<OptionItem>> {
    use proc_macro2::TokenTree;
    let mut pieces: Vec<(Vec<TokenTree>, Option<proc_macro2::Punct>)> = vec![(Vec::new(), None)];
    for t in args {
        match t {
            TokenTree::Punct(p) if p.as_char() == ',' => {
                if let Some(last) = pieces.last_mut() {
                    last.1 = Some(p);
                }
                pieces.push((Vec::new(), None));
            }
            t => {
                if let Some(last) = pieces.last_mut() {
                    last.0.push(t);
                }
            }
        }
    }
    let mut out = Vec::new();
    for (tokens, comma) in pieces {
        let mut it = tokens.into_iter();
        let key = match it.next() {
            None => {
                // Nothing before this comma (after the last one, nothing is a trailing comma).
                if let Some(c) = comma {
                    out.push(Err(syn::Error::new(
                        c.span(),
                        "expected an option before this `,` (`num_warps = 4`)",
                    )));
                }
                continue;
            }
            Some(TokenTree::Ident(key)) => key,
            Some(other) => {
                out.push(Err(syn::Error::new(
                    other.span(),
                    format!("expected an option `name = value`; {OPTIONS_HELP}"),
                )));
                continue;
            }
        };
        let name = key.to_string();
        if name == "autotune" {
            out.push(match (it.next(), it.next()) {
                (Some(TokenTree::Group(g)), None)
                    if g.delimiter() == proc_macro2::Delimiter::Parenthesis =>
                {
                    parse_autotune(&key, g.stream()).map(OptionItem::Autotune)
                }
                _ => Err(syn::Error::new(
                    key.span(),
                    "write `autotune(configs = [{ … }, …], key = [names])`",
                )),
            });
            continue;
        }
        if !matches!(
            name.as_str(),
            "num_warps" | "num_stages" | "specialize" | "math"
        ) {
            out.push(Err(syn::Error::new(
                key.span(),
                format!("unknown option; {OPTIONS_HELP}"),
            )));
            continue;
        }
        let eq = match it.next() {
            Some(TokenTree::Punct(p)) if p.as_char() == '=' => p,
            Some(other) => {
                out.push(Err(syn::Error::new(
                    other.span(),
                    format!("expected `=` after `{name}`: `{name} = …`"),
                )));
                continue;
            }
            None => {
                out.push(Err(syn::Error::new(
                    key.span(),
                    format!("`{name}` needs a value; {}", option_help(&name)),
                )));
                continue;
            }
        };
        let value: proc_macro2::TokenStream = it.collect();
        if value.is_empty() {
            out.push(Err(syn::Error::new(
                eq.span(),
                format!(
                    "`{name} =` needs a value after the `=`; {}",
                    option_help(&name)
                ),
            )));
            continue;
        }
        match syn::parse2::<Expr>(value.clone()) {
            Ok(value) => out.push(Ok(OptionItem::Value { key, value })),
            Err(_) => out.push(Err(syn::Error::new_spanned(value, option_help(&name)))),
        }
    }
    out
}

/// Parses the attribute's options (`num_warps = N`, `num_stages = S`, `specialize = …`); every
/// malformed option is reported, each at its own tokens.
pub fn parse_options(args: proc_macro2::TokenStream) -> syn::Result<KernelOptions> {
    let mut opts = KernelOptions::default();
    let mut errors: Option<syn::Error> = None;
    for item in option_items(args) {
        if let Err(e) = item.and_then(|item| apply_option(&mut opts, item)) {
            add(&mut errors, e);
        }
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(opts),
    }
}

/// Checks one option's value and sets it in `opts`.
fn apply_option(opts: &mut KernelOptions, item: OptionItem) -> syn::Result<()> {
    let (key, mut value) = match item {
        OptionItem::Value { key, value } => (key, value),
        OptionItem::Autotune(t) => {
            if opts.autotune.is_some() {
                return Err(syn::Error::new(t.span, "`autotune` is given twice"));
            }
            opts.autotune = Some(t);
            return Ok(());
        }
    };
    // A literal passed through a `macro_rules!` fragment arrives wrapped in a group.
    while let Expr::Group(g) = value {
        value = *g.expr;
    }
    if key == "specialize" {
        match &value {
            Expr::Path(p) if p.path.is_ident("aligned") => opts.aligned_only = true,
            Expr::Path(p) if p.path.is_ident("unit") => {
                opts.aligned_only = true;
                opts.unit_only = true;
            }
            Expr::Path(p) if p.path.is_ident("all") => {
                opts.aligned_only = false;
                opts.unit_only = false;
            }
            other => return Err(syn::Error::new_spanned(other, option_help("specialize"))),
        }
    } else if key == "math" {
        match &value {
            Expr::Path(p) if p.path.is_ident("fast") => opts.fast_math = true,
            Expr::Path(p) if p.path.is_ident("precise") => opts.fast_math = false,
            other => return Err(syn::Error::new_spanned(other, option_help("math"))),
        }
    } else if key == "num_stages" {
        let n = int_literal(&value, "`num_stages` takes an integer literal")?;
        if !(1..=8).contains(&n) {
            return Err(syn::Error::new_spanned(
                &value,
                "`num_stages` must be 1 to 8 (1: no software pipelining)",
            ));
        }
        opts.num_stages = Some(n);
        opts.stages_span = Some(syn::spanned::Spanned::span(&value));
    } else {
        if let Expr::Path(p) = &value {
            if p.path.is_ident("auto") {
                opts.num_warps = None;
                return Ok(());
            }
        }
        if let Expr::Call(c) = &value {
            let is_auto = matches!(&*c.func, Expr::Path(p) if p.path.is_ident("auto"));
            let lit = |e: &Expr| match e {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                }) => i.base10_parse::<u32>().ok(),
                _ => None,
            };
            let per = match c.args.first() {
                Some(e) if (1..=2).contains(&c.args.len()) => lit(e),
                _ => None,
            };
            // The optional second argument, `max = W`.
            let max = match c.args.iter().nth(1) {
                None => Ok(16),
                Some(Expr::Assign(a)) if matches!(&*a.left, Expr::Path(p) if p.path.is_ident("max")) => {
                    match lit(&a.right) {
                        Some(w) if w.is_power_of_two() && w <= 16 => Ok(w),
                        _ => Err(syn::Error::new_spanned(
                            &a.right,
                            "`max` takes the most warps `auto` may pick: 1, 2, 4, 8 or 16",
                        )),
                    }
                }
                Some(other) => Err(syn::Error::new_spanned(
                    other,
                    "the second argument of `auto(E, max = W)` is `max = W`, the most warps",
                )),
            };
            return match (is_auto, per) {
                (true, Some(e)) if e.is_power_of_two() => {
                    opts.num_warps = None;
                    opts.elems_per_thread = Some(e);
                    opts.max_auto_warps = max?;
                    Ok(())
                }
                _ => Err(syn::Error::new_spanned(
                    &value,
                    "write `num_warps = auto(E)` with E, the elements per thread, a power of two \
                     (and `auto(E, max = W)` for at most W warps)",
                )),
            };
        }
        let n = int_literal(
            &value,
            "`num_warps` takes an integer literal, `auto` or `auto(E)`",
        )?;
        if !(1..=32).contains(&n) || !n.is_power_of_two() {
            return Err(syn::Error::new_spanned(
                &value,
                "`num_warps` must be 1, 2, 4, 8, 16 or 32",
            ));
        }
        opts.num_warps = Some(n);
    }
    Ok(())
}

fn dtype_of(ty: &SynType) -> Option<DType> {
    let SynType::Path(p) = ty else { return None };
    dtype_named(&p.path.get_ident()?.to_string())
}

/// The element type spelled `name` in a signature.
pub fn dtype_named(name: &str) -> Option<DType> {
    match name {
        "bool" => Some(DType::I1),
        "i1" => None,
        _ => DType::from_name(name),
    }
}

const PARAM_HELP: &str =
    "expected `Ptr<T>`, `Ptr<T, extent>`, `i32`, `i64`, `u32`, `u64`, `f32`, `f64`, `Const<N>` or `Type<{[T1, T2, …]}>` (T is f32, f64, f16, bf16, f8e4m3, f8e5m2, i8, i16, i32, i64, u8, u32, u64, bool or a `Type` parameter)";

/// Parses and checks the signature.
pub fn parse_signature(sig: &syn::Signature) -> syn::Result<Vec<Param>> {
    let mut errors: Option<syn::Error> = None;
    if let Some(c) = &sig.constness {
        add(
            &mut errors,
            syn::Error::new_spanned(c, "a kernel cannot be `const`"),
        );
    }
    if let Some(a) = &sig.asyncness {
        add(
            &mut errors,
            syn::Error::new_spanned(a, "a kernel cannot be `async`"),
        );
    }
    if !sig.generics.params.is_empty() {
        add(&mut errors, syn::Error::new_spanned(
            &sig.generics,
            "a kernel has no generic parameters; declare compile-time constants as `NAME: Const<N>`",
        ));
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        add(
            &mut errors,
            syn::Error::new_spanned(
                ty,
                "a kernel returns nothing; write results through a `Ptr` with `store`",
            ),
        );
    }
    // Type parameters first: a `Ptr<T>` may come before `T: Type<…>`.
    let type_params: Vec<String> = sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(pt) => match (&*pt.pat, &*pt.ty) {
                (Pat::Ident(pi), SynType::Path(tp))
                    if tp.path.segments.len() == 1 && tp.path.segments[0].ident == "Type" =>
                {
                    Some(pi.ident.to_string())
                }
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .collect();
    let mut params: Vec<Param> = Vec::new();
    for input in &sig.inputs {
        let pt = match input {
            FnArg::Receiver(r) => {
                add(
                    &mut errors,
                    syn::Error::new_spanned(r, "a kernel takes no `self`"),
                );
                continue;
            }
            FnArg::Typed(pt) => pt,
        };
        let Pat::Ident(pi) = &*pt.pat else {
            add(
                &mut errors,
                syn::Error::new_spanned(&pt.pat, "a kernel parameter must be a plain name"),
            );
            continue;
        };
        if pi.by_ref.is_some() || pi.mutability.is_some() || pi.subpat.is_some() {
            add(
                &mut errors,
                syn::Error::new_spanned(&pt.pat, "a kernel parameter must be a plain name"),
            );
            continue;
        }
        let name = pi.ident.to_string();
        if params.iter().any(|p| p.name == name) {
            add(
                &mut errors,
                syn::Error::new_spanned(&pi.ident, format!("parameter `{name}` is declared twice")),
            );
            continue;
        }
        match parse_param_type(&pt.ty, &type_params) {
            Ok(kind) => params.push(Param {
                name,
                span: pi.ident.span(),
                kind,
            }),
            Err(e) => add(&mut errors, e),
        }
    }
    // Extents may only name integer parameters (checked once every parameter parsed, so that a
    // parameter with a bad type does not also make each extent naming it an error).
    if errors.is_some() {
        return Err(
            errors.unwrap_or_else(|| syn::Error::new(Span::call_site(), "invalid signature"))
        );
    }
    for p in &params {
        if let ParamDecl::Ptr {
            extent: Some(e), ..
        } = &p.kind
        {
            if let Err(e) = check_extent(e, &params) {
                add(&mut errors, e);
            }
        }
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(params),
    }
}

/// Adds `e` to the errors collected so far.
fn add(errors: &mut Option<syn::Error>, e: syn::Error) {
    match errors {
        Some(all) => all.combine(e),
        None => *errors = Some(e),
    }
}

fn parse_param_type(ty: &SynType, type_params: &[String]) -> syn::Result<ParamDecl> {
    if let Some(d) = dtype_of(ty) {
        if d == DType::I1 {
            return Err(syn::Error::new_spanned(
                ty,
                "a scalar parameter is `i32`, `i64`, `u32`, `u64`, `f32` or `f64`; pass a flag as `i32` (`bool` is for buffers: `Ptr<bool>`)",
            ));
        }
        if !matches!(
            d,
            DType::I32 | DType::I64 | DType::U32 | DType::U64 | DType::F32 | DType::F64
        ) {
            return Err(syn::Error::new_spanned(
                ty,
                format!(
                    "a scalar parameter is `i32`, `i64`, `u32`, `u64`, `f32` or `f64`; pass a `{d}` as \
                     one of them and convert it in the kernel (`x as {d}`; `Ptr<{d}>` is for \
                     buffers)"
                ),
            ));
        }
        return Ok(ParamDecl::Scalar(d));
    }
    let SynType::Path(tp) = ty else {
        return Err(syn::Error::new_spanned(
            ty,
            format!("unsupported parameter type; {PARAM_HELP}"),
        ));
    };
    let Some(seg) = tp
        .path
        .segments
        .last()
        .filter(|_| tp.qself.is_none() && tp.path.segments.len() == 1)
    else {
        return Err(syn::Error::new_spanned(
            ty,
            format!("unsupported parameter type; {PARAM_HELP}"),
        ));
    };
    let args: Vec<&GenericArgument> = match &seg.arguments {
        PathArguments::AngleBracketed(a) => a.args.iter().collect(),
        _ => Vec::new(),
    };
    match seg.ident.to_string().as_str() {
        "Ptr" => {
            if args.is_empty() || args.len() > 2 {
                return Err(syn::Error::new_spanned(
                    ty,
                    "write `Ptr<T>` or `Ptr<T, extent>`",
                ));
            }
            let param = match args[0] {
                GenericArgument::Type(SynType::Path(p)) => p
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .filter(|n| type_params.contains(n)),
                _ => None,
            };
            let dtype = match (&param, args[0]) {
                // Set per instance; any type until then.
                (Some(_), _) => Some(DType::F32),
                (None, GenericArgument::Type(t)) => dtype_of(t),
                (None, _) => None,
            }
            .ok_or_else(|| {
                syn::Error::new_spanned(
                    args[0],
                    "the element type of a `Ptr` is `f32`, `f16`, `bf16`, `i32`, `i64` or a `Type` parameter",
                )
            })?;
            let extent =
                match args.get(1) {
                    None => None,
                    Some(GenericArgument::Const(e)) => Some(Box::new(unblock(e).clone())),
                    Some(GenericArgument::Type(SynType::Path(p)))
                        if p.qself.is_none() && p.path.get_ident().is_some() =>
                    {
                        Some(Box::new(Expr::Path(syn::ExprPath {
                            attrs: vec![],
                            qself: None,
                            path: p.path.clone(),
                        })))
                    }
                    Some(other) => return Err(syn::Error::new_spanned(
                        other,
                        "the extent of a `Ptr` is an integer parameter's name or `{ expression }`",
                    )),
                };
            Ok(ParamDecl::Ptr {
                dtype,
                extent,
                elem_param: param,
            })
        }
        "Type" => {
            const HELP: &str =
                "write `Type<{[T1, T2, …]}>` with element types (f32, f16, bf16, i8, i16, i32, i64, u8, u32, u64, bool)";
            let types: Vec<DType> = match args.as_slice() {
                [GenericArgument::Type(t)] => {
                    vec![dtype_of(t).ok_or_else(|| syn::Error::new_spanned(t, HELP))?]
                }
                [GenericArgument::Const(e)] => match unblock(e) {
                    Expr::Array(a) => a
                        .elems
                        .iter()
                        .map(|x| {
                            let t = match x {
                                Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
                                _ => None,
                            };
                            t.as_deref()
                                .and_then(dtype_named)
                                .ok_or_else(|| syn::Error::new_spanned(x, HELP))
                        })
                        .collect::<syn::Result<_>>()?,
                    other => return Err(syn::Error::new_spanned(other, HELP)),
                },
                _ => return Err(syn::Error::new_spanned(ty, HELP)),
            };
            if types.is_empty() {
                return Err(syn::Error::new_spanned(ty, "declare at least one type"));
            }
            for (i, t) in types.iter().enumerate() {
                if types[..i].contains(t) {
                    return Err(syn::Error::new_spanned(
                        ty,
                        format!("`{t}` is declared twice"),
                    ));
                }
            }
            Ok(ParamDecl::Type(types))
        }
        // `BM: Const`: the value comes from `autotune`'s configs (checked by `lower_kernel`).
        "Const" if args.is_empty() && matches!(seg.arguments, PathArguments::None) => {
            Ok(ParamDecl::Const(Vec::new()))
        }
        "Const" => {
            let [GenericArgument::Const(e)] = args.as_slice() else {
                return Err(syn::Error::new_spanned(
                    ty,
                    "write `Const<N>` with an integer literal N, or `Const<{[N1, N2, ...]}>`",
                ));
            };
            let values = match unblock(e) {
                Expr::Array(a) => a
                    .elems
                    .iter()
                    .map(|x| {
                        const_int(x).ok_or_else(|| {
                            syn::Error::new_spanned(x, "expected an integer literal")
                        })
                    })
                    .collect::<syn::Result<Vec<i64>>>()?,
                other => vec![const_int(other).ok_or_else(|| {
                    syn::Error::new_spanned(
                        ty,
                        "write `Const<N>` with an integer literal N, or `Const<{[N1, N2, ...]}>`",
                    )
                })?],
            };
            if values.is_empty() {
                return Err(syn::Error::new_spanned(e, "declare at least one value"));
            }
            for (i, v) in values.iter().enumerate() {
                if values[..i].contains(v) {
                    return Err(syn::Error::new_spanned(e, format!("{v} is declared twice")));
                }
                if i32::try_from(*v).is_err() {
                    return Err(syn::Error::new_spanned(
                        e,
                        format!("{v} does not fit in i32"),
                    ));
                }
            }
            Ok(ParamDecl::Const(values))
        }
        _ => Err(syn::Error::new_spanned(
            ty,
            format!("unsupported parameter type; {PARAM_HELP}"),
        )),
    }
}

fn unblock(e: &Expr) -> &Expr {
    match e {
        Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(inner, None) => unblock(inner),
            _ => e,
        },
        Expr::Paren(p) => unblock(&p.expr),
        _ => e,
    }
}

fn const_int(e: &Expr) -> Option<i64> {
    match e {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse::<i64>().ok(),
        Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            expr,
            ..
        }) => const_int(expr).and_then(i64::checked_neg),
        _ => None,
    }
}

/// Checks that an extent expression uses only integer literals, integer parameters, constants
/// and `+ - * /`.
fn check_extent(e: &Expr, params: &[Param]) -> syn::Result<()> {
    match e {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(_),
            ..
        }) => Ok(()),
        Expr::Paren(p) => check_extent(&p.expr, params),
        // A block of one expression is that expression; any other block (`{}`, `{ n; n }`) is
        // not an extent.
        Expr::Block(_) if !std::ptr::eq(unblock(e), e) => check_extent(unblock(e), params),
        Expr::Binary(b)
            if matches!(
                b.op,
                syn::BinOp::Add(_) | syn::BinOp::Sub(_) | syn::BinOp::Mul(_) | syn::BinOp::Div(_)
            ) =>
        {
            check_extent(&b.left, params)?;
            check_extent(&b.right, params)
        }
        Expr::Path(p) => {
            let name = p
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            match params.iter().find(|q| q.name == name).map(|q| &q.kind) {
                Some(ParamDecl::Scalar(DType::I32 | DType::I64 | DType::U32 | DType::U64)) | Some(ParamDecl::Const(_)) => Ok(()),
                Some(_) => Err(syn::Error::new_spanned(p, format!("`{name}` is not an integer parameter"))),
                None => Err(syn::Error::new_spanned(
                    p,
                    format!("`{name}` is not a parameter of this kernel (extents may use integer parameters)"),
                )),
            }
        }
        other => Err(syn::Error::new_spanned(
            other,
            "an extent is built from integer parameters, integer literals and `+ - * /`",
        )),
    }
}
