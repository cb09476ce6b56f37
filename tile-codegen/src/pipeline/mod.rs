//! The compilation pipeline for one kernel, as a readable list of stages, and the stage dumps.
//!
//! ```text
//! syn::ItemFn ──frontend──▶ tile IR ──induction, canonicalize, cse, dce, hoist-loads──▶ tile IR
//!   (embedded for the interpreter)
//!   for each specialization (what it assumes about the alignment of pointers and the divisibility
//!   of integers, and its warps: decided on the sm_80 GPU-level IR):
//!     for each target (sm_90a, sm_80):
//!       ──set param facts and target, pipeline-loads, assign-layouts, vectorize, pipeline-dot,
//!         cse, dce, hoist-loads, insert-barriers──▶ GPU IR ──analyses, llvm──▶ LLVM IR
//!         ──O3, NVPTX──▶ PTX
//! ```
//!
//! The GPU-level passes see the target (`Function::target`, printed as `target = sm_90a` in the
//! kernel's attributes); `pipeline-dot` sizes its automatic ring by it.
//!
//! Dumps: [`DumpConfig::from_env`] reads `TILE_DUMP` (a comma-separated subset of `ir`, `gpu-ir`,
//! `llvm`, `ptx`, or `all`) and `TILE_DUMP_DIR` (default `target/tile-dump`). Files are named
//! `<kernel>.ir`, `<kernel>.<variant>.<arch>.gpu-ir`, `<kernel>.<variant>.<arch>.ll` and
//! `<kernel>.<variant>.<arch>.ptx`, where `<variant>` is `v0`, `v1`, … in the order the wrapper
//! tries them. `TILE_SKIP_PASSES` (comma-separated pass names) leaves passes out, to measure what
//! one buys; cargo does not rebuild on it, so touch the kernel's file after changing it.
//!
//! The stages in code, one file per concern: `stages` (the pass lists, running them, the tile
//! level of every instance and the GPU level of one specialization; dumps and skipped passes),
//! `plan` (the specialization planner: which variants, and each one's GPU-level IR and
//! analyses per target), `warps` (a variant's warps), `build` (LLVM and ptxas for every planned
//! module, in parallel, stopped at the first failure), `spill` (the register and spill policy).
//! This file holds what a build returns and [`compile`], which runs the phases in order.

mod build;
mod plan;
mod spill;
mod stages;
mod warps;

pub use stages::{
    cubin_ptxas, parse_skip_passes, run_passes, tile_level, DumpConfig, TileLevel, GPU_PASSES,
    TILE_PASSES,
};

use tile_core::Target;

use crate::budget;
use crate::frontend::{FnTable, Kernel, KernelOptions};
use crate::llvm::Artifacts;
use build::{build_modules, FirstFailure};
use plan::{plan_all, planned_cost, PlannedTarget};

/// One compiled specialization.
#[derive(Debug)]
pub struct CompiledVariant {
    /// Per IR parameter, what this variant assumes it is a multiple of (a pointer's address in
    /// bytes, an integer's value); 1 assumes nothing.
    pub divisibility: Vec<u32>,
    /// Warps per program (the same for every target: the launch reads it per variant).
    pub num_warps: u32,
    /// The variant for each target, newest target first.
    pub targets: Vec<TargetBuild>,
}

/// One specialization compiled for one target.
#[derive(Debug)]
pub struct TargetBuild {
    /// The target.
    pub target: Target,
    /// Its GPU-level IR text (the GPU-level passes run once per target).
    pub gpu_ir: String,
    /// Its LLVM IR and PTX.
    pub artifacts: Artifacts,
    /// The cubin `ptxas` made of the PTX, when [`DumpConfig::cubin`] names one.
    pub cubin: Option<Vec<u8>>,
    /// The descriptors it copies with the tensor memory accelerator.
    pub tma: Vec<crate::analysis::descriptors::TmaCopy>,
}

/// A kernel through the whole pipeline.
#[derive(Debug)]
pub struct CompiledKernel {
    /// The front end's result (parameters, written flags, unoptimized IR).
    pub kernel: Kernel,
    /// The optimized tile-level IR text (what the interpreter runs).
    pub tile_ir: String,
    /// Specializations, most specialized first.
    pub variants: Vec<CompiledVariant>,
    /// The implied descriptors ([`crate::analysis::implied`]) as the launch describes them:
    /// slots after the kernel's own, which every module declares and those on the copy engine's
    /// path copy.
    pub implied: Vec<crate::analysis::descriptors::HostDesc>,
    /// What the user should hear although the kernel builds: each a place in the kernel's
    /// source and a message (a tensor-core `dot` loop left unpipelined, and why).
    pub warnings: Vec<(proc_macro2::Span, String)>,
    /// An explicit `num_stages` that pipelines nothing in this instance (no ring, no prefetched
    /// loop): the place and the message. The user hears it when every instance of the kernel
    /// has it, since one instance that uses the stages makes the option meaningful.
    pub stages_unused: Option<(proc_macro2::Span, String)>,
}

