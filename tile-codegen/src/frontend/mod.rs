//! The front end: a `#[tile_kernel]` function (syn syntax) → a verified tile-level [`Function`]
//! plus what the launch wrapper needs to know about each parameter.
//!
//! [`signature`] owns the parameter forms; the body's language is split as Triton splits its
//! front end: [`walker`] walks statements and expressions (Triton's `code_generator.py`),
//! [`typing`] holds the typing and broadcasting rules (`semantic.py`), and [`builtins`] the table
//! of built-in functions and methods with their documentation (`core.py`). All report misuse as
//! `syn::Error`s spanning the offending tokens, which the macro turns into `compile_error!`.

pub mod builtins;
pub mod functions;
pub mod signature;
pub mod typing;
pub mod walker;

use tile_core::ir::{verify, BlockId, DType, Function, OpId, OpKind, ValueDef, ValueId};

pub use functions::FnTable;
pub use signature::{parse_options, KernelOptions, Param, ParamDecl};

/// A kernel after the front end, for one choice of its constants.
#[derive(Debug)]
pub struct Kernel {
    /// The instance's symbol: the PTX entry, dump file names and cache keys, unique per
    /// instance (the kernel's name in ASCII, with the constants' values appended when the kernel
    /// declares several). Messages name the kernel by [`Kernel::label`] instead.
    pub name: String,
    /// The kernel's name as written in Rust (without `r#`).
    pub rust_name: String,
    /// This instance's values of the constants and element types that declare several, in
    /// declaration order, as messages print them (`BM = 128, O = f32`); empty when the kernel
    /// has one instance.
    pub instance: String,
    /// The value of each constant parameter, in declaration order.
    pub consts: Vec<(String, i64)>,
    /// The element type of each `Type` parameter, in declaration order.
    pub types: Vec<(String, DType)>,
    /// Every parameter as declared, compile-time constants included.
    pub params: Vec<Param>,
    /// For each IR parameter (constants excluded), whether the kernel stores through it.
    pub written: Vec<bool>,
    /// For each IR parameter, whether some `addptr` on a pointer derived from it adds an `i32`
    /// offset (see [`narrow_offsets`]).
    pub offsets32: Vec<bool>,
    /// The tile-level IR.
    pub ir: Function,
    /// The source ranges its ops' `loc`s index.
    pub spans: Vec<walker::SourceRange>,
}

impl Kernel {
    /// The kernel as messages name it: `` `user_gemm` with BM = 128, O = f32 `` for an instance
    /// of a kernel with several, `` `user_gemm` `` for a kernel with one.
    pub fn label(&self) -> String {
        if self.instance.is_empty() {
            format!("`{}`", self.rust_name)
        } else {
            format!("`{}` with {}", self.rust_name, self.instance)
        }
    }

    /// The source range of location `loc`, if it has one.
    pub fn range_of(&self, loc: Option<u32>) -> Option<walker::SourceRange> {
        loc.and_then(|l| self.spans.get(l as usize).copied())
    }
}

/// One choice for each specialized parameter: its name and value.
#[derive(Clone, Debug)]
pub struct Instance {
    /// Constants.
    pub consts: Vec<(String, i64)>,
    /// Element types.
    pub types: Vec<(String, DType)>,
    /// For an autotuned kernel, the config's label (`BM = 128, num_warps = 4`).
    pub config: Option<String>,
    /// The config's warps and stages, where it sets them.
    pub num_warps: Option<u32>,
    /// See `num_warps`.
    pub num_stages: Option<u32>,
}

/// Every combination of the kernel's constant values and element types (one combination when
/// each has one).
pub fn instances(params: &[Param]) -> Vec<Instance> {
    let mut out = vec![Instance {
        consts: Vec::new(),
        types: Vec::new(),
        config: None,
        num_warps: None,
        num_stages: None,
    }];
    for p in params {
        out = match &p.kind {
            ParamDecl::Const(values) => out
                .into_iter()
                .flat_map(|prefix| {
                    values.iter().map(move |&v| {
                        let mut next = prefix.clone();
                        next.consts.push((p.name.clone(), v));
                        next
                    })
                })
                .collect(),
            ParamDecl::Type(types) => out
                .into_iter()
                .flat_map(|prefix| {
                    types.iter().map(move |&t| {
                        let mut next = prefix.clone();
                        next.types.push((p.name.clone(), t));
                        next
                    })
                })
                .collect(),
            ParamDecl::Ptr { .. } | ParamDecl::Scalar(_) => out,
        };
    }
    out
}

