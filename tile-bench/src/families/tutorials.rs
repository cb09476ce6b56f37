//! Triton's tutorials as ported in `tutorials/` (the `tile-tutorials` package), each timed through
//! its tutorial's host function (the `_into` form, which launches into outputs allocated once:
//! the tutorial's `torch.empty` costs the device nothing, a zeroed allocation would) at sizes of
//! the tutorial's own benchmark, far above L2 where the tutorial's are. `bench/python/tutorials.py`
//! times the original Triton kernels, autotuned as the tutorials autotune them, on the same keys.
//!
//! Rows: kernel `tutorials`, variant the tutorial's number and kernel, one form (`tile_fused`):
//!
//! | variant | shape | what is timed |
//! |---|---|---|
//! | `01_add_kernel` | `[n]` f32 | `add` |
//! | `02_softmax_kernel` | `[rows, cols]` f32 | `softmax` with the tutorial's persistent program count (SMs × occupancy from the kernel's registers and shared memory, as the tutorial computes it) |
//! | `03_matmul_kernel` | `[M, N, K]` f16 | `matmul` (whatever configuration it picks), no activation; `tile_tuned`: `matmul_autotuned_into` (the tutorial's `@triton.autotune` over its eight configurations) |
//! | `04_dropout`, `04_seeded_dropout` | `[n]` f32 | `dropout` (keep mask in memory), `seeded_dropout` (p = 0.5) |
//! | `05_layer_norm_fwd_fused` | `[rows, cols]` f16 | `LayerNorm.forward` |
//! | `05_layer_norm_bwd` | `[rows, cols]` f16 | `LayerNorm.backward`: the locks and partial sums zeroed (the tutorial's `torch.zeros`), `layer_norm_bwd_dx_fused` (spin lock per partial-sum row), `layer_norm_bwd_dwdb` |
//! | `06_attn_fwd`, `06_attn_fwd_causal` | `[Z, H, N_CTX, HEAD_DIM]` f16 | `_attention.forward`: `_attn_fwd` (autotuned), `o` and `M` |
//! | `08_grouped_matmul_kernel` | `[group_size, N]` f16 | `GroupLaunch::run`: that many `N × N × N` products in one launch, the tutorial's autotuned configs tuned afresh at each size (its key, `group_size`, does not change with `N`), tables made once |
//! | `09_matmul_kernel_persistent` | `[M, N, K]` f16 | `matmul_persistent` on 132 programs (`NUM_SMS` is compiled for 132 and 4) |
//!
//! Inputs as the tutorials draw them (`torch.rand`, `torch.randn`, layer norm's
//! `-2.3 + 0.5 · randn`), checked against the tutorials' own references (`reference`,
//! `product`) before timing; matrix products on 512 sampled elements of large outputs.

use tile::prelude::*;
use tile::{Buffer, Device};
use tile_tutorials as t;
use tile_tutorials::check::Rng;

use super::{i32_of, Job, Plan};
use crate::common::sampled_elements;
use crate::measure::{compare, fetch, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};

const NAME: &str = "tutorials";

/// Rows are `[n]`.
type Len = usize;
/// Rows are `[rows, cols]`.
type Rc = (usize, usize);
/// Rows are `[M, N, K]`.
type Mnk = (usize, usize, usize);
/// Rows are `[Z, H, N_CTX, HEAD_DIM]`, and causal or not.
type Attn = ((usize, usize, usize, usize), bool);

