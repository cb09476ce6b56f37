//! The checked launch: validates arguments, extents and grid, picks the specialization and PTX for
//! the device, loads the module once per CUDA context, and launches — or runs the interpreter.

use std::sync::{Mutex, OnceLock};

use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

use super::buffer::{BufArg, Memory};
use super::device::{CudaDevice, Device};
use super::error::{driver, Error};
use super::recording::{Node, Recording, SharedRecording};
use super::spec::{cubins_off, KernelSpec, ParamKind, Variant, EQUALS_ONE};
use super::tma::{self, LaunchValues, MapCache, TensorMap};
use crate::interp::{self, InterpArg};
use crate::ir::{self, DType, Function};
use crate::Target;

/// The number of programs along each grid axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Programs along axis 0 (`program_id(0)`).
    pub x: u32,
    /// Programs along axis 1.
    pub y: u32,
    /// Programs along axis 2.
    pub z: u32,
}

impl Grid {
    /// A one-dimensional grid.
    pub fn x(x: u32) -> Grid {
        Grid { x, y: 1, z: 1 }
    }

    /// A two-dimensional grid.
    pub fn xy(x: u32, y: u32) -> Grid {
        Grid { x, y, z: 1 }
    }

    /// A three-dimensional grid.
    pub fn xyz(x: u32, y: u32, z: u32) -> Grid {
        Grid { x, y, z }
    }
}

impl From<u32> for Grid {
    fn from(x: u32) -> Grid {
        Grid::x(x)
    }
}

/// `ceil(a / b)` as a grid dimension: 0 when `a <= 0` or `b <= 0`, saturating at `u32::MAX` (a
/// launch then reports the grid as too large rather than wrapping around).
pub fn cdiv(a: impl TryInto<i64>, b: impl TryInto<i64>) -> u32 {
    let (Ok(a), Ok(b)) = (a.try_into(), b.try_into()) else {
        return u32::MAX;
    };
    if a <= 0 || b <= 0 {
        return 0;
    }
    u32::try_from((a - 1) / b + 1).unwrap_or(u32::MAX)
}

/// One launch argument, in parameter order.
#[derive(Debug)]
pub enum Arg<'a> {
    /// A buffer.
    Buf(BufArg<'a>),
    /// An `i32` by value.
    I32(i32),
    /// An `i64` by value.
    I64(i64),
    /// An `f32` by value.
    F32(f32),
    /// A `u32` by value.
    U32(u32),
    /// A `u64` by value.
    U64(u64),
    /// An `f64` by value.
    F64(f64),
}

impl LaunchValues for [Arg<'_>] {
    fn int(&self, param: u32) -> Option<i64> {
        match self.get(param as usize)? {
            Arg::I32(v) => Some(i64::from(*v)),
            Arg::I64(v) => Some(*v),
            Arg::U32(v) => Some(i64::from(*v)),
            Arg::U64(v) => i64::try_from(*v).ok(),
            Arg::Buf(_) | Arg::F32(_) | Arg::F64(_) => None,
        }
    }

    fn buffer(&self, param: u32) -> Option<(u64, usize)> {
        match self.get(param as usize)? {
            Arg::Buf(BufArg(Memory::Device { ptr, len, .. }, _)) => Some((*ptr, *len)),
            _ => None,
        }
    }
}

/// Per-kernel cache: the parsed IR for the interpreter, the loaded function per CUDA context,
/// specialization and target, and the last tensor map encoded per descriptor slot. The macro
/// generates one `static` of these per kernel.
pub struct ModuleCache {
    ir: OnceLock<Result<Function, String>>,
    funcs: Mutex<Vec<(usize, usize, usize, CudaFunction)>>,
    maps: MapCache,
}

impl Default for ModuleCache {
    fn default() -> Self {
        Self::new()
    }
}

impl ModuleCache {
    /// An empty cache (usable in a `static`).
    pub const fn new() -> ModuleCache {
        ModuleCache {
            ir: OnceLock::new(),
            funcs: Mutex::new(Vec::new()),
            maps: MapCache::new(),
        }
    }

