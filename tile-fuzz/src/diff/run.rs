//! One differential case: compile, build the launch's [`KernelSpec`], make the inputs, run the
//! interpreter and the GPU, compare; and the minimizer of a mismatch.

use std::fmt;

use half::{bf16, f16};
use tile_codegen::pipeline::CompiledKernel;
use tile_core::ir::DType;
use tile_core::runtime::{
    launch_args, Arg, Buffer, DescScalar, DescSpec, Device, Grid, KernelSpec, ModuleCache,
    ParamKind, ParamSpec, TargetPtx, TensorMut, TensorRef, TmaSpec, Variant,
};

use super::gen::{self, Buf, Case, Param, Role, Tol};
use crate::case::{self, Outcome};
use crate::rng::Rng;

/// What came of one case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Every output bit for bit equal.
    Equal,
    /// Every output equal or within its tolerance.
    Tolerance,
    /// `--interp-only`: compiled (and assembled, with ptxas) and interpreted.
    Interpreted,
    /// The compiler refused the kernel with a located error (the generator's fault, counted to
    /// show what it misses).
    Rejected,
    /// An output differs beyond its tolerance, or the GPU wrote outside a buffer.
    Mismatch,
    /// The interpreter refused a launch the generator made in bounds.
    InterpError,
    /// The GPU launch (or the module load) failed where the interpreter ran.
    LaunchError,
    /// The compiler panicked, erred internally or without a location, or spilled.
    CompileBug,
    /// The worker died (a GPU fault kills the context, an abort the process).
    Crash,
    /// Over the time limit.
    Timeout,
}

impl Verdict {
    /// Every verdict, in report order.
    pub const ALL: [Verdict; 10] = [
        Verdict::Equal,
        Verdict::Tolerance,
        Verdict::Interpreted,
        Verdict::Rejected,
        Verdict::Mismatch,
        Verdict::InterpError,
        Verdict::LaunchError,
        Verdict::CompileBug,
        Verdict::Crash,
        Verdict::Timeout,
    ];

    /// Its name in reports and the worker protocol.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Equal => "equal",
            Verdict::Tolerance => "within-tolerance",
            Verdict::Interpreted => "interpreted",
            Verdict::Rejected => "rejected",
            Verdict::Mismatch => "mismatch",
            Verdict::InterpError => "interpreter-error",
            Verdict::LaunchError => "launch-error",
            Verdict::CompileBug => "compile-bug",
            Verdict::Crash => "crash",
            Verdict::Timeout => "timeout",
        }
    }

    /// The verdict called `name`.
    pub fn from_name(name: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.name() == name)
    }

    /// Whether the case shows no fault of tile.
    pub fn passed(self) -> bool {
        matches!(
            self,
            Verdict::Equal | Verdict::Tolerance | Verdict::Interpreted | Verdict::Rejected
        )
    }
}