/// The jobs of this family: every tutorial kernel at its shapes.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let mut jobs = Vec::new();
    let small: [Len; 2] = [1025, 98432];
    for (n, timed) in plan.shapes(&small, &small, &[1 << 24, 1 << 26, 1 << 27]) {
        jobs.push(Job::new(NAME, format!("01 add {n}"), timed, move |ctx| {
            vector_add(ctx, n, timed)
        }));
    }
    let small: [Rc; 2] = [(7, 100), (18, 781)];
    let big: [Rc; 4] = [(4096, 1024), (4096, 4096), (4096, 8192), (4096, 12288)];
    for (s, timed) in plan.shapes(&small, &small, &big) {
        jobs.push(Job::new(
            NAME,
            format!("02 softmax {}x{}", s.0, s.1),
            timed,
            move |ctx| softmax(ctx, s, timed),
        ));
    }
    let small: [Mnk; 2] = [(64, 64, 64), (130, 70, 33)];
    let big: [Mnk; 2] = [(4096, 4096, 4096), (8192, 8192, 8192)];
    for (s, timed) in plan.shapes(&small, &small, &big) {
        jobs.push(Job::new(
            NAME,
            format!("03 matmul {}", mnk(s)),
            timed,
            move |ctx| matmul(ctx, s, timed, false),
        ));
    }
    let small: [Len; 2] = [1000, 4099];
    for (n, timed) in plan.shapes(&small, &small, &[1 << 24, 1 << 26]) {
        jobs.push(Job::new(
            NAME,
            format!("04 dropout {n}"),
            timed,
            move |ctx| dropout(ctx, n, timed),
        ));
    }
    let small: [Rc; 2] = [(40, 128), (151, 300)];
    let big: [Rc; 4] = [(4096, 1024), (4096, 2048), (4096, 4096), (4096, 8192)];
    for (s, timed) in plan.shapes(&small, &small, &big) {
        jobs.push(Job::new(
            NAME,
            format!("05 layer norm {}x{}", s.0, s.1),
            timed,
            move |ctx| layer_norm(ctx, s, timed),
        ));
    }
    // (Z, H, N_CTX, HEAD_DIM), causal: the tutorial's batch and heads, whole 128-row blocks.
    let small: [Attn; 2] = [((1, 2, 256, 64), true), ((1, 1, 128, 128), false)];
    let big: [Attn; 4] = [
        ((4, 32, 4096, 64), false),
        ((4, 32, 4096, 64), true),
        ((4, 32, 4096, 128), false),
        ((4, 32, 4096, 128), true),
    ];
    for (s, timed) in plan.shapes(&small, &small, &big) {
        jobs.push(Job::new(
            NAME,
            format!("06 fused attention {:?}", s),
            timed,
            move |ctx| attention(ctx, s, timed),
        ));
    }
    // (group_size, N): that many N x N x N products (whole tiles, as the kernel assumes).
    let small: [(usize, usize); 1] = [(2, 128)];
    let big: [(usize, usize); 5] = [(4, 128), (4, 256), (4, 512), (4, 1024), (4, 4096)];
    for (s, timed) in plan.shapes(&small, &small, &big) {
        jobs.push(Job::new(
            NAME,
            format!("08 grouped matmul {}x{}", s.0, s.1),
            timed,
            move |ctx| grouped(ctx, s, timed),
        ));
    }
    // The port takes rows of 16 bytes only (`specialize = unit`).
    let small: [Mnk; 2] = [(200, 152, 72), (300, 264, 64)];
    let big: [Mnk; 3] = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024)];
    for (s, timed) in plan.shapes(&small, &small, &big) {
        jobs.push(Job::new(
            NAME,
            format!("09 persistent matmul {}", mnk(s)),
            timed,
            move |ctx| matmul(ctx, s, timed, true),
        ));
    }
    jobs
}

fn mnk((m, n, k): Mnk) -> String {
    format!("{m}x{n}x{k}")
}

fn meta(variant: &'static str, shape: &[usize], dtype: &'static str, timed: bool) -> Meta {
    Meta {
        kernel: NAME,
        variant: Some(variant),
        shape: shape.iter().map(|&d| d as i64).collect(),
        dtype,
        bytes: 0.0,
        flops: None,
        timed,
    }
}

/// `v` values of NaN on `dev` (outputs start poisoned, so one left unwritten fails its check).
fn nan32(dev: &Device, len: usize) -> Res<Buffer<f32>> {
    Ok(dev.upload(&vec![f32::NAN; len])?)
}

fn nan16(dev: &Device, len: usize) -> Res<Buffer<f16>> {
    Ok(dev.upload(&vec![f16::NAN; len])?)
}

// ---------------------------------------------------------------------------------------------
// 01 vector add
// ---------------------------------------------------------------------------------------------

fn vector_add(ctx: &mut Ctx, n: usize, timed: bool) -> Res<()> {
    i32_of(n)?;
    let mut r = Rng::new(n as u64);
    let x = r.vec(n, Rng::uniform);
    let y = r.vec(n, Rng::uniform);
    let want = x.iter().zip(&y).map(|(a, b)| f64::from(a + b)).collect();
    let m = Meta {
        bytes: 12.0 * n as f64,
        ..meta("01_add_kernel", &[n], "f32", timed)
    };
    ctx.bench(&m, &VectorAdd { x, y, want });
    Ok(())
}

struct VectorAdd {
    x: Vec<f32>,
    y: Vec<f32>,
    want: Vec<f64>,
}

impl Case for VectorAdd {
    type State = [Buffer<f32>; 3];

    fn setup(&self, dev: &Device) -> Res<Self::State> {
        Ok([
            dev.upload(&self.x)?,
            dev.upload(&self.y)?,
            nan32(dev, self.x.len())?,
        ])
    }

    fn run(&self, dev: &Device, s: &mut Self::State, form: Form) -> Result<(), tile::Error> {
        fused_only(form)?;
        let [x, y, out] = s;
        t::vector_add::add_into(dev, x, y, out)
    }

    fn verify(&self, dev: &Device, s: &Self::State, _: Form) -> Res<Vec<OutErr>> {
        // One f32 addition on both sides: bit-identical.
        Ok(vec![compare(
            "output",
            &fetch(dev, &s[2])?,
            &self.want,
            0.0,
        )])
    }

    fn ops(&self, _: Form) -> String {
        "add_kernel: 1 program per 1024 elements".into()
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused]
    }
}

