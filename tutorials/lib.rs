//! Triton's official tutorials ported to tile, kept line by line: the pointer arithmetic, loop
//! forms (pointers advanced in the loop included), masks, constants and names of the originals,
//! changed only where the language has no spelling for a construct (README.md lists each change
//! and why; `// triton:` comments show the original form at each place).
//!
//! Each module is one tutorial: its kernels, the host function the tutorial wraps them in, a
//! plain-Rust reference, and a `run_check` that runs the kernels on a device at given sizes and
//! compares them with the reference within a stated tolerance. The workspace tests run every
//! check on the interpreter (`tests/tutorials.rs`) and hand every kernel to ptxas
//! (`tests/kernels.rs`).

pub mod check;

/// Tutorial 01: vector addition.
#[path = "01_vector_add/mod.rs"]
pub mod vector_add;

/// Tutorial 02: fused softmax with persistent programs.
#[path = "02_fused_softmax/mod.rs"]
pub mod fused_softmax;

/// Every kernel of the ported tutorials.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = vector_add::all();
    v.extend(fused_softmax::all());
    v
}
