//! Triton's tutorial 08, grouped GEMM (`grouped_matmul_kernel`): a fixed number of programs
//! (`NUM_SM`) walk the output tiles of several independent products `C_g = A_g @ B_g` of
//! different sizes, one launch for the group, the schedule static and computed on the device.
//! The matrices are reached through tables of their addresses, loaded in the kernel and turned
//! into pointers, as the tutorial does (`tl.load(group_a_ptrs + g).to(tl.pointer_type(...))`).
//!
//! Changed constructs: the kernel is an `unsafe fn` (it converts loaded integers to pointers,
//! which its launch cannot check; its host function passes [`PointerTable`](tile::PointerTable)s, which keep the
//! matrices borrowed for the launch); `x.to(tl.pointer_type(tl.float16))` is `x as Ptr<f16>`.
//! `tl.multiple_of(a_ptrs, [16, 16])`, a statement whose result the tutorial discards (a no-op in
//! Triton), is left out. The tutorial's `@triton.autotune` over four configurations (`128 × 128
//! × 32` or `64 × 64 × 32` tiles, 84 or 128 programs; Triton's default 4 warps and 3 stages),
//! keyed on `group_size`, is ported as it is.
//!
//! As in the tutorial, every tile is whole ("assume full tile for now"): the loads and stores
//! are unmasked, so the host function refuses sizes that are not multiples of the largest
//! configuration's blocks (`128 × 128 × 32`).

use tile::prelude::*;

use crate::check::{err, Rng};

#[tile_kernel(autotune(
    configs = [
        { BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 32, NUM_SM = 84, num_warps = 4, num_stages = 3 },
        { BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 32, NUM_SM = 128, num_warps = 4, num_stages = 3 },
        { BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 32, NUM_SM = 84, num_warps = 4, num_stages = 3 },
        { BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 32, NUM_SM = 128, num_warps = 4, num_stages = 3 },
    ],
    key = [group_size],
))]
/// The products of a group: `group_a_ptrs[g]`, `group_b_ptrs[g]`, `group_c_ptrs[g]` the
/// addresses of the row-major f16 matrices of problem `g`, `group_gemm_sizes[3g..3g+3]` its
/// `M, N, K` and `g_lds[3g..3g+3]` its leading dimensions (`lda, ldb, ldc`).
///
/// # Safety
///
/// Every address in the three tables must be of a live f16 buffer holding the whole matrix its
/// sizes and leading dimension describe (a [`PointerTable`] keeps its buffers alive).
#[allow(clippy::too_many_arguments)]
pub unsafe fn grouped_matmul_kernel(
    // device tensor of matrices pointers
    group_a_ptrs: Ptr<i64>,
    group_b_ptrs: Ptr<i64>,
    group_c_ptrs: Ptr<i64>,
    // device tensor of gemm sizes. its shape is [group_size, 3]
    // dim 0 is group_size, dim 1 is the values of <M, N, K> of each gemm
    group_gemm_sizes: Ptr<i32>,
    // device tensor of leading dimension sizes. its shape is [group_size, 3]
    // dim 0 is group_size, dim 1 is the values of <lda, ldb, ldc> of each gemm
    g_lds: Ptr<i32>,
    // number of gemms
    group_size: i32,
    // number of virtual SM
    NUM_SM: Const,
    // tile sizes
    BLOCK_SIZE_M: Const,
    BLOCK_SIZE_N: Const,
    BLOCK_SIZE_K: Const,
) {
    let mut tile_idx = program_id(0);
    let mut last_problem_end = 0;
    for g in 0..group_size {
        // get the gemm size of the current problem
        let gm = load(group_gemm_sizes + g * 3);
        let gn = load(group_gemm_sizes + g * 3 + 1);
        let gk = load(group_gemm_sizes + g * 3 + 2);
        let num_m_tiles = cdiv(gm, BLOCK_SIZE_M);
        let num_n_tiles = cdiv(gn, BLOCK_SIZE_N);
        let num_tiles = num_m_tiles * num_n_tiles;
        // iterate through the tiles in the current gemm problem
        while tile_idx >= last_problem_end && tile_idx < last_problem_end + num_tiles {
            // pick up a tile from the current gemm problem
            let k = gk;
            let lda = load(g_lds + g * 3);
            let ldb = load(g_lds + g * 3 + 1);
            let ldc = load(g_lds + g * 3 + 2);
            // triton: tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))
            let a_ptr = load(group_a_ptrs + g) as Ptr<f16>;
            let b_ptr = load(group_b_ptrs + g) as Ptr<f16>;
            let c_ptr = load(group_c_ptrs + g) as Ptr<f16>;
            // figure out tile coordinates
            let tile_idx_in_gemm = tile_idx - last_problem_end;
            let tile_m_idx = tile_idx_in_gemm / num_n_tiles;
            let tile_n_idx = tile_idx_in_gemm % num_n_tiles;

            // do regular gemm here
            let offs_am = tile_m_idx * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M);
            let offs_bn = tile_n_idx * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
            let offs_k = arange(0, BLOCK_SIZE_K);
            let mut a_ptrs = a_ptr + offs_am.expand_dims(1) * lda + offs_k.expand_dims(0);
            let mut b_ptrs = b_ptr + offs_k.expand_dims(1) * ldb + offs_bn.expand_dims(0);
            let mut accumulator = zeros([BLOCK_SIZE_M, BLOCK_SIZE_N]);
            for _kk in 0..cdiv(k, BLOCK_SIZE_K) {
                // triton: tl.multiple_of(a_ptrs, [16, 16]); tl.multiple_of(b_ptrs, [16, 16])
                // (their results are discarded: no-ops, left out)
                // assume full tile for now
                let a = load(a_ptrs);
                let b = load(b_ptrs);
                accumulator += dot(a, b);
                a_ptrs += BLOCK_SIZE_K;
                b_ptrs += BLOCK_SIZE_K * ldb;
            }
            let c = accumulator as f16; // triton: accumulator.to(tl.float16)

            let offs_cm = tile_m_idx * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M);
            let offs_cn = tile_n_idx * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
            let c_ptrs = c_ptr + ldc * offs_cm.expand_dims(1) + offs_cn.expand_dims(0);

            // assumes full tile for now
            store(c_ptrs, c);

            // go to the next tile by advancing NUM_SM
            tile_idx += NUM_SM;
        }

        // get ready to go to the next gemm problem
        last_problem_end = last_problem_end + num_tiles;
    }
}