fn fused_only(form: Form) -> Result<(), tile::Error> {
    if form == Form::Fused {
        Ok(())
    } else {
        Err(not_a_form(form))
    }
}

// ---------------------------------------------------------------------------------------------
// 02 fused softmax
// ---------------------------------------------------------------------------------------------

fn softmax(ctx: &mut Ctx, (rows, cols): Rc, timed: bool) -> Res<()> {
    i32_of(rows * cols)?;
    let x = Rng::new((rows * 31 + cols) as u64).vec(rows * cols, Rng::normal);
    let want = t::fused_softmax::reference(&x, cols, (rows, cols));
    let block = cols.next_power_of_two().max(32);
    let (programs, how) = softmax_programs(&ctx.dev, block)?;
    let m = Meta {
        bytes: 8.0 * (rows * cols) as f64,
        ..meta("02_softmax_kernel", &[rows, cols], "f32", timed)
    };
    let case = Softmax {
        shape: (rows, cols),
        x,
        want,
        programs,
        ops: format!(
            "softmax_kernel: {} persistent programs ({how}), BLOCK_SIZE {block}, 8 warps, 4 stages",
            programs.min(rows)
        ),
    };
    ctx.bench(&m, &case);
    Ok(())
}

/// The tutorial's program count for `softmax_kernel` compiled for `block` columns: SMs ×
/// occupancy, where occupancy = registers per block / (the kernel's registers per thread × 32 × 8
/// warps), at most shared memory per block / the kernel's shared memory (the device limits
/// Triton's `get_device_properties` reads: `max_num_regs`, `max_shared_mem`). The registers
/// and shared memory are the driver's for the kernel's first specialization on this device
/// (loaded here the way a launch loads it). On the interpreter: 4 programs. Returns the count
/// and how it was found, in words.
fn softmax_programs(dev: &Device, block: usize) -> Res<(usize, String)> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    use cudarc::nvrtc::Ptx;

    let (Some(stream), Some((major, minor))) = (dev.stream(), dev.compute_capability()) else {
        return Ok((4, "interpreter".into()));
    };
    let suffix = format!("__BLOCK_SIZE_{block}");
    let spec = t::fused_softmax::softmax_kernel::KERNELS
        .iter()
        .find(|k| k.name.ends_with(&suffix))
        .ok_or_else(|| format!("softmax_kernel is not compiled for BLOCK_SIZE = {block}"))?;
    let variant = spec
        .variants
        .first()
        .ok_or("softmax_kernel has no variant")?;
    let target = variant
        .targets
        .iter()
        .find(|t| t.runs_on(major, minor))
        .ok_or_else(|| format!("no PTX of softmax_kernel runs on sm_{major}{minor}"))?;
    let ctx = stream.context();
    let module = if target.cubin_runs_on(major, minor) {
        ctx.load_module(Ptx::from_binary(target.cubin.to_vec()))
    } else {
        ctx.load_module(Ptx::from_src(target.ptx))
    }?;
    let f = module.load_function(target.entry)?;
    let regs = f.num_regs()?.max(1) as usize;
    let smem = f.shared_size_bytes()?.max(0) as usize + target.dyn_shared_bytes as usize;
    let attr = |a| -> Res<usize> { Ok(ctx.attribute(a)?.max(0) as usize) };
    let sms = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let max_regs = attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?;
    let max_smem = attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
    let warps = variant.num_warps as usize;
    let by_regs = max_regs / (regs * 32 * warps);
    // (The tutorial divides by the shared memory unguarded; a kernel may use none.)
    let occupancy = max_smem
        .checked_div(smem)
        .map_or(by_regs, |s| by_regs.min(s));
    let programs = (sms * occupancy).max(1);
    let how = format!(
        "{sms} SMs x occupancy {occupancy}: {regs} registers, {smem} B shared, {warps} warps"
    );
    Ok((programs, how))
}

struct Softmax {
    shape: Rc,
    x: Vec<f32>,
    want: Vec<f64>,
    programs: usize,
    ops: String,
}

impl Case for Softmax {
    type State = [Buffer<f32>; 2];

    fn setup(&self, dev: &Device) -> Res<Self::State> {
        Ok([dev.upload(&self.x)?, nan32(dev, self.x.len())?])
    }

    fn run(&self, dev: &Device, s: &mut Self::State, form: Form) -> Result<(), tile::Error> {
        fused_only(form)?;
        let [x, y] = s;
        let cols = self.shape.1;
        t::fused_softmax::softmax_into(dev, x, cols, self.shape, self.programs, y)
    }

    fn verify(&self, dev: &Device, s: &Self::State, _: Form) -> Res<Vec<OutErr>> {
        Ok(vec![compare("y", &fetch(dev, &s[1])?, &self.want, 1e-5)])
    }

    fn ops(&self, _: Form) -> String {
        self.ops.clone()
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused]
    }
}

