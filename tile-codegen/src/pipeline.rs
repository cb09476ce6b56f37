//! The compilation pipeline for one kernel, as a readable list of stages, and the stage dumps.
//!
//! ```text
//! syn::ItemFn ──frontend──▶ tile IR ──canonicalize, cse, dce──▶ tile IR (embedded for the interpreter)
//!   for each specialization (what it assumes about the alignment of pointers and the divisibility
//!   of integers, and its warps: decided on the sm_80 GPU-level IR):
//!     for each target (sm_90a, sm_80):
//!       ──set param facts and target, pipeline-loads, assign-layouts, vectorize, pipeline-dot,
//!         cse, dce, hoist-loads──▶ GPU IR ──llvm──▶ LLVM IR ──O3, NVPTX──▶ PTX
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

use std::collections::HashMap;
use std::path::PathBuf;

use tile_core::ir::{print, verify, Elem, Function, OpKind};
use tile_core::Target;

use crate::budget;
use crate::frontend::{self, Kernel, KernelOptions};
use crate::llvm::{self, Artifacts};
use crate::passes::Pass;

/// Passes run at the tile level, in order.
pub const TILE_PASSES: &[Pass] = &[Pass::Canonicalize, Pass::Cse, Pass::Dce, Pass::HoistLoads];
/// Passes from the tile level to the GPU level, in order.
pub const GPU_PASSES: &[Pass] = &[
    Pass::PipelineLoads,
    Pass::AssignLayouts,
    Pass::Vectorize,
    Pass::PipelineDot,
    Pass::Cse,
    Pass::Dce,
    Pass::HoistLoads,
    Pass::InsertBarriers,
];

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
}

/// The target whose GPU-level IR decides what a specialization is (which divisibilities change
/// the IR, the warps of a variant); each target then gets its own GPU-level IR under those
/// assumptions.
const REFERENCE_TARGET: Target = Target::Sm80;

/// A kernel through the whole pipeline.
#[derive(Debug)]
pub struct CompiledKernel {
    /// The front end's result (parameters, written flags, unoptimized IR).
    pub kernel: Kernel,
    /// The optimized tile-level IR text (what the interpreter runs).
    pub tile_ir: String,
    /// Specializations, most specialized first.
    pub variants: Vec<CompiledVariant>,
}

/// Which stages to write, and where; which passes to leave out (for A/B measurements); and the
/// `ptxas` that assembles each target's cubin, if any.
#[derive(Clone, Debug, Default)]
pub struct DumpConfig {
    /// Stage names to write.
    pub stages: Vec<String>,
    /// Directory.
    pub dir: PathBuf,
    /// Passes not to run (`TILE_SKIP_PASSES`, comma-separated names). The passes that make the
    /// IR valid for the next level (`assign-layouts`) cannot be skipped.
    pub skip_passes: Vec<Pass>,
    /// The `ptxas` that assembles every target's PTX into a cubin embedded beside it (see
    /// [`cubin_ptxas`]); `None`: PTX only, which the driver compiles when it loads it.
    pub cubin: Option<PathBuf>,
}

/// The `ptxas` `#[tile_kernel]` assembles cubins with: [`crate::ptxas::find`]'s, unless
/// `TILE_CUBIN` turns cubins off ([`tile_core::runtime::cubins_off`]). With a cubin for its
/// architecture a device loads the kernel without compiling PTX (the driver's compilation is
/// ~25 ms per module on an H100).
pub fn cubin_ptxas() -> Option<PathBuf> {
    if tile_core::runtime::cubins_off() {
        None
    } else {
        crate::ptxas::find()
    }
}

