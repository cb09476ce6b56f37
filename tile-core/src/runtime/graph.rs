//! CUDA graphs of tile launches: [`Device::capture`] records what a closure launches, and
//! [`Graph::launch`] replays it with one driver call, which is what launch-bound work (a
//! LayerNorm of 4096 × 1024, a small softmax) needs.
//!
//! The graph is built node by node, not by stream capture: while the closure runs, each checked
//! launch becomes a kernel node (function, grid, block, dynamic shared memory and its argument
//! values), chained in launch order. So the launches are checked exactly as plain ones are, the
//! device's stream is never put in capture mode (cudarc's cross-stream ordering of buffers, which
//! records and waits on events, happens outside any capture, as for a plain launch), and the
//! graph replays on the device's own stream — the legacy default stream included, which CUDA
//! cannot capture.
//!
//! What keeps replays memory-safe: a [`Graph`] holds the closure, and so every borrow the closure
//! holds, for as long as it lives: no buffer a node points to can be freed, or written by the host,
//! before the graph is dropped, and dropping it waits for its replays to finish. Inside the
//! closure, the device refuses everything but launches (allocating there would hand the graph
//! memory that is freed when the closure returns). On the interpreter, which has no graphs, the
//! closure itself is kept and each replay runs it.

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use cudarc::driver::sys::{self, CUgraph, CUgraphExec, CUgraphInstantiate_flags, CUgraphNode};
use cudarc::driver::{result, CudaFunction};

use super::device::{CudaDevice, Device};
use super::error::{driver, Error};
use super::recording::{Node, Recording, SharedRecording};
use super::tma::TensorMap;

/// CUDA graphs on a device.
impl Device {
    /// Records the kernel launches `launches` makes on the device it is given into a CUDA graph,
    /// without running them; [`Graph::launch`] replays them on this device with one driver call.
    ///
    /// Every launch is checked as a plain launch is (an `Err` from one ends the capture with that
    /// `Err`). Inside the closure only launches are allowed: allocation, copies and
    /// synchronization on the device it is given are an [`Error::Capture`]. The graph holds the
    /// closure, so the buffers it borrows stay borrowed while the graph lives. On the interpreter
    /// nothing is recorded: each replay runs the closure.
    ///
    /// What the borrow checker cannot see: device memory the closure allocates through cudarc
    /// directly (tile's own `upload`/`zeros` are refused there, and `stream()` is `None`) and
    /// frees before returning would still be pointed at by the graph. Allocate before the
    /// capture.
    ///
    /// ```no_run
    /// # use tile_core::runtime::{Device, Error};
    /// # fn run(dev: &Device) -> Result<(), Error> { Ok(()) }
    /// # fn main() -> Result<(), Error> {
    /// # let dev = Device::interpreter();
    /// let mut graph = dev.capture(|d| run(d))?; // `run` launches kernels on `d`
    /// for _ in 0..100 {
    ///     graph.launch()?;
    /// }
    /// dev.synchronize()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn capture<'a>(
        &self,
        launches: impl FnMut(&Device) -> Result<(), Error> + 'a,
    ) -> Result<Graph<'a>, Error> {
        Graph::capture(self, launches)
    }
}

/// The closure a graph was captured from.
type Launches<'a> = Box<dyn FnMut(&Device) -> Result<(), Error> + 'a>;

/// A recorded sequence of tile launches, replayed by [`Graph::launch`] on the device it was
/// captured on. Built by [`Device::capture`].
///
/// The graph borrows what its closure borrows for its whole life; dropping it waits for its
/// replays. Results are read on the same device after a replay (its stream orders the read after
/// the replay): [`Device::download`] of a buffer the closure borrowed mutably needs the graph
/// dropped first, as the borrow checker says.
pub struct Graph<'a> {
    dev: Device,
    exec: Option<Exec>,
    kernels: usize,
    launches: Launches<'a>,
}

impl std::fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("device", &self.dev.name())
            .field("kernels", &self.kernels)
            .finish()
    }
}

/// A CUDA graph and its executable instance, destroyed together.
struct Exec {
    graph: CUgraph,
    exec: CUgraphExec,
    /// Keeps the modules of the nodes' functions loaded.
    _funcs: Vec<CudaFunction>,
}

