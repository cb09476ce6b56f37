//! A GEMM (f16 or bf16 in and out, f32 accumulation) written as the guide writes it, not tuned
//! the way the `gemm` example is: what the compiler makes of ordinary code. A 2-D grid in row
//! order, `128 × 128 × 32` tiles on 4 warps, three stages, offsets affine in the loop variable.
//! (Triton's tutorial form is `tile-tutorials`' `matrix_multiplication`.)

use tile::prelude::*;

#[tile_kernel(num_warps = 4, num_stages = 3)]
/// `c = a @ b`, the guide's form.
#[allow(clippy::too_many_arguments)]
pub fn guide_gemm(
    a: Ptr<T, { m * k }>,
    b: Ptr<T, { k * n }>,
    c: Ptr<T, { m * n }>,
    m: i32,
    n: i32,
    k: i32,
    T: Type<{ [f16, bf16] }>,
    BM: Const<128>,
    BN: Const<128>,
    BK: Const<32>,
) {
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    let ks = arange(0, BK);
    let mut acc = zeros([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        let kk = k0 + ks;
        let at = load(
            a + rows.expand_dims(1) * k + kk.expand_dims(0),
            (rows < m).expand_dims(1) & (kk < k).expand_dims(0),
        );
        let bt = load(
            b + kk.expand_dims(1) * n + cols.expand_dims(0),
            (kk < k).expand_dims(1) & (cols < n).expand_dims(0),
        );
        acc = dot(at, bt, acc);
    }
    store(
        c + rows.expand_dims(1) * n + cols.expand_dims(0),
        acc as T,
        (rows < m).expand_dims(1) & (cols < n).expand_dims(0),
    );
}
