//! vLLM's `fused_add_rms_norm`, in place, in bf16 and f16 (f32 arithmetic):
//! `residual = x + residual` (rounded to the storage type and written back), then
//! `x = residual / sqrt(mean(residual²) + eps) · w` (written back). One fused kernel (one program
//! per row) against the unfused form: an element-wise add kernel that writes the residual, a
//! per-row kernel that writes the inverse RMS to an f32 scratch buffer, and an element-wise
//! broadcast scale kernel (one program per row and 1024 columns). The reductions take one instance
//! per tile width, chosen by the row length (the language has no loops yet).

use tile::prelude::*;

macro_rules! rmsnorm_kernels {
    ($($t:ident, $block:literal, $warps:literal: $fused:ident, $rms:ident;)*) => {$(
        #[tile_kernel(num_warps = $warps)]
        /// Fused add + RMS norm of each row (`n` ≤ the tile width), both buffers in place. The
        /// statistics use the residual as stored (rounded), as vLLM's kernel does.
        pub fn $fused(x: Ptr<$t, { rows * n }>, residual: Ptr<$t, { rows * n }>, w: Ptr<$t, n>, rows: i32, n: i32, eps: f32, BLOCK: Const<$block>) {
            let cols = arange(0, BLOCK);
            let mask = cols < n;
            let offs = program_id(0) * n + cols;
            let s = ((load(x + offs, mask) as f32) + load(residual + offs, mask) as f32) as $t;
            store(residual + offs, s, mask);
            let r = s as f32;
            let inv = rsqrt((r * r).sum() / (n as f32) + eps);
            store(x + offs, (r * inv * (load(w + cols, mask) as f32)) as $t, mask);
        }

        #[tile_kernel(num_warps = $warps)]
        /// Unfused step 2: the inverse RMS of each row of the residual, `1 / sqrt(mean(r²) + eps)`.
        pub fn $rms(residual: Ptr<$t, { rows * n }>, inv: Ptr<f32, rows>, rows: i32, n: i32, eps: f32, BLOCK: Const<$block>) {
            let cols = arange(0, BLOCK);
            let r = load(residual + program_id(0) * n + cols, cols < n) as f32;
            store(inv + program_id(0), rsqrt((r * r).sum() / (n as f32) + eps));
        }
    )*};
}

macro_rules! elementwise_kernels {
    ($($t:ident: $add:ident, $scale:ident;)*) => {$(
        #[tile_kernel]
        /// Unfused step 1, element-wise over all `len` elements: `residual = x + residual`.
        pub fn $add(x: Ptr<$t, len>, residual: Ptr<$t, len>, len: i32, BLOCK: Const<1024>) {
            let offs = program_id(0) * BLOCK + arange(0, BLOCK);
            let mask = offs < len;
            let s = (load(x + offs, mask) as f32) + load(residual + offs, mask) as f32;
            store(residual + offs, s as $t, mask);
        }

        #[tile_kernel]
        /// Unfused step 3, element-wise (program (row, column block), as an eager broadcast
        /// kernel): `x = residual · inv · w`.
        pub fn $scale(x: Ptr<$t, { rows * n }>, residual: Ptr<$t, { rows * n }>, inv: Ptr<f32, rows>, w: Ptr<$t, n>, rows: i32, n: i32, BLOCK: Const<1024>) {
            let cols = program_id(1) * BLOCK + arange(0, BLOCK);
            let mask = cols < n;
            let offs = program_id(0) * n + cols;
            let r = load(residual + offs, mask) as f32;
            store(x + offs, (r * load(inv + program_id(0)) * (load(w + cols, mask) as f32)) as $t, mask);
        }
    )*};
}

rmsnorm_kernels! {
    bf16, 1024, 4: add_rms_bf16_1024, rms_bf16_1024;
    bf16, 4096, 8: add_rms_bf16_4096, rms_bf16_4096;
    bf16, 8192, 16: add_rms_bf16_8192, rms_bf16_8192;
    f16, 1024, 4: add_rms_f16_1024, rms_f16_1024;
    f16, 4096, 8: add_rms_f16_4096, rms_f16_4096;
    f16, 8192, 16: add_rms_f16_8192, rms_f16_8192;
}

elementwise_kernels! {
    bf16: residual_add_bf16, rms_scale_bf16;
    f16: residual_add_f16, rms_scale_f16;
}

