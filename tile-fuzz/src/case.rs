//! One case: a kernel's text compiled as `#[tile_kernel]` would compile it, and what came of it.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use tile_codegen::frontend::parse_options;
use tile_codegen::pipeline::{compile_with, DumpConfig};

/// What compiling one kernel text gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// The text is not a Rust function (a mutation broke the syntax): rustc reports it, not tile.
    NotRust,
    /// Compiled.
    Compiled,
    /// Rejected with an error that has a location in the text.
    UserError,
    /// Rejected with an error at no location (line 0).
    NoLocation,
    /// Rejected with an error that blames tile ("internal error").
    Internal,
    /// The compiler panicked.
    Panic,
    /// The process died (abort, stack overflow, signal).
    Crash,
    /// Over the time limit.
    Timeout,
    /// Compiled, but ptxas spills registers in one of its modules (checked with `--ptxas`).
    Spill,
}

impl Outcome {
    /// Every outcome, in report order.
    pub const ALL: [Outcome; 9] = [
        Outcome::Compiled,
        Outcome::UserError,
        Outcome::NotRust,
        Outcome::NoLocation,
        Outcome::Internal,
        Outcome::Panic,
        Outcome::Crash,
        Outcome::Timeout,
        Outcome::Spill,
    ];

    /// Whether this outcome is a bug in tile.
    pub fn is_bug(self) -> bool {
        matches!(
            self,
            Outcome::NoLocation
                | Outcome::Internal
                | Outcome::Panic
                | Outcome::Crash
                | Outcome::Timeout
                | Outcome::Spill
        )
    }

    /// The name used in reports and in the worker protocol.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::NotRust => "not-rust",
            Outcome::Compiled => "compiled",
            Outcome::UserError => "user-error",
            Outcome::NoLocation => "no-location",
            Outcome::Internal => "internal-error",
            Outcome::Panic => "panic",
            Outcome::Crash => "crash",
            Outcome::Timeout => "timeout",
            Outcome::Spill => "spill",
        }
    }

    /// The outcome called `name`.
    pub fn from_name(name: &str) -> Option<Outcome> {
        Outcome::ALL
            .into_iter()
            .chain([Outcome::NotRust])
            .find(|o| o.name() == name)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Compiles `text` (a function item, with or without its `#[tile_kernel(…)]` attribute) in this
/// process; a panic is caught and reported, a crash is not (the parent process sees it).
/// Returns the outcome and a one-line message.
pub fn compile_text(text: &str) -> (Outcome, String) {
    match parse_case(text) {
        Ok((item, args)) => compile_item(&item, args),
        Err(out) => out,
    }
}

/// The compile cost of `text` ([`tile_codegen::pipeline::compile_cost`]: summed over the LLVM
/// modules it builds) and the number of modules, where it gets that far.
pub fn cost_of(text: &str) -> Option<(u64, u64)> {
    let (item, args) = parse_case(text).ok()?;
    let opts = parse_options(args).ok()?;
    let fns = functions(&item).ok()?;
    tile_codegen::pipeline::compile_cost(&item, &fns, &opts, &DumpConfig::default()).ok()
}

/// The function item of `text` and the arguments of its `#[tile_kernel(…)]` attribute, or the
/// outcome when it is not a kernel tile can be asked to compile.
fn parse_case(text: &str) -> Result<(syn::ItemFn, proc_macro2::TokenStream), (Outcome, String)> {
    // As the macro does: the nesting check runs on the tokens before syn parses them.
    let Ok(tokens) = text.parse::<proc_macro2::TokenStream>() else {
        return Err((Outcome::NotRust, String::new()));
    };
    if let Err(e) = tile_codegen::frontend::check_nesting(tokens.clone()) {
        return Err(classify(&e));
    }
    let Ok(mut item) = syn::parse2::<syn::ItemFn>(tokens) else {
        return Err((Outcome::NotRust, String::new()));
    };
    // The macro's own attribute carries the options; other attributes (docs, lints) stay.
    let mut args = proc_macro2::TokenStream::new();
    item.attrs.retain(|a| {
        let ours = a
            .path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "tile_kernel");
        if ours {
            if let syn::Meta::List(l) = &a.meta {
                args = l.tokens.clone();
            }
        }
        !ours
    });
    Ok((item, args))
}