/// One problem of a group: row-major `a` (`m × k`) and `b` (`k × n`) on the device.
pub struct Problem<'a> {
    /// `m × k`, row-major.
    pub a: &'a Buffer<f16>,
    /// `k × n`, row-major.
    pub b: &'a Buffer<f16>,
    /// `(m, n, k)`.
    pub shape: (usize, usize, usize),
}

/// The tables and sizes of a group, what [`grouped_matmul_kernel`] reads besides the matrices:
/// made once (the tutorial's `group_gemm_fn` builds them before its launch, its benchmark outside
/// the timed function), then launched with [`GroupLaunch::run`].
pub struct GroupLaunch<'b> {
    a: PointerTable<'b, f16>,
    b: PointerTable<'b, f16>,
    c: PointerTable<'b, f16>,
    sizes: Buffer<i32>,
    lds: Buffer<i32>,
    group_size: i32,
}

impl<'b> GroupLaunch<'b> {
    /// The tables for `problems` and their outputs `c` (each `m × n`, row-major, in order). Every
    /// `m` and `n` must be a multiple of 128 and every `k` of 32 (the tutorial's kernel reads
    /// and writes whole tiles only), and each buffer as long as its matrix.
    pub fn new(
        dev: &Device,
        problems: &[Problem<'b>],
        c: Vec<&'b mut Buffer<f16>>,
    ) -> Result<Self, Error> {
        if problems.len() != c.len() {
            return Err(Error::Args(format!(
                "{} problems and {} outputs",
                problems.len(),
                c.len()
            )));
        }
        let (mut sizes, mut lds) = (Vec::new(), Vec::new());
        for (g, (p, c)) in problems.iter().zip(&c).enumerate() {
            let (m, n, k) = p.shape;
            if m % 128 != 0 || n % 128 != 0 || k % 32 != 0 || k == 0 {
                return Err(Error::Args(format!(
                    "problem {g}: {m} × {n} × {k} is not made of whole 128 × 128 × 32 tiles (the \
                     tutorial's kernel assumes full tiles)"
                )));
            }
            if p.a.len() < m * k || p.b.len() < k * n || c.len() < m * n {
                return Err(Error::Args(format!(
                    "problem {g}: a buffer is shorter than its {m} × {n} × {k} matrices"
                )));
            }
            let int = |v: usize| {
                i32::try_from(v).map_err(|_| Error::Args(format!("problem {g}: {v} is over i32")))
            };
            sizes.extend([int(m)?, int(n)?, int(k)?]);
            lds.extend([int(k)?, int(n)?, int(n)?]);
        }
        let a: Vec<&Buffer<f16>> = problems.iter().map(|p| p.a).collect();
        let b: Vec<&Buffer<f16>> = problems.iter().map(|p| p.b).collect();
        Ok(GroupLaunch {
            a: PointerTable::new(dev, &a)?,
            b: PointerTable::new(dev, &b)?,
            c: PointerTable::new_mut(dev, c)?,
            sizes: dev.upload(&sizes)?,
            lds: dev.upload(&lds)?,
            group_size: problems.len() as i32,
        })
    }

    /// Output `g`'s buffer (`None` past the group); `&mut self`, so that no launch holds it.
    pub fn output(&mut self, g: usize) -> Option<&Buffer<f16>> {
        self.c.buffer(g)
    }

    /// The tutorial's launch: `NUM_SM` programs of the configuration the tuner picks for this
    /// group size (the first on the interpreter).
    pub fn run(&self, dev: &Device) -> Result<(), Error> {
        let grid = |cfg: &grouped_matmul_kernel::Config| Grid::x(cfg.NUM_SM as u32);
        // SAFETY: the tables hold the addresses of live f16 buffers they keep borrowed (the
        // outputs exclusively), each as long as the matrix its sizes and leading dimension
        // describe (checked in `new`).
        unsafe {
            grouped_matmul_kernel::launch(
                dev,
                grid,
                &self.a,
                &self.b,
                &self.c,
                &self.sizes,
                &self.lds,
                self.group_size,
            )
        }
    }
}

/// The tutorial's `group_gemm_fn`: the products of `problems`, one launch.
pub fn group_gemm(dev: &Device, problems: &[Problem<'_>]) -> Result<Vec<Buffer<f16>>, Error> {
    let mut c = problems
        .iter()
        .map(|p| dev.zeros::<f16>(p.shape.0 * p.shape.1))
        .collect::<Result<Vec<_>, _>>()?;
    GroupLaunch::new(dev, problems, c.iter_mut().collect())?.run(dev)?;
    Ok(c)
}

/// Runs [`group_gemm`] on a group of uniform `[0, 1)` f16 matrices (the tutorial's `torch.rand`)
/// of the given shapes, against the f64 products, with tutorial 03's tolerance (the same f32
/// accumulation and f16 rounding).
pub fn run_check(dev: &Device, shapes: &[(usize, usize, usize)], seed: u64) -> Result<(), String> {
    let mut r = Rng::new(seed);
    let host: Vec<(Vec<f16>, Vec<f16>)> = shapes
        .iter()
        .map(|&(m, n, k)| {
            let a = r.vec(m * k, |r| f16::from_f32(r.uniform()));
            let b = r.vec(k * n, |r| f16::from_f32(r.uniform()));
            (a, b)
        })
        .collect();
    let bufs = host
        .iter()
        .map(|(a, b)| Ok((dev.upload(a)?, dev.upload(b)?)))
        .collect::<Result<Vec<_>, Error>>()
        .map_err(err)?;
    let problems: Vec<Problem<'_>> = bufs
        .iter()
        .zip(shapes)
        .map(|((a, b), &shape)| Problem { a, b, shape })
        .collect();
    let outs = group_gemm(dev, &problems).map_err(err)?;
    for (g, ((&(m, n, k), (a, b)), c)) in shapes.iter().zip(&host).zip(&outs).enumerate() {
        let c = dev.download(c).map_err(err)?;
        let (mut want, mut tol) = (Vec::with_capacity(m * n), Vec::with_capacity(m * n));
        for i in 0..m {
            for j in 0..n {
                let (p, scale) = crate::matrix_multiplication::product(a, b, (k, (n, 1)), (i, j));
                let dot_tol = (k as f64 + 2.0) * 2f64.powi(-22) * scale;
                want.push(p);
                tol.push(dot_tol + 2f64.powi(-11) * (p.abs() + dot_tol) + 2f64.powi(-24));
            }
        }
        let got: Vec<f64> = c.iter().map(|&v| f64::from(v)).collect();
        let what = format!(
            "grouped matmul, problem {g} of {}: {m} x {n} x {k}",
            shapes.len()
        );
        crate::check::compare(&what, &got, &want, |i| tol[i])?;
    }
    Ok(())
}

/// Every kernel of this tutorial.
pub fn all() -> Vec<&'static tile::KernelSpec> {
    grouped_matmul_kernel::KERNELS.to_vec()
}
