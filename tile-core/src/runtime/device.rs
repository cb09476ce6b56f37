//! Where kernels run: a CUDA stream, or the CPU interpreter. Both take the same buffers API, so
//! one program serves both.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};

use super::buffer::{Buffer, Element};
use super::error::{driver, Error};

/// A place to run kernels. Cheap to clone.
#[derive(Clone, Debug)]
pub enum Device {
    /// A CUDA stream; launches are asynchronous on it.
    Cuda(CudaDevice),
    /// The CPU interpreter; launches run to completion before returning.
    Interpreter,
}

/// A CUDA stream and the facts a launch needs about its device.
#[derive(Clone, Debug)]
pub struct CudaDevice {
    pub(crate) stream: Arc<CudaStream>,
    /// Compute capability (major, minor).
    pub(crate) cc: (u32, u32),
    /// Maximum grid dimensions.
    pub(crate) max_grid: [u32; 3],
    pub(crate) name: String,
    /// The PTX target every launch must use (`sm_80`, `sm_90a`), when one was chosen with
    /// [`Device::with_target`] or `TILE_TARGET`; otherwise the newest one the device runs.
    pub(crate) target: Option<String>,
}

/// The environment variable that chooses the PTX target of every CUDA device (see
/// [`Device::with_target`]).
pub const TARGET_ENV: &str = "TILE_TARGET";

/// `(capability, arch-specific)` of a target name `sm_XY` or `sm_XYa`, or `None` when the name
/// has another form.
fn parse_target(arch: &str) -> Option<(u32, bool)> {
    let digits = arch.strip_prefix("sm_")?;
    let (digits, specific) = match digits.strip_suffix('a') {
        Some(d) => (d, true),
        None => (digits, false),
    };
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits.parse().ok()?, specific))
}