/// Compiles `text` in this process into what the macro would embed, or the outcome and message
/// of its failure (a caught panic among them).
pub fn compile_kernels(
    text: &str,
) -> Result<Vec<tile_codegen::pipeline::CompiledKernel>, (Outcome, String)> {
    let (item, args) = parse_case(text)?;
    compile_parsed(&item, args)
}

/// Compiles a parsed case in this process, catching a panic. TILE_DUMP and TILE_DUMP_DIR work as
/// for the macro (useful with `replay`); with `--ptxas` (the worker's [`PTXAS_ENV`]) cases build
/// as the macro builds them with a ptxas at hand: assembled, under the spill policy
/// (`pipeline`).
fn compile_parsed(
    item: &syn::ItemFn,
    args: proc_macro2::TokenStream,
) -> Result<Vec<tile_codegen::pipeline::CompiledKernel>, (Outcome, String)> {
    let mut dump = DumpConfig::from_env().unwrap_or_default();
    if let Some(ptxas) = std::env::var_os(PTXAS_ENV) {
        dump.cubin = Some(ptxas.into());
    }
    let run = catch_unwind(AssertUnwindSafe(|| {
        let opts = parse_options(args)?;
        compile_with(item, &functions(item)?, &opts, &dump)
    }));
    match run {
        Err(p) => Err((Outcome::Panic, one_line(&panic_text(&p)))),
        Ok(Ok(kernels)) => Ok(kernels),
        Ok(Err(e)) => Err(classify(&e)),
    }
}

/// A caught panic's message.
fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Compiles a parsed case in this process and classifies the result.
fn compile_item(item: &syn::ItemFn, args: proc_macro2::TokenStream) -> (Outcome, String) {
    match compile_parsed(item, args) {
        // Assembled under `--ptxas`: [`spills`] checks the result.
        Ok(kernels) => match std::env::var_os(PTXAS_ENV) {
            Some(ptxas) => spills(&kernels, std::path::Path::new(&ptxas)),
            None => (Outcome::Compiled, String::new()),
        },
        Err(out) => out,
    }
}

thread_local! {
    /// The repository's tile functions (`mutate::library`), parsed once per thread.
    static LIBRARY: Vec<syn::ItemFn> = {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let text = crate::mutate::library(&root);
        syn::parse_file(&text).map_or_else(
            |_| Vec::new(),
            |f| {
                f.items
                    .into_iter()
                    .filter_map(|i| match i {
                        syn::Item::Fn(f) => Some(f),
                        _ => None,
                    })
                    .collect()
            },
        )
    };
}

/// The tile functions `item` calls, found by name among the repository's: the kernels of the
/// corpus call the standard library's and their examples' functions.
fn functions(item: &syn::ItemFn) -> syn::Result<tile_codegen::frontend::FnTable> {
    LIBRARY.with(|lib| tile_codegen::frontend::FnTable::by_name(&item.block, lib))
}

/// The variable that hands workers the ptxas to check spills with (`tile-fuzz --ptxas`).
pub const PTXAS_ENV: &str = "TILE_FUZZ_PTXAS";

/// Every module of `kernels` through ptxas: [`Outcome::Spill`] naming the first that spills,
/// else compiled.
pub fn spills(
    kernels: &[tile_codegen::pipeline::CompiledKernel],
    ptxas: &std::path::Path,
) -> (Outcome, String) {
    for k in kernels {
        for (vi, v) in k.variants.iter().enumerate() {
            for t in &v.targets {
                let arch = t.target.arch();
                match tile_codegen::ptxas::cached_cubin(ptxas, &t.artifacts.ptx, arch) {
                    Ok((r, _)) if r.spills() => {
                        return (
                            Outcome::Spill,
                            format!(
                                "{} v{vi} {arch}: {} registers, {} bytes spilled",
                                k.kernel.name, r.registers, r.spill_stores
                            ),
                        )
                    }
                    Ok(_) => {}
                    Err(e) => return (Outcome::Internal, one_line(&format!("ptxas: {e}"))),
                }
            }
        }
    }
    (Outcome::Compiled, String::new())
}

/// A user error with a location, or which kind of bug the error shows.
fn classify(e: &syn::Error) -> (Outcome, String) {
    let msg = one_line(&e.to_string());
    if msg.contains("internal error") {
        return (Outcome::Internal, msg);
    }
    if e.span().start().line == 0 {
        return (Outcome::NoLocation, msg);
    }
    (Outcome::UserError, msg)
}

/// `s` on one line, at most 300 characters.
pub fn one_line(s: &str) -> String {
    let s = s.replace('\n', " ⏎ ");
    match s.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}