/// The tile widths, narrowest first; a row of `n` uses the first that holds it.
pub const WIDTHS: [i32; 3] = [1024, 4096, 8192];

/// Every kernel of this example.
#[allow(dead_code)]
pub fn all() -> Vec<&'static tile::KernelSpec> {
    vec![
        &add_rms_bf16_1024::KERNEL,
        &rms_bf16_1024::KERNEL,
        &add_rms_bf16_4096::KERNEL,
        &rms_bf16_4096::KERNEL,
        &add_rms_bf16_8192::KERNEL,
        &rms_bf16_8192::KERNEL,
        &add_rms_f16_1024::KERNEL,
        &rms_f16_1024::KERNEL,
        &add_rms_f16_4096::KERNEL,
        &rms_f16_4096::KERNEL,
        &add_rms_f16_8192::KERNEL,
        &rms_f16_8192::KERNEL,
        &residual_add_bf16::KERNEL,
        &rms_scale_bf16::KERNEL,
        &residual_add_f16::KERNEL,
        &rms_scale_f16::KERNEL,
    ]
}

/// The element types the example runs on, with the launchers of both forms.
pub trait AddRmsNorm: tile::Element {
    /// Fused add + RMS norm of `rows` rows of `n` (`n` ≤ 8192), in place on `x` and `residual`.
    #[allow(clippy::too_many_arguments)]
    fn fused(
        dev: &Device,
        x: &mut Buffer<Self>,
        residual: &mut Buffer<Self>,
        w: &Buffer<Self>,
        rows: i32,
        n: i32,
        eps: f32,
    ) -> Result<(), Error>;
    /// Unfused: add, per-row inverse RMS into `inv` (`rows` f32), scale.
    #[allow(clippy::too_many_arguments)]
    fn unfused(
        dev: &Device,
        x: &mut Buffer<Self>,
        residual: &mut Buffer<Self>,
        w: &Buffer<Self>,
        inv: &mut Buffer<f32>,
        rows: i32,
        n: i32,
        eps: f32,
    ) -> Result<(), Error>;
}

fn too_wide(n: i32) -> Error {
    Error::Args(format!(
        "add + RMS norm: rows of {n} elements exceed the widest tile ({})",
        WIDTHS[2]
    ))
}

macro_rules! rmsnorm_impl {
    ($t:ty, $add:ident, $scale:ident; $($block:literal => $fused:ident, $rms:ident;)*) => {
        impl AddRmsNorm for $t {
            fn fused(dev: &Device, x: &mut Buffer<Self>, residual: &mut Buffer<Self>, w: &Buffer<Self>, rows: i32, n: i32, eps: f32) -> Result<(), Error> {
                let g = Grid::x(rows.max(0) as u32);
                $(if n <= $block {
                    return $fused::launch(dev, g, x, residual, w, rows, n, eps);
                })*
                Err(too_wide(n))
            }

            fn unfused(dev: &Device, x: &mut Buffer<Self>, residual: &mut Buffer<Self>, w: &Buffer<Self>, inv: &mut Buffer<f32>, rows: i32, n: i32, eps: f32) -> Result<(), Error> {
                let g = Grid::x(rows.max(0) as u32);
                $(if n <= $block {
                    let len = rows.checked_mul(n).ok_or_else(|| Error::Args("rows × n overflows i32".into()))?;
                    $add::launch(dev, Grid::x(cdiv(len, 1024)), &*x, residual, len)?;
                    $rms::launch(dev, g, &*residual, inv, rows, n, eps)?;
                    return $scale::launch(dev, Grid::xy(rows.max(0) as u32, cdiv(n, 1024)), x, &*residual, &*inv, w, rows, n);
                })*
                Err(too_wide(n))
            }
        }
    };
}

rmsnorm_impl! { bf16, residual_add_bf16, rms_scale_bf16;
    1024 => add_rms_bf16_1024, rms_bf16_1024;
    4096 => add_rms_bf16_4096, rms_bf16_4096;
    8192 => add_rms_bf16_8192, rms_bf16_8192;
}

rmsnorm_impl! { f16, residual_add_f16, rms_scale_f16;
    1024 => add_rms_f16_1024, rms_f16_1024;
    4096 => add_rms_f16_4096, rms_f16_4096;
    8192 => add_rms_f16_8192, rms_f16_8192;
}
