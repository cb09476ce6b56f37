//! The GPU architectures tile compiles for, and what the compiler and the runtime need to know
//! about each: its name as PTX spells it, its compute capability, its shared-memory and register
//! limits, which instructions it has, and the PTX ISA version the back end emits for it.
//!
//! Every such fact is written here once; the front end, the passes, the LLVM back end and the
//! launch ask a [`Target`] instead of comparing names or restating numbers. Facts that hold on
//! every target (the static shared-memory limit, the register file) are associated constants,
//! so that code that runs before a target is chosen can use them too.
//!
//! Invariant: a `Target` is always one that tile builds ([`Target::ALL`]); parsing a name that
//! is not one is an `Err`, so a kernel's `target` attribute and a device's chosen target cannot
//! name something the compiler has no facts about.
//!
//! ```
//! use tile_core::Target;
//! let t = Target::parse("sm_90a").unwrap();
//! assert_eq!(t, Target::Sm90a);
//! assert_eq!(t.to_string(), "sm_90a");
//! assert!(t.has_wgmma() && !Target::Sm80.has_wgmma());
//! assert!(Target::parse("sm_100a").is_err());
//! ```

use std::fmt;
use std::str::FromStr;

/// A GPU architecture tile emits PTX for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// Ampere (A100): compute capability 8.0. Its PTX also runs on every later GPU.
    Sm80,
    /// Hopper (H100/H200) with its architecture-specific features (`wgmma`, `setmaxnreg`): 9.0a.
    /// Its PTX and SASS run only on compute capability 9.0.
    Sm90a,
}

impl Target {
    /// Every target tile builds, newest first (the order in which a runtime tries them).
    pub const ALL: [Target; 2] = [Target::Sm90a, Target::Sm80];

    /// Shared memory a program may declare statically, in bytes; beyond it the kernel takes
    /// dynamic shared memory and the launch opts in, up to [`Target::max_shared_bytes`].
    pub const STATIC_SHARED_BYTES: u64 = 48 * 1024;

    /// 32-bit registers in one SM's register file.
    pub const REGISTERS_PER_SM: u64 = 65_536;

    /// The most 32-bit registers one thread may use.
    pub const MAX_REGISTERS_PER_THREAD: u64 = 255;

    /// The target named `name` as PTX spells it ([`Target::arch`]), or `Err` when tile does not
    /// build that target (or the name is not a target name at all).
    pub fn parse(name: &str) -> Result<Target, UnknownTarget> {
        Target::ALL
            .into_iter()
            .find(|t| t.arch() == name)
            .ok_or_else(|| UnknownTarget(name.to_string()))
    }

    /// The architecture name as PTX and ptxas spell it (`.target sm_90a`, `-arch=sm_90a`).
    pub const fn arch(self) -> &'static str {
        match self {
            Target::Sm80 => "sm_80",
            Target::Sm90a => "sm_90a",
        }
    }

    /// The compute capability `(major, minor)` the target is for.
    pub const fn capability(self) -> (u32, u32) {
        match self {
            Target::Sm80 => (8, 0),
            Target::Sm90a => (9, 0),
        }
    }

    /// Whether this is an architecture-specific (`a`) target: its code uses instructions of its
    /// own capability alone, and runs on no other.
    pub const fn arch_specific(self) -> bool {
        match self {
            Target::Sm80 => false,
            Target::Sm90a => true,
        }
    }

    /// The most shared memory one program may use, in bytes, with the opt-in to dynamic shared
    /// memory above [`Target::STATIC_SHARED_BYTES`]: 163 KiB on sm_80, 227 KiB on sm_90.
    pub const fn max_shared_bytes(self) -> u64 {
        match self {
            Target::Sm80 => 163 * 1024,
            Target::Sm90a => 227 * 1024,
        }
    }

    /// Shared memory per SM, in bytes (shared by the programs resident on it; the driver keeps
    /// 1 KiB of it per program): 164 KiB on sm_80, 228 KiB on sm_90.
    pub const fn shared_bytes_per_sm(self) -> u64 {
        match self {
            Target::Sm80 => 164 * 1024,
            Target::Sm90a => 228 * 1024,
        }
    }

    /// Whether the target has the warpgroup matrix product (`wgmma.mma_async`, sm_90a).
    pub const fn has_wgmma(self) -> bool {
        match self {
            Target::Sm80 => false,
            Target::Sm90a => true,
        }
    }

    /// Whether the target has the tensor memory accelerator (`cp.async.bulk.tensor`, sm_90 and
    /// later).
    pub const fn has_tma(self) -> bool {
        match self {
            Target::Sm80 => false,
            Target::Sm90a => true,
        }
    }

    /// Whether the target has shared-memory barriers (`mbarrier`, sm_80 and later).
    pub const fn has_mbarrier(self) -> bool {
        match self {
            Target::Sm80 | Target::Sm90a => true,
        }
    }

    /// Whether the target adds `bf16` to global memory atomically in one instruction
    /// (`atom.add.noftz.bf16`, sm_90 and later); elsewhere a compare-and-swap loop does it.
    pub const fn has_bf16_atomic_add(self) -> bool {
        match self {
            Target::Sm80 => false,
            Target::Sm90a => true,
        }
    }

    /// Whether the tensor cores multiply 8-bit floats (`mma.sync…m16n8k32…e4m3`/`e5m2`, sm_89
    /// and later; `wgmma`'s FP8 forms on sm_90a); elsewhere their exact `f16` values are
    /// multiplied.
    pub const fn has_f8_mma(self) -> bool {
        match self {
            Target::Sm80 => false,
            Target::Sm90a => true,
        }
    }

    /// Whether the target converts between `f32`/`f16` and the 8-bit floats in hardware
    /// (`cvt…e4m3x2`/`e5m2x2`, sm_89 and later); elsewhere integer arithmetic does it.
    pub const fn has_f8_convert(self) -> bool {
        match self {
            Target::Sm80 => false,
            Target::Sm90a => true,
        }
    }

    /// The PTX ISA version `(major, minor)` the back end emits for the target. PTX 8.0 is the
    /// first with sm_90a; sm_80 gets PTX 7.5 (CUDA 11.5 drivers and later), the first with
    /// `cp.async`'s `ignore-src` predicate.
    pub const fn ptx_isa(self) -> (u32, u32) {
        match self {
            Target::Sm80 => (7, 5),
            Target::Sm90a => (8, 0),
        }
    }

    /// The PTX ISA version of a module whose tensor cores multiply 8-bit floats
    /// ([`Target::has_f8_mma`]): `mma.sync`'s FP8 forms need PTX 8.4 (CUDA 12.4 drivers and
    /// later); other modules keep [`Target::ptx_isa`], so older drivers still load them.
    pub const F8_MMA_PTX_ISA: (u32, u32) = (8, 4);

    /// Whether this target's PTX can be loaded on a device of compute capability `major.minor`:
    /// an `a` target's on exactly its own capability, others' on theirs and every later one.
    pub const fn runs_on(self, major: u32, minor: u32) -> bool {
        let (m, n) = self.capability();
        if self.arch_specific() {
            major == m && minor == n
        } else {
            major > m || (major == m && minor >= n)
        }
    }

    /// Whether this target's SASS (a cubin ptxas assembled for it) runs on a device of compute
    /// capability `major.minor`: on its own major version at the same or a later minor one, and
    /// an `a` target's on exactly its own.
    pub const fn cubin_runs_on(self, major: u32, minor: u32) -> bool {
        let (m, n) = self.capability();
        if self.arch_specific() {
            major == m && minor == n
        } else {
            major == m && minor >= n
        }
    }
}

