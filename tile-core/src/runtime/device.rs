//! Where kernels run: a CUDA stream, or the CPU interpreter. Both take the same buffers API, so
//! one program serves both.
//!
//! The bottom of the runtime: this file owns what a device is (its stream and the facts a launch
//! needs, its chosen target, whether it is recording a graph). The modules above it add the
//! device's methods for their own types: `buffer.rs` the copies, `event.rs` events and timers,
//! `graph.rs` the capture, `autotune.rs` the deterministic-tuning option.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};

use super::error::{driver, Error};
use super::recording::SharedRecording;
use crate::Target;

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
    /// The PTX target every launch must use, when one was chosen with [`Device::with_target`]
    /// or `TILE_TARGET`; otherwise the newest one the device runs.
    pub(crate) target: Option<Target>,
    /// Set on the device [`Device::capture`] hands its closure: launches become graph nodes.
    pub(crate) recording: Option<SharedRecording>,
    /// Autotuned kernels never time configurations on this device
    /// (`Device::with_deterministic_tuning`, in `autotune.rs`).
    pub(crate) deterministic_tuning: bool,
}

impl CudaDevice {
    /// `Err` when this is the device inside [`Device::capture`] (which only records launches):
    /// `what` names the refused call.
    pub(crate) fn refuse_while_recording(&self, what: &str) -> Result<(), Error> {
        if self.recording.is_some() {
            return Err(Error::Capture(format!(
                "`{what}` inside `Device::capture`: only kernel launches are recorded into a graph; \
                 allocate, copy and synchronize before the capture or after it"
            )));
        }
        Ok(())
    }
}

/// The environment variable that chooses the PTX target of every CUDA device (see
/// [`Device::with_target`]).
pub const TARGET_ENV: &str = "TILE_TARGET";

/// The names the CUDA driver library goes by, as the loader is asked for them.
const DRIVER_LIBRARIES: &[&str] = if cfg!(windows) {
    &["nvcuda.dll"]
} else {
    &["libcuda.so", "libcuda.so.1"]
};

/// Whether the CUDA driver library can be opened. Asked before any driver call: when cudarc
/// loads the driver at run time (its `dynamic-loading` mode, tile's default) a call that finds no
/// library panics, and a missing driver must be an `Err`. cudarc looks for these names among
/// others, so a library found here is one it finds. In its `dynamic-linking` mode (candle's) the
/// program links the driver and could not have started without it.
/// What a launch needs to know about a GPU: compute capability, grid limits, name.
type Facts = ((u32, u32), [u32; 3], String);

/// [`Facts`] of the stream's device, read from the driver on the first call per device ordinal
/// (they depend on the device alone, not on the context or stream).
fn device_facts(stream: &Arc<CudaStream>) -> Result<Facts, Error> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    static KNOWN: std::sync::Mutex<Vec<(usize, Facts)>> = std::sync::Mutex::new(Vec::new());
    let ctx = stream.context();
    let ordinal = ctx.ordinal();
    let known = |k: &Vec<(usize, Facts)>| {
        k.iter()
            .find(|(o, _)| *o == ordinal)
            .map(|(_, f)| f.clone())
    };
    if let Some(f) = known(&KNOWN.lock().unwrap_or_else(|p| p.into_inner())) {
        return Ok(f);
    }
    let (major, minor) = driver("reading the compute capability", ctx.compute_capability())?;
    let attr = |a| driver("reading a device limit", ctx.attribute(a)).map(|v| v.max(0) as u32);
    let max_grid = [
        attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
        attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
        attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
    ];
    let name = ctx.name().unwrap_or_else(|_| "CUDA device".into());
    let facts = ((major.max(0) as u32, minor.max(0) as u32), max_grid, name);
    let mut k = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    if known(&k).is_none() {
        k.push((ordinal, facts.clone()));
    }
    Ok(facts)
}

