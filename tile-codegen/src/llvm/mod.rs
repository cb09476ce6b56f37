//! The LLVM back end: a verified GPU-level kernel → LLVM IR → `default<O3>` → demand order
//! (`sink.rs`) → PTX text.
//!
//! This module owns the public entry point [`compile`] and the NVPTX target machine set-up for
//! each [`Target`] (its name and PTX ISA version). The lowering of ops lives in `lower` (values,
//! arithmetic, the kernel signature), `memory` (loads and stores, inline PTX for predicated accesses, half-precision
//! elements packed in pairs), `math` (casts and math functions, with their accuracy), `reduce`
//! (reductions through warp shuffles and shared memory), `shared` (shared arrays, barriers,
//! layout conversions), `dot` (matrix products through shared memory) and `layout` (which elements of a
//! distributed tensor each thread holds).
//!
//! Invariants this module keeps:
//! - **Fresh state per call.** Every [`compile`] call creates its own LLVM context, module and target
//!   machine; only target registration is global (done once), so the proc macro may call it for
//!   every kernel variant and target in one process.
//! - **Verified means infallible.** The kernel is verified again on entry (a kernel that does not
//!   verify, or tile-level IR, is a [`CodegenError`]); after that, the lowering reads operands,
//!   results, types and layouts through accessors that cannot fail on a verified kernel. A state
//!   they find broken is a bug in tile: it panics on one path (`lower::bug`), which the lowering
//!   catches and returns as an internal [`CodegenError`] naming the op (`opN`, as the verifier
//!   names ops), a misused LLVM builder included. The only other errors are what a verified
//!   kernel may still ask beyond the back end's reach (shared memory over the target's limit, a
//!   half-precision scalar parameter, an unsupported layout or tile shape) and LLVM's own
//!   diagnostics (a module that does not verify is an internal error too).
//!
//! ```no_run
//! # fn demo(text: &str) -> Result<(), Box<dyn std::error::Error>> {
//! use tile_codegen::llvm::compile;
//! use tile_core::Target;
//! let kernel = tile_core::ir::parse(text)?;
//! tile_core::ir::verify(&kernel)?;
//! for target in Target::ALL {
//!     let artifacts = compile(&kernel, target)?;
//!     println!("{}", artifacts.ptx);
//! }
//! # Ok(())
//! # }
//! ```

mod atomic;
mod dot;
mod float8;
mod gather;
mod layout;
mod ldmatrix;
mod lower;
mod math;
mod memory;
mod reduce;
mod roll;
mod scan;
mod scratch;
mod shared;
mod sink;
mod smem;
mod threshold;
mod tma;
mod wgmma;

pub(crate) use lower::panic_message;
pub use scratch::scratch_bytes;
pub(crate) use shared::converts_by_vectors;

use std::fmt;
use std::sync::Once;

use inkwell::context::Context;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target as LlvmTarget, TargetMachine,
    TargetTriple,
};
use inkwell::OptimizationLevel;
use tile_core::ir::{DType, Function, OpId, OpKind};
use tile_core::Target;

use crate::analysis::Analyses;

/// The LLVM triple of every module we build.
const TRIPLE: &str = "nvptx64-nvidia-cuda";

/// What the back end produces for one kernel and one target.
#[derive(Clone, Debug)]
pub struct Artifacts {
    /// The LLVM module after `default<O3>`, as text.
    pub llvm_ir: String,
    /// The PTX module, ready for `cuModuleLoadData` or ptxas.
    pub ptx: String,
    /// Dynamic shared memory the kernel needs per program, in bytes (0: its shared memory, if
    /// any, is static). The launch passes it; above 48 KiB the module load opts the function in.
    pub dyn_shared_bytes: u32,
    /// The programs per SM the PTX asks ptxas to fit (`.minnctapersm n`; 0: no such line). 1
    /// lets ptxas use every register a thread can have instead of trading them for occupancy;
    /// 2 caps them so that two programs fit.
    pub programs_per_sm: u32,
}

/// Choices the caller makes for [`compile_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Ask ptxas to fit this many programs per SM (`.minnctapersm n`) whatever the kernel
    /// holds; `None`: the back end's choice, one program for kernels it knows to need
    /// registers and none asked otherwise (see [`Artifacts`]).
    pub programs_per_sm: Option<u32>,
}

/// Why a kernel could not be compiled: a message that names the kernel, the op to blame (by
/// id, `opN` in the message as the verifier names ops), where there is one, which the caller
/// maps to its source location ([`tile_core::ir::OpData::loc`]), and whether it is a bug in
/// tile rather than something the kernel asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodegenError {
    /// What went wrong.
    pub msg: String,
    /// The op, by id.
    pub op: Option<OpId>,
    /// True for a bug in tile (an internal error): a state the verifier rules out met in the
    /// lowering, an LLVM module that does not verify. False for what the kernel asks beyond a
    /// limit or the back end's reach, and for a kernel that does not verify.
    pub internal: bool,
}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for CodegenError {}

/// Compiles a verified GPU-level kernel (every tensor type has a blocked layout) to PTX for `target`.
pub fn compile(f: &Function, target: Target) -> Result<Artifacts, CodegenError> {
    compile_with(f, target, Options::default())
}

/// [`compile`], with the caller's [`Options`].
pub fn compile_with(
    f: &Function,
    target: Target,
    options: Options,
) -> Result<Artifacts, CodegenError> {
    emit(f, None, target, options)
}

