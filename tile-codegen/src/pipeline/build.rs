//! Building the planned modules (phases 2 and 3 of [`super::compile`]): LLVM for each on the
//! machine's threads, with the analyses planned beside its IR, then ptxas once per distinct
//! module under the spill policy; the first failure in module order stops the modules after it
//! ([`FirstFailure`]). Each module's dumps (`llvm`, `ptx`) are written here.

use std::collections::HashMap;

use tile_core::Target;

use super::plan::PlannedTarget;
use super::spill::{assemble_module, hopeless, spills};
use super::stages::DumpConfig;
use super::{parallel_map, Failure, InstanceError, TargetBuild};
use crate::llvm::{self, Artifacts};

/// The earliest failed module of a build, in the order [`compile`](super::compile) reports errors: module `j`
/// of the build is at `2j + 1`, and a specialization that failed before its modules were
/// planned at `2k`, with `k` the number of modules before it. A module later than the first
/// failure cannot change the kernel's error.
pub(super) struct FirstFailure(std::sync::atomic::AtomicUsize);

impl FirstFailure {
    pub(super) fn new() -> FirstFailure {
        FirstFailure(std::sync::atomic::AtomicUsize::new(usize::MAX))
    }

    /// The place of module `j`.
    pub(super) fn module(j: usize) -> usize {
        j.saturating_mul(2).saturating_add(1)
    }

    /// The place of a failure before module `k` (and after module `k - 1`).
    pub(super) fn before(k: usize) -> usize {
        k.saturating_mul(2)
    }

    pub(super) fn record(&self, place: usize) {
        self.0
            .fetch_min(place, std::sync::atomic::Ordering::Relaxed);
    }

    /// True when something before `place` has failed.
    pub(super) fn moot(&self, place: usize) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed) < place
    }
}

/// Phases 2 and 3 of [`compile`](super::compile) for every planned module, in `jobs`' order: LLVM for each on
/// the machine's threads, then, with [`DumpConfig::cubin`], ptxas once for each distinct
/// module and target (two variants often lower to the same PTX) under the spill policy of
/// [`spills`]. A module after the first failure ([`FirstFailure`]) is not built, and a ptxas
/// that is assembling one is stopped: a kernel refused for its registers would otherwise spend
/// seconds of ptxas on every other spilling module. (So with `TILE_DUMP`, whether the modules
/// after a failure are dumped depends on timing.)
pub(super) fn build_modules(
    jobs: &[&PlannedTarget],
    spare: &[bool],
    dump: &DumpConfig,
    first: &FirstFailure,
) -> Vec<Result<TargetBuild, InstanceError>> {
    // A spare job's failure (an autotuning config left out on its target) stops nothing.
    let is_spare = |j: usize| spare.get(j).copied().unwrap_or(false);
    let fails = |j: usize, e: &InstanceError| match e {
        InstanceError::Moot => false,
        InstanceError::Kernel(_) => !is_spare(j),
        _ => true,
    };
    let indexed: Vec<(usize, &PlannedTarget)> = jobs.iter().copied().enumerate().collect();
    let lowered = parallel_map(&indexed, |&(j, p)| {
        if first.moot(FirstFailure::module(j)) {
            return Err(InstanceError::Moot);
        }
        let r = lower_llvm(p);
        if r.as_ref().err().is_some_and(|e| fails(j, e)) {
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
            // A spill is the kernel's demand, as `InstanceError::Kernel` is.
            Ok(m) => m.cubin.is_err() && !is_spare(j),
            Err(e) => fails(j, e),
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

/// LLVM for one planned variant and target: LLVM IR and PTX, after the refusal of a module far
/// beyond a thread's registers ([`hopeless`]). Touches no tokens, so it may run on any thread.
fn lower_llvm(p: &PlannedTarget) -> Result<Artifacts, InstanceError> {
    if let Some(f) = hopeless(&p.ir, p.target) {
        return Err(InstanceError::Kernel(f));
    }
    lower_with(p, llvm::Options::default())
}

/// [`llvm::compile_analyzed`] for `p`, with its planned analyses, through the PTX cache
/// ([`crate::ptx_cache`]: `p.gpu_ir` is the text `p.ir` was parsed from, so it is the whole
/// input). Lowering can fail on what the kernel asks for (shared memory beyond the limit), not
/// only on a bug in tile: the failure says what failed, at the tokens of the op that needs it. A
/// bug (an internal [`llvm::CodegenError`], or a panic anywhere in the back end, caught here) is
/// an internal error, at the op where the lowering names one, else at the kernel.
pub(super) fn lower_with(
    p: &PlannedTarget,
    options: llvm::Options,
) -> Result<Artifacts, InstanceError> {
    let g = &p.ir;
    let compiled = std::panic::catch_unwind(|| {
        crate::ptx_cache::lower_cached(p.target, options, &p.gpu_ir, || {
            llvm::compile_analyzed(g, &p.analyses, p.target, options)
        })
    });
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
        tma: crate::analysis::descriptors::tma_copies(g),
    })
}