// ---------------------------------------------------------------------------------------------
// 03 matmul and 09 persistent matmul
// ---------------------------------------------------------------------------------------------

/// `NUM_SMS` of the persistent matmul on a GPU (H100 SXM and H200 have 132 SMs; the kernel is
/// compiled for 132 and for the interpreter's 4).
const NUM_SMS_GPU: usize = 132;

fn matmul(ctx: &mut Ctx, s: Mnk, timed: bool, persistent: bool) -> Res<()> {
    let (m, n, k) = s;
    i32_of(m * k)?;
    i32_of(k * n)?;
    i32_of(m * n)?;
    let mut r = Rng::new((m * 7919 + n * 131 + k) as u64);
    let a = r.vec(m * k, |r| f16::from_f32(r.normal()));
    let b = r.vec(k * n, |r| f16::from_f32(r.normal()));
    let at = sampled_elements(m, n, 7);
    let want = at
        .iter()
        .map(|&ij| t::matrix_multiplication::product(&a, &b, (k, (n, 1)), ij).0)
        .collect();
    let variant = if persistent {
        "09_matmul_kernel_persistent"
    } else {
        "03_matmul_kernel"
    };
    let num_sms = if ctx.dev.is_cuda() { NUM_SMS_GPU } else { 4 };
    let m_ = Meta {
        bytes: 2.0 * (m * k + k * n + m * n) as f64,
        flops: Some(2.0 * m as f64 * n as f64 * k as f64),
        ..meta(variant, &[m, n, k], "f16", timed)
    };
    let case = Matmul {
        shape: s,
        a,
        b,
        at,
        want,
        persistent: persistent.then_some(num_sms),
    };
    ctx.bench(&m_, &case);
    Ok(())
}

struct Matmul {
    shape: Mnk,
    a: Vec<f16>,
    b: Vec<f16>,
    /// The checked elements and their f64 values.
    at: Vec<(usize, usize)>,
    want: Vec<f64>,
    /// `Some(NUM_SMS)` for the persistent kernel.
    persistent: Option<usize>,
}

impl Case for Matmul {
    type State = [Buffer<f16>; 3];

    fn setup(&self, dev: &Device) -> Res<Self::State> {
        let (m, n, _) = self.shape;
        Ok([
            dev.upload(&self.a)?,
            dev.upload(&self.b)?,
            nan16(dev, m * n)?,
        ])
    }

    fn run(&self, dev: &Device, s: &mut Self::State, form: Form) -> Result<(), tile::Error> {
        let [a, b, c] = s;
        let n = self.shape.1;
        if form == Form::Tuned && self.persistent.is_none() {
            use t::matrix_multiplication::matmul_autotuned_into;
            return matmul_autotuned_into(dev, a, b, c, self.shape, (n, 1), 0);
        }
        fused_only(form)?;
        match self.persistent {
            Some(sms) => {
                t::persistent_matmul::matmul_persistent_into(dev, a, b, c, self.shape, sms)
            }
            None => t::matrix_multiplication::matmul_into(dev, a, b, c, self.shape, (n, 1), 0),
        }
    }

    fn verify(&self, dev: &Device, s: &Self::State, _: Form) -> Res<Vec<OutErr>> {
        let n = self.shape.1;
        let c = fetch(dev, &s[2])?;
        let got: Vec<f32> = self.at.iter().map(|&(i, j)| c[i * n + j]).collect();
        // f32 accumulation of exact products, one rounding to f16.
        Ok(vec![compare("c", &got, &self.want, 4e-3)])
    }

    fn ops(&self, form: Form) -> String {
        let (m, n, _) = self.shape;
        if form == Form::Tuned {
            return "the tutorial's @triton.autotune: matmul_kernel_autotuned, the fastest of its \
                    eight configurations timed at the first launch"
                .into();
        }
        match self.persistent {
            Some(sms) => format!(
                "matmul_kernel_persistent: {} programs (NUM_SMS {sms}) over 128x128 tiles, \
                 BLOCK_SIZE_K 64, 3 stages, 8 warps",
                (m.div_ceil(128) * n.div_ceil(128)).min(sms)
            ),
            None => "the tutorial's matmul: matmul_kernel_wide (128x256x64, 8 warps, 3 stages) \
                     for large aligned shapes, else matmul_kernel (128x128x32, 4 warps, 4 \
                     stages); grouped order GROUP_SIZE_M 8, no activation"
                .into(),
        }
    }

