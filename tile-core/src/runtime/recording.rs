//! The launches a device collects while `Device::capture` runs its closure: the checked launch
//! appends a [`Node`] where it would have launched, and the graph is built from the nodes when
//! the closure returns.
//!
//! Below the device, the launch and the graph (it uses only `tma` for the tensor-map
//! parameters): the device holds a [`SharedRecording`], the launch appends to it, the graph
//! drains it, and none of them needs the others for that.

use std::sync::{Arc, Mutex};

use cudarc::driver::CudaFunction;

use super::tma::TensorMap;

/// One recorded kernel launch.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) func: CudaFunction,
    pub(crate) grid: [u32; 3],
    pub(crate) block: u32,
    pub(crate) shared: u32,
    /// One 8-byte slot per kernel parameter, holding its value in its low bytes (the driver
    /// reads as many bytes as the parameter has, and the target is little-endian).
    pub(crate) params: Vec<u64>,
    /// The hidden tensor-map parameters that follow `params`, one per descriptor slot.
    pub(crate) maps: Vec<TensorMap>,
}

/// The launches recorded so far by a device inside `Device::capture`; `open` turns false when
/// the closure returns, so that a copy of the recording device kept past the capture cannot
/// record into a graph that is already built.
#[derive(Debug, Default)]
pub(crate) struct Recording {
    pub(crate) nodes: Vec<Node>,
    pub(crate) open: bool,
}

/// A [`Recording`] shared by the capture and every copy of the recording device.
pub(crate) type SharedRecording = Arc<Mutex<Recording>>;