impl<'a> Graph<'a> {
    fn capture(
        dev: &Device,
        mut launches: impl FnMut(&Device) -> Result<(), Error> + 'a,
    ) -> Result<Graph<'a>, Error> {
        let c = match dev {
            Device::Interpreter => {
                return Ok(Graph {
                    dev: Device::Interpreter,
                    exec: None,
                    kernels: 0,
                    launches: Box::new(launches),
                })
            }
            Device::Cuda(c) => c,
        };
        c.refuse_while_recording("Device::capture")?;
        let recording: SharedRecording = Arc::new(Mutex::new(Recording {
            nodes: Vec::new(),
            open: true,
        }));
        let mut recorder = c.clone();
        recorder.recording = Some(recording.clone());
        let ran = launches(&Device::Cuda(recorder));
        let nodes = {
            let mut r = recording.lock().unwrap_or_else(|p| p.into_inner());
            r.open = false;
            std::mem::take(&mut r.nodes)
        };
        ran?;
        let kernels = nodes.len();
        trace_event!(debug, kernels, device = %c.name, "tile: captured a CUDA graph");
        let exec = if nodes.is_empty() {
            None
        } else {
            Some(build(c, nodes)?)
        };
        Ok(Graph {
            dev: dev.clone(),
            exec,
            kernels,
            launches: Box::new(launches),
        })
    }

    /// Queues one replay of the recorded launches on the device's stream (asynchronous, as a
    /// launch is). On the interpreter, runs the closure again.
    pub fn launch(&mut self) -> Result<(), Error> {
        match (&self.dev, &self.exec) {
            (Device::Cuda(c), Some(e)) => {
                driver("binding the context", c.stream.context().bind_to_thread())?;
                driver(
                    "launching a CUDA graph",
                    // SAFETY: `e.exec` is an instantiated graph of this context (built in
                    // `build`, destroyed only in `drop`), and the stream is this context's. Every
                    // node was a launch that passed the same checks as a plain one, and the
                    // buffers its arguments point to are borrowed by `self.launches` for the
                    // graph's life, so they are allocated and not written by the host.
                    unsafe { result::graph::launch(e.exec, c.stream.cu_stream()) },
                )
            }
            (Device::Cuda(_), None) => Ok(()),
            (Device::Interpreter, _) => (self.launches)(&self.dev),
        }
    }

    /// The number of kernel launches recorded (0 on the interpreter, which records none).
    pub fn kernels(&self) -> usize {
        self.kernels
    }

    /// The device the graph replays on.
    pub fn device(&self) -> &Device {
        &self.dev
    }
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        let (Device::Cuda(c), Some(e)) = (&self.dev, self.exec.take()) else {
            return;
        };
        // The buffers are released when `self.launches` is dropped, after this: every replay
        // must be done by then. An error here has nowhere to go; cudarc keeps it for the
        // context's next call.
        let ctx = c.stream.context();
        ctx.record_err(c.stream.synchronize());
        // SAFETY: the handles come from `build` and are destroyed once (`exec` was taken); the
        // stream is idle, so no replay is running.
        unsafe {
            ctx.record_err(result::graph::exec_destroy(e.exec));
            ctx.record_err(result::graph::destroy(e.graph));
        }
    }
}

/// Builds and instantiates the graph of `nodes`, each depending on the one before.
fn build(c: &CudaDevice, mut nodes: Vec<Node>) -> Result<Exec, Error> {
    let ctx = c.stream.context();
    driver("binding the context", ctx.bind_to_thread())?;
    let mut graph: CUgraph = std::ptr::null_mut();
    // SAFETY: `graph` is a valid place for the handle; flags must be 0.
    driver("creating a CUDA graph", unsafe {
        sys::cuGraphCreate(&mut graph, 0).result()
    })?;
    let added = add_nodes(graph, &mut nodes);
    let exec = added.and_then(|()| {
        driver(
            "instantiating a CUDA graph",
            // SAFETY: `graph` was created above and holds only the nodes just added.
            unsafe { result::graph::instantiate(graph, CUgraphInstantiate_flags(0)) },
        )
    });
    match exec {
        Ok(exec) => Ok(Exec {
            graph,
            exec,
            _funcs: nodes.into_iter().map(|n| n.func).collect(),
        }),
        Err(e) => {
            // SAFETY: `graph` was created above, has no instance, and is destroyed once (here;
            // `Graph::drop` only sees graphs that were built).
            ctx.record_err(unsafe { result::graph::destroy(graph) });
            Err(e)
        }
    }
}

fn add_nodes(graph: CUgraph, nodes: &mut [Node]) -> Result<(), Error> {
    let mut prev: Option<CUgraphNode> = None;
    for n in nodes {
        // The kernel's own parameters, then its tensor maps: the order the PTX declares them.
        let mut slots: Vec<*mut c_void> = n
            .params
            .iter_mut()
            .map(|p| (p as *mut u64).cast::<c_void>())
            .chain(n.maps.iter_mut().map(|m| (m as *mut TensorMap).cast()))
            .collect();
        // SAFETY: the struct is plain data (handles, integers, pointers) for which all-zero is
        // valid: null `extra`, and a null `kern`/`ctx` where the struct has them (the driver then
        // uses `func`).
        let mut p: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
        p.func = n.func.cu_function();
        p.gridDimX = n.grid[0];
        p.gridDimY = n.grid[1];
        p.gridDimZ = n.grid[2];
        p.blockDimX = n.block;
        p.blockDimY = 1;
        p.blockDimZ = 1;
        p.sharedMemBytes = n.shared;
        p.kernelParams = slots.as_mut_ptr();
        let deps: Vec<CUgraphNode> = prev.into_iter().collect();
        let mut node: CUgraphNode = std::ptr::null_mut();
        // SAFETY: `graph` is valid; `deps` holds nodes of it; `p.kernelParams` has one pointer
        // per kernel parameter (the launch that recorded the node checked the count and kinds,
        // and added one tensor map per descriptor slot), each to an 8-byte slot of `n.params`
        // holding the value or to a 128-byte map of `n.maps`, alive for this call (the driver
        // copies the values into the node).
        driver("adding a kernel to a CUDA graph", unsafe {
            sys::cuGraphAddKernelNode_v2(&mut node, graph, deps.as_ptr(), deps.len(), &p).result()
        })?;
        prev = Some(node);
    }
    Ok(())
}
