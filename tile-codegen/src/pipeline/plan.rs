//! The specialization planner (phase 1 of [`super::compile`]): which variants an instance gets
//! (what each assumes of its parameters' alignment and divisibility, and its warps), decided on
//! the GPU-level IR of the reference target, and each variant's GPU-level IR for every target,
//! with the analyses the lowering reads, ready for LLVM.

use tile_core::ir::{print, BinOp, DType, Elem, Function, OpKind};
use tile_core::runtime::EQUALS_ONE;
use tile_core::Target;

use super::stages::{self, gpu_level, reparse, DumpConfig, TileLevel};
use super::warps::{copies_elementwise, wants_more_warps, ELEMENTWISE_COPY_WARPS};
use super::{parallel_map, Failure, InstanceError};
use crate::analysis::{descriptors, Analyses};
use crate::budget;
use crate::frontend::KernelOptions;
use crate::llvm;
use crate::passes::Pass;

/// The target whose GPU-level IR decides what a specialization is (which divisibilities change
/// the IR, the warps of a variant); each target then gets its own GPU-level IR under those
/// assumptions.
const REFERENCE_TARGET: Target = Target::Sm80;

/// A specialization to compile: what it assumes per parameter, and its sm_80 GPU-level IR when
/// it was already built while deciding.
type Spec = (Vec<u32>, Option<Function>);

/// Phase 1 of [`compile`](super::compile) for every specialization, on the machine's threads.
pub(super) fn plan_all(
    tile: &[TileLevel],
    dump: &DumpConfig,
    opts: &KernelOptions,
) -> Vec<Result<Vec<PlannedVariant>, InstanceError>> {
    let instances: Vec<(&str, &Function)> = tile
        .iter()
        .map(|t| (t.kernel.name.as_str(), &t.ir))
        .collect();
    // A panic in a pass or an analysis (a state the verifier rules out, met anyway) is a bug in
    // tile: an internal error of this instance, not a crash of the build.
    // The options hold spans (`autotune`), which never leave the macro's thread.
    let (aligned_only, unit_only) = (opts.aligned_only, opts.unit_only);
    parallel_map(&instances, |&(name, ir)| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            plan_instance(name, ir, dump, aligned_only, unit_only)
        }))
        .unwrap_or_else(|payload| {
            Err(InstanceError::Internal(Failure::from(format!(
                "kernel `{name}`: internal error in tile: a GPU-level pass panicked: {}",
                llvm::panic_message(payload.as_ref())
            ))))
        })
    })
}

/// The compile cost of the planned LLVM modules (each from its GPU-level IR), and how many
/// there are.
pub(super) fn planned_cost(planned: &[Result<Vec<PlannedVariant>, InstanceError>]) -> (u64, u64) {
    planned
        .iter()
        .flat_map(|p| p.iter().flatten().flat_map(|v| &v.targets))
        .fold((0u64, 0u64), |(c, m), t| {
            (c.saturating_add(budget::cost(&t.ir)), m + 1)
        })
}

/// One instance (the optimized tile-level IR `tile` of the kernel instance `name`) through the
/// GPU-level passes, for every specialization (only the first with `aligned_only`,
/// `specialize = aligned`; only the unit-stride one, where there is one, with `unit_only`,
/// `specialize = unit`) and target. Touches no tokens, so it may run on any thread.
fn plan_instance(
    name: &str,
    tile: &Function,
    dump: &DumpConfig,
    aligned_only: bool,
    unit_only: bool,
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
    if !aligned_only || unit_only {
        let ones = unit_strides(tile, &candidates, &dump.skip_passes).map_err(internal)?;
        if !ones.is_empty() {
            let mut unit = candidates.clone();
            for i in ones {
                unit[i] = EQUALS_ONE;
            }
            let unit = needed_divisibility(tile, &unit, &dump.skip_passes).map_err(internal)?;
            if unit_only {
                specs.clear();
            }
            specs.insert(0, (unit, None));
        }
    }
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
        let mut unpipelined = Vec::new();
        let mut rings = false;
        for t in Target::ALL {
            let g = gpu_level(&base, &divisibility, &dump.skip_passes, t).map_err(internal)?;
            // What the first variant on the newest target leaves unpipelined, the user hears.
            if vi == 0 && t == Target::ALL[0] {
                unpipelined = stages::unpipelined(&base, &divisibility, &dump.skip_passes, t, &g)
                    .map_err(internal)?;
                rings = stages::has_rings(&g) || crate::passes::prefetch_rows::applies(&base);
            }
            let (gpu_ir, g) = reparse(&g, "GPU-level IR").map_err(internal)?;
            let stem = format!("{}.v{vi}.{}", name, t.arch());
            dump.write("gpu-ir", format!("{stem}.gpu-ir"), &gpu_ir)
                .map_err(|e| internal(e.into()))?;
            let analyses = Analyses::of(&g, llvm::scratch_bytes);
            targets.push(PlannedTarget {
                target: t,
                stem,
                gpu_ir,
                ir: g,
                analyses,
            });
        }
        variants.push(PlannedVariant {
            unpipelined,
            rings,
            divisibility,
            num_warps: base.num_warps,
            targets,
        });
    }
    Ok(variants)
}