    fn forms(&self) -> Vec<Form> {
        match self.persistent {
            Some(_) => vec![Form::Fused],
            None => vec![Form::Fused, Form::Tuned],
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 08 grouped GEMM
// ---------------------------------------------------------------------------------------------

fn grouped(ctx: &mut Ctx, (groups, n): (usize, usize), timed: bool) -> Res<()> {
    i32_of(n * n)?;
    let mut r = Rng::new((groups * 7919 + n) as u64);
    // The tutorial's `torch.rand` inputs.
    let mats: Vec<(Vec<f16>, Vec<f16>)> = (0..groups)
        .map(|_| {
            let a = r.vec(n * n, |r| f16::from_f32(r.uniform()));
            let b = r.vec(n * n, |r| f16::from_f32(r.uniform()));
            (a, b)
        })
        .collect();
    let at = sampled_elements(n, n, 7);
    let want = mats
        .iter()
        .map(|(a, b)| {
            at.iter()
                .map(|&ij| t::matrix_multiplication::product(a, b, (n, (n, 1)), ij).0)
                .collect()
        })
        .collect();
    let m = Meta {
        bytes: 2.0 * 3.0 * (n * n * groups) as f64,
        flops: Some(2.0 * (n * n) as f64 * n as f64 * groups as f64),
        ..meta("08_grouped_matmul_kernel", &[groups, n], "f16", timed)
    };
    // The tutorial's key, the group's size, is the same at every size of the benchmark: the
    // decision timed at its first size (4 × 128³, launch-bound) would serve 4 × 4096³, where it
    // can run 3× slower than the best. Both sides tune each size afresh (`tutorials.py` clears
    // Triton's tuner the same way), so each row compares the two tuners' best at that size.
    t::grouped_gemm::grouped_matmul_kernel::TUNER.forget(&ctx.dev, &[groups as i64])?;
    ctx.bench(&m, &Grouped { n, mats, at, want });
    Ok(())
}

struct Grouped {
    n: usize,
    mats: Vec<(Vec<f16>, Vec<f16>)>,
    at: Vec<(usize, usize)>,
    /// Per problem, the checked elements' f64 values.
    want: Vec<Vec<f64>>,
}

impl Case for Grouped {
    /// The launch's tables, made once outside the timed calls (as the tutorial's benchmark
    /// makes its address tensors). They borrow the matrices for `'static`: the buffers of a
    /// case are leaked (a few per bench run; the process ends with the run).
    type State = std::cell::RefCell<t::grouped_gemm::GroupLaunch<'static>>;

    fn setup(&self, dev: &Device) -> Res<Self::State> {
        let n = self.n;
        let mut ab = Vec::new();
        for (a, b) in &self.mats {
            ab.push((dev.upload(a)?, dev.upload(b)?));
        }
        let ab: &'static [(Buffer<f16>, Buffer<f16>)] = Box::leak(ab.into_boxed_slice());
        let mut c = Vec::new();
        for _ in &self.mats {
            c.push(nan16(dev, n * n)?);
        }
        let c: &'static mut [Buffer<f16>] = Box::leak(c.into_boxed_slice());
        let problems: Vec<t::grouped_gemm::Problem<'static>> = ab
            .iter()
            .map(|(a, b)| t::grouped_gemm::Problem {
                a,
                b,
                shape: (n, n, n),
            })
            .collect();
        let launch = t::grouped_gemm::GroupLaunch::new(dev, &problems, c.iter_mut().collect())?;
        Ok(std::cell::RefCell::new(launch))
    }

    fn run(&self, dev: &Device, s: &mut Self::State, form: Form) -> Result<(), tile::Error> {
        fused_only(form)?;
        s.get_mut().run(dev)
    }

    fn verify(&self, dev: &Device, s: &Self::State, _: Form) -> Res<Vec<OutErr>> {
        let n = self.n;
        let mut launch = s.borrow_mut();
        let mut out = Vec::new();
        for (g, want) in self.want.iter().enumerate() {
            let c = fetch(dev, launch.output(g).ok_or("no output")?)?;
            let got: Vec<f32> = self.at.iter().map(|&(i, j)| c[i * n + j]).collect();
            // f32 accumulation of exact products, one rounding to f16.
            out.push(compare("c", &got, want, 4e-3));
        }
        Ok(out)
    }

    fn ops(&self, _: Form) -> String {
        "grouped_matmul_kernel, the tutorial's @triton.autotune (128x128x32 or 64x64x32 tiles \
         on 84 or 128 programs, 4 warps, 3 stages; key group_size, tuned afresh at this size), on \
         tables of the matrices' addresses made outside the timed call"
            .into()
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused]
    }
}

// ---------------------------------------------------------------------------------------------
// 04 low-memory dropout
// ---------------------------------------------------------------------------------------------

/// The tutorial's drop probability and seed.
const DROP_P: f32 = 0.5;
const DROP_SEED: i32 = 123;

fn dropout(ctx: &mut Ctx, n: usize, timed: bool) -> Res<()> {
    i32_of(n)?;
    let mut r = Rng::new(n as u64 + 4);
    let x = r.vec(n, Rng::normal);
    let keep = r.vec(n, |r| i32::from(r.uniform() > DROP_P));
    let want = t::low_memory_dropout::reference(&x, |i| keep[i] != 0, DROP_P);
    let m = Meta {
        bytes: 12.0 * n as f64,
        ..meta("04_dropout", &[n], "f32", timed)
    };
    let case = Dropout {
        x,
        keep: Some(keep),
        want,
    };
    ctx.bench(&m, &case);

    let Dropout { x, .. } = case;
    let seed = DROP_SEED as i64 as u64;
    let kept = |i: usize| tile::random::rand(seed, u64::from(i as u32)) > DROP_P;
    let want = t::low_memory_dropout::reference(&x, kept, DROP_P);
    let m = Meta {
        bytes: 8.0 * n as f64,
        ..meta("04_seeded_dropout", &[n], "f32", timed)
    };
    ctx.bench(
        &m,
        &Dropout {
            x,
            keep: None,
            want,
        },
    );
    Ok(())
}

struct Dropout {
    x: Vec<f32>,
    /// The keep mask of `dropout`; `None` for `seeded_dropout`.
    keep: Option<Vec<i32>>,
    want: Vec<f64>,
}

impl Case for Dropout {
    type State = (Buffer<f32>, Buffer<i32>, Buffer<f32>);

    fn setup(&self, dev: &Device) -> Res<Self::State> {
        let keep = match &self.keep {
            Some(k) => dev.upload(k)?,
            None => dev.zeros(1)?,
        };
        Ok((dev.upload(&self.x)?, keep, nan32(dev, self.x.len())?))
    }

    fn run(&self, dev: &Device, s: &mut Self::State, form: Form) -> Result<(), tile::Error> {
        fused_only(form)?;
        let (x, keep, out) = s;
        if self.keep.is_some() {
            t::low_memory_dropout::run_dropout_into(dev, x, keep, DROP_P, out)
        } else {
            t::low_memory_dropout::run_seeded_dropout_into(dev, x, DROP_P, DROP_SEED, out)
        }
    }

    fn verify(&self, dev: &Device, s: &Self::State, _: Form) -> Res<Vec<OutErr>> {
        // Kept values: one f32 division (the GPU's may be 2 ulp off); dropped ones exactly 0.
        Ok(vec![compare(
            "output",
            &fetch(dev, &s.2)?,
            &self.want,
            1e-6,
        )])
    }

    fn ops(&self, _: Form) -> String {
        if self.keep.is_some() {
            "dropout: keep mask (int32) read from memory, 1 program per 1024 elements".into()
        } else {
            format!(
                "seeded_dropout: tl.rand(seed {DROP_SEED}, offsets), 1 program per 1024 elements"
            )
        }
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused]
    }
}

// ---------------------------------------------------------------------------------------------
// 05 layer norm, forward and backward
// ---------------------------------------------------------------------------------------------

#[tile_kernel]
/// Zeroes `n` f16 values: the tutorial's `torch.zeros` of the partial sums, before each backward.
fn zero_f16(p: Ptr<f16, n>, n: i32, BLOCK: Const<1024>) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    let z = zeros([BLOCK]);
    store(p + i, z as f16, i < n);
}

