//! The run-time half of tile: devices (a CUDA stream or the CPU interpreter), buffers, the
//! metadata the macro generates for each kernel, and the checked launch every generated wrapper
//! calls. LLVM-free: the PTX was made at build time.
//!
//! **Architecture invariant:** everything a launch can get wrong (argument kinds, buffer lengths
//! against the kernel's declared extents, tensor descriptors against their buffers, devices and
//! contexts, grid limits, a device with no PTX for its architecture) is checked here and
//! returned as an [`Error`] before the one `unsafe` driver call in [`launch`].
//!
//! # Layers
//!
//! Each module uses only the modules below it, never one above or beside it:
//!
//! ```text
//! autotune.rs   Autotuner, time_ms; Device::with_            uses event, device, error
//!               deterministic_tuning
//! launch.rs     the checked launch, preload, ModuleCache     uses buffer, device, recording, spec,
//!                                                            tma, error
//! table.rs      PointerTable                                 uses buffer, device, error
//! buffer.rs     Buffer, Element, TensorRef/TensorMut,        uses device, error
//!               BufArg; Device::upload/zeros/download
//! event.rs      Event, Timer; Device::record_event,          uses device, error
//!               wait_event, timer, hold
//! graph.rs      Graph; Device::capture                       uses device, recording, tma, error
//! device.rs     Device, CudaDevice, the PTX target           uses recording, error
//! recording.rs  the launches a capturing device collects     uses tma
//! tma.rs        tensor maps: bounds, encoding, hidden        uses spec, error
//!               parameters of tensor descriptors
//! spec.rs       KernelSpec, what the macro generates         (leaf)
//! error.rs      Error                                        (leaf)
//! ```
//!
//! `device.rs` owns what a device is; each module above adds the `Device` methods that hand out
//! its own types, so that no lower module needs a higher one. A launch inside a capture appends
//! to the recording the device holds, and the graph is built from that recording, so `launch.rs`
//! and `graph.rs` do not import each other.

/// `tracing::$level!(…)` with the `tracing` feature, nothing (arguments unevaluated) without.
macro_rules! trace_event {
    ($level:ident, $($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        tracing::$level!($($arg)*);
    }};
}

pub mod autotune;
mod buffer;
mod device;
mod error;
mod event;
mod graph;
mod launch;
mod recording;
mod spec;
mod table;
mod tma;

pub use buffer::{BufArg, Buffer, Element, TensorMut, TensorRef};
pub use device::{Device, TARGET_ENV};
pub use error::Error;
pub use event::{Event, Timer};
pub use graph::Graph;
pub use launch::{cdiv, launch, launch_args, preload, Arg, Grid, ModuleCache};
pub use spec::{
    cubins_off, DescScalar, DescSpec, KernelSpec, ParamKind, ParamSpec, TargetPtx, TmaSpec,
    Variant, CUBIN_ENV, EQUALS_ONE,
};
pub use table::PointerTable;
