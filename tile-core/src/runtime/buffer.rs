//! Buffers a kernel reads and writes: tile's own [`Buffer`] (device or host memory), and cudarc's
//! slices and views and plain Rust slices passed as they are, without copies.
//!
//! [`TensorRef`] is what a read-only pointer parameter accepts, [`TensorMut`] what a written one
//! accepts; the generated wrapper asks each argument for a [`BufArg`], checking it belongs to the
//! launch's device. The device's buffer methods ([`Device::upload`], [`Device::zeros`],
//! [`Device::download`]) are defined here too.
//!
//! The interpreter's slice types stay inside the crate: a [`BufArg`] is opaque, and the host
//! views an [`Element`] gives the interpreter belong to a trait users cannot name.

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{
    CudaSlice, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr, SyncOnDrop,
    ValidAsZeroBits,
};

use super::device::Device;
use super::error::{driver, Error};
use crate::float8::{f8e4m3, f8e5m2};
use crate::interp::{HostMut, HostRef};
use crate::ir::DType;

/// An element type a buffer can hold, the types a kernel's pointers take: `bool`, `i8`, `i16`,
/// `i32`, `i64`, `u8`, `u32`, `u64`, `f16`, `bf16`, `f32`, `f64`, [`f8e4m3`] and [`f8e5m2`].
/// Implemented by tile for these types only.
pub trait Element:
    DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + 'static + sealed::HostView
{
    /// The IR's name for it.
    const DTYPE: DType;
}

/// The interpreter's view of host slices, kept out of the public API: `Element` requires this
/// trait, which no one outside the crate can name, so only tile implements `Element`.
mod sealed {
    use crate::interp::{HostMut, HostRef};

    pub trait HostView: Sized {
        /// Views a host slice for the interpreter.
        fn host_ref(s: &[Self]) -> HostRef<'_>;
        /// Views a mutable host slice for the interpreter.
        fn host_mut(s: &mut [Self]) -> HostMut<'_>;
    }
}

macro_rules! element {
    ($t:ty, $d:ident) => {
        element!($t, $d, $d);
    };
    ($t:ty, $d:ident, $host:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
        }
        impl sealed::HostView for $t {
            fn host_ref(s: &[Self]) -> HostRef<'_> {
                HostRef::$host(s)
            }
            fn host_mut(s: &mut [Self]) -> HostMut<'_> {
                HostMut::$host(s)
            }
        }
    };
}
element!(f32, F32);
element!(i32, I32);
element!(i64, I64);
element!(half::f16, F16);
element!(bool, I1, Bool);
element!(half::bf16, BF16);
element!(i8, I8);
element!(i16, I16);
element!(u8, U8);
element!(u32, U32);
element!(u64, U64);
element!(f64, F64);
element!(f8e4m3, F8E4M3);
element!(f8e5m2, F8E5M2);

// SAFETY: `f8e4m3` and `f8e5m2` are `repr(transparent)` over a `u8`: passing one by value or in
// device memory is passing a byte, and every byte (zero included) is a valid value.
unsafe impl DeviceRepr for f8e4m3 {}
// SAFETY: as above.
unsafe impl DeviceRepr for f8e5m2 {}
// SAFETY: all-zero bits are the value +0 of both types.
unsafe impl ValidAsZeroBits for f8e4m3 {}
// SAFETY: as above.
unsafe impl ValidAsZeroBits for f8e5m2 {}

/// A buffer in device memory (CUDA) or host memory (interpreter).
#[derive(Debug)]
pub enum Buffer<T> {
    /// Device memory.
    Cuda(CudaSlice<T>),
    /// Host memory, for the interpreter.
    Host(Vec<T>),
}

impl<T> Buffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Buffer::Cuda(s) => s.len(),
            Buffer::Host(v) => v.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Buffers on a device.
impl Device {
    /// Copies `host` into a new buffer on this device.
    pub fn upload<T: Element>(&self, host: &[T]) -> Result<Buffer<T>, Error> {
        match self {
            Device::Cuda(c) => {
                c.refuse_while_recording("Device::upload")?;
                Ok(Buffer::Cuda(driver(
                    "copying to the device",
                    c.stream.clone_htod(host),
                )?))
            }
            Device::Interpreter => Ok(Buffer::Host(host.to_vec())),
        }
    }

    /// A new buffer of `len` zeros.
    pub fn zeros<T: Element>(&self, len: usize) -> Result<Buffer<T>, Error> {
        match self {
            Device::Cuda(c) => {
                c.refuse_while_recording("Device::zeros")?;
                Ok(Buffer::Cuda(driver(
                    "allocating",
                    c.stream.alloc_zeros(len),
                )?))
            }
            Device::Interpreter => Ok(Buffer::Host(vec![T::default(); len])),
        }
    }

