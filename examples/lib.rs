//! The examples' kernels and host code (inputs, references, checks, timing), one library that the
//! example programs (`examples/NAME/main.rs`), the workspace tests and `tile-bench` share, so
//! that each kernel is compiled once per build. Each module is one example's folder: its
//! `kernels.rs` beside whatever host code it needs; `common` holds the timing, checking and
//! reporting helpers every example uses.

pub mod common;

/// vLLM's `act_and_mul` (SwiGLU / GeGLU gating): `act(x[r, j]) * x[r, d + j]`.
pub mod act_and_mul {
    pub mod kernels;
}
/// Conv-BN-ReLU: an NHWC convolution as an implicit GEMM, BatchNorm folded, ReLU fused.
pub mod conv_bn_relu {
    pub mod host;
    pub mod kernels;
}
/// Cross-entropy forward and backward over the rows of a logits matrix.
pub mod cross_entropy {
    pub mod ce;
    pub mod kernels;
}
/// Four chains of element-wise operations on a matrix with a bias per column.
pub mod elementwise_chains {
    pub mod kernels;
}
/// FlashAttention forward (`softmax(Q Kᵀ · scale) V` with an online softmax) and backward.
pub mod flash_attention {
    pub mod attn;
    pub mod decode;
    pub mod kernels;
    pub mod mods;
    pub mod varlen;
}
/// `(x + y) * z` fused, the quick start's kernel.
pub mod fused_add_mul {
    pub mod kernels;
}
/// vLLM's in-place fused add + RMS norm.
pub mod fused_add_rmsnorm {
    pub mod kernels;
}
/// `GELU(x + bias[col])`, exact (erf) and tanh forms.
pub mod fused_bias_gelu {
    pub mod kernels;
}
/// `dropout(GELU(x + bias[col]), p)` with Triton's dropout mask.
pub mod fused_bias_gelu_dropout {
    pub mod kernels;
}
/// Linear + cross-entropy forward and backward without the `tokens × vocab` logits.
pub mod linear_cross_entropy {
    pub mod host;
    pub mod kernels;
}
/// Layer norm over rows.
pub mod fused_layernorm {
    pub mod kernels;
    pub mod reference;
}
/// Softmax over rows.
pub mod fused_softmax {
    pub mod kernels;
}
/// GEMM on tensor cores, `C = A @ B`.
pub mod gemm {
    pub mod kernels;
}
/// GEMM with a fused bias + activation epilogue.
pub mod gemm_bias_act {
    pub mod kernels;
}
/// Row mean centering, `x − mean(row)`.
pub mod mean_center {
    pub mod kernels;
}
/// MoE routing as vLLM's `moe_align_block_size` computes it.
pub mod moe_align {
    pub mod align;
    pub mod kernels;
}
/// QK-norm + RoPE (vLLM's fused kernel).
pub mod qk_norm_rope {
    pub mod host;
    pub mod kernels;
}
/// `residual + dropout(x + bias[col], p)`.
pub mod residual_bias_dropout {
    pub mod kernels;
}
/// `y = x @ dequant(W)ᵀ` with 4-bit weights packed in `u32` words, and W8A8 (8-bit
/// activations and weights, per-row scales).
pub mod dequant_matmul {
    pub mod host;
    pub mod kernels;
    pub mod w8a8;
}
/// `RMSNorm(x) @ Wᵀ`: the norm's weight folded into the linear layer, its row statistic
/// into the GEMM's epilogue.
pub mod rmsnorm_linear {
    pub mod host;
    pub mod kernels;
}
/// Mamba's selective scan: a diagonal linear recurrence with its gate and output projection.
pub mod selective_scan {
    pub mod host;
    pub mod kernels;
}
/// Softmax regression on tensor cores, `softmax(x @ w)`, in one kernel.
pub mod softmax_regression {
    pub mod backward;
    pub mod kernels;
}
/// Softmax regression as the document's simple fused kernel.
pub mod softmax_regression_simple {
    pub mod kernels;
    pub mod reference;
}
