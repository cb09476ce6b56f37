//! Points in a device's queue of work ([`Event`]) and a timer built on them ([`Timer`]): what a
//! user puts around launches to time them, or records on one stream for another to wait on.
//!
//! On a CUDA device an event is a CUDA event recorded on the device's stream (timing enabled);
//! on the interpreter, whose launches have finished when they return, it is the host clock.
//! [`Device::hold`] keeps a device's queue waiting for a while, so that a batch of launches is
//! queued before its first one runs and events around the batch time the device alone.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaFunction, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

use super::device::Device;
use super::error::{driver, Error};

/// Events and timers on a device.
impl Device {
    /// An event marking the work queued on this device so far (for [`Event::elapsed`] and
    /// [`Device::wait_event`]).
    pub fn record_event(&self) -> Result<Event, Error> {
        Event::record(self)
    }

    /// Makes later work on this device wait for the work before `event` (recorded on any
    /// stream of the same context) without blocking the host.
    pub fn wait_event(&self, event: &Event) -> Result<(), Error> {
        match (self, event.cuda()) {
            (Device::Cuda(c), Some(e)) => {
                c.refuse_while_recording("Device::wait_event")?;
                driver("waiting for an event", c.stream.wait(e))
            }
            (Device::Interpreter, None) => Ok(()),
            _ => Err(Error::Args(
                "Device::wait_event: the event is from another kind of device".into(),
            )),
        }
    }

    /// Starts a [`Timer`]: device time of the work queued from now until [`Timer::elapsed`].
    pub fn timer(&self) -> Result<Timer, Error> {
        Timer::start(self)
    }

    /// Queues a wait of `d` on this device: one thread that watches the GPU's global timer, so
    /// the work queued after it starts `d` after the hold does (at the timer's resolution, about
    /// a microsecond). Timing uses it: launches queued behind a hold longer than the host takes
    /// to queue them run back to back, and events around them measure the device's time rather
    /// than the host's launch rate ([`crate::runtime::autotune::time_ms`] does so). The first
    /// hold in a context loads a small module. On the interpreter, a no-op; inside
    /// [`Device::capture`], an `Err`.
    pub fn hold(&self, d: Duration) -> Result<(), Error> {
        let Device::Cuda(c) = self else {
            return Ok(());
        };
        c.refuse_while_recording("Device::hold")?;
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let func = hold_function(c)?;
        let mut builder = c.stream.launch_builder(&func);
        builder.arg(&ns);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: `tile_hold` (HOLD_PTX) takes one `.u64` parameter, given here as a `u64`; it
        // reads no memory and writes none, and runs one thread in one block.
        let launched = unsafe { builder.launch(cfg) };
        driver("launching the hold kernel", launched.map(|_| ()))
    }
}

/// A one-thread kernel that returns once `ns` nanoseconds of `%globaltimer` have passed,
/// sleeping a microsecond between reads (`nanosleep`: sm_70 and PTX 6.3).
const HOLD_PTX: &str = "\
.version 6.3
.target sm_70
.address_size 64

.visible .entry tile_hold(.param .u64 ns)
{
    .reg .pred %p;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [ns];
    mov.u64 %rd2, %globaltimer;
WAIT:
    nanosleep.u32 1000;
    mov.u64 %rd3, %globaltimer;
    sub.u64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p, %rd4, %rd1;
    @%p bra WAIT;
    ret;
}
";

/// `tile_hold` in the stream's context: loaded from [`HOLD_PTX`] once per context.
fn hold_function(c: &super::device::CudaDevice) -> Result<CudaFunction, Error> {
    static LOADED: Mutex<Vec<(usize, CudaFunction)>> = Mutex::new(Vec::new());
    let ctx = c.stream.context();
    let key = ctx.cu_ctx() as usize;
    let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, f)) = loaded.iter().find(|(k, _)| *k == key) {
        return Ok(f.clone());
    }
    let module = driver(
        "loading the hold kernel's PTX",
        ctx.load_module(Ptx::from_src(HOLD_PTX)),
    )?;
    let f = driver(
        "finding entry `tile_hold`",
        module.load_function("tile_hold"),
    )?;
    loaded.push((key, f.clone()));
    Ok(f)
}