    /// The kernel's tile-level IR, parsed and verified once.
    pub fn ir(&self, spec: &KernelSpec) -> Result<&Function, Error> {
        self.ir
            .get_or_init(|| {
                let f = ir::parse(spec.ir).map_err(|e| e.to_string())?;
                ir::verify(&f).map_err(|e| e.to_string())?;
                Ok(f)
            })
            .as_ref()
            .map_err(|e| Error::BadIr(e.clone()))
    }

    fn function(
        &self,
        spec: &KernelSpec,
        dev: &CudaDevice,
        variant: usize,
        target: usize,
    ) -> Result<CudaFunction, Error> {
        let ctx = dev.stream.context();
        let key = ctx.cu_ctx() as usize;
        let mut funcs = self.funcs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((.., f)) = funcs
            .iter()
            .find(|&&(c, v, t, _)| c == key && v == variant && t == target)
        {
            return Ok(f.clone());
        }
        let t = &spec.variants[variant].targets[target];
        #[cfg(feature = "tracing")]
        let started = std::time::Instant::now();
        let (major, minor) = dev.cc;
        // The cubin when the device runs it (nothing to compile), else the PTX (the driver
        // compiles it); a cubin the driver refuses (one from a newer ptxas than the driver
        // knows, say) falls back to the PTX.
        let from_cubin = (t.cubin_runs_on(major, minor) && !cubins_off())
            .then(|| ctx.load_module(Ptx::from_binary(t.cubin.to_vec())));
        #[cfg_attr(not(feature = "tracing"), allow(unused_variables))]
        let loaded_cubin = matches!(from_cubin, Some(Ok(_)));
        let module = match from_cubin {
            Some(Ok(m)) => m,
            _ => driver(
                &format!("loading the {} PTX of kernel {}", t.target, spec.label()),
                ctx.load_module(Ptx::from_src(t.ptx)),
            )?,
        };
        let f = driver(
            &format!("finding entry `{}`", t.entry),
            module.load_function(t.entry),
        )?;
        if u64::from(t.dyn_shared_bytes) > Target::STATIC_SHARED_BYTES {
            let bytes = i32::try_from(t.dyn_shared_bytes).unwrap_or(i32::MAX);
            driver(
                &format!(
                    "allowing kernel {} {} bytes of dynamic shared memory",
                    spec.label(),
                    t.dyn_shared_bytes
                ),
                f.set_attribute(
                    cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    bytes,
                ),
            )?;
        }
        trace_event!(
            debug,
            kernel = spec.rust_name,
            instance = spec.instance,
            variant,
            arch = t.target.arch(),
            cubin = loaded_cubin,
            ptx_bytes = t.ptx.len(),
            ms = started.elapsed().as_secs_f64() * 1e3,
            "tile: loaded a kernel's module"
        );
        funcs.push((key, variant, target, f.clone()));
        Ok(f)
    }
}