/// A failure inside the pipeline: what went wrong, and the source location (an index into the
/// kernel's span table) of the op to blame, where there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// What went wrong.
    pub msg: String,
    /// The blamed op's `loc`.
    pub loc: Option<u32>,
}

impl From<String> for Failure {
    fn from(msg: String) -> Self {
        Failure { msg, loc: None }
    }
}

/// Why an instance did not build.
#[derive(Debug, Clone)]
enum InstanceError {
    /// A bug in tile (an invalid IR, a failed dump).
    Internal(Failure),
    /// What the kernel asks for cannot be compiled (shared memory beyond the limit, say).
    Kernel(Failure),
    /// This machine cannot run a tool the build needs (ptxas without a temporary directory).
    Environment(Failure),
    /// Not built, because a module before it failed ([`FirstFailure`]): never the reported
    /// error, since that module's comes first.
    Moot,
}

/// Runs the whole pipeline on a kernel function: one [`CompiledKernel`] per specialization of its
/// constants (one when every constant has a single value).
///
/// The instances compile on several threads (one LLVM context each; at most the machine's
/// parallelism): a kernel with 12 instances, 3 variants and 2 targets is 72 LLVM compilations.
/// Threads see only IR (no tokens: the compiler's spans may only be touched on the macro's
/// thread); errors come back as values and are located here, the first in instance
/// order reported, as a sequential build would.
pub fn compile(
    item: &syn::ItemFn,
    opts: &KernelOptions,
    dump: &DumpConfig,
) -> syn::Result<Vec<CompiledKernel>> {
    compile_with(item, &FnTable::default(), opts, dump)
}

