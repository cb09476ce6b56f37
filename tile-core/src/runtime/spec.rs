//! Static metadata the `#[tile_kernel]` macro generates for each kernel: its parameters, its IR text
//! (for the interpreter) and the PTX of every specialization for every target.
//!
//! Everything here is `'static` data built at compile time; nothing is computed at run time.

use crate::ir::DType;
use crate::Target;

/// The environment variable that turns cubins off: `TILE_CUBIN=0` (or `off`, `false`) at build
/// time embeds none, at run time loads PTX even where one is embedded (to measure what the cubin
/// saves, or to rule it out).
pub const CUBIN_ENV: &str = "TILE_CUBIN";

/// Whether [`CUBIN_ENV`] turns cubins off in this process (the build's or the program's).
pub fn cubins_off() -> bool {
    std::env::var(CUBIN_ENV).is_ok_and(|v| matches!(v.trim(), "0" | "off" | "false"))
}

/// One kernel as the macro compiled it.
#[derive(Debug)]
pub struct KernelSpec {
    /// The instance's symbol, also its PTX entry point: the function's name in ASCII, with the
    /// instance's constants appended when the kernel has several (`user_gemm__BM_128__O_f32`).
    pub name: &'static str,
    /// The function's name as written in Rust (`user_gemm`): what messages call the kernel.
    pub rust_name: &'static str,
    /// This instance's values of the constants and element types that declare several
    /// (`BM = 128, O = f32`); empty for a kernel of one instance.
    pub instance: &'static str,
    /// Tile-level IR text, run by the interpreter when there is no GPU.
    pub ir: &'static str,
    /// Parameters in declaration order (compile-time constants excluded: they are folded in).
    pub params: &'static [ParamSpec],
    /// Tensor descriptors (`make_tensor_descriptor` calls) of the kernel: each is one hidden
    /// 128-byte parameter after [`KernelSpec::params`], in slot order, which the launch fills with
    /// the slot's tensor map where the chosen module copies through it ([`TargetPtx::tma`]) and
    /// with zeros elsewhere.
    pub desc_slots: u32,
    /// The slots whose array the launch can describe from the arguments alone (pointer,
    /// extents and strides all parameters, constants or products of them): the launch checks
    /// that each such array lies inside its buffer, and only these can be copied by the tensor
    /// memory accelerator.
    pub descriptors: &'static [DescSpec],
    /// Specializations, most specialized first; the last one assumes nothing, unless the kernel
    /// was compiled with `specialize = aligned` (then there is one, and a launch it does not
    /// accept is an `Err`).
    pub variants: &'static [Variant],
}

impl KernelSpec {
    /// The kernel as messages name it: `` `user_gemm` with BM = 128, O = f32 `` for an
    /// instance of a kernel with several, `` `user_gemm` `` for a kernel with one.
    pub fn label(&self) -> String {
        if self.instance.is_empty() {
            format!("`{}`", self.rust_name)
        } else {
            format!("`{}` with {}", self.rust_name, self.instance)
        }
    }
}

/// A launch-time parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// Name in the kernel's source.
    pub name: &'static str,
    /// What it is.
    pub kind: ParamKind,
}

/// The kind of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A pointer to global memory: a buffer argument.
    Ptr {
        /// Element type.
        dtype: DType,
        /// Whether the kernel writes through it, by `store` or an atomic (the wrapper then takes
        /// `&mut`).
        written: bool,
        /// Whether some access through it adds a 32-bit offset: then a buffer of more than
        /// `i32::MAX` elements is refused at launch (its far elements need 64-bit offsets).
        offsets32: bool,
    },
    /// A number passed by value.
    Scalar(DType),
}

/// Where an extent or stride of a [`DescSpec`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DescScalar {
    /// The integer argument at this index of [`KernelSpec::params`].
    Param(u32),
    /// A value fixed at compile time.
    Const(i64),
    /// The product of the integer arguments at the first `count` indices of `params` and of
    /// `factor`, wrapped to `bits` (32 or 64) as the kernel computes it: Triton's tutorials
    /// describe `[Z * H * N_CTX, HEAD_DIM]` arrays.
    Product {
        /// Parameter indices (the first `count` are used).
        params: [u32; 4],
        /// How many of `params` are factors.
        count: u8,
        /// A constant factor.
        factor: i64,
        /// The width the kernel computes the product in.
        bits: u8,
    },
}

impl DescScalar {
    /// `a · b` as the kernel multiplies in `bits` (32: wrapped to `i32`; else 64).
    pub fn wrapping_mul(a: i64, b: i64, bits: u8) -> i64 {
        if bits == 32 {
            i64::from((a as i32).wrapping_mul(b as i32))
        } else {
            a.wrapping_mul(b)
        }
    }

    /// The product of `self` and `other` as the kernel computes it in `bits`, where it is a
    /// product of at most four arguments and a constant.
    pub fn times(self, other: DescScalar, bits: u8) -> Option<DescScalar> {
        let parts = |s: DescScalar| -> ([u32; 4], u8, i64) {
            match s {
                DescScalar::Param(i) => ([i, 0, 0, 0], 1, 1),
                DescScalar::Const(c) => ([0; 4], 0, c),
                DescScalar::Product {
                    params,
                    count,
                    factor,
                    ..
                } => (params, count, factor),
            }
        };
        let (mut params, n, a) = parts(self);
        let (q, m, b) = parts(other);
        if n + m > 4 {
            return None;
        }
        params[n as usize..(n + m) as usize].copy_from_slice(&q[..m as usize]);
        let factor = DescScalar::wrapping_mul(a, b, bits);
        Some(if n + m == 0 {
            DescScalar::Const(factor)
        } else {
            DescScalar::Product {
                params,
                count: n + m,
                factor,
                bits,
            }
        })
    }
}