#[tile_kernel]
/// Zeroes `n` i32 values: the tutorial's `torch.zeros` of the locks and counters.
fn zero_i32(p: Ptr<i32, n>, n: i32, BLOCK: Const<1024>) {
    let i = program_id(0) * BLOCK + arange(0, BLOCK);
    store(p + i, full([BLOCK], 0), i < n);
}

/// The tutorial's epsilon.
const LN_EPS: f32 = 1e-5;

/// Inputs of one layer norm problem, drawn as the tutorial draws them.
struct LnInputs {
    shape: Rc,
    x: Vec<f16>,
    w: Vec<f16>,
    b: Vec<f16>,
    dy: Vec<f16>,
}

/// `(y, mean, rstd, dx, dw, db)` in f64.
type LnReference = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>);

fn layer_norm(ctx: &mut Ctx, (rows, cols): Rc, timed: bool) -> Res<()> {
    i32_of(rows * cols)?;
    let mut r = Rng::new((rows * 31 + cols) as u64 + 5);
    let h = f16::from_f32;
    let inputs = LnInputs {
        shape: (rows, cols),
        x: r.vec(rows * cols, |r| h(-2.3 + 0.5 * r.normal())),
        w: r.vec(cols, |r| h(r.uniform())),
        b: r.vec(cols, |r| h(r.uniform())),
        dy: r.vec(rows * cols, |r| h(0.1 * r.normal())),
    };
    let reference: LnReference = t::layer_norm::reference(
        &inputs.x,
        &inputs.w,
        &inputs.b,
        &inputs.dy,
        (rows, cols),
        f64::from(LN_EPS),
    );
    let (mn, n) = ((rows * cols) as f64, cols as f64);
    let m = Meta {
        // x read, y written, w and b read, mean and rstd written.
        bytes: 2.0 * (2.0 * mn + 2.0 * n) + 8.0 * rows as f64,
        ..meta("05_layer_norm_fwd_fused", &[rows, cols], "f16", timed)
    };
    let mut case = LayerNorm {
        inputs,
        reference,
        backward: false,
    };
    ctx.bench(&m, &case);
    // The backward's row width is compiled up to 4096.
    if cols <= 4096 {
        let m = Meta {
            // x, dy read and dx written; w read, dw and db written; mean and rstd read.
            bytes: 2.0 * (3.0 * mn + 3.0 * n) + 8.0 * rows as f64,
            ..meta("05_layer_norm_bwd", &[rows, cols], "f16", timed)
        };
        case.backward = true;
        ctx.bench(&m, &case);
    }
    Ok(())
}

