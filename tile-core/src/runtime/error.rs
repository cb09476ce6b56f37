//! The one error type of the runtime: every way a launch or a transfer can fail.

use std::fmt;

use crate::interp::InterpError;

/// Why a runtime call failed. Messages name the kernel and parameter involved.
#[derive(Debug)]
pub enum Error {
    /// No CUDA driver or no device with that ordinal.
    NoDevice(String),
    /// The CUDA driver reported an error.
    Driver {
        /// What we were doing.
        during: String,
        /// The driver's error.
        source: cudarc::driver::DriverError,
    },
    /// A buffer is shorter than the extent the kernel declares for it.
    Length {
        /// Kernel name.
        kernel: &'static str,
        /// Parameter name.
        param: &'static str,
        /// Elements the kernel's declaration requires.
        required: u64,
        /// Elements the buffer has.
        actual: usize,
    },
    /// A declared extent could not be computed (overflow).
    Extent {
        /// Kernel name.
        kernel: &'static str,
        /// Parameter name.
        param: &'static str,
    },
    /// A grid beyond the device's limits (a grid with an axis of 0 programs is not an error:
    /// it launches nothing).
    Grid {
        /// Kernel name.
        kernel: &'static str,
        /// What is wrong.
        msg: String,
    },
    /// A buffer of the wrong kind for this device (host memory on a CUDA device, device memory
    /// on the interpreter) or from another CUDA context.
    WrongDevice {
        /// Kernel name, or `""` outside a launch.
        kernel: &'static str,
        /// Parameter name, or `""` outside a launch.
        param: &'static str,
        /// What is wrong.
        msg: String,
    },
    /// The arguments do not match the kernel's parameters (only reachable by bypassing the
    /// generated wrapper).
    Args(String),
    /// No compiled specialization fits the device or the arguments.
    NoVariant {
        /// Kernel name.
        kernel: &'static str,
        /// What is wrong, with what is available.
        msg: String,
    },
    /// A tensor descriptor's arguments: the array it describes reaches past its buffer or has a
    /// negative stride, or the tensor memory accelerator cannot copy through it (an inner stride
    /// other than 1, an unaligned address or stride, an extent out of range).
    Descriptor {
        /// The kernel as [`KernelSpec::label`](super::KernelSpec::label) names it.
        kernel: String,
        /// The pointer parameter the descriptor describes.
        param: &'static str,
        /// What is wrong.
        msg: String,
    },
    /// The interpreter failed (for instance an unmasked out-of-bounds access).
    Interp(InterpError),
    /// The kernel's embedded IR does not parse or verify (a bug in tile).
    BadIr(String),
    /// A call that [`Device::capture`](super::Device::capture) does not record, made inside it
    /// (or a launch on a copy of the capturing device after the capture ended).
    Capture(String),
    /// An autotuned kernel's user functions (`prune`, `heuristic`) returned configurations that
    /// do not exist, or kept none.
    Autotune {
        /// Kernel name.
        kernel: &'static str,
        /// What is wrong.
        msg: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoDevice(m) => write!(f, "no CUDA device: {m}"),
            Error::Driver { during, source } => write!(f, "CUDA driver error while {during}: {source}"),
            Error::Length { kernel, param, required, actual } => write!(
                f,
                "kernel `{kernel}`: buffer `{param}` has {actual} elements, the kernel's declaration needs at least {required}"
            ),
            Error::Extent { kernel, param } => {
                write!(f, "kernel `{kernel}`: the declared extent of `{param}` overflows")
            }
            Error::Grid { kernel, msg } => write!(f, "kernel `{kernel}`: bad grid: {msg}"),
            Error::WrongDevice { kernel, param, msg } => {
                if kernel.is_empty() {
                    write!(f, "{msg}")
                } else {
                    write!(f, "kernel `{kernel}`, argument `{param}`: {msg}")
                }
            }
            Error::Args(m) => write!(f, "bad arguments: {m}"),
            Error::NoVariant { kernel, msg } => write!(f, "kernel `{kernel}`: {msg}"),
            Error::Descriptor { kernel, param, msg } => {
                write!(f, "kernel {kernel}: the tensor descriptor of `{param}`: {msg}")
            }
            Error::Interp(e) => write!(f, "interpreter: {e}"),
            Error::BadIr(m) => write!(f, "embedded IR is invalid (a bug in tile): {m}"),
            Error::Capture(m) => write!(f, "CUDA graph capture: {m}"),
            Error::Autotune { kernel, msg } => write!(f, "kernel `{kernel}`: autotuning: {msg}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Driver { source, .. } => Some(source),
            Error::Interp(e) => Some(e),
            _ => None,
        }
    }
}

impl From<InterpError> for Error {
    fn from(e: InterpError) -> Self {
        Error::Interp(e)
    }
}

impl Error {
    /// Names the kernel and argument an argument-conversion error belongs to.
    pub fn at(self, kernel: &'static str, param: &'static str) -> Error {
        match self {
            Error::WrongDevice { msg, .. } => Error::WrongDevice { kernel, param, msg },
            other => other,
        }
    }
}

/// Wraps a driver result with what we were doing.
pub(crate) fn driver<T>(
    during: &str,
    r: Result<T, cudarc::driver::DriverError>,
) -> Result<T, Error> {
    r.map_err(|source| Error::Driver {
        during: during.to_string(),
        source,
    })
}