/// [`compile_with`] for a kernel whose [`Analyses`] the caller computed (with
/// [`scratch_bytes`]) on this same IR, as the pipeline does.
pub fn compile_analyzed(
    f: &Function,
    analyses: &Analyses,
    target: Target,
    options: Options,
) -> Result<Artifacts, CodegenError> {
    emit(f, Some(analyses), target, options)
}

/// [`compile_analyzed`], computing the analyses once the kernel verifies where `analyses` is
/// `None`.
fn emit(
    f: &Function,
    analyses: Option<&Analyses>,
    target: Target,
    options: Options,
) -> Result<Artifacts, CodegenError> {
    let err = |stage: &str, msg: &dyn fmt::Display| CodegenError {
        msg: format!("kernel `{}` ({}): {stage}: {msg}", f.name, target.arch()),
        op: None,
        internal: false,
    };
    let internal = |stage: &str, msg: &dyn fmt::Display| CodegenError {
        internal: true,
        ..err(stage, msg)
    };
    tile_core::ir::verify(f).map_err(|e| CodegenError {
        op: e.0.first().and_then(|v| v.op),
        ..err("the kernel does not verify", &e)
    })?;
    if !is_ptx_identifier(&f.name) {
        // LLVM would rename the entry, and the runtime could not find it by this name.
        return Err(err(
            "kernel name",
            &"not a PTX identifier (letters, digits and `_`, not starting with a digit)",
        ));
    }

    let machine =
        target_machine(target, ptx_isa(f, target)).map_err(|e| err("target machine", &e))?;
    let context = Context::create();
    let module = context.create_module(&f.name);
    module.set_triple(&machine.get_triple());
    module.set_data_layout(&machine.get_target_data().get_data_layout());

    let computed;
    let analyses = match analyses {
        Some(a) => a,
        None => {
            computed = Analyses::of(f, scratch_bytes);
            &computed
        }
    };
    let (dyn_shared, programs_per_sm) =
        lower::lower_kernel(&context, &module, f, analyses, options.programs_per_sm).map_err(
            |e| CodegenError {
                op: e.op,
                internal: e.internal,
                ..err("lowering", &e.msg)
            },
        )?;
    let dyn_shared_bytes = match u32::try_from(dyn_shared) {
        Ok(bytes) if dyn_shared <= target.max_shared_bytes() => bytes,
        _ => {
            return Err(err(
                "shared memory",
                &format!(
                    "the kernel needs {dyn_shared} bytes of shared memory per program; {} allows {} (fewer `num_stages` or smaller tiles help)",
                    target.arch(),
                    target.max_shared_bytes()
                ),
            ))
        }
    };
    module
        .verify()
        .map_err(|e| internal("LLVM verifier (internal error)", &e.to_string()))?;

    module
        .run_passes("default<O3>", &machine, PassBuilderOptions::create())
        .map_err(|e| err("LLVM optimization", &e.to_string()))?;
    sink::sink_to_uses(&context, &module);
    module.verify().map_err(|e| {
        internal(
            "LLVM verifier after sinking (internal error)",
            &e.to_string(),
        )
    })?;
    let llvm_ir = module.print_to_string().to_string();

    let buffer = machine
        .write_to_memory_buffer(&module, FileType::Assembly)
        .map_err(|e| err("PTX emission", &e.to_string()))?;
    let bytes = buffer.as_slice();
    let bytes = bytes.strip_suffix(&[0]).unwrap_or(bytes);
    let ptx = String::from_utf8(bytes.to_vec()).map_err(|e| err("PTX emission", &e))?;
    Ok(Artifacts {
        llvm_ir,
        ptx,
        dyn_shared_bytes,
        programs_per_sm,
    })
}

/// True for names PTX and LLVM keep as they are: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_ptx_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Registers the NVPTX target with LLVM, once per process.
fn init_nvptx() {
    static INIT: Once = Once::new();
    INIT.call_once(|| LlvmTarget::initialize_nvptx(&InitializationConfig::default()));
}

/// The PTX ISA version of `f`'s module for `target`: the target's, or
/// [`Target::F8_MMA_PTX_ISA`] where its tensor cores multiply 8-bit floats.
fn ptx_isa(f: &Function, target: Target) -> (u32, u32) {
    let f8_mma = target.has_f8_mma()
        && f.ops.iter().any(|d| {
            matches!(d.kind, OpKind::Dot { .. } | OpKind::WarpGroupDot { .. })
                && f.ty(d.operands[0]).dtype().is_some_and(DType::is_f8)
                && f.ty(d.results[0])
                    .layout
                    .as_ref()
                    .is_some_and(|l| matches!(l, tile_core::ir::Layout::Mma(_)))
        });
    if f8_mma {
        target.ptx_isa().max(Target::F8_MMA_PTX_ISA)
    } else {
        target.ptx_isa()
    }
}

/// An NVPTX target machine for `target` at `-O3`, emitting PTX ISA `(major, minor)`.
fn target_machine(target: Target, (major, minor): (u32, u32)) -> Result<TargetMachine, String> {
    init_nvptx();
    let triple = TargetTriple::create(TRIPLE);
    let llvm_target = LlvmTarget::from_triple(&triple).map_err(|e| e.to_string())?;
    // The subtarget feature names the PTX ISA version to emit.
    let features = format!("+ptx{major}{minor}");
    llvm_target
        .create_target_machine(
            &triple,
            target.arch(),
            &features,
            OptimizationLevel::Aggressive,
            RelocMode::Default,
            CodeModel::Default,
        )
        .ok_or_else(|| {
            format!(
                "LLVM cannot create a target machine for {TRIPLE} {}",
                target.arch()
            )
        })
}