struct LayerNorm {
    inputs: LnInputs,
    reference: LnReference,
    /// Time the backward (else the forward).
    backward: bool,
}

/// Device state of a layer norm case: the inputs, the forward's outputs (the backward's `mean`
/// and `rstd`), the partial sums and the backward's outputs.
struct LnState {
    x: Buffer<f16>,
    w: Buffer<f16>,
    b: Buffer<f16>,
    dy: Buffer<f16>,
    fwd: t::layer_norm::Forward,
    partial_dw: Buffer<f16>,
    partial_db: Buffer<f16>,
    /// The backward's locks and counters.
    locks: Buffer<i32>,
    bwd: t::layer_norm::Backward,
}

impl Case for LayerNorm {
    type State = LnState;

    fn setup(&self, dev: &Device) -> Res<LnState> {
        let (rows, cols) = self.inputs.shape;
        let i = &self.inputs;
        let (x, w, b) = (dev.upload(&i.x)?, dev.upload(&i.w)?, dev.upload(&i.b)?);
        let fwd = if self.backward {
            // The backward reads the forward's mean and rstd, as the tutorial's saves them.
            t::layer_norm::forward(dev, &x, &w, &b, (rows, cols), LN_EPS)?
        } else {
            t::layer_norm::Forward {
                y: nan16(dev, rows * cols)?,
                mean: nan32(dev, rows)?,
                rstd: nan32(dev, rows)?,
            }
        };
        let group = t::layer_norm::group_size_m(cols);
        Ok(LnState {
            dy: dev.upload(&i.dy)?,
            x,
            w,
            b,
            fwd,
            partial_dw: nan16(dev, group * cols)?,
            partial_db: nan16(dev, group * cols)?,
            locks: dev.upload(&vec![-1i32; 2 * group])?,
            bwd: t::layer_norm::Backward {
                dx: nan16(dev, rows * cols)?,
                dw: nan16(dev, cols)?,
                db: nan16(dev, cols)?,
            },
        })
    }

    fn run(&self, dev: &Device, s: &mut LnState, form: Form) -> Result<(), tile::Error> {
        fused_only(form)?;
        let shape = self.inputs.shape;
        if !self.backward {
            return t::layer_norm::forward_into(dev, &s.x, &s.w, &s.b, shape, LN_EPS, &mut s.fwd);
        }
        for p in [&mut s.partial_dw, &mut s.partial_db] {
            let n = p.len();
            zero_f16::launch(dev, Grid::x(cdiv(n, 1024)), p, n as i32)?;
        }
        let n = s.locks.len();
        zero_i32::launch(dev, Grid::x(cdiv(n, 1024)), &mut s.locks, n as i32)?;
        let partial = (&mut s.partial_dw, &mut s.partial_db, &mut s.locks);
        let (mean, rstd) = (&s.fwd.mean, &s.fwd.rstd);
        t::layer_norm::backward_into(
            dev, &s.dy, &s.x, &s.w, mean, rstd, shape, partial, &mut s.bwd,
        )
    }

    fn verify(&self, dev: &Device, s: &LnState, _: Form) -> Res<Vec<OutErr>> {
        let (y, mean, rstd, dx, dw, db) = &self.reference;
        // f16 outputs: one rounding (2^-11) after f32 arithmetic. dw and db are sums of f16
        // terms added into f16 partial sums (an f16 rounding per row), as in the tutorial.
        Ok(if self.backward {
            vec![
                compare("dx", &fetch(dev, &s.bwd.dx)?, dx, 1e-2),
                compare("dw", &fetch(dev, &s.bwd.dw)?, dw, 2e-2),
                compare("db", &fetch(dev, &s.bwd.db)?, db, 2e-2),
            ]
        } else {
            vec![
                compare("y", &fetch(dev, &s.fwd.y)?, y, 4e-3),
                compare("mean", &fetch(dev, &s.fwd.mean)?, mean, 1e-5),
                compare("rstd", &fetch(dev, &s.fwd.rstd)?, rstd, 1e-4),
            ]
        })
    }

    fn ops(&self, _: Form) -> String {
        let cols = self.inputs.shape.1;
        let block = t::layer_norm::block_size(cols);
        if self.backward {
            format!(
                "5 kernels: the locks and the two partial-sum buffers zeroed (the tutorial's \
                 torch.zeros), layer_norm_bwd_dx_fused (1 program per row, BLOCK_SIZE_N \
                 {block}, GROUP_SIZE_M {}, spin lock), layer_norm_bwd_dwdb",
                t::layer_norm::group_size_m(cols)
            )
        } else {
            format!("layer_norm_fwd_fused: 1 program per row, BLOCK_SIZE {block}, 8 warps")
        }
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused]
    }
}

