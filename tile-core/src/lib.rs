//! tile-core: the parts of tile that a program needs at run time, and the IR shared with the
//! compiler. LLVM-free.
//!
//! - [`ir`]: the tile IR (types, ops, text form, verifier).
//! - [`interp`]: executes tile-level IR on the CPU.
//! - [`random`]: the reference of the random streams (`rand`, `randint`: Triton's Philox).
//! - [`runtime`]: devices, buffers, kernel metadata and checked launches (CUDA through cudarc, or
//!   the interpreter), and the run-time half of autotuning ([`runtime::autotune`]).
//! - [`Target`]: the GPU architectures tile compiles for, and their facts (shared memory,
//!   registers, instructions, PTX version).

pub mod float8;
pub mod interp;
pub mod ir;
pub mod random;
pub mod runtime;
mod target;

pub use target::{Target, UnknownTarget};