/// The instances of an autotuned kernel: one per config times the combinations of the other
/// constants and element types ([`instances`]), each with the config's constants. Every constant declared `Const` (no value)
/// must be set by every config, and a config sets nothing else; the key names integer
/// parameters.
fn tuned_instances(params: &[Param], tune: &signature::Autotune) -> syn::Result<Vec<Instance>> {
    let open: Vec<&Param> = params
        .iter()
        .filter(|p| matches!(&p.kind, ParamDecl::Const(v) if v.is_empty()))
        .collect();
    for k in &tune.key {
        let found = params.iter().find(|p| k == &p.name);
        if !matches!(
            found.map(|p| &p.kind),
            Some(ParamDecl::Scalar(DType::I32 | DType::I64))
        ) {
            return Err(syn::Error::new_spanned(
                k,
                format!("`{k}` is not an `i32` or `i64` parameter: an autotuning key names integer parameters"),
            ));
        }
    }
    // Every parameter but the open constants: what multiplies each config.
    let declared: Vec<Param> = params
        .iter()
        .filter(|p| !matches!(&p.kind, ParamDecl::Const(v) if v.is_empty()))
        .cloned()
        .collect();
    let mut out = Vec::new();
    for (i, c) in tune.configs.iter().enumerate() {
        for (name, _) in &c.consts {
            if !open.iter().any(|p| name == &p.name) {
                let what = if params.iter().any(|p| name == &p.name) {
                    format!("`{name}` is not a `Const` without a value; declare it `{name}: Const` for the configs to set it")
                } else {
                    format!("this kernel has no parameter `{name}`")
                };
                return Err(syn::Error::new_spanned(name, what));
            }
        }
        for p in &open {
            if !c.consts.iter().any(|(n, _)| n == &p.name) {
                return Err(syn::Error::new_spanned(
                    &c.tokens,
                    format!("config {i} gives no value for `{}`", p.name),
                ));
            }
        }
        for (j, earlier) in tune.configs[..i].iter().enumerate() {
            if earlier.label() == c.label() {
                return Err(syn::Error::new_spanned(
                    &c.tokens,
                    format!("config {i} is config {j} again"),
                ));
            }
        }
        // The combinations of the declared constants and element types, each with the
        // config's values for the open constants, in declaration order as the lowering binds
        // them.
        for mut inst in instances(&declared) {
            inst.consts
                .extend(c.consts.iter().map(|(n, v)| (n.to_string(), *v)));
            inst.consts
                .sort_by_key(|(n, _)| params.iter().position(|p| &p.name == n));
            inst.config = Some(c.label());
            inst.num_warps = c.num_warps;
            inst.num_stages = c.num_stages;
            out.push(inst);
        }
    }
    Ok(out)
}

/// At most this many specializations per kernel.
pub const MAX_INSTANCES: usize = 64;

/// An `unsafe fn` kernel is one that converts integers to pointers (`x as Ptr<T>`), and such a
/// kernel must be one: its launch cannot check what the addresses reach, so the launch is
/// `unsafe`, the caller promising what [`tile_core::runtime::PointerTable`] ensures.
fn check_unsafety(item: &syn::ItemFn, kernels: &[Kernel]) -> syn::Result<()> {
    let converts = kernels.iter().find_map(|k| {
        k.ir.walk()
            .into_iter()
            .find(|&op| matches!(k.ir.op(op).kind, OpKind::IntToPtr))
            .map(|op| (k, op))
    });
    match (converts, &item.sig.unsafety) {
        (Some((k, op)), None) => {
            let msg = "converting an integer to a pointer lets the kernel reach memory its \
                       launch cannot check: declare the kernel `unsafe fn` (its launch becomes \
                       `unsafe`; a `PointerTable` makes addresses the launch keeps alive)";
            Err(match k.range_of(k.ir.op(op).loc) {
                Some(r) => r.error(msg),
                None => syn::Error::new_spanned(&item.sig.ident, msg),
            })
        }
        (None, Some(u)) => Err(syn::Error::new_spanned(
            u,
            "a kernel is `unsafe` only when it converts integers to pointers (`x as Ptr<T>`); \
             this one does not, and its launch is checked",
        )),
        _ => Ok(()),
    }
}