    /// A new buffer holding a copy of `src` (queued on this device's stream): what autotuning
    /// times a kernel on where the kernel writes `src`, so that timing never changes the
    /// caller's data (Triton's `restore_value`). On the interpreter, which never times, a buffer
    /// of zeros of the same length.
    pub fn scratch_copy<T: Element>(
        &self,
        src: &mut (impl TensorMut<T> + ?Sized),
    ) -> Result<Buffer<T>, Error> {
        let arg = src.tile_arg_mut(self)?;
        let len = arg.len();
        match (self, &arg.0) {
            (Device::Cuda(c), Memory::Device { ptr, .. }) => {
                c.refuse_while_recording("autotuning")?;
                let mut dst: CudaSlice<T> = driver("allocating", c.stream.alloc_zeros(len))?;
                let (dst_ptr, sync) = dst.device_ptr_mut(&c.stream);
                // SAFETY: both pointers address `len` elements of `T` allocated in this context
                // (the source checked by `tile_arg_mut`, which keeps it borrowed until `arg` is
                // dropped), and the copy is ordered on the stream both are used on.
                let copied = unsafe {
                    cudarc::driver::result::memcpy_dtod_async(
                        dst_ptr,
                        *ptr,
                        len * std::mem::size_of::<T>(),
                        c.stream.cu_stream(),
                    )
                };
                drop(sync);
                driver("copying on the device", copied)?;
                Ok(Buffer::Cuda(dst))
            }
            _ => Ok(Buffer::Host(vec![T::default(); len])),
        }
    }

    /// Copies a buffer back to the host (waits for the work queued before it).
    pub fn download<T: Element>(&self, buf: &Buffer<T>) -> Result<Vec<T>, Error> {
        match (self, buf) {
            (Device::Cuda(c), Buffer::Cuda(s)) => {
                c.refuse_while_recording("Device::download")?;
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
}

/// A buffer as one argument of a launch, checked to belong to the launch's device: what
/// [`TensorRef::tile_arg`] and [`TensorMut::tile_arg_mut`] give the generated wrapper to pass on
/// to the launch. Opaque: only the launch looks inside.
#[derive(Debug)]
pub struct BufArg<'a>(pub(crate) Memory<'a>, pub(crate) Reach<'a>);

/// The buffers a launch argument's addresses reach (a [`PointerTable`]'s), which the interpreter
/// must be given too, and the table's lending flag while they are lent.
///
/// [`PointerTable`]: super::PointerTable
#[derive(Debug, Default)]
pub(crate) struct Reach<'a> {
    /// The buffers, in the table's order.
    pub(crate) buffers: Vec<Memory<'a>>,
    /// Cleared when the argument is dropped.
    pub(crate) lent: Option<Lent<'a>>,
}

/// A pointer table's written buffers lent to one launch argument: clears the table's flag when
/// the argument is dropped.
#[derive(Debug)]
pub(crate) struct Lent<'a>(pub(crate) &'a std::cell::Cell<bool>);

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// Where a buffer argument's elements are.
#[derive(Debug)]
pub(crate) enum Memory<'a> {
    /// Device memory of the launch's context. `_sync` keeps cudarc's stream ordering for the
    /// buffer until the launch is queued.
    Device {
        /// Address.
        ptr: CUdeviceptr,
        /// Elements.
        len: usize,
        /// Ordering guard, dropped after the launch.
        _sync: SyncOnDrop<'a>,
    },
    /// Host memory the interpreter reads.
    HostRef(HostRef<'a>),
    /// Host memory the interpreter may write.
    HostMut(HostMut<'a>),
}

impl BufArg<'_> {
    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        match &self.0 {
            Memory::Device { len, .. } => *len,
            Memory::HostRef(r) => r.len(),
            Memory::HostMut(m) => m.len(),
        }
    }
}

/// A buffer a kernel may read.
pub trait TensorRef<T: Element> {
    /// The buffer as a launch argument on `dev`, or `Err` if it lives elsewhere.
    fn tile_arg<'a>(&'a self, dev: &'a Device) -> Result<BufArg<'a>, Error>;
}

/// A buffer a kernel may write.
pub trait TensorMut<T: Element> {
    /// The buffer as a writable launch argument on `dev`, or `Err` if it lives elsewhere.
    fn tile_arg_mut<'a>(&'a mut self, dev: &'a Device) -> Result<BufArg<'a>, Error>;
}

fn wrong(msg: &str) -> Error {
    Error::WrongDevice {
        kernel: "",
        param: "",
        msg: msg.into(),
    }
}