/// A tensor descriptor whose array is known from the launch's arguments: the buffer at
/// parameter `ptr`, seen as a `dims`-shaped array with `strides` (in elements, outermost
/// dimension first, as the kernel wrote them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescSpec {
    /// The descriptor's slot (its hidden parameter is `params.len() + slot`).
    pub slot: u32,
    /// The index in [`KernelSpec::params`] of the pointer parameter.
    pub ptr: u32,
    /// Element type.
    pub dtype: DType,
    /// Extents, outermost first.
    pub dims: &'static [DescScalar],
    /// Strides in elements, outermost first.
    pub strides: &'static [DescScalar],
    /// Found by the compiler in a plain pointer load rather than declared by the kernel
    /// (`make_tensor_descriptor`): the launch never refuses arguments for it; a variant that
    /// copies it with the tensor memory accelerator gives way to the next where its tensor map
    /// cannot be encoded (an unaligned base, a row stride not a multiple of 16 bytes, ...).
    pub implied: bool,
}

/// How one module copies the tiles of a descriptor with the tensor memory accelerator: the
/// launch encodes the slot's tensor map (`cuTensorMapEncodeTiled`) with this box and swizzle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TmaSpec {
    /// The descriptor's slot.
    pub slot: u32,
    /// The box one copy moves, outermost dimension first (the last is the contiguous one).
    pub box_dims: &'static [u32],
    /// The shared-memory swizzle in bytes: 0 (none), 32, 64 or 128.
    pub swizzle: u32,
}

/// The assumption, in [`Variant::divisibility`], that an integer argument is exactly 1: a unit
/// stride, which makes an access that steps by it contiguous (Triton specializes such arguments
/// the same way). Divisibility 0 means nothing else.
pub const EQUALS_ONE: u32 = 0;

/// One specialization of a kernel: what it assumes of its arguments, and its PTX per target.
#[derive(Debug)]
pub struct Variant {
    /// Per parameter, in order: what this variant assumes a pointer's address (in bytes) or an
    /// integer's value is a multiple of; 1 assumes nothing, and [`EQUALS_ONE`] that an integer
    /// is exactly 1.
    pub divisibility: &'static [u32],
    /// Warps per program (threads per block = 32 × this).
    pub num_warps: u32,
    /// PTX per target, best (newest) first.
    pub targets: &'static [TargetPtx],
}

/// PTX text for one target architecture.
#[derive(Debug)]
pub struct TargetPtx {
    /// The target the PTX is for (its `.target`).
    pub target: Target,
    /// The PTX module.
    pub ptx: &'static str,
    /// The same module assembled by `ptxas` for `target` (empty when the build had no ptxas or
    /// `TILE_CUBIN=0`): a device that runs it loads it as it is, without compiling PTX.
    pub cubin: &'static [u8],
    /// The entry point's name in the module.
    pub entry: &'static str,
    /// Dynamic shared memory per program, in bytes (0 when the kernel's shared memory is
    /// static): the launch passes it, and the module load opts the function in above
    /// [`Target::STATIC_SHARED_BYTES`].
    pub dyn_shared_bytes: u32,
    /// The descriptors this module copies with the tensor memory accelerator (sm_90a): the
    /// launch passes their tensor maps.
    pub tma: &'static [TmaSpec],
}

impl TargetPtx {
    /// Whether [`TargetPtx::cubin`] can be loaded on a device of compute capability
    /// `major.minor`: there must be one, and the target's SASS must run there
    /// ([`Target::cubin_runs_on`]).
    pub fn cubin_runs_on(&self, major: u32, minor: u32) -> bool {
        !self.cubin.is_empty() && self.target.cubin_runs_on(major, minor)
    }

    /// Whether this PTX can be loaded on a device of compute capability `major.minor`
    /// ([`Target::runs_on`]).
    pub fn runs_on(&self, major: u32, minor: u32) -> bool {
        self.target.runs_on(major, minor)
    }
}

#[cfg(test)]
mod tests {
    use super::TargetPtx;
    use crate::Target;

    fn target(target: Target, cubin: &'static [u8]) -> TargetPtx {
        TargetPtx {
            target,
            ptx: "",
            cubin,
            entry: "k",
            dyn_shared_bytes: 0,
            tma: &[],
        }
    }

    #[test]
    fn cubins_run_on_their_major_version_ptx_later_ones() {
        let sm80 = target(Target::Sm80, b"\x7fELF");
        assert!(sm80.cubin_runs_on(8, 0) && sm80.cubin_runs_on(8, 6) && sm80.cubin_runs_on(8, 9));
        assert!(
            !sm80.cubin_runs_on(9, 0),
            "Hopper runs sm_80 PTX, not its SASS"
        );
        assert!(sm80.runs_on(9, 0));
        let sm90a = target(Target::Sm90a, b"\x7fELF");
        assert!(sm90a.cubin_runs_on(9, 0) && !sm90a.cubin_runs_on(10, 0));
        assert!(
            !target(Target::Sm80, b"").cubin_runs_on(8, 0),
            "no cubin embedded"
        );
    }
}