impl fmt::Display for Target {
    /// The name as PTX spells it, padded to the width the format asks (`{:<7}`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.arch())
    }
}

impl FromStr for Target {
    type Err = UnknownTarget;

    fn from_str(name: &str) -> Result<Target, UnknownTarget> {
        Target::parse(name)
    }
}

/// A name that is not one of the targets tile builds ([`Target::parse`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownTarget(pub String);

impl fmt::Display for UnknownTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not a target tile compiles for (", self.0)?;
        for (i, t) in Target::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(t.arch())?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for UnknownTarget {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in Target::ALL {
            assert_eq!(Target::parse(&t.to_string()), Ok(t));
            assert_eq!(t.arch().parse::<Target>(), Ok(t));
            assert_eq!(format!("{t:<7}|"), format!("{:<7}|", t.arch()));
        }
        assert_eq!(Target::ALL.map(Target::arch), ["sm_90a", "sm_80"]);
    }

    #[test]
    fn other_names_are_refused() {
        for bad in [
            "", "sm_", "sm_8", "sm80", "SM_80", "sm_90", "sm_80a", "sm_86", "sm_100a", "sm_90a ",
            "hopper",
        ] {
            assert_eq!(
                Target::parse(bad),
                Err(UnknownTarget(bad.into())),
                "{bad:?}"
            );
        }
        assert_eq!(
            Target::parse("sm_100a").unwrap_err().to_string(),
            "`sm_100a` is not a target tile compiles for (sm_90a, sm_80)"
        );
    }

    #[test]
    fn facts() {
        let t = Target::Sm80;
        assert_eq!(
            (t.capability(), t.arch_specific(), t.ptx_isa()),
            ((8, 0), false, (7, 5))
        );
        assert_eq!(
            (t.max_shared_bytes(), t.shared_bytes_per_sm()),
            (166_912, 167_936)
        );
        assert!(!t.has_wgmma() && !t.has_tma() && t.has_mbarrier() && !t.has_bf16_atomic_add());
        let t = Target::Sm90a;
        assert_eq!(
            (t.capability(), t.arch_specific(), t.ptx_isa()),
            ((9, 0), true, (8, 0))
        );
        assert_eq!(
            (t.max_shared_bytes(), t.shared_bytes_per_sm()),
            (232_448, 233_472)
        );
        assert!(t.has_wgmma() && t.has_tma() && t.has_mbarrier() && t.has_bf16_atomic_add());
        for t in Target::ALL {
            assert!(Target::STATIC_SHARED_BYTES < t.max_shared_bytes());
            assert!(t.max_shared_bytes() < t.shared_bytes_per_sm());
        }
        assert_eq!(Target::STATIC_SHARED_BYTES, 49_152);
        assert_eq!(
            (Target::REGISTERS_PER_SM, Target::MAX_REGISTERS_PER_THREAD),
            (65_536, 255)
        );
    }

    #[test]
    fn where_code_runs() {
        let sm80 = Target::Sm80;
        assert!(sm80.runs_on(8, 0) && sm80.runs_on(8, 6) && sm80.runs_on(9, 0));
        assert!(sm80.runs_on(10, 0) && !sm80.runs_on(7, 5));
        assert!(sm80.cubin_runs_on(8, 0) && sm80.cubin_runs_on(8, 9));
        assert!(
            !sm80.cubin_runs_on(9, 0),
            "Hopper runs sm_80 PTX, not its SASS"
        );
        let sm90a = Target::Sm90a;
        assert!(sm90a.runs_on(9, 0) && !sm90a.runs_on(10, 0) && !sm90a.runs_on(8, 9));
        assert!(sm90a.cubin_runs_on(9, 0) && !sm90a.cubin_runs_on(10, 0));
    }
}