impl DumpConfig {
    /// Reads `TILE_DUMP`, `TILE_DUMP_DIR` and `TILE_SKIP_PASSES`; a name in `TILE_SKIP_PASSES`
    /// that is not a pass, or names a pass that cannot be left out, is an error.
    pub fn from_env() -> Result<DumpConfig, String> {
        let stages: Vec<String> = std::env::var("TILE_DUMP")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let dir = std::env::var("TILE_DUMP_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| PathBuf::from("target/tile-dump"));
        let skip_passes =
            parse_skip_passes(&std::env::var("TILE_SKIP_PASSES").unwrap_or_default())?;
        Ok(DumpConfig {
            stages,
            dir,
            skip_passes,
            cubin: None,
        })
    }

    fn wants(&self, stage: &str) -> bool {
        self.stages.iter().any(|s| s == stage || s == "all")
    }

    fn write(&self, stage: &str, file: String, text: &str) -> Result<(), String> {
        if !self.wants(stage) {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("creating {}: {e}", self.dir.display()))?;
        let path = self.dir.join(file);
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
    }
}

/// The passes named in `spec` (comma-separated, as `TILE_SKIP_PASSES` holds them).
pub fn parse_skip_passes(spec: &str) -> Result<Vec<Pass>, String> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            let p = Pass::from_name(name).map_err(|e| format!("TILE_SKIP_PASSES: {e}"))?;
            if p.skippable() {
                Ok(p)
            } else {
                Err(format!(
                    "TILE_SKIP_PASSES: `{p}` cannot be left out (the GPU-level IR needs it)"
                ))
            }
        })
        .collect()
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

/// Runs `passes` in order, except those in `skip`. With debug assertions on (tests, debug
/// builds of the macro) the IR is verified after every pass, and an invalid IR names the pass
/// that made it and locates the op.
pub fn run_passes(f: &mut Function, passes: &[Pass], skip: &[Pass]) -> Result<(), Failure> {
    for &p in passes.iter().filter(|p| !skip.contains(p)) {
        p.run(f);
        if cfg!(debug_assertions) {
            if let Err(e) = verify(f) {
                return Err(Failure {
                    loc: e.0.first().and_then(|v| v.loc),
                    msg: format!("the IR is invalid after `{p}`:\n{e}"),
                });
            }
        }
    }
    Ok(())
}

