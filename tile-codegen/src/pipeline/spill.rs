//! The register policy: a module refused before LLVM when its estimated registers are far
//! beyond what a thread has ([`hopeless`]), and, where a build has a ptxas, the spill policy
//! ([`spills`]): ptxas once per distinct module, a second lowering asking for one program per SM
//! where ptxas spilled below the limit, and a refusal located at the op of peak pressure where it
//! spills even so; and the occupancy policy ([`two_would_fit`]): a second lowering asking for two
//! programs per SM where registers alone, and not by much, keep the second one off.

use tile_core::ir::Function;
use tile_core::Target;

use super::build::lower_with;
use super::plan::PlannedTarget;
use super::{Failure, InstanceError};
use crate::llvm::{self, Artifacts};

/// How far over a thread's registers [`crate::registers::pressure`] may put a module before it
/// is refused without LLVM or ptxas: 5/2. On the repository's modules and 2,966 fuzzed ones
/// (`scripts/register_calibration.py`) the estimate reaches at most 1.66 times the limit where
/// ptxas does not spill; kernels far beyond it cost seconds of LLVM and ptxas only to be
/// refused by the spill check.
const HOPELESS: (u64, u64) = (5, 2);

/// The refusal of a module whose estimated registers are more than [`HOPELESS`] times what a
/// thread has, whether or not a ptxas is at hand.
pub(super) fn hopeless(g: &Function, t: Target) -> Option<Failure> {
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
            w = warp_count(g.num_warps),
            est = p.registers,
        ),
        loc: peak_loc(g, &p),
    })
}

/// The spill policy, where a build has a ptxas ([`DumpConfig::cubin`](super::DumpConfig::cubin)): ptxas trades registers
/// for occupancy on its own, and now and then spills a few bytes to run more programs per SM
/// than a kernel needs (a fuzzed 4-warp kernel: 96 registers and 24 bytes of spills, where 155
/// registers hold it). A module that spills below the registers its warps allow is lowered
/// again asking for one program per SM (`.minnctapersm 1`: every register a thread may have at
/// its warps); one that spills even so, or spilled at that limit already, holds more than a
/// thread's registers, and the kernel is refused with an error at the op
/// where [`crate::registers::pressure`] finds the most values live. Modules that do not spill
/// keep ptxas's own choice. Without a ptxas (or with `TILE_CUBIN=0`) the PTX is not checked,
/// and the driver's compiler makes the same choice ptxas would have.
pub(super) fn spills(g: &Function, t: Target, r: &crate::ptxas::Report) -> Failure {
    let p = crate::registers::pressure(g);
    let loc = peak_loc(g, &p);
    Failure {
        msg: format!(
            "on {arch} with {w} a thread has {limit} registers, and this kernel needs more: \
             ptxas spilled {b} bytes to local memory (tile estimates {est} registers live at \
             this op); hold smaller tiles at once, or use more warps",
            arch = t.arch(),
            w = warp_count(g.num_warps),
            limit = crate::registers::limit(g.num_warps),
            b = r.spill_stores.max(r.spill_loads),
            est = p.registers,
        ),
        loc,
    }
}

/// "1 warp", "4 warps".
fn warp_count(n: u32) -> String {
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

/// How far over two programs' registers (as a fraction) a module may be for [`two_would_fit`]
/// to ask ptxas for two programs per SM.
const TWO_PROGRAMS_SLACK: (u64, u64) = (5, 4);

/// Whether a module that ptxas assembled without spills for one program per SM should be
/// assembled again asking for two (`.minnctapersm 2`), kept if that does not spill: its
/// registers alone keep a second program off the SM (more than `65536 / (2 · threads)`, so
/// with 8 warps more than 128), by at most a quarter (beyond that ptxas would spill or
/// recompute too much to fit), while its shared memory and threads would let two run. A
/// loop whose latency one program's warps do not hide, as attention's between its two
/// products, then has a second program's to overlap it: the causal flash-attention forward
/// at head dimension 64 fits in 128 registers where ptxas, left free, took 154.
fn two_would_fit(t: Target, num_warps: u32, a: &Artifacts, r: &crate::ptxas::Report) -> bool {
    const SM_THREADS: u64 = 2048;
    let threads = u64::from(num_warps) * 32;
    // A thread's registers when two programs' warps share the register file.
    let two = crate::registers::limit(2 * num_warps);
    let regs = u64::from(r.registers);
    // The driver keeps 1 KiB of an SM's shared memory per program.
    let shared = r.shared_bytes + u64::from(a.dyn_shared_bytes) + 1024;
    a.programs_per_sm <= 1
        && two < Target::MAX_REGISTERS_PER_THREAD
        && regs > two
        && regs * TWO_PROGRAMS_SLACK.1 <= two * TWO_PROGRAMS_SLACK.0
        && 2 * shared <= t.shared_bytes_per_sm()
        && 2 * threads <= SM_THREADS
}

/// What ptxas made of one distinct module.
pub(super) struct Assembled {
    /// The artifacts of a second lowering, where the spill policy asked for one.
    pub(super) relowered: Option<Artifacts>,
    /// The cubin, or the report of a module that spills.
    pub(super) cubin: Result<Vec<u8>, crate::ptxas::Report>,
}

/// ptxas on one module under the spill policy of [`spills`]; `Err(Moot)` when `stop` said so
/// while it ran. ptxas refusing our PTX is a bug in tile, not in the kernel.
pub(super) fn assemble_module(
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
    // The module lowered again asking ptxas for `n` programs per SM, and what ptxas made of it.
    let again = |n: u32| {
        if stop() {
            return Err(InstanceError::Moot);
        }
        let b = lower_with(
            p,
            llvm::Options {
                programs_per_sm: Some(n),
            },
        )?;
        let (report, cubin) = assemble(&b)?;
        Ok((b, report, cubin))
    };
    let (report, cubin) = assemble(a)?;
    // One program per SM only lifts ptxas's own cap: a module that spilled with every register
    // its warps allow would spill again, so it is not lowered twice.
    let at_limit = u64::from(report.registers) >= crate::registers::limit(p.ir.num_warps);
    let (relowered, report, cubin) = if report.spills() && a.programs_per_sm != 1 && !at_limit {
        let (b, report, cubin) = again(1)?;
        (Some(b), report, cubin)
    } else if !report.spills() && two_would_fit(p.target, p.ir.num_warps, a, &report) {
        match again(2)? {
            (b, r, c) if !r.spills() => (Some(b), r, c),
            _ => (None, report, cubin),
        }
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
