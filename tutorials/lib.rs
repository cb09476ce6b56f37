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

/// Tutorial 03: matrix multiplication in grouped order, pointers advanced in the `K` loop.
#[path = "03_matrix_multiplication/mod.rs"]
pub mod matrix_multiplication;

/// Tutorial 04: low-memory (seeded) dropout.
#[path = "04_low_memory_dropout/mod.rs"]
pub mod low_memory_dropout;

/// Tutorial 05: layer norm forward and backward.
#[path = "05_layer_norm/mod.rs"]
pub mod layer_norm;

/// Tutorial 06: fused attention, the forward pass.
#[path = "06_fused_attention/mod.rs"]
pub mod fused_attention;

/// Tutorial 08: grouped GEMM, the matrices reached through tables of their addresses.
#[path = "08_grouped_gemm/mod.rs"]
pub mod grouped_gemm;

/// Tutorial 09: persistent matmul.
#[path = "09_persistent_matmul/mod.rs"]
pub mod persistent_matmul;

/// Every kernel of the ported tutorials.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    let mut v = vector_add::all();
    v.extend(fused_softmax::all());
    v.extend(matrix_multiplication::all());
    v.extend(low_memory_dropout::all());
    v.extend(layer_norm::all());
    v.extend(fused_attention::all());
    v.extend(grouped_gemm::all());
    v.extend(persistent_matmul::all());
    v
}