/// Runs the front end on a kernel function, once per combination of its constants; `fns` holds
/// the tile functions its body calls (empty for a kernel that calls none).
pub fn lower_kernel(
    item: &syn::ItemFn,
    opts: &KernelOptions,
    fns: &FnTable,
) -> syn::Result<Vec<Kernel>> {
    let params = signature::parse_signature(&item.sig)?;
    let instances = match &opts.autotune {
        Some(tune) => tuned_instances(&params, tune)?,
        None => {
            if let Some(p) = params
                .iter()
                .find(|p| matches!(&p.kind, ParamDecl::Const(v) if v.is_empty()))
            {
                return Err(syn::Error::new(
                    p.span,
                    format!(
                        "`{}: Const` takes its value from `autotune(configs = [..])`; without \
                         autotuning write `Const<N>` or `Const<{{[N1, N2]}}>`",
                        p.name
                    ),
                ));
            }
            instances(&params)
        }
    };
    if instances.len() > MAX_INSTANCES {
        return Err(syn::Error::new_spanned(
            &item.sig.inputs,
            format!(
                "{} specializations declared; at most {MAX_INSTANCES} are compiled",
                instances.len()
            ),
        ));
    }
    let multi = instances.len() > 1;
    let texts: Vec<String> = instances
        .iter()
        .map(|i| match &i.config {
            Some(c) => c.clone(),
            None => instance_text(&params, &i.consts, &i.types),
        })
        .collect();
    let lowered: Vec<syn::Result<Kernel>> = instances
        .into_iter()
        .map(|inst| lower_instance(item, opts, fns, &params, inst, multi))
        .collect();
    let Some(failed) = lowered.iter().position(|k| k.is_err()) else {
        let kernels: Vec<Kernel> = lowered.into_iter().collect::<syn::Result<_>>()?;
        check_unsafety(item, &kernels)?;
        return Ok(kernels);
    };
    let builds = lowered.iter().any(|k| k.is_ok());
    let mut e = lowered
        .into_iter()
        .nth(failed)
        .and_then(|k| k.err())
        .unwrap_or_else(|| syn::Error::new_spanned(&item.sig.ident, "internal error in tile"));
    // An error that only some instances meet says which, at the parameters that declare them.
    if builds {
        e.combine(syn::Error::new_spanned(
            &item.sig.inputs,
            format!(
                "only some instances of `{}` fail: the first is the one with {}",
                syn::ext::IdentExt::unraw(&item.sig.ident),
                texts[failed]
            ),
        ));
    }
    Err(e)
}

fn lower_instance(
    item: &syn::ItemFn,
    opts: &KernelOptions,
    fns: &FnTable,
    params: &[Param],
    inst: Instance,
    multi: bool,
) -> syn::Result<Kernel> {
    let Instance {
        consts,
        types,
        config,
        num_warps: config_warps,
        num_stages: config_stages,
    } = inst;
    let opts = &KernelOptions {
        num_warps: config_warps.or(opts.num_warps),
        num_stages: config_stages.or(opts.num_stages),
        stages_span: opts.stages_span,
        elems_per_thread: if config_warps.is_some() {
            None
        } else {
            opts.elems_per_thread
        },
        max_auto_warps: opts.max_auto_warps,
        aligned_only: opts.aligned_only,
        unit_only: opts.unit_only,
        fast_math: opts.fast_math,
        autotune: None,
    };
    // The instance's element types in the buffers written `Ptr<T>`.
    let mut params = params.to_vec();
    for p in &mut params {
        if let ParamDecl::Ptr {
            dtype,
            elem_param: Some(t),
            ..
        } = &mut p.kind
        {
            if let Some((_, d)) = types.iter().find(|(n, _)| n == t) {
                *dtype = *d;
            }
        }
    }
    let mut name = symbol_name(&item.sig.ident);
    if multi {
        for (c, v) in &consts {
            // A symbol holds no `-`: a negative value is spelled `m` and its magnitude (found
            // by tile-fuzz: `Const<{ [1, -1] }>` failed the IR round trip).
            let v = if *v < 0 {
                format!("m{}", v.unsigned_abs())
            } else {
                v.to_string()
            };
            name.push_str(&format!("__{c}_{v}"));
        }
        for (t, d) in &types {
            name.push_str(&format!("__{t}_{d}"));
        }
        // Configs may differ in their warps and stages alone.
        if config.is_some() {
            if let Some(w) = config_warps {
                name.push_str(&format!("__w{w}"));
            }
            if let Some(s) = config_stages {
                name.push_str(&format!("__s{s}"));
            }
        }
    }
    let instance = match &config {
        Some(c) if multi => {
            let t = instance_text(&params, &consts, &types);
            if t.is_empty() {
                c.clone()
            } else {
                format!("{c}, {t}")
            }
        }
        _ if multi => instance_text(&params, &consts, &types),
        _ => String::new(),
    };
    let values: Vec<i64> = consts.iter().map(|(_, v)| *v).collect();
    let warps = opts.num_warps.unwrap_or(4);
    // Chosen automatically, the warps go up to 16 for large tiles.
    let max_warps = opts.num_warps.unwrap_or(16);
    let (mut ir, spans) = walker::lower_body(
        &name,
        &params,
        &values,
        &types,
        &item.block,
        warps,
        max_warps,
        fns,
    )?;
    ir.num_stages = opts.num_stages.unwrap_or(0);
    ir.fast_math = opts.fast_math;
    if opts.num_warps.is_none() {
        let largest = ir.values.iter().map(|v| v.ty.numel()).max().unwrap_or(1);
        ir.num_warps = match opts.elems_per_thread {
            // `auto(E, max = W)`: `E` elements of the largest tile per thread, 1 to `W` warps
            // (16 without `max`).
            Some(e) => (largest / (32 * u64::from(e)))
                .clamp(1, 16)
                .next_power_of_two()
                .min(u64::from(opts.max_auto_warps)) as u32,
            // `auto`: 4 warps up to 1024 elements per tile, 8 up to 4096, 16 beyond.
            None => match largest {
                0..=1024 => 4,
                1025..=4096 => 8,
                _ => 16,
            },
        };
    }
    if let Err(e) = verify(&ir) {
        // The front end only builds well-typed IR; reaching this is a bug in tile, reported at the
        // tokens the offending op came from (else the kernel's name) rather than as a panic.
        let msg = format!("internal error: tile built invalid IR for this kernel:\n{e}");
        let at =
            e.0.first()
                .and_then(|v| v.loc)
                .and_then(|l| spans.get(l as usize).copied());
        return Err(match at {
            Some(r) => r.error(msg),
            None => syn::Error::new_spanned(&item.sig.ident, msg),
        });
    }
    let written = written_params(&ir);
    let offsets32 = narrow_offsets(&ir);
    Ok(Kernel {
        name,
        rust_name: syn::ext::IdentExt::unraw(&item.sig.ident).to_string(),
        instance,
        consts,
        types,
        params,
        written,
        offsets32,
        ir,
        spans,
    })
}

