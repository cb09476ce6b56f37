//! Tables of buffer addresses, what a kernel that converts integers to pointers (`x as Ptr<T>`,
//! Triton's `tl.load(ptrs + g).to(tl.pointer_type(T))`) reads: a grouped GEMM's per-problem
//! matrices, say.
//!
//! A [`PointerTable`] is an `i64` buffer holding the addresses of some buffers of one element
//! type, which it keeps borrowed (shared for a table the kernel reads through, exclusively for
//! one it writes through), so that they outlive every launch it is passed to. On a CUDA device
//! the addresses are the buffers' device addresses; on the interpreter, their host addresses,
//! and a launch passes the buffers themselves along with the table, so that the interpreter can
//! find what an address points into (and report an address that lies in none of them).

use std::cell::Cell;
use std::marker::PhantomData;

use super::buffer::{BufArg, Buffer, Element, Lent, Memory, TensorMut, TensorRef};
use super::device::Device;
use super::error::Error;

/// The addresses of some buffers of `T` on one device, as an `i64` buffer a kernel reads (a
/// `Ptr<i64>` parameter), with the buffers kept borrowed for `'b`.
///
/// ```
/// # use tile_core::runtime::{Buffer, Device, Error, PointerTable};
/// # fn main() -> Result<(), Error> {
/// let dev = Device::interpreter();
/// let (a, b) = (dev.upload(&[1.0f32; 8])?, dev.upload(&[2.0f32; 4])?);
/// let table = PointerTable::new(&dev, &[&a, &b])?; // the addresses of `a` and `b`
/// assert_eq!(table.len(), 2);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PointerTable<'b, T: Element> {
    addresses: Buffer<i64>,
    targets: Vec<Target<'b, T>>,
    /// Whether a launch argument holds the written buffers now (at most one at a time, so that
    /// the interpreter never sees two mutable views of one buffer).
    lent: Cell<bool>,
}

#[derive(Debug)]
enum Target<'b, T> {
    Read(&'b Buffer<T>),
    /// A buffer the kernel may write, borrowed exclusively for `'b` and held as a pointer so that
    /// a shared borrow of the table (what a read-only launch argument is) can lend it to the
    /// interpreter, one launch argument at a time.
    Write(*mut Buffer<T>, PhantomData<&'b mut Buffer<T>>),
}

impl<'b, T: Element> PointerTable<'b, T> {
    /// A table of the addresses of `buffers` (all on `dev`), in order, for a kernel that reads
    /// through them.
    pub fn new(dev: &Device, buffers: &[&'b Buffer<T>]) -> Result<Self, Error> {
        let targets: Vec<Target<'b, T>> = buffers.iter().map(|&b| Target::Read(b)).collect();
        Self::build(dev, targets)
    }

    /// A table of the addresses of `buffers` (all on `dev`), in order, for a kernel that may
    /// write through them.
    pub fn new_mut(dev: &Device, buffers: Vec<&'b mut Buffer<T>>) -> Result<Self, Error> {
        let targets: Vec<Target<'b, T>> = buffers
            .into_iter()
            .map(|b| Target::Write(b as *mut Buffer<T>, PhantomData))
            .collect();
        Self::build(dev, targets)
    }

    fn build(dev: &Device, targets: Vec<Target<'b, T>>) -> Result<Self, Error> {
        let mut addresses = Vec::with_capacity(targets.len());
        for t in &targets {
            let arg = t.buffer().tile_arg(dev)?;
            addresses.push(match arg.0 {
                Memory::Device { ptr, .. } => ptr as i64,
                Memory::HostRef(r) => r.address() as i64,
                Memory::HostMut(m) => m.address() as i64,
            });
        }
        Ok(PointerTable {
            addresses: dev.upload(&addresses)?,
            targets,
            lent: Cell::new(false),
        })
    }

    /// Number of addresses.
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    /// True when the table holds no address.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Buffer `i` of the table (`None` past its end), to read back what a kernel wrote through
    /// it: `&mut self`, so that no launch argument holds the table meanwhile.
    pub fn buffer(&mut self, i: usize) -> Option<&Buffer<T>> {
        self.targets.get(i).map(Target::buffer)
    }
}

impl<T> Target<'_, T> {
    /// The buffer, shared.
    fn buffer(&self) -> &Buffer<T> {
        match self {
            Target::Read(b) => b,
            // SAFETY: the pointer came from a `&mut Buffer<T>` borrowed for the table's `'b`, so
            // it is valid and nothing else uses the buffer; a shared view while no launch
            // argument holds the mutable one (the table's `lent` flag) aliases nothing.
            Target::Write(p, _) => unsafe { &**p },
        }
    }
}

impl<T: Element> TensorRef<i64> for PointerTable<'_, T> {
    fn tile_arg<'a>(&'a self, dev: &'a Device) -> Result<BufArg<'a>, Error> {
        let mut arg = self.addresses.tile_arg(dev)?;
        let writes = self.targets.iter().any(|t| matches!(t, Target::Write(..)));
        if writes {
            if self.lent.replace(true) {
                return Err(Error::Args(
                    "a pointer table of written buffers is passed to one launch argument at a \
                     time"
                        .into(),
                ));
            }
            arg.1.lent = Some(Lent(&self.lent));
        }
        for t in &self.targets {
            let reached = match (t, dev) {
                (Target::Write(p, _), Device::Interpreter) => {
                    // SAFETY: as in `Target::buffer`; `lent` (set above, cleared when `arg`
                    // drops) keeps this the only view of the buffer while the launch runs.
                    let b = unsafe { &mut **p };
                    b.tile_arg_mut(dev)?
                }
                _ => t.buffer().tile_arg(dev)?,
            };
            arg.1.buffers.push(reached.0);
        }
        Ok(arg)
    }
}
