//! `#[tile_kernel]`: compiles a kernel written in tile's block language to PTX while the crate
//! builds, and replaces the function with a module holding the PTX, the IR and a typed launch
//! wrapper. Thin by design: the compiler is `tile-codegen`; this crate turns its results (or its
//! spanned errors) into tokens.
//!
//! ```ignore
//! #[tile_kernel]
//! fn add_mul(x: Ptr<f32, n>, y: Ptr<f32, n>, z: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
//!     let offs = program_id(0) * BLOCK + arange(0, BLOCK);
//!     let mask = offs < n;
//!     store(out + offs, (load(x + offs, mask) + load(y + offs, mask)) * load(z + offs, mask), mask);
//! }
//! // becomes `mod add_mul { pub static KERNEL; pub fn launch(dev, grid, x, y, z, out, n) }`
//! ```

mod functions;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};
use syn::{Expr, ItemFn};
use tile_codegen::frontend::signature::Autotune;
use tile_codegen::frontend::FnTable;
use tile_codegen::frontend::{parse_options, Param, ParamDecl};
use tile_codegen::pipeline::{compile_with, CompiledKernel, DumpConfig};
use tile_core::ir::DType;
use tile_core::Target;

/// Compiles a kernel at build time. See the `tile` crate's documentation for the language.
///
/// Options: `#[tile_kernel(num_warps = 8)]` (default 4).
#[proc_macro_attribute]
pub fn tile_kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    // Before syn's recursive parser sees it: nesting beyond the language's limit is an error,
    // not a stack overflow.
    if let Err(e) = tile_codegen::frontend::check_nesting(item.clone().into()) {
        return e.to_compile_error().into();
    }
    let item_fn: ItemFn = match syn::parse(item.clone()) {
        Ok(f) => f,
        Err(e) => return e.to_compile_error().into(),
    };
    // A kernel that calls tile functions first collects their bodies (`functions.rs`).
    if let Some(request) = functions::start(
        attr.clone().into(),
        item.into(),
        &item_fn,
        quote!(::tile::__tile_kernel_resume),
    ) {
        return request.into();
    }
    finish(attr.into(), &item_fn, &FnTable::default())
}

/// Compiles a kernel whose tile functions have all been delivered (see `functions.rs`).
#[doc(hidden)]
#[proc_macro]
pub fn __tile_kernel_resume(input: TokenStream) -> TokenStream {
    let mut chain = match functions::Chain::parse(input.into()) {
        Ok(c) => c,
        Err(e) => return e.to_compile_error().into(),
    };
    if let Some(request) = chain.next_request(quote!(::tile::__tile_kernel_resume)) {
        return request.into();
    }
    if let Some(request) = chain.function_request(quote!(::tile::__tile_kernel_resume)) {
        return request.into();
    }
    let item_fn: ItemFn = match syn::parse2(chain.item.clone()) {
        Ok(f) => f,
        Err(e) => return e.to_compile_error().into(),
    };
    let table = chain
        .decoded()
        .and_then(|c| c.map(|c| FnTable::new(&chain.keys(), &c)).transpose());
    match table {
        Ok(Some(table)) => finish(chain.attr, &item_fn, &table),
        // A callee's definition failed and said so: the kernel adds no error of its own.
        Ok(None) => stand_in(&item_fn, Tokens::new()),
        Err(e) => stand_in(&item_fn, e.to_compile_error()),
    }
}

/// Marks a function callable from kernels and other tile functions, inlined at each call. See
/// the `tile` crate's documentation (the guide's chapter on functions).
#[proc_macro_attribute]
pub fn tile_fn(attr: TokenStream, item: TokenStream) -> TokenStream {
    if let Err(e) = tile_codegen::frontend::check_nesting(item.clone().into()) {
        return e.to_compile_error().into();
    }
    functions::tile_fn(attr.into(), item.into()).into()
}

/// The callback through which a `#[tile_fn]` collects its callees (see `functions.rs`).
#[doc(hidden)]
#[proc_macro]
pub fn __tile_fn_resume(input: TokenStream) -> TokenStream {
    functions::fn_resume(input.into()).into()
}