/// [`compile`] for a kernel that calls tile functions: `fns` holds them
/// ([`crate::frontend::functions`]).
pub fn compile_with(
    item: &syn::ItemFn,
    fns: &FnTable,
    opts: &KernelOptions,
    dump: &DumpConfig,
) -> syn::Result<Vec<CompiledKernel>> {
    let tile = tile_level(item, fns, opts, dump)?;
    // Every specialization builds at least one variant for every target: a kernel far over the
    // budget even so (twice: the tile level's estimate is rougher) is refused before any
    // GPU-level work. The budget itself is checked on the GPU-level IR of every module.
    let targets = Target::ALL.len() as u64;
    let least = tile.iter().fold(0u64, |c, t| {
        c.saturating_add(t.cost.saturating_mul(targets))
    });
    let m = tile.len() as u64 * targets;
    // An autotuned kernel is several kernels the user asked for: each config gets the budget.
    let configs = opts.autotune.as_ref().map_or(1, |t| t.configs.len().max(1)) as u64;
    let max = budget::MAX_COMPILE_COST.saturating_mul(configs);
    if least > max.saturating_mul(2) {
        return Err(over_budget(item, &tile, least, m, configs));
    }
    // Phase 1, per specialization: which variants, and their GPU-level IR per target (our own
    // passes). Phase 2, per variant and target: LLVM, the bulk of the time. Phase 3, with a
    // ptxas: a cubin per distinct module. All spread over the machine's threads, so even a
    // kernel of one specialization builds its six LLVM modules in parallel.
    let planned = plan_all(&tile, dump, opts);
    let (cost, m) = planned_cost(&planned);
    if cost > max {
        return Err(over_budget(item, &tile, cost, m, configs));
    }
    // The modules in the order their errors are reported: the first failure in this order is
    // the kernel's error, so a module after a failure is not built (or its ptxas is stopped).
    // A specialization that failed in phase 1 fails before every module of the later ones.
    //
    // An autotuned kernel's configs after the first are spare: a module of theirs that the
    // kernel's own demands keep from building (registers, shared memory) leaves that config
    // out on that target, as Triton's autotuner skips a config that runs out of resources. The
    // first config must build everywhere: it is what deterministic mode and the interpreter run.
    let per_config = (tile.len() / configs as usize).max(1);
    let spare_instance = |i: usize| opts.autotune.is_some() && i / per_config > 0;
    let first = FirstFailure::new();
    let mut jobs: Vec<&PlannedTarget> = Vec::new();
    let mut spare: Vec<bool> = Vec::new();
    for (i, p) in planned.iter().enumerate() {
        match p {
            Ok(vs) => {
                for t in vs.iter().flat_map(|v| v.targets.iter()) {
                    jobs.push(t);
                    spare.push(spare_instance(i));
                }
            }
            Err(_) => first.record(FirstFailure::before(jobs.len())),
        }
    }
    let mut lowered = build_modules(&jobs, &spare, dump, &first).into_iter();
    // Per instance: its unpipelined `dot`s (for warnings), the targets a spare config was left
    // out on and why, and its variants or why it failed.
    type Built = (
        Vec<Failure>,
        bool,
        Vec<(Target, Failure)>,
        Result<Vec<CompiledVariant>, InstanceError>,
    );
    let built: Vec<Built> = planned
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let mut unpipelined = Vec::new();
            let rings = p
                .as_ref()
                .ok()
                .and_then(|v| v.first())
                .is_some_and(|v| v.rings);
            let mut left_out = Vec::new();
            let r = p.and_then(|variants| {
                variants
                    .into_iter()
                    .map(|v| {
                        let mut targets = Vec::new();
                        for t in &v.targets {
                            let built = lowered.next().unwrap_or_else(|| {
                                Err(InstanceError::Internal(
                                    "a build thread failed".to_string().into(),
                                ))
                            });
                            match built {
                                Ok(b) => targets.push(b),
                                Err(InstanceError::Kernel(f)) if spare_instance(i) => {
                                    if !left_out.iter().any(|(at, _)| *at == t.target) {
                                        left_out.push((t.target, f));
                                    }
                                }
                                Err(e) => return Err(e),
                            }
                        }
                        unpipelined.extend(v.unpipelined);
                        Ok(CompiledVariant {
                            divisibility: v.divisibility,
                            num_warps: v.num_warps,
                            targets,
                        })
                    })
                    .collect()
            });
            (unpipelined, rings, left_out, r)
        })
        .collect();
    tile.into_iter()
        .zip(built)
        .map(|(t, (unpipelined, rings, left_out, b))| {
            let kernel = t.kernel;
            let at = |loc: Option<u32>, msg: String| match kernel.range_of(loc) {
                Some(r) => r.error(msg),
                None => syn::Error::new_spanned(&item.sig.ident, msg),
            };
            match b {
                Ok(variants) => {
                    let left_out = left_out.into_iter().map(|(target, f)| {
                        let span = kernel
                            .range_of(f.loc)
                            .map_or(item.sig.ident.span(), |r| r.start);
                        let msg = format!(
                            "left out of the autotuning on {}: {}; the tuner times the other \
                             configs there",
                            target.arch(),
                            user_named(&kernel, &f.msg)
                        );
                        (span, msg)
                    });
                    let explained = !unpipelined.is_empty();
                    let warnings = unpipelined
                        .into_iter()
                        .map(|w| {
                            let span = kernel
                                .range_of(w.loc)
                                .map_or(item.sig.ident.span(), |r| r.start);
                            let stages = if t.ir.num_stages > 0 {
                                format!("`num_stages = {}`", t.ir.num_stages)
                            } else {
                                "the automatic stages".to_string()
                            };
                            let msg = format!(
                                "this `dot` runs without a pipeline ({stages} unused): {}; \
                                 `num_stages = 1` says no pipeline is wanted",
                                w.msg
                            );
                            (span, msg)
                        })
                        .chain(left_out)
                        .collect();
                    Ok(CompiledKernel {
                        kernel,
                        tile_ir: t.text,
                        implied: crate::analysis::implied::implied_loads(&t.ir)
                            .into_iter()
                            .map(|l| l.host)
                            .collect(),
                        variants,
                        warnings,
                        stages_unused: stages_unused(&t.ir, rings || explained, opts, item),
                    })
                }
                Err(InstanceError::Internal(e)) => Err(at(
                    e.loc,
                    format!("internal error in tile: {}", user_named(&kernel, &e.msg)),
                )),
                Err(InstanceError::Kernel(e)) => {
                    let (msg, label) = (user_named(&kernel, &e.msg), kernel.label());
                    // Which instance failed, where the message does not say it.
                    if kernel.instance.is_empty() || msg.contains(&label) {
                        Err(at(e.loc, format!("cannot compile this kernel: {msg}")))
                    } else {
                        Err(at(e.loc, format!("cannot compile {label}: {msg}")))
                    }
                }
                Err(InstanceError::Environment(e)) => {
                    Err(at(e.loc, format!("cannot build kernels here: {}", e.msg)))
                }
                Err(InstanceError::Moot) => Err(at(
                    None,
                    "internal error in tile: a module was left unbuilt although none before it \
                     failed"
                        .to_string(),
                )),
            }
        })
        .collect()
}

/// `msg` with the instance's symbol (`` `user_gemm__BM_128__O_f32` ``, as the GPU-level passes
/// and the back end name the IR they were given) replaced by what the user wrote
/// (`` `user_gemm` with BM = 128, O = f32 ``): the symbol is for the PTX entry and file names,
/// not for reading.
fn user_named(kernel: &crate::frontend::Kernel, msg: &str) -> String {
    msg.replace(&format!("`{}`", kernel.name), &kernel.label())
}