fn cuda_present() -> bool {
    DRIVER_LIBRARIES.iter().any(|name| {
        // SAFETY: opening the driver library runs its initializers, which have no preconditions
        // (cudarc opens the same library the same way); it is closed again when dropped.
        unsafe { libloading::Library::new(*name) }.is_ok()
    })
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
    /// Cheap after the first call for a GPU: what a launch needs to know about the device
    /// (capability, grid limits, name) is read from the driver once per device and process, so
    /// a caller may build a `Device` around its stream for every operation (a candle custom op).
    pub fn from_stream(stream: Arc<CudaStream>) -> Result<Device, Error> {
        let facts = device_facts(&stream)?;
        let ((major, minor), max_grid, name) = facts;
        let dev = Device::Cuda(CudaDevice {
            stream,
            cc: (major, minor),
            max_grid,
            name,
            target: None,
            recording: None,
            deterministic_tuning: false,
        });
        match std::env::var(TARGET_ENV) {
            Ok(t) if !t.is_empty() => dev
                .with_target(&t)
                .map_err(|e| Error::Args(format!("{TARGET_ENV}: {e}"))),
            _ => Ok(dev),
        }
    }

    /// This device with every launch using the PTX compiled for `arch` (the name of one of
    /// [`Target::ALL`], such as `sm_80`) instead of the newest target the device runs, so
    /// that, say, the `mma.sync` code of Ampere can be measured on a Hopper GPU. The
    /// environment variable `TILE_TARGET` does the same for every device a program creates.
    /// `Err` for a name that is not a target tile compiles for and for a target this device
    /// cannot run ([`Target::runs_on`]). On the interpreter the name is checked and otherwise
    /// ignored.
    pub fn with_target(self, arch: &str) -> Result<Device, Error> {
        let target = Target::parse(arch).map_err(|e| Error::Args(e.to_string()))?;
        match self {
            Device::Interpreter => Ok(Device::Interpreter),
            Device::Cuda(mut c) => {
                if !target.runs_on(c.cc.0, c.cc.1) {
                    return Err(Error::Args(format!(
                        "target {target} does not run on {} (compute capability {}.{})",
                        c.name, c.cc.0, c.cc.1
                    )));
                }
                c.target = Some(target);
                Ok(Device::Cuda(c))
            }
        }
    }

    /// The PTX target chosen for this device ([`Device::with_target`]), if any.
    pub fn target(&self) -> Option<Target> {
        match self {
            Device::Cuda(c) => c.target,
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

    /// The CUDA stream, if this is a CUDA device (`None` on the device inside
    /// [`Device::capture`], where work queued on the stream directly would not be recorded).
    pub fn stream(&self) -> Option<&Arc<CudaStream>> {
        match self {
            Device::Cuda(c) if c.recording.is_none() => Some(&c.stream),
            _ => None,
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

    /// Waits until all work queued on this device's stream is done.
    pub fn synchronize(&self) -> Result<(), Error> {
        match self {
            Device::Cuda(c) => {
                c.refuse_while_recording("Device::synchronize")?;
                driver("synchronizing", c.stream.synchronize())
            }
            Device::Interpreter => Ok(()),
        }
    }

    /// A device on a new stream of the same GPU and context: launches on the two run
    /// concurrently unless ordered. Buffers may be used on either; cudarc orders each buffer's
    /// uses across streams with events (a launch waits for the last write to its buffers on the
    /// other stream). For an explicit order, [`Device::record_event`] on one and
    /// [`Device::wait_event`] on the other. The interpreter returns itself (it runs launches one
    /// after another).
    pub fn new_stream(&self) -> Result<Device, Error> {
        match self {
            Device::Cuda(c) => {
                c.refuse_while_recording("Device::new_stream")?;
                let stream = driver("creating a stream", c.stream.context().new_stream())?;
                Ok(Device::Cuda(CudaDevice {
                    stream,
                    ..c.clone()
                }))
            }
            Device::Interpreter => Ok(Device::Interpreter),
        }
    }

    /// The number of CUDA devices (0 when there is no driver).
    pub fn count() -> usize {
        if !cuda_present() {
            return 0;
        }
        CudaContext::device_count().map_or(0, |n| n.max(0) as usize)
    }

    /// The default stream of every CUDA device, in ordinal order (empty when there is no driver
    /// or no device).
    pub fn all() -> Result<Vec<Device>, Error> {
        (0..Device::count()).map(Device::cuda).collect()
    }

    /// The ordinal of a CUDA device (as [`Device::cuda`] takes it).
    pub fn ordinal(&self) -> Option<usize> {
        match self {
            Device::Cuda(c) => Some(c.stream.context().ordinal()),
            Device::Interpreter => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreter_checks_the_name_only() {
        assert!(Device::interpreter().with_target("sm_90a").is_ok());
        assert!(Device::interpreter().with_target("sm_80").is_ok());
        for bad in ["hopper", "sm_100a"] {
            let e = Device::interpreter().with_target(bad).unwrap_err();
            assert!(
                e.to_string().contains("is not a target tile compiles for"),
                "{e}"
            );
        }
    }
}