/// What the first specialization assumes of each parameter: every pointer (`candidates[i]` of 16)
/// 16-byte aligned, and each integer the smallest power of two (16 at most) that leaves every
/// target's GPU-level IR as it is with all of them at 16. An integer used only in comparisons or
/// as a loop bound (`qk_heads = 40`) then assumes nothing, and one whose multiples only need to
/// keep f16 rows 16-byte aligned (a GEMM's `k = 1000`) assumes 8, so neither pushes a launch onto
/// the unspecialized variant.
fn needed_divisibility(
    tile: &Function,
    candidates: &[u32],
    skip: &[Pass],
) -> Result<Vec<u32>, Failure> {
    let body = |div: &[u32]| -> Result<String, Failure> {
        // The signature line spells the assumptions out; the layout aliases above it and the body
        // below it are what the assumptions change. Every target's: a `wgmma` epilogue stores
        // 16 bytes a thread from a blocked tile where sm_80's stores pairs straight from the
        // `mma` layout, so only sm_90a's IR shows that the row stride's 8 matters.
        let mut text = Vec::new();
        for t in Target::ALL {
            let printed = print(&gpu_level(tile, div, skip, t)?);
            text.extend(
                printed
                    .lines()
                    .filter(|l| !l.starts_with("kernel @"))
                    .map(str::to_owned),
            );
        }
        Ok(text.join("\n"))
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

/// The integer parameters worth a specialization that assumes them 1 (on top of `first`, the
/// other assumptions at their most): those
/// that multiply something (a stride, `offs_k * stride_ak`) and, assumed 1, widen the kernel's
/// memory accesses — Triton's unit-stride specialization, which is what makes a kernel that
/// takes every stride as an argument copy whole vectors along its contiguous dimension.
fn unit_strides(tile: &Function, first: &[u32], skip: &[Pass]) -> Result<Vec<usize>, Failure> {
    let params = tile.params();
    let multiplies = |p: tile_core::ir::ValueId| {
        tile.walk().into_iter().any(|op| {
            let d = tile.op(op);
            match d.kind {
                OpKind::Binary(BinOp::Mul) => d.operands.iter().any(|&o| {
                    o == p
                        || tile.def_op(o).is_some_and(|s| {
                            matches!(tile.op(s).kind, OpKind::Splat) && tile.op(s).operands[0] == p
                        })
                }),
                // A descriptor's stride (widened to `i64`), which `lower-descriptors` multiplies.
                OpKind::DescLoad { .. } | OpKind::DescStore { .. } => {
                    let rank = descriptors::desc_rank(tile, op);
                    let (_, _, strides, _) = descriptors::desc_operands(&d.operands, rank);
                    strides.iter().any(|&s| {
                        s == p
                            || tile.def_op(s).is_some_and(|c| {
                                matches!(tile.op(c).kind, OpKind::Cast)
                                    && tile.op(c).operands[0] == p
                            })
                    })
                }
                _ => false,
            }
        })
    };
    let candidates: Vec<usize> = params
        .iter()
        .enumerate()
        .filter(|&(_, &p)| matches!(tile.ty(p).elem, Elem::Scalar(DType::I32 | DType::I64)))
        .filter(|&(_, &p)| multiplies(p))
        .map(|(i, _)| i)
        .collect();
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let base = access_widths(&gpu_level(tile, first, skip, REFERENCE_TARGET)?);
    let mut out = Vec::new();
    for i in candidates {
        let mut div = first.to_vec();
        div[i] = EQUALS_ONE;
        if access_widths(&gpu_level(tile, &div, skip, REFERENCE_TARGET)?) > base {
            out.push(i);
        }
    }
    Ok(out)
}

/// The elements the kernel's loads, stores and asynchronous copies move per instruction, summed.
fn access_widths(g: &Function) -> u64 {
    g.walk()
        .into_iter()
        .map(|op| match g.op(op).kind {
            OpKind::Load { vec, .. } | OpKind::Store { vec, .. } | OpKind::AsyncCopy { vec } => {
                u64::from(vec)
            }
            _ => 0,
        })
        .sum()
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

/// A variant of a specialization, planned: what it assumes, its warps, and its GPU-level IR per
/// target, ready for LLVM.
pub(super) struct PlannedVariant {
    /// The tensor-core `dot`s in loops that read their operands without a pipelined ring, and
    /// why (on the newest target; gathered for the first variant only).
    pub(super) unpipelined: Vec<Failure>,
    /// Whether some loop reads its operands from a ring of shared buffers (`cp.async` or TMA
    /// copies: what `num_stages` sizes), on the newest target; for the first variant only.
    pub(super) rings: bool,
    /// Per IR parameter, what the variant assumes it is a multiple of.
    pub(super) divisibility: Vec<u32>,
    /// Warps per program.
    pub(super) num_warps: u32,
    /// Its module per target, newest target first.
    pub(super) targets: Vec<PlannedTarget>,
}

/// One variant's GPU-level IR for one target, and the analyses the lowering reads of it.
pub(super) struct PlannedTarget {
    pub(super) target: Target,
    /// The dump files' stem: `{instance}.v{variant}.{arch}`.
    pub(super) stem: String,
    /// The GPU-level IR as text.
    pub(super) gpu_ir: String,
    /// The same, parsed.
    pub(super) ir: Function,
    /// Its analyses ([`Analyses`]), with the back end's scratch bytes.
    pub(super) analyses: Analyses,
}