fn device_arg<'a, T, S: DevicePtr<T>>(s: &'a S, dev: &'a Device) -> Result<BufArg<'a>, Error> {
    let Device::Cuda(c) = dev else {
        return Err(wrong(
            "a CUDA buffer was passed to a launch on the interpreter",
        ));
    };
    if s.stream().context().cu_ctx() != c.stream.context().cu_ctx() {
        return Err(wrong(
            "the buffer belongs to another CUDA context than the launch's stream",
        ));
    }
    let len = s.len();
    let (ptr, sync) = s.device_ptr(&c.stream);
    Ok(BufArg(
        Memory::Device {
            ptr,
            len,
            _sync: sync,
        },
        Reach::default(),
    ))
}

fn device_arg_mut<'a, T, S: DevicePtrMut<T>>(
    s: &'a mut S,
    dev: &'a Device,
) -> Result<BufArg<'a>, Error> {
    let Device::Cuda(c) = dev else {
        return Err(wrong(
            "a CUDA buffer was passed to a launch on the interpreter",
        ));
    };
    if s.stream().context().cu_ctx() != c.stream.context().cu_ctx() {
        return Err(wrong(
            "the buffer belongs to another CUDA context than the launch's stream",
        ));
    }
    let len = s.len();
    let (ptr, sync) = s.device_ptr_mut(&c.stream);
    Ok(BufArg(
        Memory::Device {
            ptr,
            len,
            _sync: sync,
        },
        Reach::default(),
    ))
}

fn host_arg<'a, T: Element>(s: &'a [T], dev: &Device) -> Result<BufArg<'a>, Error> {
    match dev {
        Device::Interpreter => Ok(BufArg(Memory::HostRef(T::host_ref(s)), Reach::default())),
        Device::Cuda(_) => Err(wrong(
            "host memory was passed to a launch on a CUDA device; upload it first",
        )),
    }
}

fn host_arg_mut<'a, T: Element>(s: &'a mut [T], dev: &Device) -> Result<BufArg<'a>, Error> {
    match dev {
        Device::Interpreter => Ok(BufArg(Memory::HostMut(T::host_mut(s)), Reach::default())),
        Device::Cuda(_) => Err(wrong(
            "host memory was passed to a launch on a CUDA device; upload it first",
        )),
    }
}

impl<T: Element> TensorRef<T> for Buffer<T> {
    fn tile_arg<'a>(&'a self, dev: &'a Device) -> Result<BufArg<'a>, Error> {
        match self {
            Buffer::Cuda(s) => device_arg(s, dev),
            Buffer::Host(v) => host_arg(v, dev),
        }
    }
}

impl<T: Element> TensorMut<T> for Buffer<T> {
    fn tile_arg_mut<'a>(&'a mut self, dev: &'a Device) -> Result<BufArg<'a>, Error> {
        match self {
            Buffer::Cuda(s) => device_arg_mut(s, dev),
            Buffer::Host(v) => host_arg_mut(v, dev),
        }
    }
}

impl<T: Element> TensorRef<T> for CudaSlice<T> {
    fn tile_arg<'a>(&'a self, dev: &'a Device) -> Result<BufArg<'a>, Error> {
        device_arg(self, dev)
    }
}

impl<T: Element> TensorMut<T> for CudaSlice<T> {
    fn tile_arg_mut<'a>(&'a mut self, dev: &'a Device) -> Result<BufArg<'a>, Error> {
        device_arg_mut(self, dev)
    }
}

impl<T: Element> TensorRef<T> for CudaView<'_, T> {
    fn tile_arg<'a>(&'a self, dev: &'a Device) -> Result<BufArg<'a>, Error> {
        device_arg(self, dev)
    }
}

impl<T: Element> TensorRef<T> for CudaViewMut<'_, T> {
    fn tile_arg<'a>(&'a self, dev: &'a Device) -> Result<BufArg<'a>, Error> {
        device_arg(self, dev)
    }
}

impl<T: Element> TensorMut<T> for CudaViewMut<'_, T> {
    fn tile_arg_mut<'a>(&'a mut self, dev: &'a Device) -> Result<BufArg<'a>, Error> {
        device_arg_mut(self, dev)
    }
}

impl<T: Element> TensorRef<T> for [T] {
    fn tile_arg<'a>(&'a self, dev: &'a Device) -> Result<BufArg<'a>, Error> {
        host_arg(self, dev)
    }
}

impl<T: Element> TensorMut<T> for [T] {
    fn tile_arg_mut<'a>(&'a mut self, dev: &'a Device) -> Result<BufArg<'a>, Error> {
        host_arg_mut(self, dev)
    }
}

impl<T: Element> TensorRef<T> for Vec<T> {
    fn tile_arg<'a>(&'a self, dev: &'a Device) -> Result<BufArg<'a>, Error> {
        host_arg(self, dev)
    }
}

impl<T: Element> TensorMut<T> for Vec<T> {
    fn tile_arg_mut<'a>(&'a mut self, dev: &'a Device) -> Result<BufArg<'a>, Error> {
        host_arg_mut(self, dev)
    }
}
