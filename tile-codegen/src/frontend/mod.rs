//! The front end: a `#[tile_kernel]` function (syn syntax) → a verified tile-level [`Function`]
//! plus what the launch wrapper needs to know about each parameter.
//!
//! [`signature`] owns the parameter forms, [`lower`] the body's language. Both report misuse as
//! `syn::Error`s spanning the offending tokens, which the macro turns into `compile_error!`.

pub mod lower;
pub mod signature;

use tile_core::ir::{verify, Function, OpKind, ValueDef, ValueId};

pub use signature::{parse_options, KernelOptions, Param, ParamDecl};

/// A kernel after the front end.
#[derive(Debug)]
pub struct Kernel {
    /// Kernel name.
    pub name: String,
    /// Every parameter as declared, compile-time constants included.
    pub params: Vec<Param>,
    /// For each IR parameter (constants excluded), whether the kernel stores through it.
    pub written: Vec<bool>,
    /// The tile-level IR.
    pub ir: Function,
}

/// Runs the front end on a kernel function.
pub fn lower_kernel(item: &syn::ItemFn, opts: &KernelOptions) -> syn::Result<Kernel> {
    let params = signature::parse_signature(&item.sig)?;
    let name = item.sig.ident.to_string();
    let ir = lower::lower_body(&name, &params, &item.block, opts.num_warps)?;
    if let Err(e) = verify(&ir) {
        // The front end only builds well-typed IR; reaching this is a bug in tile, reported at the
        // kernel's name rather than as a panic.
        return Err(syn::Error::new_spanned(
            &item.sig.ident,
            format!("internal error: tile built invalid IR for this kernel:\n{e}"),
        ));
    }
    let written = written_params(&ir);
    Ok(Kernel {
        name,
        params,
        written,
        ir,
    })
}

/// Which parameters a `store` writes through: the parameters its pointer operand derives from.
pub fn written_params(f: &Function) -> Vec<bool> {
    let mut written = vec![false; f.params().len()];
    for op in f.walk() {
        let data = f.op(op);
        if matches!(data.kind, OpKind::Store { .. }) {
            let mut stack: Vec<ValueId> = vec![data.operands[0]];
            let mut seen = std::collections::HashSet::new();
            while let Some(v) = stack.pop() {
                if !seen.insert(v) {
                    continue;
                }
                match f.values[v.index()].def {
                    ValueDef::BlockArg(b, i) if b == f.entry() => written[i as usize] = true,
                    ValueDef::BlockArg(..) => {}
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
    written
}