/// An instance's constants and element types in the order `params` declares them, those that
/// declare several values only (the others are the same in every instance):
/// `BM = 128, BN = 64, O = f32`.
fn instance_text(params: &[Param], consts: &[(String, i64)], types: &[(String, DType)]) -> String {
    params
        .iter()
        .filter(|p| match &p.kind {
            ParamDecl::Const(values) => values.len() > 1,
            ParamDecl::Type(types) => types.len() > 1,
            ParamDecl::Ptr { .. } | ParamDecl::Scalar(_) => false,
        })
        .filter_map(|p| {
            let c = consts
                .iter()
                .find(|(n, _)| *n == p.name)
                .map(|(_, v)| v.to_string());
            let t = types
                .iter()
                .find(|(n, _)| *n == p.name)
                .map(|(_, d)| d.to_string());
            Some(format!("{} = {}", p.name, c.or(t)?))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which parameters some op writes through (a `store` or an atomic: the ops whose
/// [`Effect`](tile_core::ir::Effect) says they write through their first operand): the parameters
/// that pointer derives from. The launch wrapper takes those buffers as `&mut`.
pub fn written_params(f: &Function) -> Vec<bool> {
    use tile_core::ir::Effect;
    let writes = f
        .walk()
        .into_iter()
        .filter(|&op| {
            let d = f.op(op);
            d.regions.is_empty() && matches!(d.kind.effect(), Effect::Write | Effect::Atomic)
        })
        .filter_map(|op| f.op(op).operands.first().copied());
    pointer_params(f, writes)
}

/// Which parameters some `addptr` with an `i32` offset derives its pointer from. A buffer of more
/// than `i32::MAX` elements bound to such a parameter has elements those offsets cannot reach
/// without overflowing, so the launch refuses it; with `i64` offsets throughout it is accepted.
pub fn narrow_offsets(f: &Function) -> Vec<bool> {
    let narrow = f
        .walk()
        .into_iter()
        .filter(|&op| {
            let d = f.op(op);
            matches!(d.kind, OpKind::AddPtr)
                && f.ty(d.operands[1]).dtype() == Some(tile_core::ir::DType::I32)
        })
        .map(|op| f.op(op).operands[0]);
    pointer_params(f, narrow)
}

/// The parameters the pointers `roots` derive from, by the pointer-typed operands of the ops that
/// define them (through loop-carried values and branch results too).
pub(crate) fn pointer_params(f: &Function, roots: impl Iterator<Item = ValueId>) -> Vec<bool> {
    let mut found = vec![false; f.params().len()];
    for root in roots {
        {
            let mut stack: Vec<ValueId> = vec![root];
            let mut seen = std::collections::HashSet::new();
            while let Some(v) = stack.pop() {
                if !seen.insert(v) {
                    continue;
                }
                match f.values[v.index()].def {
                    ValueDef::BlockArg(b, i) if b == f.entry() => found[i as usize] = true,
                    // A carried value of a loop: its initial and its yielded value (and the
                    // other values that stand for it).
                    ValueDef::BlockArg(b, _) => {
                        if let Some(op) = loop_of(f, b) {
                            for vs in f.loop_carried(op) {
                                if vs.contains(&v) {
                                    stack.extend(vs);
                                }
                            }
                        }
                    }
                    ValueDef::OpResult(def, r) if f.op(def).kind.is_loop() => {
                        stack.extend(
                            f.loop_carried(def)
                                .into_iter()
                                .nth(r as usize)
                                .unwrap_or_default(),
                        );
                    }
                    ValueDef::OpResult(def, r) if matches!(f.op(def).kind, OpKind::If) => {
                        stack.extend(branch_sources(f, def, r as usize));
                    }
                    ValueDef::OpResult(def, _) => {
                        // Follow only pointer-typed operands: offsets and masks do not carry addresses.
                        for &o in &f.op(def).operands {
                            if f.ty(o).elem.pointee().is_some() {
                                stack.push(o);
                            }
                        }
                    }
                }
            }
        }
    }
    found
}

/// The op (a loop) whose region holds block `b`.
fn loop_of(f: &Function, b: BlockId) -> Option<OpId> {
    f.walk().into_iter().find(|&op| {
        f.op(op)
            .regions
            .iter()
            .any(|r| f.regions[r.index()].blocks.contains(&b))
    })
}

/// The values result `c` of an `if` comes from: what its branches yield.
fn branch_sources(f: &Function, op: OpId, c: usize) -> Vec<ValueId> {
    let mut out: Vec<ValueId> = Vec::new();
    for r in &f.op(op).regions {
        for b in &f.regions[r.index()].blocks {
            if let Some(&y) = f.blocks[b.index()].ops.last() {
                out.extend(f.op(y).operands.get(c).copied());
            }
        }
    }
    out
}

/// The kernel's name as an IR and PTX symbol: a raw identifier without its `r#`, and every
/// character outside `[A-Za-z0-9_]` (a Unicode letter) spelled `_u<hex>_`, since PTX names are
/// ASCII. Rust itself still calls the kernel by its own name.
pub fn symbol_name(ident: &syn::Ident) -> String {
    use syn::ext::IdentExt;
    let mut out = String::new();
    for ch in ident.unraw().to_string().chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' {
            out.push(ch);
        } else {
            out.push_str(&format!("_u{:x}_", u32::from(ch)));
        }
    }
    out
}

/// The deepest nesting of brackets, parentheses and braces a kernel may have, and the longest
/// run of prefix operators (`- - - x`): parsing and lowering recurse on both, so deeper input
/// would overflow the compiler's stack instead of failing with an error.
pub const MAX_NESTING: usize = 128;

/// Checks a kernel's tokens against [`MAX_NESTING`] before anything recursive parses them (the
/// walk keeps its own stack). The error is spanned at the group or operator that goes too deep.
pub fn check_nesting(tokens: proc_macro2::TokenStream) -> syn::Result<()> {
    use proc_macro2::TokenTree;
    let mut stack = vec![tokens.into_iter()];
    let mut run = 0usize;
    while let Some(top) = stack.last_mut() {
        let Some(t) = top.next() else {
            stack.pop();
            continue;
        };
        match t {
            TokenTree::Group(g) => {
                run = 0;
                if stack.len() >= MAX_NESTING {
                    return Err(syn::Error::new(
                        g.span(),
                        format!(
                            "this nests more than {MAX_NESTING} levels deep, the most a kernel may"
                        ),
                    ));
                }
                stack.push(g.stream().into_iter());
            }
            TokenTree::Punct(p) if matches!(p.as_char(), '-' | '!' | '*' | '&') => {
                run += 1;
                if run > MAX_NESTING {
                    return Err(syn::Error::new(
                        p.span(),
                        format!("more than {MAX_NESTING} operators in a row, the most a kernel may have"),
                    ));
                }
            }
            _ => run = 0,
        }
    }
    Ok(())
}
