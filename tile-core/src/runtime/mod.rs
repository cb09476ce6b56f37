//! The run-time half of tile: devices (a CUDA stream or the CPU interpreter), buffers, the
//! metadata the macro generates for each kernel, and the checked launch every generated wrapper
//! calls. LLVM-free: the PTX was made at build time.
//!
//! **Architecture invariant:** everything a launch can get wrong (argument kinds, buffer lengths
//! against the kernel's declared extents, devices and contexts, grid limits, a device with no PTX
//! for its architecture) is checked here and returned as an [`Error`] before the one `unsafe`
//! driver call in [`launch`].

/// `tracing::$level!(…)` with the `tracing` feature, nothing (arguments unevaluated) without.
macro_rules! trace_event {
    ($level:ident, $($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        tracing::$level!($($arg)*);
    }};
}

mod buffer;
mod device;
mod error;
mod event;
mod graph;
mod launch;
mod spec;

pub use buffer::{Buffer, Element, TensorMut, TensorRef};
pub use device::{Device, TARGET_ENV};
pub use error::Error;
pub use event::{Event, Timer};
pub use graph::Graph;
pub use launch::{cdiv, launch, preload, Arg, BufArg, Grid, ModuleCache};
pub use spec::{cubins_off, KernelSpec, ParamKind, ParamSpec, TargetPtx, Variant, CUBIN_ENV};