/// A kernel's compile cost ([`budget::cost`] summed over the LLVM modules it would build) and
/// the number of modules, without building them: what `tile-fuzz` prints beside compile times
/// to calibrate the budget.
pub fn compile_cost(
    item: &syn::ItemFn,
    fns: &FnTable,
    opts: &KernelOptions,
    dump: &DumpConfig,
) -> syn::Result<(u64, u64)> {
    let tile = tile_level(item, fns, opts, dump)?;
    Ok(planned_cost(&plan_all(&tile, dump, opts)))
}

/// The error for a kernel whose `modules` LLVM modules cost `cost` in all, over the budget of
/// its `configs` autotuning configs (1 when it is not autotuned): at the parameters when they
/// declare several specializations, else at the kernel's name; a second error points at the op
/// that costs the most.
/// The warning for a `num_stages` (the kernel's or an autotune config's) that sizes nothing: the
/// instance `tile` (tile-level IR) was given two or more stages, and its first variant has no
/// ring of shared buffers (`rings`) for them to size. Silent where `pipeline-dot` already
/// explained why a `dot` has none.
fn stages_unused(
    tile: &tile_core::ir::Function,
    rings: bool,
    opts: &KernelOptions,
    item: &syn::ItemFn,
) -> Option<(proc_macro2::Span, String)> {
    if tile.num_stages < 2 || rings {
        return None;
    }
    let span = opts
        .stages_span
        .or(opts.autotune.as_ref().map(|t| t.span))
        .unwrap_or(item.sig.ident.span());
    Some((
        span,
        format!(
            "`num_stages = {}` pipelines nothing in this kernel: tile's stages are a ring of \
             shared buffers that a `for` loop's tensor-core `dot` operands are copied through \
             ahead of use, or a `while` loop's loads of buffers the kernel only reads, issued an \
             iteration ahead (at most 32 values a thread), and no loop here has either; leave \
             `num_stages` out",
            tile.num_stages
        ),
    ))
}

fn over_budget(
    item: &syn::ItemFn,
    tile: &[TileLevel],
    cost: u64,
    modules: u64,
    configs: u64,
) -> syn::Error {
    let max = budget::MAX_COMPILE_COST;
    let n = tile.len();
    let mut e = if configs > 1 {
        syn::Error::new_spanned(
            &item.sig.inputs,
            format!(
                "with its {configs} autotuning configs, these parameters declare {n} \
                 specializations; with their variants and targets that is {modules} LLVM \
                 modules, whose code adds up to a compile cost of {cost}, and a kernel may cost \
                 at most {max} a config (about two seconds of compilation each): declare fewer \
                 `Const`/`Type` values, or use smaller tiles"
            ),
        )
    } else if n > 1 {
        syn::Error::new_spanned(
            &item.sig.inputs,
            format!(
                "these parameters declare {n} specializations; with their variants and targets \
                 that is {modules} LLVM modules, whose code adds up to a compile cost of {cost}, \
                 and a kernel may cost at most {max} (about two seconds of compilation): declare \
                 fewer `Const`/`Type` values, or use smaller tiles"
            ),
        )
    } else {
        syn::Error::new_spanned(
            &item.sig.ident,
            format!(
                "this kernel's {modules} LLVM modules (its variants and targets) have a compile \
                 cost of {cost}; a kernel may cost at most {max} (about two seconds of \
                 compilation): use smaller tiles or split the kernel"
            ),
        )
    };
    let costliest = tile
        .iter()
        .flat_map(|t| {
            let locs = t.ir.locs();
            budget::op_costs(&t.ir)
                .into_iter()
                .enumerate()
                .filter_map(move |(i, c)| Some((c, locs.get(i).copied().flatten()?)))
                .map(move |(c, loc)| (c, &t.kernel, loc))
        })
        .max_by_key(|&(c, _, _)| c);
    if let Some((c, kernel, loc)) = costliest {
        if let Some(r) = kernel.range_of(Some(loc)) {
            let each = if n > 1 { " in one specialization" } else { "" };
            e.combine(r.error(format!(
                "the costliest op: {c} of the compile cost per module{each}"
            )));
        }
    }
    e
}

/// Runs `f` on every item on the machine's threads (at most one per item) and returns the
/// results in item order.
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len())
        .max(1);
    if threads == 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::with_capacity(items.len()));
    std::thread::scope(|sc| {
        for _ in 0..threads {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                if let Ok(mut d) = done.lock() {
                    d.push((i, r));
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    done.sort_by_key(|d| d.0);
    done.into_iter().map(|d| d.1).collect()
}