/// The parameters in one line: `name: type[len+offset]` or `name = value`.
pub fn describe(params: &[Param]) -> String {
    params
        .iter()
        .map(|p| match p {
            Param::Buf(b) => format!(
                "{}: {}[{}{}]{}",
                b.name,
                b.dtype,
                b.len,
                if b.offset > 0 {
                    format!(" at +{}", b.offset)
                } else {
                    String::new()
                },
                match (b.role, b.tol) {
                    (Role::Input, _) => "",
                    (_, Tol::Exact) => " exact",
                    (_, Tol::Approx(_) | Tol::Dot(_)) => " approx",
                }
            ),
            Param::I32(n, v) => format!("{n} = {v}"),
            Param::F32(n, v) => format!("{n} = {v}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The launch of `case` on one line, as [`parse_launch`] reads it back: `grid X Y Z; special
/// 0|1; data SEED;` then per parameter `name dtype len offset role tol` for a buffer (`tol`:
/// `exact` or the relative tolerance, with `dot` before it for a `dot`'s) or `name dtype value`
/// for a scalar. A finding saved with it replays whatever the generator has become.
pub fn launch_line(case: &Case) -> String {
    let mut parts = vec![
        format!("grid {} {} {}", case.grid[0], case.grid[1], case.grid[2]),
        format!("special {}", u8::from(case.special)),
        format!("data {}", case.data_seed),
    ];
    for p in &case.params {
        parts.push(match p {
            Param::Buf(b) => {
                let role = match b.role {
                    Role::Input => "input",
                    Role::Output => "output",
                    Role::Atomic => "atomic",
                };
                let tol = match b.tol {
                    Tol::Exact => "exact".to_string(),
                    Tol::Approx(r) => format!("{r:e}"),
                    Tol::Dot(r) => format!("dot {r:e}"),
                };
                format!("{} {} {} {} {role} {tol}", b.name, b.dtype, b.len, b.offset)
            }
            Param::I32(n, v) => format!("{n} i32 {v}"),
            Param::F32(n, v) => format!("{n} f32 {v:e}"),
        });
    }
    parts.join("; ")
}

/// The launch [`launch_line`] wrote, with `text` as the kernel.
pub fn parse_launch(line: &str, text: String) -> Result<Case, String> {
    let mut case = Case {
        text,
        params: Vec::new(),
        grid: [1, 1, 1],
        special: false,
        data_seed: 0,
    };
    let bad = |what: &str| format!("launch line: cannot read `{what}`");
    for part in line.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let w: Vec<&str> = part.split_whitespace().collect();
        let num = |i: usize| -> Result<u64, String> {
            w.get(i)
                .and_then(|x| x.parse().ok())
                .ok_or_else(|| bad(part))
        };
        match w.as_slice() {
            ["grid", ..] => case.grid = [num(1)? as u32, num(2)? as u32, num(3)? as u32],
            ["special", ..] => case.special = num(1)? == 1,
            ["data", ..] => case.data_seed = num(1)?,
            [name, "i32", v] => case.params.push(Param::I32(
                name.to_string(),
                v.parse().map_err(|_| bad(part))?,
            )),
            [name, "f32", v] => case.params.push(Param::F32(
                name.to_string(),
                v.parse().map_err(|_| bad(part))?,
            )),
            [name, dtype, _, _, role, tol @ ..] => {
                let dtype = DType::ALL
                    .into_iter()
                    .find(|d| d.to_string() == *dtype)
                    .ok_or_else(|| bad(part))?;
                let role = match *role {
                    "input" => Role::Input,
                    "output" => Role::Output,
                    "atomic" => Role::Atomic,
                    _ => return Err(bad(part)),
                };
                let rtol = |t: &str| t.parse::<f64>().map_err(|_| bad(part));
                let tol = match tol {
                    ["exact"] => Tol::Exact,
                    ["dot", r] => Tol::Dot(rtol(r)?),
                    [r] => Tol::Approx(rtol(r)?),
                    _ => return Err(bad(part)),
                };
                case.params.push(Param::Buf(Buf {
                    name: name.to_string(),
                    dtype,
                    len: num(2)? as usize,
                    offset: num(3)? as usize,
                    role,
                    tol,
                }));
            }
            _ => return Err(bad(part)),
        }
    }
    Ok(case)
}

/// Case `i` of `seed`, run.
pub fn run_case(seed: u64, i: usize, interp_only: bool) -> (Verdict, String) {
    let case = gen::case(&mut super::case_rng(seed, i));
    run_text(&case, &case.text, interp_only)
}

fn leak<T>(v: Vec<T>) -> &'static [T] {
    Box::leak(v.into_boxed_slice())
}

fn leak_str(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

/// What the macro would embed for `c`, built at run time (and leaked: a launch needs it
/// `'static`).
fn spec_of(c: &CompiledKernel) -> &'static KernelSpec {
    let mut params = Vec::new();
    let mut ir_index = 0;
    for p in &c.kernel.params {
        use tile_codegen::frontend::ParamDecl;
        let kind = match &p.kind {
            ParamDecl::Ptr { dtype, .. } => {
                let k = ParamKind::Ptr {
                    dtype: *dtype,
                    written: c.kernel.written.get(ir_index).copied().unwrap_or(false),
                    offsets32: c.kernel.offsets32.get(ir_index).copied().unwrap_or(true),
                };
                ir_index += 1;
                k
            }
            ParamDecl::Scalar(d) => {
                ir_index += 1;
                ParamKind::Scalar(*d)
            }
            ParamDecl::Const(_) | ParamDecl::Type(_) => continue,
        };
        params.push(ParamSpec {
            name: leak_str(&p.name),
            kind,
        });
    }
    let scalars = |v: &[DescScalar]| leak(v.to_vec());
    let descriptors: Vec<DescSpec> =
        tile_codegen::analysis::descriptors::host_descriptors(&c.kernel.ir)
            .iter()
            .chain(&c.implied)
            .map(|d| DescSpec {
                slot: d.slot,
                ptr: d.ptr,
                dtype: d.dtype,
                dims: scalars(&d.dims),
                strides: scalars(&d.strides),
                implied: d.implied,
            })
            .collect();
    let entry = leak_str(&c.kernel.name);
    let variants: Vec<Variant> = c
        .variants
        .iter()
        .map(|v| Variant {
            divisibility: leak(v.divisibility.clone()),
            num_warps: v.num_warps,
            targets: leak(
                v.targets
                    .iter()
                    .map(|t| TargetPtx {
                        target: t.target,
                        ptx: leak_str(&t.artifacts.ptx),
                        cubin: leak(t.cubin.clone().unwrap_or_default()),
                        entry,
                        dyn_shared_bytes: t.artifacts.dyn_shared_bytes,
                        tma: leak(
                            t.tma
                                .iter()
                                .map(|m| TmaSpec {
                                    slot: m.slot,
                                    box_dims: leak(m.box_dims.clone()),
                                    swizzle: m.swizzle,
                                })
                                .collect(),
                        ),
                    })
                    .collect(),
            ),
        })
        .collect();
    Box::leak(Box::new(KernelSpec {
        name: entry,
        rust_name: leak_str(&c.kernel.rust_name),
        instance: leak_str(&c.kernel.instance),
        ir: leak_str(&c.tile_ir),
        params: leak(params),
        desc_slots: c.kernel.ir.desc_slots + c.implied.len() as u32,
        descriptors: leak(descriptors),
        variants: leak(variants),
    }))
}

/// Elements kept beyond each end of a buffer, whose contents the GPU must leave alone.
const GUARD: usize = 8;

/// A buffer's host contents (guards and misaligning prefix included).
#[derive(Clone, Debug)]
enum Host {
    F32(Vec<f32>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    U8(Vec<u8>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

/// A buffer on the device.
enum Dev {
    F32(Buffer<f32>),
    F16(Buffer<f16>),
    BF16(Buffer<bf16>),
    I32(Buffer<i32>),
    I64(Buffer<i64>),
    I8(Buffer<i8>),
    I16(Buffer<i16>),
    U8(Buffer<u8>),
    U32(Buffer<u32>),
    U64(Buffer<u64>),
}

/// Applies `$body` to the vector inside a [`Host`] or [`Dev`], whatever its element type.
macro_rules! each {
    ($e:expr, $ty:ident, $v:ident => $body:expr) => {
        match $e {
            $ty::F32($v) => $body,
            $ty::F16($v) => $body,
            $ty::BF16($v) => $body,
            $ty::I32($v) => $body,
            $ty::I64($v) => $body,
            $ty::I8($v) => $body,
            $ty::I16($v) => $body,
            $ty::U8($v) => $body,
            $ty::U32($v) => $body,
            $ty::U64($v) => $body,
        }
    };
}

/// `$body` with `$v` the vector inside a [`Host`] or [`Dev`], rewrapped in the other's variant
/// of the same element type (an upload or a download).
macro_rules! across {
    ($e:expr, $from:ident => $to:ident, $v:ident => $body:expr) => {
        match $e {
            $from::F32($v) => $to::F32($body),
            $from::F16($v) => $to::F16($body),
            $from::BF16($v) => $to::BF16($body),
            $from::I32($v) => $to::I32($body),
            $from::I64($v) => $to::I64($body),
            $from::I8($v) => $to::I8($body),
            $from::I16($v) => $to::I16($body),
            $from::U8($v) => $to::U8($body),
            $from::U32($v) => $to::U32($body),
            $from::U64($v) => $to::U64($body),
        }
    };
}

/// A float input value: mostly in [-2, 2], with special values where the case asks: NaN, ±∞,
/// ±0 and subnormals. Not huge finite values: a sum that meets `+1e30` and `-1e30` loses what
/// lies between them or not depending on its order, which no tolerance can tell from a bug,
/// while infinities and NaNs give the same result in every order.
fn float_value(r: &mut Rng, special: bool, d: DType) -> f32 {
    if special && r.below(12) == 0 {
        let tiny = match d {
            DType::F16 => 3.0e-6,
            _ => 1.0e-39,
        };
        return [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            tiny,
            -tiny,
        ][r.below(7)];
    }
    (r.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0
}

fn int_value(r: &mut Rng, special: bool) -> i64 {
    if special && r.below(12) == 0 {
        return [i64::MIN, i64::MAX, i32::MIN as i64, i32::MAX as i64, 0, -1][r.below(6)];
    }
    r.below(2001) as i64 - 1000
}

/// The contents of `b` before the launch: random inputs and atomics, a fill pattern for
/// outputs; the guards and prefix hold the pattern too.
fn contents(b: &Buf, r: &mut Rng, special: bool) -> Host {
    let total = b.offset + b.len + GUARD;
    let live = |i: usize| i >= b.offset && i < b.offset + b.len && b.role != Role::Output;
    let ints = |r: &mut Rng| -> Vec<i64> {
        (0..total)
            .map(|i| if live(i) { int_value(r, special) } else { -7 })
            .collect()
    };
    let floats = |r: &mut Rng| -> Vec<f32> {
        (0..total)
            .map(|i| {
                if live(i) {
                    float_value(r, special && b.role == Role::Input, b.dtype)
                } else {
                    777.0
                }
            })
            .collect()
    };
    match b.dtype {
        DType::F32 => Host::F32(floats(r)),
        DType::F16 => Host::F16(floats(r).into_iter().map(f16::from_f32).collect()),
        DType::BF16 => Host::BF16(floats(r).into_iter().map(bf16::from_f32).collect()),
        DType::I64 => Host::I64(ints(r)),
        // Wrapping: the extremes and negative values become the type's own edges.
        DType::I8 => Host::I8(ints(r).into_iter().map(|v| v as i8).collect()),
        DType::I16 => Host::I16(ints(r).into_iter().map(|v| v as i16).collect()),
        DType::U8 => Host::U8(ints(r).into_iter().map(|v| v as u8).collect()),
        DType::U32 => Host::U32(ints(r).into_iter().map(|v| v as u32).collect()),
        DType::U64 => Host::U64(ints(r).into_iter().map(|v| v as u64).collect()),
        _ => Host::I32(
            ints(r)
                .into_iter()
                .map(|v| v.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
                .collect(),
        ),
    }
}

impl Host {
    fn upload(&self, dev: &Device) -> Result<Dev, tile_core::runtime::Error> {
        Ok(across!(self, Host => Dev, v => dev.upload(v)?))
    }

    /// Element `i` as f64 (NaN stays NaN) and as bits, for comparisons.
    fn at(&self, i: usize) -> (f64, u64) {
        match self {
            Host::F32(v) => (v[i] as f64, v[i].to_bits() as u64),
            Host::F16(v) => (v[i].to_f64(), v[i].to_bits() as u64),
            Host::BF16(v) => (v[i].to_f64(), v[i].to_bits() as u64),
            Host::I32(v) => (v[i] as f64, v[i] as u32 as u64),
            Host::I64(v) => (v[i] as f64, v[i] as u64),
            Host::I8(v) => (f64::from(v[i]), u64::from(v[i] as u8)),
            Host::I16(v) => (f64::from(v[i]), u64::from(v[i] as u16)),
            Host::U8(v) => (f64::from(v[i]), u64::from(v[i])),
            Host::U32(v) => (f64::from(v[i]), u64::from(v[i])),
            Host::U64(v) => (v[i] as f64, v[i]),
        }
    }

    fn is_float(&self) -> bool {
        matches!(self, Host::F32(_) | Host::F16(_) | Host::BF16(_))
    }

    fn len(&self) -> usize {
        each!(self, Host, v => v.len())
    }
}

impl Dev {
    fn download(&self, dev: &Device) -> Result<Host, tile_core::runtime::Error> {
        Ok(across!(self, Dev => Host, b => dev.download(b)?))
    }
}

/// A view of `len` elements from `off` of a buffer, as a launch argument.
fn view_arg<'a, T: tile_core::runtime::Element>(
    b: &'a mut Buffer<T>,
    off: usize,
    len: usize,
    written: bool,
    dev: &'a Device,
) -> Result<Arg<'a>, tile_core::runtime::Error> {
    Ok(Arg::Buf(match b {
        Buffer::Host(v) => {
            let s = &mut v[off..off + len];
            if written {
                TensorMut::<T>::tile_arg_mut(s, dev)?
            } else {
                TensorRef::<T>::tile_arg(&*s, dev)?
            }
        }
        Buffer::Cuda(s) => {
            // The argument borrows the view, which must outlive it: each is leaked (a few
            // bytes per launch, in a process that is replaced every 200 cases).
            if written {
                let view = Box::leak(Box::new(s.slice_mut(off..off + len)));
                TensorMut::<T>::tile_arg_mut(view, dev)?
            } else {
                let view = Box::leak(Box::new(s.slice(off..off + len)));
                TensorRef::<T>::tile_arg(&*view, dev)?
            }
        }
    }))
}

/// Runs `spec` on `dev` with `host`'s contents; returns every buffer's contents after.
fn execute(
    spec: &'static KernelSpec,
    cache: &ModuleCache,
    dev: &Device,
    case: &Case,
    host: &[Host],
) -> Result<Vec<Host>, String> {
    let mut bufs: Vec<Dev> = host
        .iter()
        .map(|h| h.upload(dev))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("upload: {e}"))?;
    {
        let mut args = Vec::new();
        let mut bi = bufs.iter_mut();
        for (pi, p) in case.params.iter().enumerate() {
            let written = matches!(
                spec.params.get(pi).map(|s| s.kind),
                Some(ParamKind::Ptr { written: true, .. })
            );
            args.push(match p {
                Param::Buf(b) => {
                    let d = bi.next().ok_or("buffers")?;
                    each!(d, Dev, x => view_arg(x, b.offset, b.len, written, dev))
                        .map_err(|e| format!("argument `{}`: {e}", b.name))?
                }
                Param::I32(_, v) => Arg::I32(*v),
                Param::F32(_, v) => Arg::F32(*v),
            });
        }
        let extents = vec![None; args.len()];
        let grid = Grid::xyz(case.grid[0], case.grid[1], case.grid[2]);
        launch_args(spec, cache, dev, grid, args, &extents).map_err(|e| e.to_string())?;
    }
    dev.synchronize().map_err(|e| format!("synchronize: {e}"))?;
    bufs.iter()
        .map(|b| b.download(dev).map_err(|e| format!("download: {e}")))
        .collect()
}

thread_local! {
    /// The process's CUDA device (`TILE_TARGET` chooses the PTX), made once.
    static CUDA: Result<Device, String> = Device::cuda(0).map_err(|e| e.to_string());
}

/// Compiles and runs `text` with `case`'s launch.
pub fn run_text(case: &Case, text: &str, interp_only: bool) -> (Verdict, String) {
    let kernels = match case::compile_kernels(text) {
        Ok(k) => k,
        Err((Outcome::UserError | Outcome::NotRust, msg)) => return (Verdict::Rejected, msg),
        Err((o, msg)) => return (Verdict::CompileBug, format!("{o}: {msg}")),
    };
    let Some(c) = kernels.first() else {
        return (Verdict::CompileBug, "no kernel".into());
    };
    if let Some(ptxas) = std::env::var_os(case::PTXAS_ENV) {
        let (o, msg) = case::spills(&kernels, std::path::Path::new(&ptxas));
        if o != Outcome::Compiled {
            return (Verdict::CompileBug, format!("{o}: {msg}"));
        }
    }
    let spec = spec_of(c);
    let mut r = Rng::new(case.data_seed);
    let bufs: Vec<&Buf> = case
        .params
        .iter()
        .filter_map(|p| match p {
            Param::Buf(b) => Some(b),
            _ => None,
        })
        .collect();
    let host: Vec<Host> = bufs
        .iter()
        .map(|b| contents(b, &mut r, case.special))
        .collect();
    let interp = Device::interpreter();
    let want = match execute(spec, &ModuleCache::new(), &interp, case, &host) {
        Ok(w) => w,
        Err(e) => return (Verdict::InterpError, e),
    };
    if interp_only {
        return (Verdict::Interpreted, String::new());
    }
    let got = CUDA.with(|d| match d {
        Ok(dev) => execute(spec, &ModuleCache::new(), dev, case, &host),
        Err(e) => Err(format!("no GPU: {e}")),
    });
    let got = match got {
        Ok(g) => g,
        Err(e) => return (Verdict::LaunchError, e),
    };
    compare(&bufs, &host, &want, &got)
}

/// One buffer's comparison.
#[derive(Default)]
struct Tally {
    approx: usize,
    first_bad: Option<String>,
    /// The element of `first_bad`.
    index: usize,
}

fn compare(bufs: &[&Buf], before: &[Host], want: &[Host], got: &[Host]) -> (Verdict, String) {
    let mut approx = 0;
    for (k, b) in bufs.iter().enumerate() {
        let t = compare_one(b, &before[k], &want[k], &got[k]);
        if let Some(bad) = t.first_bad {
            // The inputs at the same element, which usually explain an element-wise mismatch.
            let inputs: Vec<String> = bufs
                .iter()
                .zip(before)
                .filter(|(i, _)| i.role == Role::Input && t.index < i.len)
                .map(|(i, h)| format!("{}={}", i.name, Shown(h.at(i.offset + t.index).0)))
                .collect();
            return (
                Verdict::Mismatch,
                format!("{bad}; inputs there: {}", inputs.join(" ")),
            );
        }
        approx += t.approx;
    }
    if approx == 0 {
        (Verdict::Equal, String::new())
    } else {
        (
            Verdict::Tolerance,
            format!("{approx} elements within tolerance"),
        )
    }
}

fn compare_one(b: &Buf, before: &Host, want: &Host, got: &Host) -> Tally {
    let mut t = Tally::default();
    let live = b.offset..b.offset + b.len;
    // Outside the kernel's elements nothing may change.
    for i in (0..got.len()).filter(|i| !live.contains(i)) {
        if got.at(i).1 != before.at(i).1 {
            t.first_bad = Some(format!(
                "`{}`[{}] (outside its {} elements) written: {} (was {})",
                b.name,
                i as i64 - b.offset as i64,
                b.len,
                got.at(i).0,
                before.at(i).0
            ));
            return t;
        }
    }
    let scale = live
        .clone()
        .map(|i| want.at(i).0.abs())
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max);
    for i in live.clone() {
        let ((w, wb), (g, gb)) = (want.at(i), got.at(i));
        if wb == gb || (want.is_float() && w.is_nan() && g.is_nan()) {
            continue;
        }
        let ok = match b.tol {
            Tol::Exact => false,
            Tol::Approx(rtol) | Tol::Dot(rtol) if w.is_finite() && g.is_finite() => {
                (w - g).abs() <= rtol * scale
            }
            Tol::Dot(_) if !w.is_finite() && !g.is_finite() => true,
            Tol::Approx(rtol) | Tol::Dot(rtol) => {
                let huge = overflow_band(b.dtype, rtol);
                w == g || (w.abs() > huge && g.abs() > huge && w.signum() == g.signum())
            }
        };
        if ok {
            t.approx += 1;
        } else {
            t.index = i - b.offset;
            t.first_bad = Some(format!(
                "`{}`[{}]: GPU {} ({:#x}), interpreter {} ({:#x}){}",
                b.name,
                i - b.offset,
                Shown(g),
                gb,
                Shown(w),
                wb,
                match b.tol {
                    Tol::Exact => " (exact)".to_string(),
                    Tol::Approx(r) | Tol::Dot(r) => format!(" (tolerance {:.3e})", r * scale),
                }
            ));
            return t;
        }
    }
    t
}

/// The magnitude beyond which an approximate result may overflow on one side only: an f32
/// intermediate past 1e28 may overflow in one evaluation order and not in another, and a value
/// rounded to a narrow type within `rtol` of its largest finite value may round to that value on
/// one side and to infinity on the other (an f16 result near -65504).
fn overflow_band(d: DType, rtol: f64) -> f64 {
    let largest = match d {
        DType::F16 => f64::from(f16::MAX),
        DType::BF16 => f64::from(bf16::MAX),
        _ => f64::from(f32::MAX),
    };
    (largest / (1.0 + 2.0 * rtol)).min(1e28)
}

/// A value as a report shows it.
struct Shown(f64);

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0.0 && self.0.is_sign_negative() {
            f.write_str("-0")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// The smallest kernel [`super::shrink`] finds that still mismatches (within 300 tries), then
/// the smallest launch ([`super::shrink::shrink_launch`], within 40).
pub fn minimize(case: &Case, interp_only: bool) -> Case {
    let text = super::shrink::shrink(&case.text, 300, |t| {
        run_text(case, t, interp_only).0 == Verdict::Mismatch
    });
    let small = Case {
        text,
        ..case.clone()
    };
    super::shrink::shrink_launch(&small, 40, |c| {
        run_text(c, &c.text, interp_only).0 == Verdict::Mismatch
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out_f16(len: usize) -> Buf {
        Buf {
            name: "y".into(),
            dtype: DType::F16,
            len,
            offset: 0,
            role: Role::Output,
            tol: Tol::Approx(4e-3),
        }
    }

    #[test]
    fn a_narrow_result_at_its_largest_value_may_round_to_infinity_on_one_side() {
        // A finding on sm_80: the f32 value lay within tolerance of 65520, where f16 rounding
        // turns to infinity; the GPU rounded to -65504, the interpreter to -inf.
        let b = out_f16(2);
        let host = |v: [f32; 2]| Host::F16(v.iter().map(|&x| f16::from_f32(x)).collect());
        let before = host([0.0, 0.0]);
        let want = host([1.0, f32::NEG_INFINITY]);
        let got = host([1.0, -65504.0]);
        let t = compare_one(&b, &before, &want, &got);
        assert!(t.first_bad.is_none(), "{:?}", t.first_bad);
        assert_eq!(t.approx, 1);
        // Far from the largest value, or of the other sign, it is still a mismatch.
        for g in [-60000.0, 65504.0] {
            let t = compare_one(&b, &before, &want, &host([1.0, g]));
            assert!(t.first_bad.is_some(), "{g} passed against -inf");
        }
    }
}
