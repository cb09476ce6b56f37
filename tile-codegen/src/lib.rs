//! tile's compiler: front end, passes and the LLVM/NVPTX back end. LLVM is confined to this crate.
//!
//! The pipeline, as [`pipeline::compile`] runs it for one kernel:
//!
//! 1. [`frontend`]: the `#[tile_kernel]` function → tile-level IR (typed, shapes checked).
//! 2. [`passes`]: canonicalize, CSE, DCE at the tile level; then, per specialization,
//!    `assign-layouts` (GPU level: a blocked layout on every tensor) and `vectorize`
//!    (16-byte accesses where axis analysis proves them safe).
//! 3. [`llvm`]: GPU-level IR → LLVM IR → O3 → PTX for every [`tile_core::Target`], with the
//!    [`analysis`] results (shared-memory allocation, barriers, axis facts) the pipeline computed
//!    on that IR.
//!
//! Dependencies between the modules go one way: `frontend` builds IR; `passes` and `llvm` each
//! use `analysis` (and `staging`), never each other; `pipeline` uses them all.

pub mod analysis;
pub mod budget;
mod cache_files;
pub mod frontend;
pub mod llvm;
pub mod passes;
pub mod pipeline;
pub mod ptx_cache;
pub mod ptxas;
pub mod registers;
pub mod staging;