// ---------------------------------------------------------------------------------------------
// 06 fused attention (forward)
// ---------------------------------------------------------------------------------------------

/// Query rows checked per case: the float64 reference of a whole large case would take minutes.
const ATTN_ROWS: usize = 48;

fn attention(ctx: &mut Ctx, (shape, causal): Attn, timed: bool) -> Res<()> {
    let (z, h, n, d) = shape;
    let len = z * h * n * d;
    i32_of(len)?;
    let mut r = Rng::new((z * h * n * d) as u64 + u64::from(causal));
    // The tutorial's `torch.empty(…).normal_(mean=0.0, std=0.5)`.
    let gen = |r: &mut Rng| r.vec(len, |r| f16::from_f32(0.5 * r.normal()));
    let (q, k, v) = (gen(&mut r), gen(&mut r), gen(&mut r));
    let wide = |x: &[f16]| -> Vec<f64> { x.iter().map(|&e| f64::from(e)).collect() };
    let (fq, fk, fv) = (wide(&q), wide(&k), wide(&v));
    let rows: Vec<(usize, usize)> = (0..ATTN_ROWS.min(z * h * n))
        .map(|_| {
            let bh = (r.next_u64() % (z * h) as u64) as usize;
            (bh, (r.next_u64() % n as u64) as usize)
        })
        .collect();
    let mut want_o = Vec::new();
    let mut want_m = Vec::new();
    for &(bh, i) in &rows {
        let (o, m) = t::fused_attention::reference_row(&fq, &fk, &fv, (n, d), causal, 0.5, bh, i);
        want_o.extend(o);
        want_m.push(m);
    }
    let flops = 4.0 * (z * h) as f64 * (n * n * d) as f64 * if causal { 0.5 } else { 1.0 };
    let variant = if causal {
        "06_attn_fwd_causal"
    } else {
        "06_attn_fwd"
    };
    let m = Meta {
        bytes: 8.0 * len as f64 + 4.0 * (z * h * n) as f64,
        flops: Some(flops),
        ..meta(variant, &[z, h, n, d], "f16", timed)
    };
    let case = Attention {
        q,
        k,
        v,
        shape,
        causal,
        rows,
        want_o,
        want_m,
    };
    ctx.bench(&m, &case);
    Ok(())
}

struct Attention {
    q: Vec<f16>,
    k: Vec<f16>,
    v: Vec<f16>,
    shape: (usize, usize, usize, usize),
    causal: bool,
    /// The checked query rows `(head, row)`, and their reference outputs and `M` values.
    rows: Vec<(usize, usize)>,
    want_o: Vec<f64>,
    want_m: Vec<f64>,
}

/// Inputs `q`, `k`, `v`, and outputs `o`, `M`.
type AttnState = ([Buffer<f16>; 4], Buffer<f32>);

impl Case for Attention {
    type State = AttnState;

    fn setup(&self, dev: &Device) -> Res<AttnState> {
        let (z, h, n, _) = self.shape;
        Ok((
            [
                dev.upload(&self.q)?,
                dev.upload(&self.k)?,
                dev.upload(&self.v)?,
                nan16(dev, self.q.len())?,
            ],
            nan32(dev, z * h * n)?,
        ))
    }

    fn run(&self, dev: &Device, s: &mut AttnState, form: Form) -> Result<(), tile::Error> {
        fused_only(form)?;
        let ([q, k, v, o], m) = s;
        t::fused_attention::forward_into(dev, q, k, v, self.shape, self.causal, 0.5, o, m)
    }

    fn verify(&self, dev: &Device, s: &AttnState, _: Form) -> Res<Vec<OutErr>> {
        let (_, _, n, d) = self.shape;
        let o = fetch(dev, &s.0[3])?;
        let m = fetch(dev, &s.1)?;
        let got_o: Vec<f32> = self
            .rows
            .iter()
            .flat_map(|&(bh, i)| o[(bh * n + i) * d..(bh * n + i + 1) * d].to_vec())
            .collect();
        let got_m: Vec<f32> = self.rows.iter().map(|&(bh, i)| m[bh * n + i]).collect();
        // P rounded to f16 before the second product, the output once more: 2⁻¹¹ each.
        Ok(vec![
            compare("o", &got_o, &self.want_o, 4e-3),
            compare("M", &got_m, &self.want_m, 1e-5),
        ])
    }

    fn ops(&self, _: Form) -> String {
        let d = self.shape.3;
        format!(
            "_attn_fwd, autotuned over the tutorial's configurations (`tuned` lines give the \
             pick): HEAD_DIM {d}, STAGE {}, tensor descriptors made in the kernel",
            if self.causal { 3 } else { 1 }
        )
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused]
    }
}