/// Why each specialization before `chosen` refused `args`: the arguments that break its
/// assumptions (for the `tracing` feature's events).
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
fn refusals(spec: &KernelSpec, chosen: usize, args: &[Arg<'_>]) -> String {
    spec.variants[..chosen]
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let broken = broken_assumptions(spec, v.divisibility, args, meets_divisibility);
            format!("variant {i}: {}", broken.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Each argument that `meets` says breaks its assumption in `divisibility`, named with its
/// value (an integer) or address (a device buffer).
fn broken_assumptions(
    spec: &KernelSpec,
    divisibility: &[u32],
    args: &[Arg<'_>],
    meets: impl Fn(&Arg<'_>, u32) -> bool,
) -> Vec<String> {
    divisibility
        .iter()
        .zip(args)
        .zip(spec.params)
        .filter(|((&d, a), _)| !meets(a, d))
        .map(|((&d, a), p)| match a {
            Arg::I32(v) if d == EQUALS_ONE => format!("`{}` = {v} is not 1", p.name),
            Arg::I64(v) if d == EQUALS_ONE => format!("`{}` = {v} is not 1", p.name),
            Arg::I32(v) => format!("`{}` = {v} is not a multiple of {d}", p.name),
            Arg::I64(v) => format!("`{}` = {v} is not a multiple of {d}", p.name),
            Arg::Buf(BufArg(Memory::Device { ptr, .. }, _)) => {
                format!("buffer `{}` at {ptr:#x} is not {d}-byte aligned", p.name)
            }
            _ => format!("buffer `{}` is not {d}-byte aligned", p.name),
        })
        .collect()
}

/// The kernel's own parameters as a recorded node holds them: one 8-byte word per argument,
/// the value in its low bytes.
fn param_words(args: &[Arg<'_>]) -> Result<Vec<u64>, Error> {
    args.iter()
        .map(|a| match a {
            Arg::Buf(BufArg(Memory::Device { ptr, .. }, _)) => Ok(*ptr),
            Arg::I32(v) => Ok(u64::from(*v as u32)),
            Arg::I64(v) => Ok(*v as u64),
            Arg::F32(v) => Ok(u64::from(v.to_bits())),
            Arg::U32(v) => Ok(u64::from(*v)),
            Arg::U64(v) => Ok(*v),
            Arg::F64(v) => Ok(v.to_bits()),
            Arg::Buf(_) => Err(Error::Args("host memory reached a CUDA launch".into())),
        })
        .collect()
}

/// Appends a checked launch to the graph being captured instead of launching it: its
/// arguments, then `maps` (one per descriptor slot).
fn record(
    spec: &KernelSpec,
    rec: &SharedRecording,
    func: CudaFunction,
    cfg: LaunchConfig,
    args: &[Arg<'_>],
    maps: Vec<TensorMap>,
) -> Result<(), Error> {
    let params = param_words(args)?;
    let mut r = rec.lock().unwrap_or_else(|p| p.into_inner());
    check_open(spec, &r)?;
    r.nodes.push(Node {
        func,
        grid: [cfg.grid_dim.0, cfg.grid_dim.1, cfg.grid_dim.2],
        block: cfg.block_dim.0,
        shared: cfg.shared_mem_bytes,
        params,
        maps,
    });
    Ok(())
}

/// A launch on a capturing device is an `Err` once its capture has ended.
fn check_open(spec: &KernelSpec, r: &Recording) -> Result<(), Error> {
    if r.open {
        return Ok(());
    }
    Err(Error::Capture(format!(
        "kernel {} launched on the device of a capture that has ended (a copy of the \
         device `Device::capture` gave its closure); launch on the original device",
        spec.label()
    )))
}

/// Loads every specialization of each kernel in `kernels` for `dev` (the PTX its target
/// selects), so that the first launch does not pay for it; on the interpreter, parses and
/// verifies each kernel's IR. The generated `preload` of each kernel calls this with its
/// instances. Loading is once per kernel, specialization and context, whichever comes first.
pub fn preload(kernels: &[(&'static KernelSpec, &ModuleCache)], dev: &Device) -> Result<(), Error> {
    for &(spec, cache) in kernels {
        match dev {
            Device::Interpreter => {
                cache.ir(spec)?;
            }
            Device::Cuda(c) => {
                for variant in 0..spec.variants.len() {
                    // A specialization without PTX for this device is skipped: its launch
                    // reports it.
                    if let Ok(target) = pick_target(spec, c, variant) {
                        cache.function(spec, c, variant, target)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The index of the PTX target of specialization `variant` that `dev` runs: the one chosen
/// for the device, else the first (newest) its capability runs.
fn pick_target(spec: &KernelSpec, dev: &CudaDevice, variant: usize) -> Result<usize, Error> {
    let (major, minor) = dev.cc;
    let v = &spec.variants[variant];
    match dev.target {
        Some(chosen) => v.targets.iter().position(|t| t.target == chosen),
        None => v.targets.iter().position(|t| t.runs_on(major, minor)),
    }
    .ok_or_else(|| {
        let have: Vec<&str> = v.targets.iter().map(|t| t.target.arch()).collect();
        let wanted = match dev.target {
            Some(chosen) => format!("target {chosen} (chosen for the device)"),
            None => format!("compute capability {major}.{minor}"),
        };
        let compiled = if have.is_empty() {
            "this instance was left out on every target when it was built (the build's \
             warnings say why)"
                .to_string()
        } else {
            format!("compiled for {}", have.join(", "))
        };
        Error::NoVariant {
            kernel: spec.rust_name,
            msg: format!("no PTX for {wanted}; {compiled}"),
        }
    })
}

/// Grid limits the interpreter enforces too, so that a launch valid on one back end is valid on
/// the other (CUDA's limits for every device since compute capability 3.0).
const PORTABLE_MAX_GRID: [u32; 3] = [i32::MAX as u32, 65535, 65535];

/// Validates and launches `spec` on `dev`. `extents[i]` is the number of elements the kernel
/// declares for parameter `i` (`Some(None)` if computing it overflowed; `None` if undeclared).
///
/// A grid with an axis of 0 programs (`cdiv(0, BLOCK)` for an empty tensor) launches nothing and
/// returns `Ok(())`, as Triton does; inside a [`Device::capture`] it records nothing. Every
/// check a launch makes of its arguments still runs for such a grid (kinds, buffer lengths
/// against the declared extents, devices, `specialize = aligned`, a device without PTX for the
/// kernel), because a wrong argument is a bug whatever the grid, and an empty launch that
/// succeeds is one that would succeed with programs to run.
///
/// Called by the generated wrappers; they have already turned each buffer into a [`BufArg`] of
/// the right device.
pub fn launch<const N: usize>(
    spec: &'static KernelSpec,
    cache: &ModuleCache,
    dev: &Device,
    grid: Grid,
    args: [Arg<'_>; N],
    extents: &[Option<Option<i64>>],
) -> Result<(), Error> {
    launch_checked(spec, cache, dev, grid, args, extents)
}

/// [`launch`] with as many arguments as the caller has at run time: for tools that build a
/// [`KernelSpec`] themselves (the differential tester), where the generated wrappers know the
/// count at build time.
pub fn launch_args(
    spec: &'static KernelSpec,
    cache: &ModuleCache,
    dev: &Device,
    grid: Grid,
    args: Vec<Arg<'_>>,
    extents: &[Option<Option<i64>>],
) -> Result<(), Error> {
    launch_checked(spec, cache, dev, grid, args, extents)
}

fn launch_checked<'a, A>(
    spec: &'static KernelSpec,
    cache: &ModuleCache,
    dev: &Device,
    grid: Grid,
    args: A,
    extents: &[Option<Option<i64>>],
) -> Result<(), Error>
where
    A: AsRef<[Arg<'a>]> + IntoIterator<Item = Arg<'a>>,
{
    check_args(spec, args.as_ref(), extents)?;
    let dims = check_grid(spec, dev, grid)?;
    check_aligned_only(spec, dev, args.as_ref())?;
    match dev {
        Device::Interpreter => run_interpreted(spec, cache, dims, args),
        Device::Cuda(c) => run_cuda(spec, cache, c, grid, args.as_ref()),
    }
}

/// Checks the arguments against the kernel's parameters: their number and kinds, the buffers'
/// lengths against 32-bit offsets and against the extents the kernel declares (`extents` as
/// [`launch`] takes them).
fn check_args(
    spec: &KernelSpec,
    args: &[Arg<'_>],
    extents: &[Option<Option<i64>>],
) -> Result<(), Error> {
    let kernel = spec.rust_name;
    if args.len() != spec.params.len() {
        return Err(Error::Args(format!(
            "kernel `{kernel}` takes {} arguments, got {}",
            spec.params.len(),
            args.len()
        )));
    }
    for (i, (p, a)) in spec.params.iter().zip(args).enumerate() {
        let ok = matches!(
            (p.kind, a),
            (
                ParamKind::Ptr { written: false, .. },
                Arg::Buf(BufArg(Memory::Device { .. } | Memory::HostRef(_), _))
            ) | (
                ParamKind::Ptr { written: true, .. },
                Arg::Buf(BufArg(Memory::Device { .. } | Memory::HostMut(_), _))
            ) | (ParamKind::Scalar(DType::I32), Arg::I32(_))
                | (ParamKind::Scalar(DType::I64), Arg::I64(_))
                | (ParamKind::Scalar(DType::F32), Arg::F32(_))
                | (ParamKind::Scalar(DType::U32), Arg::U32(_))
                | (ParamKind::Scalar(DType::U64), Arg::U64(_))
                | (ParamKind::Scalar(DType::F64), Arg::F64(_))
        );
        if !ok {
            return Err(Error::Args(format!(
                "kernel `{kernel}`: argument {i} (`{}`) has the wrong kind",
                p.name
            )));
        }
        if let (
            Arg::Buf(b),
            ParamKind::Ptr {
                offsets32: true, ..
            },
        ) = (a, p.kind)
        {
            if b.len() > i32::MAX as usize {
                return Err(Error::Args(format!(
                    "kernel `{kernel}`: buffer `{}` has {} elements, and the kernel addresses it with 32-bit offsets, which reach {} elements; compute its offsets in i64 (e.g. `program_id(0) as i64 * BLOCK + arange(0, BLOCK) as i64`)",
                    p.name,
                    b.len(),
                    i32::MAX
                )));
            }
        }
        if let (Arg::Buf(b), Some(ext)) = (a, extents.get(i).copied().flatten()) {
            let required = ext
                .ok_or(Error::Extent {
                    kernel,
                    param: p.name,
                })?
                .max(0) as u64;
            if (b.len() as u64) < required {
                return Err(Error::Length {
                    kernel,
                    param: p.name,
                    required,
                    actual: b.len(),
                });
            }
        }
    }
    Ok(())
}

/// Checks the grid against the device's limits (the portable ones on the interpreter) and
/// returns its dimensions. An axis of 0 programs is allowed: the grid is empty and the launch
/// runs nothing (the other axes must still be within the limits).
fn check_grid(spec: &KernelSpec, dev: &Device, grid: Grid) -> Result<[u32; 3], Error> {
    let kernel = spec.rust_name;
    let limits = match dev {
        Device::Cuda(c) => c.max_grid,
        Device::Interpreter => PORTABLE_MAX_GRID,
    };
    let dims = [grid.x, grid.y, grid.z];
    for (axis, (&d, &max)) in dims.iter().zip(&limits).enumerate() {
        if d > max {
            return Err(Error::Grid {
                kernel,
                msg: format!("axis {axis} has {d} programs, the device allows {max}"),
            });
        }
    }
    Ok(dims)
}

fn run_interpreted<'a>(
    spec: &KernelSpec,
    cache: &ModuleCache,
    grid: [u32; 3],
    args: impl IntoIterator<Item = Arg<'a>>,
) -> Result<(), Error> {
    let f = cache.ir(spec)?;
    let mut iargs = Vec::new();
    // The buffers the arguments' addresses reach (pointer tables'), after the parameters; the
    // tables stay lent until the launch returns.
    let mut reached = Vec::new();
    let mut lent = Vec::new();
    let host = |m: Memory<'a>| match m {
        Memory::HostRef(r) => Ok(InterpArg::Ref(r)),
        Memory::HostMut(m) => Ok(InterpArg::Mut(m)),
        Memory::Device { .. } => Err(Error::Args("device memory reached the interpreter".into())),
    };
    for a in args {
        iargs.push(match a {
            Arg::Buf(BufArg(m, reach)) => {
                for r in reach.buffers {
                    reached.push(host(r)?);
                }
                lent.extend(reach.lent);
                host(m)?
            }
            Arg::I32(v) => InterpArg::I32(v),
            Arg::I64(v) => InterpArg::I64(v),
            Arg::F32(v) => InterpArg::F32(v),
            Arg::U32(v) => InterpArg::U32(v),
            Arg::U64(v) => InterpArg::U64(v),
            Arg::F64(v) => InterpArg::F64(v),
        });
    }
    iargs.extend(reached);
    // The IR names the instance by its symbol; the error names the kernel as the user wrote it.
    let ran = interp::run(f, grid, &mut iargs);
    drop(iargs);
    drop(lent);
    ran.map_err(|e| match e {
        interp::InterpError::OutOfBounds {
            param,
            index,
            len,
            program,
            ..
        } => interp::InterpError::OutOfBounds {
            kernel: spec.rust_name.to_string(),
            param,
            index,
            len,
            program,
        },
        interp::InterpError::StepBudget {
            budget, program, ..
        } => interp::InterpError::StepBudget {
            kernel: spec.rust_name.to_string(),
            budget,
            program,
        },
        interp::InterpError::BadAddress {
            address,
            why,
            program,
            ..
        } => interp::InterpError::BadAddress {
            kernel: spec.rust_name.to_string(),
            address,
            why,
            program,
        },
        other => other,
    })?;
    Ok(())
}

/// A kernel compiled with `specialize = aligned` has no specialization that assumes nothing (its
/// last one assumes something): a launch whose arguments break its assumptions is an `Err`
/// naming each, on the interpreter too (which checks the integers; host buffers have no device
/// address), so that a kernel that runs there runs on the GPU.
fn check_aligned_only(spec: &KernelSpec, dev: &Device, args: &[Arg<'_>]) -> Result<(), Error> {
    let Some(last) = spec.variants.last() else {
        return Ok(());
    };
    if last.divisibility.iter().all(|&d| d == 1) {
        return Ok(());
    }
    let interpreted = matches!(dev, Device::Interpreter);
    let meets =
        |a: &Arg<'_>, d: u32| (interpreted && matches!(a, Arg::Buf(_))) || meets_divisibility(a, d);
    let accepted = spec
        .variants
        .iter()
        .any(|v| v.divisibility.iter().zip(args).all(|(&d, a)| meets(a, d)));
    if accepted {
        return Ok(());
    }
    let broken = broken_assumptions(spec, last.divisibility, args, meets);
    Err(Error::NoVariant {
        kernel: spec.rust_name,
        msg: format!(
            "compiled with `specialize = aligned`, and {}",
            broken.join(", ")
        ),
    })
}

/// Whether argument `a` meets a specialization's assumption that it is a multiple of `d` (a
/// pointer's address in bytes, an integer's value; every argument is a multiple of 1), or, for
/// [`EQUALS_ONE`], that it is the integer 1.
fn meets_divisibility(a: &Arg<'_>, d: u32) -> bool {
    if d == EQUALS_ONE {
        return matches!(a, Arg::I32(1) | Arg::I64(1));
    }
    if d == 1 {
        return true;
    }
    let d = u64::from(d);
    match a {
        Arg::Buf(BufArg(Memory::Device { ptr, .. }, _)) => ptr % d == 0,
        Arg::I32(v) => i64::from(*v).rem_euclid(d as i64) == 0,
        Arg::I64(v) => i128::from(*v).rem_euclid(i128::from(d)) == 0,
        // Unsigned integers are not specialized on.
        Arg::Buf(_) | Arg::F32(_) | Arg::F64(_) | Arg::U32(_) | Arg::U64(_) => false,
    }
}

fn run_cuda(
    spec: &'static KernelSpec,
    cache: &ModuleCache,
    dev: &CudaDevice,
    grid: Grid,
    args: &[Arg<'_>],
) -> Result<(), Error> {
    let kernel = spec.rust_name;
    let accepts = |v: &Variant| {
        v.divisibility
            .iter()
            .zip(args)
            .all(|(&d, a)| meets_divisibility(a, d))
            // An empty array has no tensor map, nor has an implied descriptor whose
            // arguments the driver would refuse: a variant that would copy it with the
            // tensor memory accelerator gives way to one that reads it with loads.
            && !v.targets.iter().any(|t| tma::gives_way(spec, t.tma, args))
    };
    // The first that accepts the arguments and has PTX for the device (an autotuning config
    // left out on a target has none there).
    let chosen = spec
        .variants
        .iter()
        .enumerate()
        .filter(|(_, v)| accepts(v))
        .find_map(|(i, _)| pick_target(spec, dev, i).ok().map(|t| (i, t)));
    let Some((variant, target)) = chosen else {
        // Why not: the first accepting variant's missing PTX, or no variant accepts.
        return Err(match spec.variants.iter().position(accepts) {
            Some(i) => pick_target(spec, dev, i).err().unwrap_or(Error::NoVariant {
                kernel,
                msg: "no specialization has PTX for this device".into(),
            }),
            None => Error::NoVariant {
                kernel,
                msg: "no specialization accepts these arguments".into(),
            },
        });
    };
    let v = &spec.variants[variant];
    if variant > 0 {
        trace_event!(
            debug,
            kernel,
            instance = spec.instance,
            variant,
            of = spec.variants.len(),
            why = %refusals(spec, variant, args),
            "tile: a less specialized variant runs"
        );
    }
    trace_event!(
        trace,
        kernel,
        instance = spec.instance,
        variant,
        arch = v.targets[target].target.arch(),
        grid = ?(grid.x, grid.y, grid.z),
        warps = v.num_warps,
        recording = dev.recording.is_some(),
        "tile: launch"
    );
    if args.iter().any(|a| {
        matches!(
            a,
            Arg::Buf(BufArg(Memory::HostRef(_) | Memory::HostMut(_), _))
        )
    }) {
        return Err(Error::Args("host memory reached a CUDA launch".into()));
    }
    tma::check_bounds(spec, args)?;
    if grid.x == 0 || grid.y == 0 || grid.z == 0 {
        // An empty grid: every argument is checked, and nothing runs. The driver refuses a
        // zero dimension, so nothing is launched or recorded, no module is loaded for it, and
        // no tensor map is encoded (an extent of 0, which empties most grids, has none).
        tma::check_encodings(spec, v.targets[target].tma, args)?;
        if let Some(rec) = &dev.recording {
            check_open(spec, &rec.lock().unwrap_or_else(|p| p.into_inner()))?;
        }
        return Ok(());
    }
    let func = cache.function(spec, dev, variant, target)?;
    let t = &v.targets[target];
    // One tensor map per descriptor slot, after the kernel's own parameters.
    let maps = tma::tensor_maps(spec, t.tma, args, &cache.maps, tma::encode)?;
    let cfg = LaunchConfig {
        grid_dim: (grid.x, grid.y, grid.z),
        block_dim: (32 * v.num_warps, 1, 1),
        shared_mem_bytes: t.dyn_shared_bytes,
    };
    if let Some(rec) = &dev.recording {
        return record(spec, rec, func, cfg, args, maps);
    }
    // The builder borrows each value where it lives in `args`, then each tensor map in `maps`
    // (empty, and unallocated, for a kernel without descriptor slots): no copies.
    let mut builder = dev.stream.launch_builder(&func);
    for a in args {
        match a {
            Arg::Buf(BufArg(Memory::Device { ptr, .. }, _)) => builder.arg(ptr),
            Arg::I32(v) => builder.arg(v),
            Arg::I64(v) => builder.arg(v),
            Arg::F32(v) => builder.arg(v),
            Arg::U32(v) => builder.arg(v),
            Arg::U64(v) => builder.arg(v),
            Arg::F64(v) => builder.arg(v),
            // Rejected just above.
            Arg::Buf(BufArg(Memory::HostRef(_) | Memory::HostMut(_), _)) => &mut builder,
        };
    }
    for m in &maps {
        builder.arg(m);
    }

    // SAFETY: the PTX entry was generated from the same kernel as `spec.params`, and the argument
    // list was checked above to have one value per parameter of the matching kind and type, in
    // order (pointers as 64-bit device addresses of buffers in this stream's context), followed
    // by one 128-byte tensor map per descriptor slot (`spec.desc_slots`, the hidden parameters
    // the PTX declares after the kernel's own), encoded by the driver for the slots this module
    // copies with TMA and zeros elsewhere; every descriptor's array lies inside its buffer. Each
    // buffer has at least the elements the kernel declares for it, and its `SyncOnDrop` guard (in
    // `args`, which `launch` drops only after this call) orders the launch after pending work on
    // the buffer. The grid is within the device's limits and not empty, and the block size is the `.maxntid` the
    // PTX was built for. What this cannot check: that the kernel's own masks keep accesses inside the declared
    // extents — the interpreter checks that for every access on the same code.
    let launched = unsafe { builder.launch(cfg) };
    // The message is built only on failure: this is the hot path.
    launched.map(|_| ()).map_err(|source| Error::Driver {
        during: format!("launching kernel {}", spec.label()),
        source,
    })
}

#[cfg(test)]
mod tests {
    use cudarc::driver::SyncOnDrop;

    use super::*;
    use crate::runtime::spec::{DescScalar, DescSpec, ParamSpec, TmaSpec};

    /// A device buffer argument at `ptr` with `len` elements (no stream to order it on).
    fn device_buf(ptr: u64, len: usize) -> Arg<'static> {
        Arg::Buf(BufArg(
            Memory::Device {
                ptr,
                len,
                _sync: SyncOnDrop::Sync(None),
            },
            crate::runtime::buffer::Reach::default(),
        ))
    }

    /// `copy(x, y, n)` through three descriptor slots: `x` as an `n`-row view (slot 0), `y`
    /// (slot 2), and a slot the launch cannot describe (slot 1).
    static COPY: KernelSpec = KernelSpec {
        name: "copy",
        rust_name: "copy",
        instance: "",
        ir: "",
        params: &[
            ParamSpec {
                name: "x",
                kind: ParamKind::Ptr {
                    dtype: DType::F16,
                    written: false,
                    offsets32: false,
                },
            },
            ParamSpec {
                name: "y",
                kind: ParamKind::Ptr {
                    dtype: DType::F16,
                    written: true,
                    offsets32: false,
                },
            },
            ParamSpec {
                name: "n",
                kind: ParamKind::Scalar(DType::I32),
            },
        ],
        desc_slots: 3,
        descriptors: &[
            DescSpec {
                slot: 0,
                ptr: 0,
                dtype: DType::F16,
                dims: &[DescScalar::Param(2), DescScalar::Const(64)],
                strides: &[DescScalar::Const(64), DescScalar::Const(1)],
                implied: false,
            },
            DescSpec {
                slot: 2,
                ptr: 1,
                dtype: DType::F16,
                dims: &[DescScalar::Param(2), DescScalar::Const(64)],
                strides: &[DescScalar::Const(64), DescScalar::Const(1)],
                implied: false,
            },
        ],
        variants: &[],
    };

    #[test]
    fn the_argument_list_has_every_parameter_then_one_map_per_slot() {
        let args = [
            device_buf(0x1000, 128 * 64),
            device_buf(0x40000, 128 * 64),
            Arg::I32(128),
        ];
        tma::check_bounds(&COPY, &args[..]).unwrap();
        let copies = [TmaSpec {
            slot: 2,
            box_dims: &[64, 64],
            swizzle: 128,
        }];
        let mut seen = Vec::new();
        let maps = tma::tensor_maps(&COPY, &copies, &args[..], &MapCache::new(), |e| {
            seen.push(*e);
            Ok(TensorMap([e.address; 16]))
        })
        .unwrap();
        let words = param_words(&args).unwrap();
        assert_eq!(words, [0x1000, 0x40000, 128]);
        assert_eq!(
            words.len() + maps.len(),
            COPY.params.len() + COPY.desc_slots as usize,
            "what the PTX declares"
        );
        assert_eq!(maps[0], TensorMap::ZERO, "slot 0 is not copied with TMA");
        assert_eq!(maps[1], TensorMap::ZERO, "slot 1 is not described");
        assert_eq!(maps[2], TensorMap([0x40000; 16]));
        assert_eq!(seen.len(), 1);
        assert_eq!(
            seen[0].global_dim[..2],
            [64, 128],
            "`n` read from its i32 argument"
        );
    }

    #[test]
    fn a_descriptor_past_its_buffer_is_refused_before_anything_runs() {
        let args = [
            device_buf(0x1000, 128 * 64),
            device_buf(0x40000, 128 * 64 - 1),
            Arg::I32(128),
        ];
        let e = tma::check_bounds(&COPY, &args[..]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "kernel `copy`: the tensor descriptor of `y`: extents [`n` = 128, 64] with strides \
             [64, 1] reach element 8191, and the buffer has 8191 elements"
        );
    }
}