/// A point in a device's queue of work: everything queued on the device before
/// [`Device::record_event`] returned it.
#[derive(Debug)]
pub struct Event {
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Cuda(CudaEvent),
    Host(Instant),
}

impl Event {
    fn record(dev: &Device) -> Result<Event, Error> {
        let inner = match dev {
            Device::Cuda(c) => {
                c.refuse_while_recording("Device::record_event")?;
                Inner::Cuda(driver(
                    "recording an event",
                    c.stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT)),
                )?)
            }
            Device::Interpreter => Inner::Host(Instant::now()),
        };
        Ok(Event { inner })
    }

    /// Blocks until the work before the event is done.
    pub fn synchronize(&self) -> Result<(), Error> {
        match &self.inner {
            Inner::Cuda(e) => driver("waiting for an event", e.synchronize()),
            Inner::Host(_) => Ok(()),
        }
    }

    /// Whether the work before the event is done (without blocking).
    pub fn is_complete(&self) -> Result<bool, Error> {
        match &self.inner {
            Inner::Cuda(e) => driver("querying an event", e.try_is_complete()),
            Inner::Host(_) => Ok(true),
        }
    }

    /// The device time from `self` to `later` (waits for both). `Err` for events of different
    /// kinds (a CUDA event and an interpreter one) or contexts, or `later` recorded first.
    pub fn elapsed(&self, later: &Event) -> Result<Duration, Error> {
        match (&self.inner, &later.inner) {
            (Inner::Cuda(a), Inner::Cuda(b)) => {
                let ms = driver("reading the time between two events", a.elapsed_ms(b))?;
                if ms.is_nan() || ms < 0.0 {
                    return Err(Error::Args(format!(
                        "Event::elapsed: the later event was recorded {:.3} ms before the earlier one",
                        -ms
                    )));
                }
                Ok(Duration::from_secs_f64(f64::from(ms) / 1e3))
            }
            (Inner::Host(a), Inner::Host(b)) => b.checked_duration_since(*a).ok_or_else(|| {
                Error::Args("Event::elapsed: the later event was recorded first".into())
            }),
            _ => Err(Error::Args(
                "Event::elapsed: one event is from a CUDA device, the other from the interpreter"
                    .into(),
            )),
        }
    }

    /// The CUDA event, for a stream of this device to wait on.
    fn cuda(&self) -> Option<&CudaEvent> {
        match &self.inner {
            Inner::Cuda(e) => Some(e),
            Inner::Host(_) => None,
        }
    }
}

/// Device time from its creation: [`Device::timer`] records a start event, [`Timer::elapsed`] an
/// end event, and returns the time between (waiting for the work in between to finish).
///
/// ```no_run
/// # fn main() -> Result<(), tile_core::runtime::Error> {
/// # let dev = tile_core::runtime::Device::interpreter();
/// let timer = dev.timer()?;
/// // ... launches on `dev` ...
/// println!("{:.3} ms", timer.elapsed()?.as_secs_f64() * 1e3);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Timer {
    dev: Device,
    start: Event,
}

impl Timer {
    fn start(dev: &Device) -> Result<Timer, Error> {
        Ok(Timer {
            dev: dev.clone(),
            start: Event::record(dev)?,
        })
    }

    /// Device time of the work queued since the timer started (a new end event each call, so a
    /// timer can be read several times).
    pub fn elapsed(&self) -> Result<Duration, Error> {
        let end = Event::record(&self.dev)?;
        self.start.elapsed(&end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_on_the_interpreter_returns_at_once() {
        let dev = Device::interpreter();
        let t = Instant::now();
        dev.hold(Duration::from_secs(5)).unwrap();
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn the_hold_kernel_is_one_entry_with_one_u64_parameter() {
        // What the launch in `Device::hold` passes, and the PTX ISA/target `nanosleep` needs.
        assert!(HOLD_PTX.contains(".visible .entry tile_hold(.param .u64 ns)"));
        assert_eq!(HOLD_PTX.matches(".entry").count(), 1);
        assert!(HOLD_PTX.starts_with(".version 6.3\n.target sm_70\n"));
    }
}