fn cuda_present() -> bool {
    // SAFETY: `is_culib_present` only tries to open the driver library with `dlopen`; it has no
    // preconditions. We ask before any other driver call because cudarc panics when a call finds
    // no library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

impl Device {
    /// The default stream of CUDA device `ordinal`, or `Err` when there is no driver or device.
    pub fn cuda(ordinal: usize) -> Result<Device, Error> {
        if !cuda_present() {
            return Err(Error::NoDevice(
                "the CUDA driver library (libcuda.so) was not found".into(),
            ));
        }
        let count = driver("counting devices", CudaContext::device_count())
            .map_err(|e| Error::NoDevice(e.to_string()))?;
        if ordinal >= count.max(0) as usize {
            return Err(Error::NoDevice(format!(
                "device {ordinal} requested, {count} present"
            )));
        }
        let ctx = driver("creating the context", CudaContext::new(ordinal))?;
        Device::from_stream(ctx.default_stream())
    }

    /// Runs on an existing cudarc stream (the caller's context and buffers are used as they are).
    pub fn from_stream(stream: Arc<CudaStream>) -> Result<Device, Error> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let ctx = stream.context();
        let (major, minor) = driver("reading the compute capability", ctx.compute_capability())?;
        let attr = |a| driver("reading a device limit", ctx.attribute(a)).map(|v| v.max(0) as u32);
        let max_grid = [
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
        ];
        let name = ctx.name().unwrap_or_else(|_| "CUDA device".into());
        let dev = Device::Cuda(CudaDevice {
            stream,
            cc: (major as u32, minor as u32),
            max_grid,
            name,
            target: None,
        });
        match std::env::var(TARGET_ENV) {
            Ok(t) if !t.is_empty() => dev
                .with_target(&t)
                .map_err(|e| Error::Args(format!("{TARGET_ENV}: {e}"))),
            _ => Ok(dev),
        }
    }

    /// This device with every launch using the PTX compiled for `arch` (`"sm_80"` or
    /// `"sm_90a"`: the targets tile compiles for) instead of the newest target the device runs,
    /// so that, say, the `mma.sync` code of Ampere can be measured on a Hopper GPU. The
    /// environment variable `TILE_TARGET` does the same for every device a program creates.
    /// `Err` for a name of another form and for a target this device cannot run (an `a` target
    /// runs only on its own capability, others on that capability and newer); a kernel that was
    /// not compiled for `arch` is an `Err` at its launch. On the interpreter the target is
    /// checked for its form and otherwise ignored.
    pub fn with_target(self, arch: &str) -> Result<Device, Error> {
        let Some((sm, specific)) = parse_target(arch) else {
            return Err(Error::Args(format!(
                "`{arch}` is not a target name (sm_80, sm_90a, …)"
            )));
        };
        match self {
            Device::Interpreter => Ok(Device::Interpreter),
            Device::Cuda(mut c) => {
                let cc = c.cc.0 * 10 + c.cc.1;
                let runs = if specific { cc == sm } else { cc >= sm };
                if !runs {
                    return Err(Error::Args(format!(
                        "target {arch} does not run on {} (compute capability {}.{})",
                        c.name, c.cc.0, c.cc.1
                    )));
                }
                c.target = Some(arch.to_string());
                Ok(Device::Cuda(c))
            }
        }
    }

    /// The PTX target chosen for this device ([`Device::with_target`]), if any.
    pub fn target(&self) -> Option<&str> {
        match self {
            Device::Cuda(c) => c.target.as_deref(),
            Device::Interpreter => None,
        }
    }

    /// The CPU interpreter.
    pub fn interpreter() -> Device {
        Device::Interpreter
    }

    /// CUDA device 0 if there is one, else the interpreter, with the reason there is no GPU.
    pub fn best_available() -> (Device, Option<Error>) {
        match Device::cuda(0) {
            Ok(d) => (d, None),
            Err(e) => (Device::Interpreter, Some(e)),
        }
    }

    /// True for a CUDA device.
    pub fn is_cuda(&self) -> bool {
        matches!(self, Device::Cuda(_))
    }

    /// The CUDA stream, if this is a CUDA device.
    pub fn stream(&self) -> Option<&Arc<CudaStream>> {
        match self {
            Device::Cuda(c) => Some(&c.stream),
            Device::Interpreter => None,
        }
    }

    /// Compute capability `(major, minor)` of a CUDA device.
    pub fn compute_capability(&self) -> Option<(u32, u32)> {
        match self {
            Device::Cuda(c) => Some(c.cc),
            Device::Interpreter => None,
        }
    }

    /// A human-readable name.
    pub fn name(&self) -> String {
        match self {
            Device::Cuda(c) => match &c.target {
                Some(t) => format!("{} (sm_{}{}, PTX target {t})", c.name, c.cc.0, c.cc.1),
                None => format!("{} (sm_{}{})", c.name, c.cc.0, c.cc.1),
            },
            Device::Interpreter => "tile CPU interpreter".into(),
        }
    }

    /// Copies `host` into a new buffer on this device.
    pub fn upload<T: Element>(&self, host: &[T]) -> Result<Buffer<T>, Error> {
        match self {
            Device::Cuda(c) => Ok(Buffer::Cuda(driver(
                "copying to the device",
                c.stream.clone_htod(host),
            )?)),
            Device::Interpreter => Ok(Buffer::Host(host.to_vec())),
        }
    }

    /// A new buffer of `len` zeros.
    pub fn zeros<T: Element>(&self, len: usize) -> Result<Buffer<T>, Error> {
        match self {
            Device::Cuda(c) => Ok(Buffer::Cuda(driver(
                "allocating",
                c.stream.alloc_zeros(len),
            )?)),
            Device::Interpreter => Ok(Buffer::Host(vec![T::default(); len])),
        }
    }

    /// Copies a buffer back to the host (waits for the work queued before it).
    pub fn download<T: Element>(&self, buf: &Buffer<T>) -> Result<Vec<T>, Error> {
        match (self, buf) {
            (Device::Cuda(c), Buffer::Cuda(s)) => {
                driver("copying to the host", c.stream.clone_dtoh(s))
            }
            (_, Buffer::Host(v)) => Ok(v.clone()),
            (Device::Interpreter, Buffer::Cuda(_)) => Err(Error::WrongDevice {
                kernel: "",
                param: "",
                msg: "a CUDA buffer cannot be read through the interpreter device".into(),
            }),
        }
    }

    /// Waits until all queued work is done.
    pub fn synchronize(&self) -> Result<(), Error> {
        match self {
            Device::Cuda(c) => driver("synchronizing", c.stream.synchronize()),
            Device::Interpreter => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_names() {
        assert_eq!(parse_target("sm_80"), Some((80, false)));
        assert_eq!(parse_target("sm_90a"), Some((90, true)));
        assert_eq!(parse_target("sm_100a"), Some((100, true)));
        for bad in [
            "",
            "sm_",
            "sm_8",
            "sm80",
            "SM_80",
            "sm_9a0",
            "sm_90b",
            "sm_+8",
            "compute_80",
        ] {
            assert_eq!(parse_target(bad), None, "{bad}");
        }
    }

    #[test]
    fn interpreter_checks_the_form_only() {
        assert!(Device::interpreter().with_target("sm_90a").is_ok());
        assert!(Device::interpreter().with_target("sm_80").is_ok());
        let e = Device::interpreter().with_target("hopper").unwrap_err();
        assert!(e.to_string().contains("not a target name"), "{e}");
    }
}