/// Prints `f` and parses it again (ids dense and in program order), keeping the source
/// locations, and verifies the result.
fn reparse(f: &Function, what: &str) -> Result<(String, Function), Failure> {
    let text = print(f);
    let mut g = tile_core::ir::parse(&text).map_err(|e| Failure::from(e.to_string()))?;
    g.set_locs(&f.locs())
        .map_err(|e| Failure::from(format!("internal error: {what}: {e}")))?;
    verify(&g).map_err(|e| Failure {
        loc: e.0.first().and_then(|v| v.loc),
        msg: format!("{what} is invalid:\n{e}"),
    })?;
    Ok((text, g))
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
    let tile = tile_level(item, opts, dump)?;
    // Every specialization builds at least one variant for every target: a kernel far over the
    // budget even so (twice: the tile level's estimate is rougher) is refused before any
    // GPU-level work. The budget itself is checked on the GPU-level IR of every module.
    let targets = Target::ALL.len() as u64;
    let least = tile.iter().fold(0u64, |c, t| {
        c.saturating_add(t.cost.saturating_mul(targets))
    });
    let m = tile.len() as u64 * targets;
    if least > budget::MAX_COMPILE_COST.saturating_mul(2) {
        return Err(over_budget(item, &tile, least, m));
    }
    // Phase 1, per specialization: which variants, and their GPU-level IR per target (our own
    // passes). Phase 2, per variant and target: LLVM, the bulk of the time. Phase 3, with a
    // ptxas: a cubin per distinct module. All spread over the machine's threads, so even a
    // kernel of one specialization builds its six LLVM modules in parallel.
    let planned = plan_all(&tile, dump, opts);
    let (cost, m) = planned_cost(&planned);
    if cost > budget::MAX_COMPILE_COST {
        return Err(over_budget(item, &tile, cost, m));
    }
    // The modules in the order their errors are reported: the first failure in this order is
    // the kernel's error, so a module after a failure is not built (or its ptxas is stopped).
    // A specialization that failed in phase 1 fails before every module of the later ones.
    let first = FirstFailure::new();
    let mut jobs: Vec<&PlannedTarget> = Vec::new();
    for p in &planned {
        match p {
            Ok(vs) => jobs.extend(vs.iter().flat_map(|v| v.targets.iter())),
            Err(_) => first.record(FirstFailure::before(jobs.len())),
        }
    }
    let mut lowered = build_modules(&jobs, dump, &first).into_iter();
    let built: Vec<Result<Vec<CompiledVariant>, InstanceError>> = planned
        .into_iter()
        .map(|p| {
            p.and_then(|variants| {
                variants
                    .into_iter()
                    .map(|v| {
                        let targets = v
                            .targets
                            .iter()
                            .map(|_| {
                                lowered.next().unwrap_or_else(|| {
                                    Err(InstanceError::Internal(
                                        "a build thread failed".to_string().into(),
                                    ))
                                })
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        Ok(CompiledVariant {
                            divisibility: v.divisibility,
                            num_warps: v.num_warps,
                            targets,
                        })
                    })
                    .collect()
            })
        })
        .collect();
    tile.into_iter()
        .zip(built)
        .map(|(t, b)| {
            let kernel = t.kernel;
            let at = |loc: Option<u32>, msg: String| match kernel.range_of(loc) {
                Some(r) => r.error(msg),
                None => syn::Error::new_spanned(&item.sig.ident, msg),
            };
            match b {
                Ok(variants) => Ok(CompiledKernel {
                    kernel,
                    tile_ir: t.text,
                    variants,
                }),
                Err(InstanceError::Internal(e)) => {
                    Err(at(e.loc, format!("internal error in tile: {}", e.msg)))
                }
                Err(InstanceError::Kernel(e)) => {
                    Err(at(e.loc, format!("cannot compile this kernel: {}", e.msg)))
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

/// Phase 1 of [`compile`] for every specialization, on the machine's threads.
fn plan_all(
    tile: &[TileLevel],
    dump: &DumpConfig,
    opts: &KernelOptions,
) -> Vec<Result<Vec<PlannedVariant>, InstanceError>> {
    let instances: Vec<(&str, &Function)> = tile
        .iter()
        .map(|t| (t.kernel.name.as_str(), &t.ir))
        .collect();
    parallel_map(&instances, |&(name, ir)| {
        plan_instance(name, ir, dump, opts.aligned_only)
    })
}

/// The compile cost of the planned LLVM modules (each from its GPU-level IR), and how many
/// there are.
fn planned_cost(planned: &[Result<Vec<PlannedVariant>, InstanceError>]) -> (u64, u64) {
    planned
        .iter()
        .flat_map(|p| p.iter().flatten().flat_map(|v| &v.targets))
        .fold((0u64, 0u64), |(c, m), t| {
            (c.saturating_add(budget::cost(&t.ir)), m + 1)
        })
}

/// A kernel's compile cost ([`budget::cost`] summed over the LLVM modules it would build) and
/// the number of modules, without building them: what `tile-fuzz` prints beside compile times
/// to calibrate the budget.
pub fn compile_cost(
    item: &syn::ItemFn,
    opts: &KernelOptions,
    dump: &DumpConfig,
) -> syn::Result<(u64, u64)> {
    let tile = tile_level(item, opts, dump)?;
    Ok(planned_cost(&plan_all(&tile, dump, opts)))
}

/// One specialization after the tile-level passes.
pub struct TileLevel {
    /// The front end's kernel (name, parameters, spans).
    pub kernel: Kernel,
    /// The optimized tile-level IR, as text (embedded for the interpreter).
    pub text: String,
    /// The same, parsed (ids dense and in program order).
    pub ir: Function,
    /// Its [`budget::cost`].
    pub cost: u64,
}

/// The front end and the tile-level passes for every specialization of a kernel: what the
/// compile-cost budget is checked on before any GPU code is built.
pub fn tile_level(
    item: &syn::ItemFn,
    opts: &KernelOptions,
    dump: &DumpConfig,
) -> syn::Result<Vec<TileLevel>> {
    frontend::lower_kernel(item, opts)?
        .into_iter()
        .map(|kernel| {
            let mut f = kernel.ir.clone();
            let optimized = run_passes(&mut f, TILE_PASSES, &dump.skip_passes)
                .and_then(|()| reparse(&f, "tile-level IR"))
                .and_then(|(text, ir)| {
                    dump.write("ir", format!("{}.ir", kernel.name), &text)?;
                    Ok((text, ir))
                });
            match optimized {
                Ok((text, ir)) => {
                    let cost = budget::cost(&ir);
                    Ok(TileLevel {
                        kernel,
                        text,
                        ir,
                        cost,
                    })
                }
                Err(e) => {
                    let msg = format!("internal error in tile: {}", e.msg);
                    Err(match kernel.range_of(e.loc) {
                        Some(r) => r.error(msg),
                        None => syn::Error::new_spanned(&item.sig.ident, msg),
                    })
                }
            }
        })
        .collect()
}

/// The error for a kernel whose `modules` LLVM modules cost `cost` in all, over the budget: at
/// the parameters when they declare several specializations, else at the kernel's name; a
/// second error points at the op that costs the most.
fn over_budget(item: &syn::ItemFn, tile: &[TileLevel], cost: u64, modules: u64) -> syn::Error {
    let max = budget::MAX_COMPILE_COST;
    let n = tile.len();
    let mut e = if n > 1 {
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

/// The GPU-level IR of `tile` for `target` with parameter `i` assumed a multiple of `div[i]`.
fn gpu_level(
    tile: &Function,
    div: &[u32],
    skip: &[Pass],
    target: Target,
) -> Result<Function, Failure> {
    let mut g = tile.clone();
    for (i, &d) in div.iter().enumerate() {
        g.param_attrs[i].divisibility = d;
    }
    g.target = Some(target);
    run_passes(&mut g, GPU_PASSES, skip)?;
    Ok(g)
}

/// A specialization to compile: what it assumes per parameter, and its sm_80 GPU-level IR when
/// it was already built while deciding.
type Spec = (Vec<u32>, Option<Function>);

/// Warps for a variant whose tensor-core operands are copied element by element.
const ELEMENTWISE_COPY_WARPS: u32 = 8;

/// True when `g` fills a shared buffer with copies under 4 bytes: unaligned 16-bit operands,
/// which `cp.async` cannot move, copied synchronously with a 64-bit address and a predicate per
/// element. Those registers come on top of the accumulator, so such a variant runs with
/// [`ELEMENTWISE_COPY_WARPS`] warps (each thread holding half as much of every tile as with 4):
/// a 128 × 128 GEMM tile on 4 warps spilled otherwise. The aligned variants keep the kernel's
/// warps; the launch reads each variant's own.
fn copies_elementwise(g: &Function) -> bool {
    narrowest_copy(g).is_some_and(|bytes| bytes < 4)
}

/// The fewest bytes one `async_copy` instruction of `g` moves, if it has any.
fn narrowest_copy(g: &Function) -> Option<u32> {
    g.walk()
        .into_iter()
        .filter_map(|op| {
            let d = g.op(op);
            let OpKind::AsyncCopy { vec } = d.kind else {
                return None;
            };
            let size = d
                .operands
                .first()
                .and_then(|&b| g.ty(b).dtype())
                .map_or(4, |t| t.size_bytes());
            Some(vec * size)
        })
        .min()
}

/// The most elements of one tensor-core `dot` result that a thread holds.
fn accumulator_per_thread(g: &Function) -> u64 {
    let threads = 32 * u64::from(g.num_warps.max(1));
    g.walk()
        .into_iter()
        .filter(|&op| matches!(g.op(op).kind, OpKind::Dot { .. }))
        .filter_map(|op| g.op(op).results.first().map(|&r| g.ty(r)))
        .filter(|t| matches!(t.layout, Some(tile_core::ir::Layout::Mma(_))))
        .map(|t| t.numel() / threads)
        .max()
        .unwrap_or(0)
}

/// True when `g` should run on [`ELEMENTWISE_COPY_WARPS`] warps: it copies element by element
/// ([`copies_elementwise`]), or it copies less than 16 bytes at a time (four times the addresses
/// of the aligned variant, or more) while each thread holds 128 or more accumulator elements (a
/// 128 × 128 tile on 4 warps: a GELU epilogue then spilled on 4-byte copies).
fn wants_more_warps(g: &Function) -> bool {
    copies_elementwise(g)
        || (narrowest_copy(g).is_some_and(|bytes| bytes < 16) && accumulator_per_thread(g) >= 128)
}

/// The middle specialization, between the first one (`first`) and the one that assumes nothing
/// (`generic`, its GPU-level IR): pointers as in `first`, integers multiples of 2 at most. It
/// exists for kernels whose generic variant copies 16-bit tensor-core operands element by element
/// (see [`copies_elementwise`]) when 2-element multiples are enough for 4-byte `cp.async` copies:
/// a matrix of 10, 50 or 100 columns (the document's softmax regression) is not 16-byte aligned
/// row by row, but its rows are 4-byte aligned, and with asynchronous copies its `dot` loop is
/// pipelined instead of waiting for each tile. `None` where it would change nothing; otherwise
/// the assumptions with their GPU-level IR.
fn even_rows(
    tile: &Function,
    first: &[u32],
    generic: &Function,
    skip: &[Pass],
) -> Result<Option<Spec>, Failure> {
    if !copies_elementwise(generic) {
        return Ok(None);
    }
    let params = tile.params();
    let pairs: Vec<u32> = first
        .iter()
        .zip(params.iter())
        .map(|(&d, &p)| match tile.ty(p).elem {
            Elem::Scalar(_) => d.min(2),
            _ => d,
        })
        .collect();
    if pairs == first {
        return Ok(None);
    }
    let g = gpu_level(tile, &pairs, skip, REFERENCE_TARGET)?;
    Ok((!copies_elementwise(&g)).then_some((pairs, Some(g))))
}

/// What the first specialization assumes of each parameter: every pointer (`candidates[i]` of 16)
/// 16-byte aligned, and each integer the smallest power of two (16 at most) that leaves the
/// GPU-level IR as it is with all of them at 16. An integer used only in comparisons or as a loop
/// bound (`qk_heads = 40`) then assumes nothing, and one whose multiples only need to keep f16
/// rows 16-byte aligned (a GEMM's `k = 1000`) assumes 8, so neither pushes a launch onto the
/// unspecialized variant.
fn needed_divisibility(
    tile: &Function,
    candidates: &[u32],
    skip: &[Pass],
) -> Result<Vec<u32>, Failure> {
    let body = |div: &[u32]| -> Result<String, Failure> {
        // The signature line spells the assumptions out; the layout aliases above it and the body
        // below it are what the assumptions change.
        Ok(print(&gpu_level(tile, div, skip, REFERENCE_TARGET)?)
            .lines()
            .filter(|l| !l.starts_with("kernel @"))
            .collect::<Vec<_>>()
            .join("\n"))
    };
    let full = body(candidates)?;
    let mut needed = candidates.to_vec();
    for (i, &p) in tile.params().iter().enumerate() {
        if !matches!(tile.ty(p).elem, Elem::Scalar(_)) {
            continue;
        }
        while needed[i] > 1 {
            let keep = needed[i];
            needed[i] = keep / 2;
            if body(&needed)? != full {
                needed[i] = keep;
                break;
            }
        }
    }
    Ok(needed)
}

/// A variant of a specialization, planned: what it assumes, its warps, and its GPU-level IR per
/// target, ready for LLVM.
struct PlannedVariant {
    divisibility: Vec<u32>,
    num_warps: u32,
    targets: Vec<PlannedTarget>,
}

/// One variant's GPU-level IR for one target.
struct PlannedTarget {
    target: Target,
    /// The dump files' stem: `{instance}.v{variant}.{arch}`.
    stem: String,
    gpu_ir: String,
    ir: Function,
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

/// One instance (the optimized tile-level IR `tile` of the kernel instance `name`) through the
/// GPU-level passes, for every specialization (only the first with `aligned_only`,
/// `specialize = aligned`) and target. Touches no tokens, so it may run on any thread.
fn plan_instance(
    name: &str,
    tile: &Function,
    dump: &DumpConfig,
    aligned_only: bool,
) -> Result<Vec<PlannedVariant>, InstanceError> {
    let internal = InstanceError::Internal;

    // Specializations: every pointer 16-byte aligned and the integers that matter multiples of
    // what matters (16 at most), then nothing assumed.
    let candidates: Vec<u32> = tile
        .params()
        .iter()
        .map(|&p| {
            let can = matches!(
                tile.ty(p).elem,
                Elem::Ptr(_) | Elem::Scalar(tile_core::ir::DType::I32 | tile_core::ir::DType::I64)
            );
            if can {
                16
            } else {
                1
            }
        })
        .collect();
    let first = needed_divisibility(tile, &candidates, &dump.skip_passes).map_err(internal)?;
    let mut specs = vec![(first.clone(), None)];
    if !aligned_only && candidates.iter().any(|&c| c > 1) {
        let none = vec![1; candidates.len()];
        let generic =
            gpu_level(tile, &none, &dump.skip_passes, REFERENCE_TARGET).map_err(internal)?;
        if let Some(pairs) =
            even_rows(tile, &first, &generic, &dump.skip_passes).map_err(internal)?
        {
            specs.push(pairs);
        }
        specs.push((none, Some(generic)));
    }
    let mut variants = Vec::new();
    for (vi, (divisibility, built)) in specs.into_iter().enumerate() {
        let reference = match built {
            Some(g) => g,
            None => gpu_level(tile, &divisibility, &dump.skip_passes, REFERENCE_TARGET)
                .map_err(internal)?,
        };
        let mut base = tile.clone();
        if reference.num_warps < ELEMENTWISE_COPY_WARPS && wants_more_warps(&reference) {
            base.num_warps = ELEMENTWISE_COPY_WARPS;
        }
        let mut targets = Vec::new();
        for t in Target::ALL {
            let g = gpu_level(&base, &divisibility, &dump.skip_passes, t).map_err(internal)?;
            let (gpu_ir, g) = reparse(&g, "GPU-level IR").map_err(internal)?;
            let stem = format!("{}.v{vi}.{}", name, t.arch());
            dump.write("gpu-ir", format!("{stem}.gpu-ir"), &gpu_ir)
                .map_err(|e| internal(e.into()))?;
            targets.push(PlannedTarget {
                target: t,
                stem,
                gpu_ir,
                ir: g,
            });
        }
        variants.push(PlannedVariant {
            divisibility,
            num_warps: base.num_warps,
            targets,
        });
    }
    Ok(variants)
}

/// The spill policy, where a build has a ptxas ([`DumpConfig::cubin`]): ptxas trades registers
/// for occupancy on its own, and now and then spills a few bytes to run more programs per SM
/// than a kernel needs (a fuzzed 4-warp kernel: 96 registers and 24 bytes of spills, where 155
/// registers hold it). A module that spills below the registers its warps allow is lowered
/// again asking for one program per SM (`.minnctapersm 1`: every register a thread may have at
/// its warps); one that spills even so, or spilled at that limit already, holds more than a
/// thread's registers, and the kernel is refused with an error at the op
/// where [`crate::registers::pressure`] finds the most values live. Modules that do not spill
/// keep ptxas's own choice. Without a ptxas (or with `TILE_CUBIN=0`) the PTX is not checked,
/// and the driver's compiler makes the same choice ptxas would have.
fn spills(g: &Function, t: Target, r: &crate::ptxas::Report) -> Failure {
    let p = crate::registers::pressure(g);
    let loc = peak_loc(g, &p);
    Failure {
        msg: format!(
            "on {arch} with {w} a thread has {limit} registers, and this kernel needs more: \
             ptxas spilled {b} bytes to local memory (tile estimates {est} registers live at \
             this op); hold smaller tiles at once, or use more warps",
            arch = t.arch(),
            w = warps(g.num_warps),
            limit = crate::registers::limit(g.num_warps),
            b = r.spill_stores.max(r.spill_loads),
            est = p.registers,
        ),
        loc,
    }
}

/// How far over a thread's registers [`crate::registers::pressure`] may put a module before it
/// is refused without LLVM or ptxas: 5/2. On the repository's modules and 2,966 fuzzed ones
/// (`scripts/register_calibration.py`) the estimate reaches at most 1.66 times the limit where
/// ptxas does not spill; kernels far beyond it cost seconds of LLVM and ptxas only to be
/// refused by the spill check.
const HOPELESS: (u64, u64) = (5, 2);

/// The refusal of a module whose estimated registers are more than [`HOPELESS`] times what a
/// thread has, whether or not a ptxas is at hand.
fn hopeless(g: &Function, t: Target) -> Option<Failure> {
    let p = crate::registers::pressure(g);
    let limit = crate::registers::limit(g.num_warps);
    if p.registers.saturating_mul(HOPELESS.1) <= limit.saturating_mul(HOPELESS.0) {
        return None;
    }
    Some(Failure {
        msg: format!(
            "on {arch} with {w} a thread has {limit} registers, and this kernel keeps about \
             {est} live at this op (tile's estimate), far more than fit; hold smaller tiles at \
             once, or use more warps",
            arch = t.arch(),
            w = warps(g.num_warps),
            est = p.registers,
        ),
        loc: peak_loc(g, &p),
    })
}

/// "1 warp", "4 warps".
fn warps(n: u32) -> String {
    if n == 1 {
        "1 warp".to_string()
    } else {
        format!("{n} warps")
    }
}

/// The source location of the op where `p` peaks.
fn peak_loc(g: &Function, p: &crate::registers::Pressure) -> Option<u32> {
    p.at.and_then(|op| {
        let i = g.walk().iter().position(|&o| o == op)?;
        g.locs().get(i).copied().flatten()
    })
}

/// The earliest failed module of a build, in the order [`compile`] reports errors: module `j`
/// of the build is at `2j + 1`, and a specialization that failed before its modules were
/// planned at `2k`, with `k` the number of modules before it. A module later than the first
/// failure cannot change the kernel's error.
struct FirstFailure(std::sync::atomic::AtomicUsize);

impl FirstFailure {
    fn new() -> FirstFailure {
        FirstFailure(std::sync::atomic::AtomicUsize::new(usize::MAX))
    }

    /// The place of module `j`.
    fn module(j: usize) -> usize {
        j.saturating_mul(2).saturating_add(1)
    }

    /// The place of a failure before module `k` (and after module `k - 1`).
    fn before(k: usize) -> usize {
        k.saturating_mul(2)
    }

    fn record(&self, place: usize) {
        self.0
            .fetch_min(place, std::sync::atomic::Ordering::Relaxed);
    }

    /// True when something before `place` has failed.
    fn moot(&self, place: usize) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed) < place
    }
}

/// Phases 2 and 3 of [`compile`] for every planned module, in `jobs`' order: LLVM for each on
/// the machine's threads, then, with [`DumpConfig::cubin`], ptxas once for each distinct
/// module and target (two variants often lower to the same PTX) under the spill policy of
/// [`spills`]. A module after the first failure ([`FirstFailure`]) is not built, and a ptxas
/// that is assembling one is stopped: a kernel refused for its registers would otherwise spend
/// seconds of ptxas on every other spilling module. (So with `TILE_DUMP`, whether the modules
/// after a failure are dumped depends on timing.)
fn build_modules(
    jobs: &[&PlannedTarget],
    dump: &DumpConfig,
    first: &FirstFailure,
) -> Vec<Result<TargetBuild, InstanceError>> {
    let indexed: Vec<(usize, &PlannedTarget)> = jobs.iter().copied().enumerate().collect();
    let lowered = parallel_map(&indexed, |&(j, p)| {
        if first.moot(FirstFailure::module(j)) {
            return Err(InstanceError::Moot);
        }
        let r = lower_llvm(p);
        if r.is_err() {
            first.record(FirstFailure::module(j));
        }
        r
    });
    let Some(ptxas) = &dump.cubin else {
        return jobs
            .iter()
            .zip(lowered)
            .map(|(p, a)| finish_module(p, a?, Ok(None), dump))
            .collect();
    };
    // The distinct modules (target, PTX and the dynamic shared memory the launch passes, which
    // the PTX does not say), each with its first job; `of[j]`: job j's module.
    let mut distinct: Vec<(usize, &PlannedTarget, &Artifacts)> = Vec::new();
    let mut seen: HashMap<(Target, &str, u32), usize> = HashMap::new();
    let of: Vec<Option<usize>> = jobs
        .iter()
        .zip(&lowered)
        .enumerate()
        .map(|(j, (p, a))| {
            let a = a.as_ref().ok()?;
            let key = (p.target, a.ptx.as_str(), a.dyn_shared_bytes);
            Some(*seen.entry(key).or_insert_with(|| {
                distinct.push((j, p, a));
                distinct.len() - 1
            }))
        })
        .collect();
    let assembled = parallel_map(&distinct, |&(j, p, a)| {
        let place = FirstFailure::module(j);
        let r = assemble_module(p, a, ptxas, &|| first.moot(place));
        let failed = match &r {
            Ok(m) => m.cubin.is_err(),
            Err(e) => !matches!(e, InstanceError::Moot),
        };
        if failed {
            first.record(place);
        }
        r
    });
    jobs.iter()
        .zip(lowered)
        .zip(of)
        .map(|((p, a), d)| {
            let a = a?;
            let m = match d.map(|d| &assembled[d]) {
                Some(Ok(m)) => m,
                Some(Err(e)) => return Err(e.clone()),
                None => return Err(InstanceError::Moot),
            };
            let a = m.relowered.clone().unwrap_or(a);
            finish_module(p, a, m.cubin.clone().map(Some), dump)
        })
        .collect()
}

/// What ptxas made of one distinct module.
struct Assembled {
    /// The artifacts of a second lowering, where the spill policy asked for one.
    relowered: Option<Artifacts>,
    /// The cubin, or the report of a module that spills.
    cubin: Result<Vec<u8>, crate::ptxas::Report>,
}

/// LLVM for one planned variant and target: LLVM IR and PTX, after the refusal of a module far
/// beyond a thread's registers ([`hopeless`]). Touches no tokens, so it may run on any thread.
fn lower_llvm(p: &PlannedTarget) -> Result<Artifacts, InstanceError> {
    if let Some(f) = hopeless(&p.ir, p.target) {
        return Err(InstanceError::Kernel(f));
    }
    lower_with(p, llvm::Options::default())
}

/// [`llvm::compile_with`] for `p`. Lowering can fail on what the kernel asks for (shared memory
/// beyond the limit), not only on a bug in tile: the failure says what failed, at the tokens of
/// the op that needs it. A bug (an internal [`llvm::CodegenError`], or a panic anywhere in the
/// back end, caught here) is an internal error, at the op where the lowering names one, else at
/// the kernel.
fn lower_with(p: &PlannedTarget, options: llvm::Options) -> Result<Artifacts, InstanceError> {
    let g = &p.ir;
    let compiled = std::panic::catch_unwind(|| llvm::compile_with(g, p.target, options));
    let compiled = compiled.map_err(|payload| {
        InstanceError::Internal(Failure::from(format!(
            "kernel `{}` ({}): the LLVM back end panicked: {}",
            g.name,
            p.target.arch(),
            llvm::panic_message(payload.as_ref())
        )))
    })?;
    compiled.map_err(|e| {
        let failure = Failure {
            loc: e.op.and_then(|id| g.op(id).loc),
            msg: e.to_string(),
        };
        if e.internal {
            InstanceError::Internal(failure)
        } else {
            InstanceError::Kernel(failure)
        }
    })
}

/// ptxas on one module under the spill policy of [`spills`]; `Err(Moot)` when `stop` said so
/// while it ran. ptxas refusing our PTX is a bug in tile, not in the kernel.
fn assemble_module(
    p: &PlannedTarget,
    a: &Artifacts,
    ptxas: &std::path::Path,
    stop: &dyn Fn() -> bool,
) -> Result<Assembled, InstanceError> {
    let arch = p.target.arch();
    let assemble = |a: &Artifacts| {
        if stop() {
            return Err(InstanceError::Moot);
        }
        match crate::ptxas::cached_cubin_until(ptxas, &a.ptx, arch, stop) {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(InstanceError::Moot),
            Err(crate::ptxas::PtxasError::Refused(e)) => Err(InstanceError::Internal(e.into())),
            Err(crate::ptxas::PtxasError::Environment(e)) => {
                Err(InstanceError::Environment(e.into()))
            }
        }
    };
    let (report, cubin) = assemble(a)?;
    // One program per SM only lifts ptxas's own cap: a module that spilled with every register
    // its warps allow would spill again, so it is not lowered twice.
    let at_limit = u64::from(report.registers) >= crate::registers::limit(p.ir.num_warps);
    let (relowered, report, cubin) = if report.spills() && !a.one_program_per_sm && !at_limit {
        if stop() {
            return Err(InstanceError::Moot);
        }
        let b = lower_with(
            p,
            llvm::Options {
                one_program_per_sm: true,
            },
        )?;
        let (report, cubin) = assemble(&b)?;
        (Some(b), report, cubin)
    } else {
        (None, report, cubin)
    };
    Ok(Assembled {
        relowered,
        cubin: if report.spills() {
            Err(report)
        } else {
            Ok(cubin)
        },
    })
}

/// One module's [`TargetBuild`], or the spill refusal of [`spills`]; its dumps are written
/// first, so that the PTX that spilled can be looked at.
fn finish_module(
    p: &PlannedTarget,
    a: Artifacts,
    cubin: Result<Option<Vec<u8>>, crate::ptxas::Report>,
    dump: &DumpConfig,
) -> Result<TargetBuild, InstanceError> {
    let internal = InstanceError::Internal;
    let (g, t, stem) = (&p.ir, p.target, &p.stem);
    dump.write("llvm", format!("{stem}.ll"), &a.llvm_ir)
        .map_err(|e| internal(e.into()))?;
    dump.write("ptx", format!("{stem}.ptx"), &a.ptx)
        .map_err(|e| internal(e.into()))?;
    let cubin = cubin.map_err(|report| InstanceError::Kernel(spills(g, t, &report)))?;
    Ok(TargetBuild {
        target: t,
        gpu_ir: p.gpu_ir.clone(),
        artifacts: a,
        cubin,
    })
}