/// An empty module in place of a kernel that failed, after `err`: one error, no cascade.
fn stand_in(item_fn: &ItemFn, err: Tokens) -> TokenStream {
    let vis = &item_fn.vis;
    let name = &item_fn.sig.ident;
    quote!(#err #[allow(non_snake_case, dead_code)] #vis mod #name {}).into()
}

fn finish(attr: Tokens, item_fn: &ItemFn, fns: &FnTable) -> TokenStream {
    match expand(attr, item_fn, fns) {
        Ok(ts) => ts.into(),
        Err(e) => stand_in(item_fn, e.to_compile_error()),
    }
}

fn expand(attr: Tokens, item: &ItemFn, fns: &FnTable) -> syn::Result<Tokens> {
    let opts = parse_options(attr)?;
    let mut dump =
        DumpConfig::from_env().map_err(|e| syn::Error::new_spanned(&item.sig.ident, e))?;
    // Each target's cubin beside its PTX, when a ptxas is at hand (`TILE_CUBIN=0`: PTX only).
    dump.cubin = tile_codegen::pipeline::cubin_ptxas();
    let compiled = compile_with(item, fns, &opts, &dump)?;
    let warnings = warnings(&compiled);
    let module = generate(item, &compiled, opts.autotune.as_ref());
    Ok(quote!(#warnings #module))
}

/// The compiler's warnings as rustc warnings at their place in the kernel: stable Rust gives a
/// procedural macro no warning of its own, so each is the use of a deprecated constant whose
/// note is the message, spanned at the place (one per place and message, whatever the number of
/// instances).
fn warnings(compiled: &[CompiledKernel]) -> Tokens {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Tokens::new();
    // `num_stages` unused: only where no instance uses it.
    let unused = compiled
        .iter()
        .map(|c| c.stages_unused.as_ref())
        .collect::<Option<Vec<_>>>()
        .and_then(|u| u.first().copied());
    for (span, msg) in compiled.iter().flat_map(|c| &c.warnings).chain(unused) {
        let key = format!("{span:?}{msg}");
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let note = format!("tile: {msg}");
        let use_it = quote::quote_spanned!(*span=> tile_warning);
        out.extend(quote! {
            const _: () = {
                #[deprecated(note = #note)]
                #[allow(non_upper_case_globals)]
                const tile_warning: () = ();
                #use_it
            };
        });
    }
    out
}

/// The `# Safety` section of an `unsafe` kernel's launch (nothing for a checked one).
fn safety_doc(item: &ItemFn) -> Tokens {
    if item.sig.unsafety.is_none() {
        return Tokens::new();
    }
    quote! {
        ///
        /// # Safety
        ///
        /// The kernel converts integers to pointers (`x as Ptr<T>`), which the launch cannot
        /// check: every address it converts must lie in a live buffer of that element type on
        /// `dev`, that no other work reads or writes while the kernel writes it. A
        /// `tile::PointerTable` passed for the addresses keeps its buffers borrowed (and, on the
        /// interpreter, is how the kernel reaches them).
    }
}

fn dtype_tokens(d: DType) -> Tokens {
    match d {
        DType::I1 => quote!(bool),
        DType::F16 => quote!(::tile::f16),
        DType::BF16 => quote!(::tile::bf16),
        DType::F8E4M3 => quote!(::tile::f8e4m3),
        DType::F8E5M2 => quote!(::tile::f8e5m2),
        // Every other element type is spelled as Rust's primitive of the same name.
        _ => {
            let id = proc_macro2::Ident::new(d.name(), proc_macro2::Span::call_site());
            quote!(#id)
        }
    }
}

fn dtype_path(d: DType) -> Tokens {
    let variant = proc_macro2::Ident::new(&format!("{d:?}"), proc_macro2::Span::call_site());
    quote!(::tile::ir::DType::#variant)
}

/// `Option<i64>` code evaluating an extent with checked arithmetic.
fn extent_code(e: &Expr, params: &[Param]) -> Tokens {
    match e {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => {
            let v: i64 = i.base10_parse().unwrap_or(i64::MAX);
            quote!(::core::option::Option::Some(#v))
        }
        Expr::Paren(p) => extent_code(&p.expr, params),
        Expr::Block(b) => match b.block.stmts.first() {
            Some(syn::Stmt::Expr(inner, None)) => extent_code(inner, params),
            _ => quote!(::core::option::Option::None),
        },
        Expr::Binary(b) => {
            let l = extent_code(&b.left, params);
            let r = extent_code(&b.right, params);
            let op = match b.op {
                syn::BinOp::Add(_) => quote!(checked_add),
                syn::BinOp::Sub(_) => quote!(checked_sub),
                syn::BinOp::Mul(_) => quote!(checked_mul),
                _ => quote!(checked_div),
            };
            quote!((#l).and_then(|__a: i64| (#r).and_then(|__b: i64| __a.#op(__b))))
        }
        Expr::Path(p) => {
            let name = p
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            match params.iter().find(|q| q.name == name).map(|q| &q.kind) {
                Some(ParamDecl::Const(c)) if c.len() == 1 => {
                    let v = c[0];
                    quote!(::core::option::Option::Some(#v))
                }
                _ => {
                    let id = format_ident!("{}", name);
                    quote!(::core::option::Option::Some(#id as i64))
                }
            }
        }
        // The front end accepts nothing else.
        _ => quote!(::core::option::Option::None),
    }
}

/// The `ParamSpec`s of one instance (its element types substituted).
fn param_spec_tokens(params: &[Param], written: &[bool], offsets32: &[bool]) -> Vec<Tokens> {
    let mut out = Vec::new();
    let mut ir_index = 0;
    for p in params {
        let pname = &p.name;
        match &p.kind {
            ParamDecl::Ptr { dtype, .. } => {
                let w = written.get(ir_index).copied().unwrap_or(false);
                // Unknown is narrow: the launch then refuses what 32-bit offsets cannot reach.
                let o = offsets32.get(ir_index).copied().unwrap_or(true);
                ir_index += 1;
                let dt = dtype_path(*dtype);
                out.push(quote!(::tile::ParamSpec { name: #pname, kind: ::tile::ParamKind::Ptr { dtype: #dt, written: #w, offsets32: #o } }));
            }
            ParamDecl::Scalar(d) => {
                ir_index += 1;
                let dt = dtype_path(*d);
                out.push(quote!(::tile::ParamSpec { name: #pname, kind: ::tile::ParamKind::Scalar(#dt) }));
            }
            ParamDecl::Const(_) | ParamDecl::Type(_) => {}
        }
    }
    out
}

/// The `DescSpec`s of one instance: its descriptors that the launch can describe, then those
/// the compiler found in its pointer loads (`implied`).
fn descriptor_tokens(
    ir: &tile_core::ir::Function,
    implied: &[tile_codegen::analysis::descriptors::HostDesc],
) -> Vec<Tokens> {
    let scalar = |s: &tile_core::runtime::DescScalar| match *s {
        tile_core::runtime::DescScalar::Param(i) => quote!(::tile::DescScalar::Param(#i)),
        tile_core::runtime::DescScalar::Const(c) => quote!(::tile::DescScalar::Const(#c)),
        tile_core::runtime::DescScalar::Product {
            params,
            count,
            factor,
            bits,
        } => quote!(::tile::DescScalar::Product {
            params: [#(#params),*],
            count: #count,
            factor: #factor,
            bits: #bits,
        }),
    };
    tile_codegen::analysis::descriptors::host_descriptors(ir)
        .iter()
        .chain(implied)
        .map(|d| {
            let (slot, ptr, dt, implied) = (d.slot, d.ptr, dtype_path(d.dtype), d.implied);
            let dims = d.dims.iter().map(scalar);
            let strides = d.strides.iter().map(scalar);
            quote!(::tile::DescSpec { slot: #slot, ptr: #ptr, dtype: #dt, dims: &[#(#dims),*], strides: &[#(#strides),*], implied: #implied })
        })
        .collect()
}

fn variant_tokens(c: &CompiledKernel) -> Vec<Tokens> {
    let name = &c.kernel.name;
    c.variants
        .iter()
        .map(|v| {
            let divisibility = &v.divisibility;
            let warps = v.num_warps;
            let targets = v.targets.iter().map(|b| {
                let target = match b.target {
                    Target::Sm80 => quote!(Sm80),
                    Target::Sm90a => quote!(Sm90a),
                };
                let ptx = &b.artifacts.ptx;
                let smem = b.artifacts.dyn_shared_bytes;
                let cubin = proc_macro2::Literal::byte_string(b.cubin.as_deref().unwrap_or(&[]));
                let tma = b.tma.iter().map(|t| {
                    let (slot, dims, swizzle) = (t.slot, &t.box_dims, t.swizzle);
                    quote!(::tile::TmaSpec { slot: #slot, box_dims: &[#(#dims),*], swizzle: #swizzle })
                });
                quote!(::tile::TargetPtx { target: ::tile::Target::#target, ptx: #ptx, cubin: #cubin, entry: #name, dyn_shared_bytes: #smem, tma: &[#(#tma),*] })
            });
            quote!(::tile::Variant { divisibility: &[#(#divisibility),*], num_warps: #warps, targets: &[#(#targets),*] })
        })
        .collect()
}

fn generate(item: &ItemFn, instances: &[CompiledKernel], tune: Option<&Autotune>) -> Tokens {
    let first = &instances[0].kernel;
    let vis = &item.vis;
    let mod_name = &item.sig.ident;
    let base = mod_name.to_string();
    let docs: Vec<&syn::Attribute> = item
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    // A buffer is written if any specialization stores through it.
    let written: Vec<bool> = (0..first.written.len())
        .map(|i| {
            instances
                .iter()
                .any(|c| c.kernel.written.get(i).copied().unwrap_or(false))
        })
        .collect();

    let mut wrapper_params = Vec::new();
    let mut arg_exprs = Vec::new();
    let mut extents = Vec::new();
    let mut chosen = Vec::new(); // multi-valued constants: (ident, name, values)
    let mut type_params = Vec::new(); // element-type parameters: (ident, name, types)
    let mut passed = Vec::new(); // the wrapper's parameters in order: (ident, written buffer)
    let mut ir_index = 0;
    for p in &first.params {
        let pname = &p.name;
        let id = format_ident!("{}", p.name, span = p.span);
        match &p.kind {
            ParamDecl::Ptr {
                dtype,
                extent,
                elem_param,
            } => {
                let w = written[ir_index];
                ir_index += 1;
                let ty = match elem_param {
                    Some(t) => {
                        let t = format_ident!("{}", t);
                        quote!(#t)
                    }
                    None => dtype_tokens(*dtype),
                };
                passed.push((id.clone(), w));
                if w {
                    wrapper_params.push(quote!(#id: &mut (impl ::tile::TensorMut<#ty> + ?Sized)));
                    arg_exprs.push(quote!(::tile::Arg::Buf(::tile::TensorMut::<#ty>::tile_arg_mut(#id, dev).map_err(|e| e.at(#base, #pname))?)));
                } else {
                    wrapper_params.push(quote!(#id: &(impl ::tile::TensorRef<#ty> + ?Sized)));
                    arg_exprs.push(quote!(::tile::Arg::Buf(::tile::TensorRef::<#ty>::tile_arg(#id, dev).map_err(|e| e.at(#base, #pname))?)));
                }
                match extent {
                    Some(e) => {
                        let code = extent_code(e, &first.params);
                        extents.push(quote!(::core::option::Option::Some(#code)));
                    }
                    None => extents.push(quote!(::core::option::Option::None)),
                }
            }
            ParamDecl::Scalar(d) => {
                ir_index += 1;
                passed.push((id.clone(), false));
                let ty = dtype_tokens(*d);
                wrapper_params.push(quote!(#id: #ty));
                let variant = match d {
                    DType::I32 => quote!(I32),
                    DType::I64 => quote!(I64),
                    DType::U32 => quote!(U32),
                    DType::U64 => quote!(U64),
                    DType::F64 => quote!(F64),
                    _ => quote!(F32),
                };
                arg_exprs.push(quote!(::tile::Arg::#variant(#id)));
                extents.push(quote!(::core::option::Option::None));
            }
            ParamDecl::Const(values) if values.len() > 1 => {
                passed.push((id.clone(), false));
                wrapper_params.push(quote!(#id: i32));
                chosen.push((id, p.name.clone(), values.clone()));
            }
            ParamDecl::Const(_) => {}
            ParamDecl::Type(types) => type_params.push((id, p.name.clone(), types.clone())),
        }
    }
    let n_ir = ir_index;

    let specs: Vec<Tokens> = instances
        .iter()
        .map(|c| {
            let name = &c.kernel.name;
            let rust_name = &c.kernel.rust_name;
            let instance = &c.kernel.instance;
            let ir = &c.tile_ir;
            let variants = variant_tokens(c);
            let param_specs = param_spec_tokens(&c.kernel.params, &written, &c.kernel.offsets32);
            let desc_slots = c.kernel.ir.desc_slots + c.implied.len() as u32;
            let descriptors = descriptor_tokens(&c.kernel.ir, &c.implied);
            quote!(::tile::KernelSpec {
                name: #name,
                rust_name: #rust_name,
                instance: #instance,
                ir: #ir,
                params: &[#(#param_specs),*],
                desc_slots: #desc_slots,
                descriptors: &[#(#descriptors),*],
                variants: &[#(#variants),*],
            })
        })
        .collect();

    let unsafety = &item.sig.unsafety;
    let safety_doc = safety_doc(item);
    let common = quote! {
        // Read so that changing the dump settings recompiles the kernels (rustc tracks them).
        const _: ::core::option::Option<&str> = ::core::option_env!("TILE_DUMP");
        const _: ::core::option::Option<&str> = ::core::option_env!("TILE_DUMP_DIR");
        const _: ::core::option::Option<&str> = ::core::option_env!("TILE_CUBIN");
        const _: ::core::option::Option<&str> = ::core::option_env!("TILE_PTXAS");
    };
    let preload_doc = quote! {
        /// Loads every compiled specialization of the kernel for `dev` (the PTX of its target)
        /// now, so that the first launch does not pay for the module load; on the interpreter,
        /// parses and verifies the kernel's IR. Launches load on demand without it.
    };
    let launch_doc = quote! {
        /// Launches the kernel on `dev` over `grid` programs. Checks the arguments' devices,
        /// their lengths against the declared extents and the grid before launching; on a
        /// CUDA device the launch is asynchronous, on the interpreter it has finished on return.
        #safety_doc
    };

    if let Some(tune) = tune {
        return tuned_module(TunedParts {
            item,
            instances,
            tune,
            specs: &specs,
            wrapper_params: &wrapper_params,
            arg_exprs: &arg_exprs,
            extents: &extents,
            type_params: &type_params,
            chosen: &chosen,
            passed: &passed,
            common: &common,
            docs: &docs,
        });
    }

    if chosen.is_empty() && type_params.is_empty() {
        let spec = &specs[0];
        return quote! {
            #(#docs)*
            #[allow(non_snake_case, dead_code, clippy::all)]
            #vis mod #mod_name {
                /// What the compiler made of the kernel: IR, parameters, and PTX per specialization and target.
                pub static KERNEL: ::tile::KernelSpec = #spec;
                /// Every compiled instance of the kernel (one).
                pub static KERNELS: [&::tile::KernelSpec; 1] = [&KERNEL];
                static CACHE: ::tile::ModuleCache = ::tile::ModuleCache::new();
                #common

                #preload_doc
                pub fn preload(dev: &::tile::Device) -> ::core::result::Result<(), ::tile::Error> {
                    ::tile::preload(&[(&KERNEL, &CACHE)], dev)
                }

                #launch_doc
                pub #unsafety fn launch(
                    dev: &::tile::Device,
                    grid: impl ::core::convert::Into<::tile::Grid>,
                    #(#wrapper_params),*
                ) -> ::core::result::Result<(), ::tile::Error> {
                    let extents: [::core::option::Option<::core::option::Option<i64>>; #n_ir] = [#(#extents),*];
                    let args = [#(#arg_exprs),*];
                    ::tile::launch(&KERNEL, &CACHE, dev, grid.into(), args, &extents)
                }
            }
        };
    }

    // Several instances: one static pair per instance, and a dispatch on the chosen constants.
    let Dispatch {
        statics,
        kernel_refs,
        preload_pairs,
        generics,
        scrutinee,
        arms,
    } = dispatch(instances, &specs, &chosen, &type_params, None);
    let n = instances.len();
    let declared: Vec<Tokens> = chosen
        .iter()
        .map(|(id, name, values)| {
            let vals: Vec<i32> = values.iter().map(|&v| v as i32).collect();
            let doc = format!("The values of `{name}` this kernel was compiled for.");
            quote!(#[doc = #doc] pub const #id: &[i32] = &[#(#vals),*];)
        })
        .collect();
    let mut describe: Vec<Tokens> = chosen
        .iter()
        .map(|(id, name, values)| {
            let list = values
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let fmt = format!("{name} = {{}} (declared: {list})");
            quote!(::std::format!(#fmt, #id))
        })
        .collect();
    describe.extend(type_params.iter().map(|(id, name, types)| {
        let list = types
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let fmt = format!("{name} = {{}} (declared: {list})");
        quote!(::std::format!(#fmt, <#id as ::tile::Element>::DTYPE))
    }));
    let type_docs: Vec<Tokens> = type_params
        .iter()
        .map(|(id, name, types)| {
            let list: Vec<Tokens> = types.iter().map(|&t| dtype_path(t)).collect();
            let doc = format!("The element types `{name}` was compiled for.");
            quote!(#[doc = #doc] pub const #id: &[::tile::ir::DType] = &[#(#list),*];)
        })
        .collect();
    quote! {
        #(#docs)*
        #[allow(non_snake_case, non_upper_case_globals, dead_code, clippy::all)]
        #vis mod #mod_name {
            #(#statics)*
            /// Every compiled instance of the kernel, one per combination of its constants.
            pub static KERNELS: [&::tile::KernelSpec; #n] = [#(#kernel_refs),*];
            /// The declared values of each specialized constant and element type.
            pub mod values {
                #(#declared)*
                #(#type_docs)*
            }
            #common

            #preload_doc
            /// Every instance (each combination of constants and types) is loaded.
            pub fn preload(dev: &::tile::Device) -> ::core::result::Result<(), ::tile::Error> {
                ::tile::preload(&[#(#preload_pairs),*], dev)
            }

            #launch_doc
            ///
            /// The specialized constants are arguments, and element-type parameters follow the
            /// buffers' types: a combination that was not declared is an `Err` naming the
            /// declared values.
            pub #unsafety fn launch<#(#generics),*>(
                dev: &::tile::Device,
                grid: impl ::core::convert::Into<::tile::Grid>,
                #(#wrapper_params),*
            ) -> ::core::result::Result<(), ::tile::Error> {
                let (spec, cache): (&'static ::tile::KernelSpec, &'static ::tile::ModuleCache) = match (#(#scrutinee,)*) {
                    #(#arms,)*
                    _ => {
                        let parts: ::std::vec::Vec<::std::string::String> = ::std::vec![#(#describe),*];
                        return ::core::result::Result::Err(::tile::Error::NoVariant {
                            kernel: #base,
                            msg: ::std::format!("no specialization for {}", parts.join(", ")),
                        });
                    }
                };
                let extents: [::core::option::Option<::core::option::Option<i64>>; #n_ir] = [#(#extents),*];
                let args = [#(#arg_exprs),*];
                ::tile::launch(spec, cache, dev, grid.into(), args, &extents)
            }
        }
    }
}

/// What [`generate`] computed that an autotuned kernel's module reuses.
struct TunedParts<'a> {
    item: &'a ItemFn,
    instances: &'a [CompiledKernel],
    tune: &'a Autotune,
    specs: &'a [Tokens],
    wrapper_params: &'a [Tokens],
    arg_exprs: &'a [Tokens],
    extents: &'a [Tokens],
    type_params: &'a [(syn::Ident, String, Vec<DType>)],
    chosen: &'a [(syn::Ident, String, Vec<i64>)],
    passed: &'a [(syn::Ident, bool)],
    common: &'a Tokens,
    docs: &'a [&'a syn::Attribute],
}

/// The module of an autotuned kernel: one instance per config (and element type), `CONFIGS`,
/// `launch_config` (one config, chosen by the caller) and `launch` (the tuner's choice for the
/// key's values, timed on first use; `tile::autotune`).
fn tuned_module(p: TunedParts) -> Tokens {
    let TunedParts {
        item,
        instances,
        tune,
        specs,
        wrapper_params,
        arg_exprs,
        extents,
        type_params,
        chosen,
        passed,
        common,
        docs,
    } = p;
    let vis = &item.vis;
    let mod_name = &item.sig.ident;
    let unsafety = &item.sig.unsafety;
    let safety_doc = safety_doc(item);
    let base = mod_name.to_string();
    let n_ir = extents.len();
    let n = instances.len();
    let n_configs = tune.configs.len();
    let per_config = (n / n_configs).max(1);
    let Dispatch {
        statics,
        kernel_refs,
        preload_pairs,
        generics,
        scrutinee,
        arms,
    } = dispatch(instances, specs, chosen, type_params, Some(per_config));
    // The configs as values the grid function reads.
    let const_names: Vec<&syn::Ident> = tune.configs[0].consts.iter().map(|(n, _)| n).collect();
    let fields = const_names.iter().map(|n| {
        let doc = format!("`{n}` in this config.");
        quote!(#[doc = #doc] pub #n: i32)
    });
    let config_values: Vec<Tokens> = tune
        .configs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let first = &instances[i * per_config].kernel.ir;
            let (w, st) = (first.num_warps, first.num_stages);
            let vals = const_names.iter().map(|name| {
                let v = c
                    .consts
                    .iter()
                    .find(|(n, _)| n == *name)
                    .map_or(0, |(_, v)| *v) as i32;
                quote!(#name: #v)
            });
            quote!(Config { #(#vals,)* num_warps: #w, num_stages: #st })
        })
        .collect();
    let labels: Vec<String> = tune.configs.iter().map(|c| c.label()).collect();
    let hash = instances
        .iter()
        .flat_map(|c| &c.variants)
        .flat_map(|v| &v.targets)
        .fold(::tile_core::runtime::autotune::Fnv::new(), |h, t| {
            h.write(t.artifacts.ptx.as_bytes())
        })
        .finish();
    // A user path names an item beside the kernel: inside the module it is one level up.
    let outer = |path: &syn::Path| -> Tokens {
        let first = path.segments.first().map(|s| s.ident.to_string());
        if path.leading_colon.is_some() || matches!(first.as_deref(), Some("crate")) {
            quote!(#path)
        } else {
            quote!(super::#path)
        }
    };
    let mut tuner = quote!(::tile::autotune::Autotuner::new(#base, #hash, &DESCS));
    if let Some(path) = &tune.prune {
        let path = outer(path);
        tuner = quote!(#tuner.with_prune(#path));
    }
    if let Some(path) = &tune.heuristic {
        let path = outer(path);
        tuner = quote!(#tuner.with_heuristic(#path));
    }
    // The key's named values, then what picks the instance within a config (the constants
    // chosen at launch, the element types): variants never share a decision, as Triton's key
    // holds its arguments' dtypes.
    let key: Vec<Tokens> = tune
        .key
        .iter()
        .map(|k| {
            let id = format_ident!("{}", k);
            quote!(#id as i64)
        })
        .chain(scrutinee.iter().skip(1).map(|s| quote!(#s as i64)))
        .collect();
    let n_key = key.len();
    let call_args: Vec<Tokens> = passed.iter().map(|(id, _)| quote!(#id)).collect();
    let scratch: Vec<Tokens> = passed
        .iter()
        .filter(|(_, w)| *w)
        .map(|(id, _)| {
            let s = format_ident!("__scratch_{}", id);
            quote!(let mut #s = dev.scratch_copy(#id)?;)
        })
        .collect();
    let bench_args: Vec<Tokens> = passed
        .iter()
        .map(|(id, w)| {
            if *w {
                let s = format_ident!("__scratch_{}", id);
                quote!(&mut #s)
            } else {
                quote!(#id)
            }
        })
        .collect();
    let config_doc = format!(
        "The configs `{base}` is compiled for, in order: {}.",
        labels
            .iter()
            .enumerate()
            .map(|(i, l)| format!("{i}: `{l}`"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let key_doc = format!(
        "Launches the kernel with the config the tuner picks for this launch's ({}): at the \
         first launch with new values on a device, every config (or those `prune` keeps) is \
         timed on copies of the buffers the kernel writes and the fastest kept, in memory and \
         in the on-disk cache (`tile::autotune`); on the interpreter, config 0. `grid` gives \
         the grid for a config.",
        tune.key
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    quote! {
        #(#docs)*
        #[allow(non_snake_case, non_upper_case_globals, dead_code, clippy::all)]
        #vis mod #mod_name {
            #(#statics)*
            /// Every compiled instance of the kernel, per config (and element type).
            pub static KERNELS: [&::tile::KernelSpec; #n] = [#(#kernel_refs),*];
            #common

            /// One configuration: its constants, warps and stages (0: the compiler's choice).
            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            pub struct Config {
                #(#fields,)*
                /// Warps per program.
                pub num_warps: u32,
                /// Pipeline stages (0: chosen by the compiler).
                pub num_stages: u32,
            }

            #[doc = #config_doc]
            pub const CONFIGS: [Config; #n_configs] = [#(#config_values),*];

            static DESCS: [::tile::autotune::ConfigDesc; #n_configs] =
                [#(::tile::autotune::ConfigDesc::new(#labels)),*];

            /// The tuner: its decisions (`decisions()`), and deterministic mode.
            pub static TUNER: ::tile::autotune::Autotuner = #tuner;

            /// Loads every config's module for `dev` now.
            pub fn preload(dev: &::tile::Device) -> ::core::result::Result<(), ::tile::Error> {
                ::tile::preload(&[#(#preload_pairs),*], dev)
            }

            /// Launches the kernel with config `config` (an index into [`CONFIGS`]) over
            /// `grid`, without tuning.
            #safety_doc
            pub #unsafety fn launch_config<#(#generics),*>(
                dev: &::tile::Device,
                config: usize,
                grid: impl ::core::convert::Into<::tile::Grid>,
                #(#wrapper_params),*
            ) -> ::core::result::Result<(), ::tile::Error> {
                let (spec, cache): (&'static ::tile::KernelSpec, &'static ::tile::ModuleCache) = match (#(#scrutinee,)*) {
                    #(#arms,)*
                    _ => {
                        return ::core::result::Result::Err(::tile::Error::NoVariant {
                            kernel: #base,
                            msg: ::std::format!("no config {} (there are {})", config, #n_configs),
                        });
                    }
                };
                let extents: [::core::option::Option<::core::option::Option<i64>>; #n_ir] = [#(#extents),*];
                let args = [#(#arg_exprs),*];
                ::tile::launch(spec, cache, dev, grid.into(), args, &extents)
            }

            #[doc = #key_doc]
            #safety_doc
            pub #unsafety fn launch<#(#generics),*>(
                dev: &::tile::Device,
                grid: impl ::core::ops::Fn(&Config) -> ::tile::Grid,
                #(#wrapper_params),*
            ) -> ::core::result::Result<(), ::tile::Error> {
                // An `unsafe` kernel's `launch_config` is `unsafe`, under this launch's promise.
                #[allow(unused_unsafe)]
                unsafe {
                    let key: [i64; #n_key] = [#(#key),*];
                    let config = TUNER.choose(dev, &key, |i| {
                        #(#scratch)*
                        ::tile::autotune::time_ms(dev, || {
                            launch_config(dev, i, grid(&CONFIGS[i]), #(#bench_args),*)
                        })
                    })?;
                    launch_config(dev, config, grid(&CONFIGS[config]), #(#call_args),*)
                }
            }
        }
    }
}

/// What a module of several instances holds and dispatches on.
struct Dispatch {
    /// One `KernelSpec` and one `ModuleCache` static per instance.
    statics: Vec<Tokens>,
    /// `&__KERNEL_i` for `KERNELS`.
    kernel_refs: Vec<Tokens>,
    /// `(&__KERNEL_i, &__CACHE_i)` for `preload`.
    preload_pairs: Vec<Tokens>,
    /// The launch's generic element types.
    generics: Vec<Tokens>,
    /// What the launch matches: the config index (autotuned), the chosen constants, the
    /// element types.
    scrutinee: Vec<Tokens>,
    /// One arm per instance, to its pair of statics.
    arms: Vec<Tokens>,
}

/// The statics and the dispatch of a module whose instances are chosen at launch by the
/// constants in `chosen` and the element types in `type_params` and, for an autotuned kernel
/// (`per_config`: instances per config, configs outermost), by a `config` index.
fn dispatch(
    instances: &[CompiledKernel],
    specs: &[Tokens],
    chosen: &[(syn::Ident, String, Vec<i64>)],
    type_params: &[(syn::Ident, String, Vec<DType>)],
    per_config: Option<usize>,
) -> Dispatch {
    let pair = |i: usize| {
        (
            format_ident!("__KERNEL_{}", i),
            format_ident!("__CACHE_{}", i),
        )
    };
    let statics = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let (k, c) = pair(i);
            quote! {
                static #k: ::tile::KernelSpec = #spec;
                static #c: ::tile::ModuleCache = ::tile::ModuleCache::new();
            }
        })
        .collect();
    let kernel_refs = (0..instances.len())
        .map(|i| {
            let (k, _) = pair(i);
            quote!(&#k)
        })
        .collect();
    let preload_pairs = (0..instances.len())
        .map(|i| {
            let (k, c) = pair(i);
            quote!((&#k, &#c))
        })
        .collect();
    let generics = type_params
        .iter()
        .map(|(id, _, _)| quote!(#id: ::tile::Element))
        .collect();
    let mut scrutinee: Vec<Tokens> = per_config.map(|_| quote!(config)).into_iter().collect();
    scrutinee.extend(chosen.iter().map(|(id, _, _)| quote!(#id)));
    scrutinee.extend(
        type_params
            .iter()
            .map(|(id, _, _)| quote!(<#id as ::tile::Element>::DTYPE)),
    );
    let arms = instances
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (k, cache) = pair(i);
            let mut pats: Vec<Tokens> = per_config
                .map(|per| {
                    let config = i / per;
                    quote!(#config)
                })
                .into_iter()
                .collect();
            pats.extend(chosen.iter().map(|(_, name, _)| {
                let v = c
                    .kernel
                    .consts
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(0, |(_, v)| *v) as i32;
                quote!(#v)
            }));
            pats.extend(type_params.iter().map(|(_, name, _)| {
                let d = c
                    .kernel
                    .types
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(DType::F32, |(_, d)| *d);
                dtype_path(d)
            }));
            quote!((#(#pats,)*) => (&#k, &#cache))
        })
        .collect();
    Dispatch {
        statics,
        kernel_refs,
        preload_pairs,
        generics,
        scrutinee,
        arms,
    }
}
