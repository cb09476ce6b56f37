//! The interpreter: executes a tile-level kernel on the CPU, one program after another, with the
//! semantics the GPU lowering implements (wrapping integer arithmetic, `x / 0 == 0` for integers,
//! IEEE f32 arithmetic, masked-off lanes never touching memory and taking `other`; a
//! descriptor access's elements outside the array's extents touch no memory either, reading 0).
//!
//! Atomics apply element by element in row-major order, program after program: one of the
//! outcomes the GPU allows (where programs race on an address, the GPU may order them otherwise,
//! and an atomic's old values differ accordingly; final sums of integers do not).
//!
//! It is the back end when no GPU is present and the reference the tests compare against. Unlike
//! the GPU, it checks every unmasked access against the buffer's bounds and reports an error
//! instead of reading or writing outside it, and it stops a launch that runs over a budget of
//! element operations ([`step_budget`]) with an error instead of running for hours.

use std::fmt;

use crate::float8::{f8e4m3, f8e5m2};
use crate::ir::{
    atomic_float_max, atomic_float_min, atomic_half_max, atomic_half_min, round_tf32, AtomicOp,
    BinOp, CmpPred, ConstValue, DType, Elem, Function, MathFn, OpKind, Precision, ReduceKind,
    ScanKind, Type, UnOp, ValueId,
};

/// A host buffer the kernel reads.
#[derive(Debug)]
pub enum HostRef<'a> {
    /// `f32` elements.
    F32(&'a [f32]),
    /// `i32` elements.
    I32(&'a [i32]),
    /// `i64` elements.
    I64(&'a [i64]),
    /// `f16` elements.
    F16(&'a [half::f16]),
    /// `bf16` elements.
    BF16(&'a [half::bf16]),
    /// `bool` elements (one byte each, as on the GPU).
    Bool(&'a [bool]),
    /// `i8` elements.
    I8(&'a [i8]),
    /// `i16` elements.
    I16(&'a [i16]),
    /// `u8` elements.
    U8(&'a [u8]),
    /// `u32` elements.
    U32(&'a [u32]),
    /// `u64` elements.
    U64(&'a [u64]),
    /// `f64` elements.
    F64(&'a [f64]),
    /// `f8e4m3` elements.
    F8E4M3(&'a [f8e4m3]),
    /// `f8e5m2` elements.
    F8E5M2(&'a [f8e5m2]),
}

/// A host buffer the kernel may write.
#[derive(Debug)]
pub enum HostMut<'a> {
    /// `f32` elements.
    F32(&'a mut [f32]),
    /// `i32` elements.
    I32(&'a mut [i32]),
    /// `i64` elements.
    I64(&'a mut [i64]),
    /// `f16` elements.
    F16(&'a mut [half::f16]),
    /// `bf16` elements.
    BF16(&'a mut [half::bf16]),
    /// `bool` elements (one byte each, as on the GPU).
    Bool(&'a mut [bool]),
    /// `i8` elements.
    I8(&'a mut [i8]),
    /// `i16` elements.
    I16(&'a mut [i16]),
    /// `u8` elements.
    U8(&'a mut [u8]),
    /// `u32` elements.
    U32(&'a mut [u32]),
    /// `u64` elements.
    U64(&'a mut [u64]),
    /// `f64` elements.
    F64(&'a mut [f64]),
    /// `f8e4m3` elements.
    F8E4M3(&'a mut [f8e4m3]),
    /// `f8e5m2` elements.
    F8E5M2(&'a mut [f8e5m2]),
}

/// One argument of an interpreted launch.
#[derive(Debug)]
pub enum InterpArg<'a> {
    /// A buffer the kernel only reads.
    Ref(HostRef<'a>),
    /// A buffer the kernel may write.
    Mut(HostMut<'a>),
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

impl InterpArg<'_> {
    fn describe(&self) -> String {
        match self {
            InterpArg::Ref(r) => format!("read-only {} buffer", r.dtype()),
            InterpArg::Mut(m) => format!("writable {} buffer", m.dtype()),
            InterpArg::I32(_) => "i32".into(),
            InterpArg::I64(_) => "i64".into(),
            InterpArg::F32(_) => "f32".into(),
            InterpArg::U32(_) => "u32".into(),
            InterpArg::U64(_) => "u64".into(),
            InterpArg::F64(_) => "f64".into(),
        }
    }
}

impl HostRef<'_> {
    /// The host address of the first element: what `int_to_ptr` resolves addresses against.
    pub fn address(&self) -> u64 {
        match self {
            HostRef::F32(s) => s.as_ptr() as u64,
            HostRef::I32(s) => s.as_ptr() as u64,
            HostRef::I64(s) => s.as_ptr() as u64,
            HostRef::F16(s) => s.as_ptr() as u64,
            HostRef::BF16(s) => s.as_ptr() as u64,
            HostRef::Bool(s) => s.as_ptr() as u64,
            HostRef::I8(s) => s.as_ptr() as u64,
            HostRef::I16(s) => s.as_ptr() as u64,
            HostRef::U8(s) => s.as_ptr() as u64,
            HostRef::U32(s) => s.as_ptr() as u64,
            HostRef::U64(s) => s.as_ptr() as u64,
            HostRef::F64(s) => s.as_ptr() as u64,
            HostRef::F8E4M3(s) => s.as_ptr() as u64,
            HostRef::F8E5M2(s) => s.as_ptr() as u64,
        }
    }

    fn dtype(&self) -> DType {
        match self {
            HostRef::F32(_) => DType::F32,
            HostRef::I32(_) => DType::I32,
            HostRef::I64(_) => DType::I64,
            HostRef::F16(_) => DType::F16,
            HostRef::BF16(_) => DType::BF16,
            HostRef::Bool(_) => DType::I1,
            HostRef::I8(_) => DType::I8,
            HostRef::I16(_) => DType::I16,
            HostRef::U8(_) => DType::U8,
            HostRef::U32(_) => DType::U32,
            HostRef::U64(_) => DType::U64,
            HostRef::F64(_) => DType::F64,
            HostRef::F8E4M3(_) => DType::F8E4M3,
            HostRef::F8E5M2(_) => DType::F8E5M2,
        }
    }
    /// True when the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            HostRef::F32(s) => s.len(),
            HostRef::I32(s) => s.len(),
            HostRef::I64(s) => s.len(),
            HostRef::F16(s) => s.len(),
            HostRef::BF16(s) => s.len(),
            HostRef::Bool(s) => s.len(),
            HostRef::I8(s) => s.len(),
            HostRef::I16(s) => s.len(),
            HostRef::U8(s) => s.len(),
            HostRef::U32(s) => s.len(),
            HostRef::U64(s) => s.len(),
            HostRef::F64(s) => s.len(),
            HostRef::F8E4M3(s) => s.len(),
            HostRef::F8E5M2(s) => s.len(),
        }
    }
    fn get(&self, i: usize) -> Scalar {
        match self {
            HostRef::F32(s) => Scalar::F32(s[i]),
            HostRef::I32(s) => Scalar::I32(s[i]),
            HostRef::I64(s) => Scalar::I64(s[i]),
            HostRef::F16(s) => Scalar::F16(s[i]),
            HostRef::BF16(s) => Scalar::BF16(s[i]),
            HostRef::Bool(s) => Scalar::I1(s[i]),
            HostRef::I8(s) => int_scalar(DType::I8, s[i] as u64),
            HostRef::I16(s) => int_scalar(DType::I16, s[i] as u64),
            HostRef::U8(s) => int_scalar(DType::U8, u64::from(s[i])),
            HostRef::U32(s) => int_scalar(DType::U32, u64::from(s[i])),
            HostRef::U64(s) => int_scalar(DType::U64, s[i]),
            HostRef::F64(s) => Scalar::F64(s[i]),
            HostRef::F8E4M3(s) => Scalar::F8(DType::F8E4M3, s[i].to_bits()),
            HostRef::F8E5M2(s) => Scalar::F8(DType::F8E5M2, s[i].to_bits()),
        }
    }
}

impl HostMut<'_> {
    /// The host address of the first element: what `int_to_ptr` resolves addresses against.
    pub fn address(&self) -> u64 {
        match self {
            HostMut::F32(s) => s.as_ptr() as u64,
            HostMut::I32(s) => s.as_ptr() as u64,
            HostMut::I64(s) => s.as_ptr() as u64,
            HostMut::F16(s) => s.as_ptr() as u64,
            HostMut::BF16(s) => s.as_ptr() as u64,
            HostMut::Bool(s) => s.as_ptr() as u64,
            HostMut::I8(s) => s.as_ptr() as u64,
            HostMut::I16(s) => s.as_ptr() as u64,
            HostMut::U8(s) => s.as_ptr() as u64,
            HostMut::U32(s) => s.as_ptr() as u64,
            HostMut::U64(s) => s.as_ptr() as u64,
            HostMut::F64(s) => s.as_ptr() as u64,
            HostMut::F8E4M3(s) => s.as_ptr() as u64,
            HostMut::F8E5M2(s) => s.as_ptr() as u64,
        }
    }

    fn dtype(&self) -> DType {
        match self {
            HostMut::F32(_) => DType::F32,
            HostMut::I32(_) => DType::I32,
            HostMut::I64(_) => DType::I64,
            HostMut::F16(_) => DType::F16,
            HostMut::BF16(_) => DType::BF16,
            HostMut::Bool(_) => DType::I1,
            HostMut::I8(_) => DType::I8,
            HostMut::I16(_) => DType::I16,
            HostMut::U8(_) => DType::U8,
            HostMut::U32(_) => DType::U32,
            HostMut::U64(_) => DType::U64,
            HostMut::F64(_) => DType::F64,
            HostMut::F8E4M3(_) => DType::F8E4M3,
            HostMut::F8E5M2(_) => DType::F8E5M2,
        }
    }
    /// True when the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            HostMut::F32(s) => s.len(),
            HostMut::I32(s) => s.len(),
            HostMut::I64(s) => s.len(),
            HostMut::F16(s) => s.len(),
            HostMut::BF16(s) => s.len(),
            HostMut::Bool(s) => s.len(),
            HostMut::I8(s) => s.len(),
            HostMut::I16(s) => s.len(),
            HostMut::U8(s) => s.len(),
            HostMut::U32(s) => s.len(),
            HostMut::U64(s) => s.len(),
            HostMut::F64(s) => s.len(),
            HostMut::F8E4M3(s) => s.len(),
            HostMut::F8E5M2(s) => s.len(),
        }
    }
    fn get(&self, i: usize) -> Scalar {
        match self {
            HostMut::F32(s) => Scalar::F32(s[i]),
            HostMut::I32(s) => Scalar::I32(s[i]),
            HostMut::I64(s) => Scalar::I64(s[i]),
            HostMut::F16(s) => Scalar::F16(s[i]),
            HostMut::BF16(s) => Scalar::BF16(s[i]),
            HostMut::Bool(s) => Scalar::I1(s[i]),
            HostMut::I8(s) => int_scalar(DType::I8, s[i] as u64),
            HostMut::I16(s) => int_scalar(DType::I16, s[i] as u64),
            HostMut::U8(s) => int_scalar(DType::U8, u64::from(s[i])),
            HostMut::U32(s) => int_scalar(DType::U32, u64::from(s[i])),
            HostMut::U64(s) => int_scalar(DType::U64, s[i]),
            HostMut::F64(s) => Scalar::F64(s[i]),
            HostMut::F8E4M3(s) => Scalar::F8(DType::F8E4M3, s[i].to_bits()),
            HostMut::F8E5M2(s) => Scalar::F8(DType::F8E5M2, s[i].to_bits()),
        }
    }
    fn set(&mut self, i: usize, v: Scalar) -> bool {
        match (self, v) {
            (HostMut::F32(s), Scalar::F32(x)) => s[i] = x,
            (HostMut::I32(s), Scalar::I32(x)) => s[i] = x,
            (HostMut::I64(s), Scalar::I64(x)) => s[i] = x,
            (HostMut::F16(s), Scalar::F16(x)) => s[i] = x,
            (HostMut::BF16(s), Scalar::BF16(x)) => s[i] = x,
            (HostMut::Bool(s), Scalar::I1(x)) => s[i] = x,
            (HostMut::I8(s), Scalar::Int(DType::I8, b)) => s[i] = b as i8,
            (HostMut::I16(s), Scalar::Int(DType::I16, b)) => s[i] = b as i16,
            (HostMut::U8(s), Scalar::Int(DType::U8, b)) => s[i] = b as u8,
            (HostMut::U32(s), Scalar::Int(DType::U32, b)) => s[i] = b as u32,
            (HostMut::U64(s), Scalar::Int(DType::U64, b)) => s[i] = b,
            (HostMut::F64(s), Scalar::F64(x)) => s[i] = x,
            (HostMut::F8E4M3(s), Scalar::F8(DType::F8E4M3, b)) => s[i] = f8e4m3::from_bits(b),
            (HostMut::F8E5M2(s), Scalar::F8(DType::F8E5M2, b)) => s[i] = f8e5m2::from_bits(b),
            _ => return false,
        }
        true
    }
}

/// Why an interpreted launch failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InterpError {
    /// The arguments do not match the kernel's parameters.
    BadArgs(String),
    /// An unmasked access fell outside its buffer.
    OutOfBounds {
        /// Kernel name.
        kernel: String,
        /// Parameter the pointer was derived from.
        param: String,
        /// Element index accessed.
        index: i64,
        /// Buffer length in elements.
        len: usize,
        /// The program that did it.
        program: [u32; 3],
    },
    /// A store through a buffer passed read-only.
    ReadOnly {
        /// Parameter name.
        param: String,
    },
    /// An address converted to a pointer (`int_to_ptr`) that is in no buffer of the launch, or
    /// in one of another element type, or between two elements.
    BadAddress {
        /// Kernel name.
        kernel: String,
        /// The address.
        address: u64,
        /// What is wrong with it.
        why: String,
        /// The program that converted it.
        program: [u32; 3],
    },
    /// The kernel is not tile-level IR this interpreter can run.
    Unsupported(String),
    /// The launch did more element operations than the step budget allows (a loop of 2^31
    /// iterations would otherwise run for hours).
    StepBudget {
        /// Kernel name.
        kernel: String,
        /// The budget, in element operations.
        budget: u64,
        /// The program that ran over it.
        program: [u32; 3],
    },
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InterpError::BadArgs(m) => write!(f, "bad arguments: {m}"),
            InterpError::OutOfBounds { kernel, param, index, len, program } => write!(
                f,
                "kernel `{kernel}`, program {program:?}: unmasked access to `{param}`[{index}] outside its {len} elements"
            ),
            InterpError::ReadOnly { param } => write!(f, "store through read-only buffer `{param}`"),
            InterpError::BadAddress { kernel, address, why, program } => write!(
                f,
                "kernel `{kernel}`, program {program:?}: the address {address:#x} converted to a pointer {why}"
            ),
            InterpError::Unsupported(m) => write!(f, "cannot interpret: {m}"),
            InterpError::StepBudget { kernel, budget, program } => write!(
                f,
                "kernel `{kernel}`, program {program:?}: over the interpreter's budget of {budget} element operations (TILE_INTERP_STEPS sets it)"
            ),
        }
    }
}

impl std::error::Error for InterpError {}

/// One element of a value.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scalar {
    I1(bool),
    I32(i32),
    I64(i64),
    F32(f32),
    F16(half::f16),
    BF16(half::bf16),
    F64(f64),
    /// An 8-bit float: its type and its bits ([`f8_value`] decodes them).
    F8(DType, u8),
    /// An integer of another width or signedness than `i32`/`i64`: its type and its bits,
    /// sign-extended to 64 for a signed type, zero-extended for an unsigned one ([`int_scalar`]
    /// makes them; integer arithmetic goes through [`int_parts`] whatever the width).
    Int(DType, u64),
    /// A pointer: which argument's buffer, and the element offset into it.
    Ptr {
        buf: u32,
        off: i64,
    },
}

/// A value: one element for a scalar, all elements (row-major) for a tensor.
type Val = Vec<Scalar>;

/// The element operations one launch may do by default (about a minute of interpretation); the
/// environment variable `TILE_INTERP_STEPS` sets another.
pub const DEFAULT_STEP_BUDGET: u64 = 1 << 36;

/// The step budget: `TILE_INTERP_STEPS` if it is a number, else [`DEFAULT_STEP_BUDGET`].
pub fn step_budget() -> u64 {
    std::env::var("TILE_INTERP_STEPS")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(DEFAULT_STEP_BUDGET)
}

/// Runs `f` (verified, tile level) over `grid` programs with `args`, one per parameter, within
/// [`step_budget`] element operations.
pub fn run(f: &Function, grid: [u32; 3], args: &mut [InterpArg<'_>]) -> Result<(), InterpError> {
    run_with_budget(f, grid, args, step_budget())
}

/// [`run`] with an explicit budget of element operations (each op costs the elements of its
/// largest operand or result, a `dot` `m · n · k`); over it, the launch stops with
/// [`InterpError::StepBudget`].
pub fn run_with_budget(
    f: &Function,
    grid: [u32; 3],
    args: &mut [InterpArg<'_>],
    budget: u64,
) -> Result<(), InterpError> {
    let params = f.params();
    // Past the parameters: buffers the kernel reaches only through addresses (`int_to_ptr`).
    let reachable = args.get(params.len()..).is_some_and(|rest| {
        rest.iter()
            .all(|a| matches!(a, InterpArg::Ref(_) | InterpArg::Mut(_)))
    });
    if !reachable {
        return Err(InterpError::BadArgs(format!(
            "kernel `{}` takes {} arguments, got {}",
            f.name,
            params.len(),
            args.len()
        )));
    }
    for (i, (&p, a)) in params.iter().zip(args.iter()).enumerate() {
        let ty = f.ty(p);
        let ok = match (ty.elem, a) {
            (Elem::Ptr(d), InterpArg::Ref(r)) => r.dtype() == d,
            (Elem::Ptr(d), InterpArg::Mut(m)) => m.dtype() == d,
            (Elem::Scalar(DType::I32), InterpArg::I32(_)) => true,
            (Elem::Scalar(DType::I64), InterpArg::I64(_)) => true,
            (Elem::Scalar(DType::F32), InterpArg::F32(_)) => true,
            (Elem::Scalar(DType::U32), InterpArg::U32(_)) => true,
            (Elem::Scalar(DType::U64), InterpArg::U64(_)) => true,
            (Elem::Scalar(DType::F64), InterpArg::F64(_)) => true,
            _ => false,
        };
        if !ok {
            return Err(InterpError::BadArgs(format!(
                "parameter `{}` is `{ty}`, got a {}",
                f.param_names[i],
                a.describe()
            )));
        }
    }
    if f.values.iter().any(|v| v.ty.layout.is_some()) {
        return Err(InterpError::Unsupported(
            "GPU-level IR (with layouts)".into(),
        ));
    }
    let order = f.blocks[f.entry().index()].ops.clone();
    let mut env: Vec<Option<Val>> = vec![None; f.values.len()];
    let mut steps = 0u64;
    for z in 0..grid[2] {
        for y in 0..grid[1] {
            for x in 0..grid[0] {
                let mut prog = Program {
                    f,
                    grid,
                    pid: [x, y, z],
                    args,
                    env: &mut env,
                    steps: &mut steps,
                    budget,
                };
                prog.bind_params();
                for &op in &order {
                    prog.exec(op)?;
                }
            }
        }
    }
    Ok(())
}

struct Program<'p, 'a, 'b> {
    f: &'p Function,
    grid: [u32; 3],
    pid: [u32; 3],
    args: &'p mut [InterpArg<'a>],
    env: &'b mut Vec<Option<Val>>,
    /// Element operations done so far in this launch, and the most allowed.
    steps: &'b mut u64,
    budget: u64,
}

impl<'a> Program<'_, 'a, '_> {
    fn bind_params(&mut self) {
        for (i, &p) in self.f.params().iter().enumerate() {
            let s = match &self.args[i] {
                InterpArg::Ref(_) | InterpArg::Mut(_) => Scalar::Ptr {
                    buf: i as u32,
                    off: 0,
                },
                InterpArg::I32(v) => Scalar::I32(*v),
                InterpArg::I64(v) => Scalar::I64(*v),
                InterpArg::F32(v) => Scalar::F32(*v),
                InterpArg::U32(v) => int_scalar(DType::U32, u64::from(*v)),
                InterpArg::U64(v) => int_scalar(DType::U64, *v),
                InterpArg::F64(v) => Scalar::F64(*v),
            };
            self.env[p.index()] = Some(vec![s]);
        }
    }

    /// `for`: binds the body's arguments, runs its ops, takes the yielded values as the next
    /// carried values; the results are the last carried values. The induction variable is
    /// computed in 64 bits, so a bound near `i32::MAX` cannot make it wrap.
    fn run_loop(&mut self, op: crate::ir::OpId) -> Result<(), InterpError> {
        let f = self.f;
        let data = f.op(op);
        let scalar = |me: &Self, i: usize| -> Result<i64, InterpError> {
            match me.get(data.operands[i])?.first() {
                Some(Scalar::I32(x)) => Ok(i64::from(*x)),
                _ => Err(InterpError::Unsupported(
                    "a loop bound is not an i32".into(),
                )),
            }
        };
        let (lb, ub, step) = (scalar(self, 0)?, scalar(self, 1)?, scalar(self, 2)?);
        if step <= 0 {
            return Err(InterpError::Unsupported(format!(
                "a loop step of {step}; steps are positive"
            )));
        }
        let mut carried: Vec<Val> = data.operands[3..]
            .iter()
            .map(|&o| self.get(o).cloned())
            .collect::<Result<_, _>>()?;
        let region = *data
            .regions
            .first()
            .ok_or_else(|| InterpError::Unsupported("a loop without a body".into()))?;
        let body = f.regions[region.index()].blocks[0];
        let args = f.blocks[body.index()].args.clone();
        let mut iv = lb;
        while iv < ub {
            self.env[args[0].index()] = Some(vec![Scalar::I32(iv as i32)]);
            for (a, v) in args[1..].iter().zip(carried.drain(..)) {
                self.env[a.index()] = Some(v);
            }
            carried = self.run_block(body)?;
            iv += step;
        }
        for (&r, v) in data.results.iter().zip(carried) {
            self.env[r.index()] = Some(v);
        }
        Ok(())
    }

    /// `while`: the condition region on the carried values, then while it yields true the body
    /// and the condition again. Each op of either costs steps, so a loop that never ends (a
    /// lock no program will release: programs run one after another here) stops at the budget.
    fn run_while(&mut self, op: crate::ir::OpId) -> Result<(), InterpError> {
        let f = self.f;
        let data = f.op(op);
        let mut carried: Vec<Val> = data
            .operands
            .iter()
            .map(|&o| self.get(o).cloned())
            .collect::<Result<_, _>>()?;
        let (Some(&cond), Some(&body)) = (data.regions.first(), data.regions.get(1)) else {
            return Err(InterpError::Unsupported(
                "a `while` without a condition and a body".into(),
            ));
        };
        let (cond, body) = (
            f.regions[cond.index()].blocks[0],
            f.regions[body.index()].blocks[0],
        );
        loop {
            for (a, v) in f.blocks[cond.index()].args.iter().zip(carried.iter()) {
                self.env[a.index()] = Some(v.clone());
            }
            let decided = self.run_block(cond)?;
            if !matches!(
                decided.first().and_then(|v| v.first()),
                Some(Scalar::I1(true))
            ) {
                break;
            }
            for (a, v) in f.blocks[body.index()].args.iter().zip(carried.drain(..)) {
                self.env[a.index()] = Some(v);
            }
            carried = self.run_block(body)?;
        }
        for (&r, v) in data.results.iter().zip(carried) {
            self.env[r.index()] = Some(v);
        }
        Ok(())
    }

    /// `associative_scan`: along each line of the axis, in scan order, the running tuple is
    /// combined with the next element's tuple by running the region on scalars (sequentially,
    /// the order the GPU's combination tree reassociates).
    fn associative_scan(
        &mut self,
        op: crate::ir::OpId,
        axis: usize,
        reverse: bool,
    ) -> Result<(), InterpError> {
        let f = self.f;
        let data = f.op(op);
        let inputs: Vec<Val> = data
            .operands
            .iter()
            .map(|&o| self.get(o).cloned())
            .collect::<Result<_, _>>()?;
        let shape = &f.ty(data.operands[0]).shape;
        let region = *data
            .regions
            .first()
            .ok_or_else(|| InterpError::Unsupported("a scan without a combiner".into()))?;
        let body = f.regions[region.index()].blocks[0];
        let args = &f.blocks[body.index()].args;
        let k = inputs.len();
        let n = shape[axis] as usize;
        let inner: usize = shape[axis + 1..].iter().map(|&d| d as usize).product();
        let outer: usize = shape[..axis].iter().map(|&d| d as usize).product();
        let mut out = inputs.clone();
        for o in 0..outer {
            for i in 0..inner {
                let at = |j: usize| (o * n + j) * inner + i;
                let order: Vec<usize> = if reverse {
                    (0..n).rev().collect()
                } else {
                    (0..n).collect()
                };
                for w in order.windows(2) {
                    for (t, a) in args.iter().enumerate() {
                        let v = if t < k {
                            out[t][at(w[0])]
                        } else {
                            inputs[t - k][at(w[1])]
                        };
                        self.env[a.index()] = Some(vec![v]);
                    }
                    for (t, v) in self.run_block(body)?.into_iter().enumerate() {
                        out[t][at(w[1])] = *v.first().ok_or_else(|| {
                            InterpError::Unsupported("an empty combined value".into())
                        })?;
                    }
                }
            }
        }
        for (&r, v) in data.results.iter().zip(out) {
            self.env[r.index()] = Some(v);
        }
        Ok(())
    }

    /// Runs the ops of a region's block (a loop body, a branch, a combiner) and returns the
    /// values its `yield` gives (none without one).
    fn run_block(&mut self, block: crate::ir::BlockId) -> Result<Vec<Val>, InterpError> {
        let f = self.f;
        let mut yielded = Vec::new();
        for &inner in &f.blocks[block.index()].ops {
            self.exec(inner)?;
            let d = f.op(inner);
            if matches!(d.kind, OpKind::Yield) {
                yielded = d
                    .operands
                    .iter()
                    .map(|&o| self.get(o).cloned())
                    .collect::<Result<_, _>>()?;
            }
        }
        Ok(yielded)
    }

    fn get(&self, v: ValueId) -> Result<&Val, InterpError> {
        self.env[v.index()]
            .as_ref()
            .ok_or_else(|| InterpError::Unsupported(format!("value {v} used before definition")))
    }

    fn exec(&mut self, op: crate::ir::OpId) -> Result<(), InterpError> {
        let f = self.f;
        let data = f.op(op);
        let cost = match &data.kind {
            OpKind::Dot { .. } => {
                let (sa, sb) = (&f.ty(data.operands[0]).shape, &f.ty(data.operands[1]).shape);
                [sa.first(), sa.get(1), sb.get(1)]
                    .iter()
                    .map(|d| d.map_or(1, |&d| u64::from(d)))
                    .product()
            }
            _ => data
                .operands
                .iter()
                .chain(&data.results)
                .map(|&v| f.ty(v).numel())
                .max()
                .unwrap_or(1),
        };
        *self.steps = self.steps.saturating_add(cost.max(1));
        if *self.steps > self.budget {
            return Err(InterpError::StepBudget {
                kernel: f.name.clone(),
                budget: self.budget,
                program: self.pid,
            });
        }
        let result_ty: Option<&Type> = data.results.first().map(|&r| f.ty(r));
        let out: Option<Val> = match &data.kind {
            OpKind::Constant(c) => {
                let d = result_ty.and_then(Type::dtype).unwrap_or(DType::I32);
                Some(vec![const_scalar(*c, d)])
            }
            OpKind::ProgramId { axis } => {
                Some(vec![Scalar::I32(self.pid[*axis as usize % 3] as i32)])
            }
            OpKind::NumPrograms { axis } => {
                Some(vec![Scalar::I32(self.grid[*axis as usize % 3] as i32)])
            }
            OpKind::Arange { start, end } => {
                Some((*start..*end).map(|i| Scalar::I32(i as i32)).collect())
            }
            OpKind::Splat => {
                let s = self.get(data.operands[0])?[0];
                let n = result_ty.map_or(1, Type::numel) as usize;
                Some(vec![s; n])
            }
            // Row-major data does not move when an extent-1 dimension is inserted, nor when the
            // layout changes.
            OpKind::ExpandDims { .. } | OpKind::ConvertLayout => {
                Some(self.get(data.operands[0])?.clone())
            }
            OpKind::LocalAlloc
            | OpKind::AsyncCopy { .. }
            | OpKind::AsyncCommit
            | OpKind::AsyncWait { .. }
            | OpKind::Barrier
            | OpKind::LocalLoad { .. }
            | OpKind::WarpGroupDot { .. }
            | OpKind::WarpGroupWait { .. }
            | OpKind::FenceAsyncShared
            | OpKind::MbarrierInit
            | OpKind::MbarrierExpect { .. }
            | OpKind::TmaLoad { .. }
            | OpKind::MbarrierWait
            | OpKind::MbarrierInval => {
                return Err(InterpError::Unsupported(format!(
                    "`{}` is a GPU-level op; the interpreter runs tile-level IR",
                    data.kind.name()
                )))
            }
            OpKind::DescLoad { .. } => {
                let ty = result_ty.ok_or_else(|| {
                    InterpError::Unsupported("a `desc_load` without a result".into())
                })?;
                let zero = const_scalar(ConstValue::Int(0), ty.dtype().unwrap_or(DType::F32));
                let ptrs = self.desc_pointers(&data.operands, &ty.shape)?;
                let mut out = Vec::with_capacity(ptrs.len());
                for p in ptrs {
                    out.push(match p {
                        Some(p) => self.read(p)?,
                        None => zero,
                    });
                }
                Some(out)
            }
            OpKind::DescStore { .. } => {
                let (&value, head) = data.operands.split_last().ok_or_else(|| {
                    InterpError::Unsupported("a `desc_store` without operands".into())
                })?;
                let ptrs = self.desc_pointers(head, &f.ty(value).shape)?;
                let vals = self.get(value)?.clone();
                for (p, v) in ptrs.into_iter().zip(vals) {
                    let Some(p) = p else { continue };
                    let (m, off) = self.writable(p, "desc_store")?;
                    if !m.set(off, v) {
                        return Err(InterpError::Unsupported(
                            "stored value's type differs from the buffer's".into(),
                        ));
                    }
                }
                None
            }
            OpKind::Roll { axis, shift } => {
                let a = self.get(data.operands[0])?;
                let shape = &f.ty(data.operands[0]).shape;
                Some(roll(a, shape, *axis as usize, *shift as usize))
            }
            // Row-major order is the reshape's definition: the data does not move.
            OpKind::Reshape => Some(self.get(data.operands[0])?.clone()),
            OpKind::Trans => {
                let a = self.get(data.operands[0])?;
                let shape = &f.ty(data.operands[0]).shape;
                Some(transpose(a, shape[0] as usize, shape[1] as usize))
            }
            // Row-major order again: element `i` of the operands is element `2i` or `2i + 1`.
            OpKind::Interleave => {
                let (a, b) = (self.get(data.operands[0])?, self.get(data.operands[1])?);
                Some(a.iter().zip(b).flat_map(|(&x, &y)| [x, y]).collect())
            }
            OpKind::Deinterleave => {
                let x = self.get(data.operands[0])?;
                let even = x.iter().step_by(2).copied().collect();
                let odd = x.iter().skip(1).step_by(2).copied().collect();
                self.env[data.results[0].index()] = Some(even);
                self.env[data.results[1].index()] = Some(odd);
                None
            }
            OpKind::Gather { axis } => {
                let (src, index) = (self.get(data.operands[0])?, self.get(data.operands[1])?);
                let from = &f.ty(data.operands[0]).shape;
                let to = &f.ty(data.operands[1]).shape;
                Some(gather(src, from, index, to, *axis as usize))
            }
            OpKind::Broadcast => {
                let a = self.get(data.operands[0])?;
                let from = &f.ty(data.operands[0]).shape;
                let to = result_ty.map_or(&[][..], |t| &t.shape[..]);
                Some(broadcast(a, from, to))
            }
            OpKind::Binary(b) => {
                let (a, c) = (self.get(data.operands[0])?, self.get(data.operands[1])?);
                Some(a.iter().zip(c).map(|(&x, &y)| binary(*b, x, y)).collect())
            }
            OpKind::Cmp(p) => {
                let (a, c) = (self.get(data.operands[0])?, self.get(data.operands[1])?);
                Some(
                    a.iter()
                        .zip(c)
                        .map(|(&x, &y)| Scalar::I1(compare(*p, x, y)))
                        .collect(),
                )
            }
            OpKind::Unary(u) => Some(
                self.get(data.operands[0])?
                    .iter()
                    .map(|&x| unary(*u, x))
                    .collect(),
            ),
            OpKind::Select => {
                let c = self.get(data.operands[0])?;
                let a = self.get(data.operands[1])?;
                let b = self.get(data.operands[2])?;
                Some(
                    c.iter()
                        .zip(a.iter().zip(b))
                        .map(|(&c, (&a, &b))| if c == Scalar::I1(true) { a } else { b })
                        .collect(),
                )
            }
            OpKind::AddPtr => {
                let p = self.get(data.operands[0])?;
                let o = self.get(data.operands[1])?;
                Some(
                    p.iter()
                        .zip(o)
                        .map(|(&p, &o)| match (p, o) {
                            (Scalar::Ptr { buf, off }, Scalar::I32(d)) => Scalar::Ptr {
                                buf,
                                off: off.wrapping_add(d as i64),
                            },
                            (Scalar::Ptr { buf, off }, Scalar::I64(d)) => Scalar::Ptr {
                                buf,
                                off: off.wrapping_add(d),
                            },
                            (p, _) => p,
                        })
                        .collect(),
                )
            }
            OpKind::Math(m) => {
                let args: Vec<&Val> = data
                    .operands
                    .iter()
                    .map(|&o| self.get(o))
                    .collect::<Result<_, _>>()?;
                Some(
                    (0..args[0].len())
                        .map(|i| {
                            math(
                                *m,
                                self.f.fast_math,
                                args[0][i],
                                args.get(1).map(|a| a[i]),
                                args.get(2).map(|a| a[i]),
                            )
                        })
                        .collect(),
                )
            }
            // A promise for the GPU's compiler; the values are the operand's.
            OpKind::Hint { .. } => Some(self.get(data.operands[0])?.clone()),
            OpKind::IntToPtr => {
                let elem = result_ty.and_then(|t| t.elem.pointee()).ok_or_else(|| {
                    InterpError::Unsupported("`int_to_ptr` to a non-pointer".into())
                })?;
                Some(
                    self.get(data.operands[0])?
                        .iter()
                        .map(|&x| self.pointer_at(x, elem))
                        .collect::<Result<_, _>>()?,
                )
            }
            OpKind::Cast | OpKind::Bitcast => {
                let d = result_ty.and_then(Type::dtype).unwrap_or(DType::F32);
                let convert = if matches!(data.kind, OpKind::Cast) {
                    cast
                } else {
                    bitcast
                };
                Some(
                    self.get(data.operands[0])?
                        .iter()
                        .map(|&x| convert(x, d))
                        .collect(),
                )
            }
            OpKind::Reduce { kind, axis } => {
                let a = self.get(data.operands[0])?;
                let shape = &f.ty(data.operands[0]).shape;
                Some(reduce(*kind, a, shape, *axis as usize))
            }
            OpKind::Dot { precision } => {
                let a = self.get(data.operands[0])?;
                let b = self.get(data.operands[1])?;
                let acc = self.get(data.operands[2])?;
                let (sa, sb) = (&f.ty(data.operands[0]).shape, &f.ty(data.operands[1]).shape);
                Some(dot(
                    a,
                    b,
                    acc,
                    [sa[0] as usize, sa[1] as usize, sb[1] as usize],
                    *precision,
                ))
            }
            OpKind::Load { .. } => Some(self.load(&data.operands)?),
            OpKind::Store { .. } => {
                self.store(&data.operands)?;
                None
            }
            OpKind::AtomicRmw { op: a, .. } => {
                Some(self.atomic(&data.operands, 1, |old, v| atomic_update(*a, old, v[0]))?)
            }
            OpKind::AtomicCas { .. } => Some(self.atomic(&data.operands, 2, |old, v| {
                Some(if same_bits(old, v[0]) { v[1] } else { old })
            })?),
            OpKind::Scan {
                kind,
                axis,
                reverse,
            } => {
                let a = self.get(data.operands[0])?;
                let shape = &f.ty(data.operands[0]).shape;
                Some(scan(*kind, a, shape, *axis as usize, *reverse))
            }
            OpKind::AssociativeScan { axis, reverse } => {
                self.associative_scan(op, *axis as usize, *reverse)?;
                None
            }
            OpKind::For => {
                self.run_loop(op)?;
                None
            }
            OpKind::While => {
                self.run_while(op)?;
                None
            }
            // One program is one thread here: nothing to wait for.
            OpKind::DebugBarrier => None,
            OpKind::If => {
                let taken = match self.get(data.operands[0])?.first() {
                    Some(Scalar::I1(true)) => 0,
                    _ => 1,
                };
                let region = *data.regions.get(taken).ok_or_else(|| {
                    InterpError::Unsupported("an `if` without two branches".into())
                })?;
                let block = f.regions[region.index()].blocks[0];
                let yielded = self.run_block(block)?;
                for (&r, v) in data.results.iter().zip(yielded) {
                    self.env[r.index()] = Some(v);
                }
                None
            }
            // A loop body's end: `run_loop` reads its operands.
            OpKind::Yield | OpKind::Return => None,
        };
        if let (Some(v), Some(&r)) = (out, data.results.first()) {
            self.env[r.index()] = Some(v);
        }
        Ok(())
    }

    /// How messages name argument `buf`: its parameter, or for a buffer past the parameters
    /// (reached through an address) its address.
    fn buffer_name(&self, buf: u32) -> String {
        match self.f.param_names.get(buf as usize) {
            Some(name) => name.clone(),
            None => match &self.args[buf as usize] {
                InterpArg::Ref(r) => format!("the buffer at {:#x}", r.address()),
                InterpArg::Mut(m) => format!("the buffer at {:#x}", m.address()),
                _ => format!("argument {buf}"),
            },
        }
    }

    /// The pointer to `elem`s that address `x` (an `i64` or `u64`, a byte address) is: an
    /// element of some buffer of the launch (a parameter's, or one past them), whose element
    /// type must be `elem`. The end of a buffer is taken too (a pointer one past its last
    /// element), where no buffer begins there.
    fn pointer_at(&self, x: Scalar, elem: DType) -> Result<Scalar, InterpError> {
        let address = match x {
            Scalar::I64(a) => a as u64,
            Scalar::Int(DType::U64, a) => a,
            _ => {
                return Err(InterpError::Unsupported(
                    "`int_to_ptr` of a non-address".into(),
                ))
            }
        };
        let bad = |why: String| InterpError::BadAddress {
            kernel: self.f.name.clone(),
            address,
            why,
            program: self.pid,
        };
        let spans = self.args.iter().enumerate().filter_map(|(i, a)| match a {
            InterpArg::Ref(r) => Some((i, r.address(), r.len(), r.dtype())),
            InterpArg::Mut(m) => Some((i, m.address(), m.len(), m.dtype())),
            _ => None,
        });
        let mut end_of = None;
        for (i, base, len, dtype) in spans {
            let size = dtype.size_bytes() as u64;
            let bytes = (len as u64).saturating_mul(size);
            let Some(at) = address.checked_sub(base) else {
                continue;
            };
            if at < bytes {
                if dtype != elem {
                    return Err(bad(format!(
                        "is in a buffer of `{dtype}` and is read as a pointer to `{elem}`"
                    )));
                }
                if at % size != 0 {
                    return Err(bad(format!("is not at an element of its `{dtype}` buffer")));
                }
                return Ok(Scalar::Ptr {
                    buf: i as u32,
                    off: (at / size) as i64,
                });
            }
            if at == bytes && dtype == elem {
                end_of = Some(Scalar::Ptr {
                    buf: i as u32,
                    off: len as i64,
                });
            }
        }
        end_of.ok_or_else(|| {
            bad("is in no buffer of this launch (a buffer reached through an address is passed in a `PointerTable`)".into())
        })
    }

    fn oob(&self, buf: u32, index: i64, len: usize) -> InterpError {
        InterpError::OutOfBounds {
            kernel: self.f.name.clone(),
            param: self.buffer_name(buf),
            index,
            len,
            program: self.pid,
        }
    }

    /// The element pointers of a descriptor access to a tile of `shape` (row-major), from its
    /// operands `ptr, dim…, stride…, coord…`: `None` where some coordinate of the element lies
    /// outside `0 .. dim` (an element the access leaves alone).
    fn desc_pointers(
        &self,
        operands: &[ValueId],
        shape: &[u32],
    ) -> Result<Vec<Option<Scalar>>, InterpError> {
        let rank = shape.len();
        let int = |v: ValueId| -> Result<i64, InterpError> {
            match self.get(v)?.first() {
                Some(Scalar::I32(x)) => Ok(i64::from(*x)),
                Some(Scalar::I64(x)) => Ok(*x),
                _ => Err(InterpError::Unsupported(
                    "a descriptor's extent, stride or coordinate is not an integer".into(),
                )),
            }
        };
        if operands.len() != 1 + 3 * rank {
            return Err(InterpError::Unsupported(
                "a descriptor access with the wrong number of operands".into(),
            ));
        }
        let Some(&Scalar::Ptr { buf, off }) = self.get(operands[0])?.first() else {
            return Err(InterpError::Unsupported(
                "a descriptor access through a non-pointer".into(),
            ));
        };
        let mut dims = Vec::with_capacity(rank);
        let mut strides = Vec::with_capacity(rank);
        let mut coords = Vec::with_capacity(rank);
        for d in 0..rank {
            dims.push(int(operands[1 + d])?);
            strides.push(int(operands[1 + rank + d])?);
            coords.push(int(operands[1 + 2 * rank + d])?);
        }
        let numel: usize = shape.iter().map(|&e| e as usize).product();
        let mut out = Vec::with_capacity(numel);
        for flat in 0..numel {
            // The element's index in the tile, last dimension fastest.
            let mut rest = flat;
            let mut at = off;
            let mut inside = true;
            for d in (0..rank).rev() {
                let i = (rest % shape[d] as usize) as i64;
                rest /= shape[d] as usize;
                let c = coords[d] + i;
                inside &= 0 <= c && c < dims[d];
                at = at.wrapping_add(c.wrapping_mul(strides[d]));
            }
            out.push(inside.then_some(Scalar::Ptr { buf, off: at }));
        }
        Ok(out)
    }

    /// The element `p` points at: an error outside its buffer, as an unmasked `load` gives.
    fn read(&self, p: Scalar) -> Result<Scalar, InterpError> {
        let Scalar::Ptr { buf, off } = p else {
            return Err(InterpError::Unsupported("load from a non-pointer".into()));
        };
        let (len, v) = match &self.args[buf as usize] {
            InterpArg::Ref(r) => (
                r.len(),
                (off >= 0 && (off as u64) < r.len() as u64).then(|| r.get(off as usize)),
            ),
            InterpArg::Mut(m) => (
                m.len(),
                (off >= 0 && (off as u64) < m.len() as u64).then(|| m.get(off as usize)),
            ),
            _ => {
                return Err(InterpError::Unsupported(
                    "pointer into a scalar argument".into(),
                ))
            }
        };
        v.ok_or_else(|| self.oob(buf, off, len))
    }

    fn load(&self, operands: &[ValueId]) -> Result<Val, InterpError> {
        let ptrs = self.get(operands[0])?;
        let masked = operands.len() == 3;
        let mask = if masked {
            Some(self.get(operands[1])?)
        } else {
            None
        };
        let other = if masked {
            Some(self.get(operands[2])?)
        } else {
            None
        };
        let mut out = Vec::with_capacity(ptrs.len());
        for (i, &p) in ptrs.iter().enumerate() {
            if let (Some(m), Some(o)) = (mask, other) {
                if m[i] != Scalar::I1(true) {
                    out.push(o[i]);
                    continue;
                }
            }
            out.push(self.read(p)?);
        }
        Ok(out)
    }

    fn store(&mut self, operands: &[ValueId]) -> Result<(), InterpError> {
        let ptrs = self.get(operands[0])?.clone();
        let vals = self.get(operands[1])?.clone();
        let mask = if operands.len() == 3 {
            Some(self.get(operands[2])?.clone())
        } else {
            None
        };
        for (i, (&p, &v)) in ptrs.iter().zip(&vals).enumerate() {
            if mask.as_ref().is_some_and(|m| m[i] != Scalar::I1(true)) {
                continue;
            }
            let (m, off) = self.writable(p, "store")?;
            if !m.set(off, v) {
                return Err(InterpError::Unsupported(
                    "stored value's type differs from the buffer's".into(),
                ));
            }
        }
        Ok(())
    }

    /// An atomic: `operands` are the pointers, `values` operands for `update`, and an optional
    /// mask. Elements are updated one after another in row-major order (one legal outcome of the
    /// GPU's); each result element is the value found, 0 where masked off.
    fn atomic(
        &mut self,
        operands: &[ValueId],
        values: usize,
        update: impl Fn(Scalar, &[Scalar]) -> Option<Scalar>,
    ) -> Result<Val, InterpError> {
        let ptrs = self.get(operands[0])?.clone();
        let args: Vec<Val> = operands[1..=values]
            .iter()
            .map(|&v| self.get(v).cloned())
            .collect::<Result<_, _>>()?;
        let mask = match operands.get(values + 1) {
            Some(&m) => Some(self.get(m)?.clone()),
            None => None,
        };
        let mut out = Vec::with_capacity(ptrs.len());
        for (i, &p) in ptrs.iter().enumerate() {
            let here: Vec<Scalar> = args.iter().map(|a| a[i]).collect();
            if mask.as_ref().is_some_and(|m| m[i] != Scalar::I1(true)) {
                out.push(zero_like(here[0]));
                continue;
            }
            let (m, off) = self.writable(p, "atomic")?;
            let old = m.get(off);
            let new = update(old, &here).ok_or_else(|| {
                InterpError::Unsupported("an atomic on a type it does not take".into())
            })?;
            if !m.set(off, new) {
                return Err(InterpError::Unsupported(
                    "an atomic's value type differs from the buffer's".into(),
                ));
            }
            out.push(old);
        }
        Ok(out)
    }

    /// The writable buffer `p` points into and the element's index: an error for a read-only
    /// buffer or an index outside it (`what` names the access).
    fn writable(
        &mut self,
        p: Scalar,
        what: &str,
    ) -> Result<(&mut HostMut<'a>, usize), InterpError> {
        let Scalar::Ptr { buf, off } = p else {
            return Err(InterpError::Unsupported(format!("{what} to a non-pointer")));
        };
        let err = self.oob(buf, off, 0);
        let param = self.buffer_name(buf);
        match &mut self.args[buf as usize] {
            InterpArg::Mut(m) => {
                let len = m.len();
                if off < 0 || off as u64 >= len as u64 {
                    return Err(match err {
                        InterpError::OutOfBounds {
                            kernel,
                            param,
                            index,
                            program,
                            ..
                        } => InterpError::OutOfBounds {
                            kernel,
                            param,
                            index,
                            len,
                            program,
                        },
                        e => e,
                    });
                }
                Ok((m, off as usize))
            }
            InterpArg::Ref(_) => Err(InterpError::ReadOnly { param }),
            _ => Err(InterpError::Unsupported(
                "pointer into a scalar argument".into(),
            )),
        }
    }
}

/// The zero of `s`'s type (what a masked-off atomic yields).
fn zero_like(s: Scalar) -> Scalar {
    match s {
        Scalar::I1(_) => Scalar::I1(false),
        Scalar::I32(_) => Scalar::I32(0),
        Scalar::I64(_) => Scalar::I64(0),
        Scalar::F32(_) => Scalar::F32(0.0),
        Scalar::F16(_) => Scalar::F16(half::f16::ZERO),
        Scalar::BF16(_) => Scalar::BF16(half::bf16::ZERO),
        Scalar::F64(_) => Scalar::F64(0.0),
        Scalar::F8(d, _) => Scalar::F8(d, 0),
        Scalar::Int(d, _) => Scalar::Int(d, 0),
        Scalar::Ptr { buf, .. } => Scalar::Ptr { buf, off: 0 },
    }
}

/// `op(old, v)` as an atomic computes it; `None` for a type the op does not take.
fn atomic_update(op: AtomicOp, old: Scalar, v: Scalar) -> Option<Scalar> {
    use Scalar::*;
    if let (Some((d, _)), Some((e, _))) = (int_parts(old), int_parts(v)) {
        let b = match op {
            AtomicOp::Xchg => return Some(v),
            AtomicOp::Add => BinOp::Add,
            AtomicOp::Max => BinOp::Max,
            AtomicOp::Min => BinOp::Min,
            AtomicOp::And => BinOp::And,
            AtomicOp::Or => BinOp::Or,
            AtomicOp::Xor => BinOp::Xor,
        };
        return (d == e && op.takes(d)).then(|| binary(b, old, v));
    }
    Some(match (op, old, v) {
        (AtomicOp::Xchg, _, _) => v,
        (AtomicOp::Add, F32(a), F32(b)) => F32(a + b),
        (AtomicOp::Add, F64(a), F64(b)) => F64(a + b),
        (AtomicOp::Max, F32(a), F32(b)) => F32(atomic_float_max(a, b)),
        (AtomicOp::Min, F32(a), F32(b)) => F32(atomic_float_min(a, b)),
        (AtomicOp::Add, F16(a), F16(b)) => F16(half::f16::from_f32(a.to_f32() + b.to_f32())),
        (AtomicOp::Add, BF16(a), BF16(b)) => BF16(half::bf16::from_f32(a.to_f32() + b.to_f32())),
        (AtomicOp::Max | AtomicOp::Min, F16(a), F16(b)) => F16(half::f16::from_bits(half_pick(
            op,
            a.to_bits(),
            b.to_bits(),
        ))),
        (AtomicOp::Max | AtomicOp::Min, BF16(a), BF16(b)) => BF16(half::bf16::from_bits(
            half_pick(op, a.to_bits(), b.to_bits()),
        )),
        _ => return None,
    })
}

/// A 16-bit float atomic max or min on bit patterns ([`atomic_half_max`], [`atomic_half_min`]).
fn half_pick(op: AtomicOp, old: u16, v: u16) -> u16 {
    if op == AtomicOp::Max {
        atomic_half_max(old, v)
    } else {
        atomic_half_min(old, v)
    }
}

/// Whether `a` and `b` have the same bits (what `atomic_cas` compares).
fn same_bits(a: Scalar, b: Scalar) -> bool {
    if let (Some(x), Some(y)) = (int_parts(a), int_parts(b)) {
        return x == y;
    }
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => x.to_bits() == y.to_bits(),
        (Scalar::F16(x), Scalar::F16(y)) => x.to_bits() == y.to_bits(),
        (Scalar::BF16(x), Scalar::BF16(y)) => x.to_bits() == y.to_bits(),
        (Scalar::F64(x), Scalar::F64(y)) => x.to_bits() == y.to_bits(),
        (Scalar::F8(d, x), Scalar::F8(e, y)) => d == e && x == y,
        _ => false,
    }
}

/// Folds a binary op of two constants of type `d` with the interpreter's semantics (what the
/// compiler's `canonicalize` uses, so folding can never disagree with execution).
pub fn fold_binary(op: BinOp, a: ConstValue, b: ConstValue, d: DType) -> Option<ConstValue> {
    if d == DType::I1 {
        return None;
    }
    to_const(binary(op, const_scalar(a, d), const_scalar(b, d)))
}

/// Folds a comparison of two constants of type `d`.
pub fn fold_cmp(p: CmpPred, a: ConstValue, b: ConstValue, d: DType) -> bool {
    compare(p, const_scalar(a, d), const_scalar(b, d))
}

fn to_const(s: Scalar) -> Option<ConstValue> {
    match s {
        Scalar::I1(b) => Some(ConstValue::Int(b as i64)),
        Scalar::I32(i) => Some(ConstValue::Int(i as i64)),
        Scalar::I64(i) => Some(ConstValue::Int(i)),
        Scalar::F32(x) => Some(ConstValue::Float(x as f64)),
        Scalar::F16(x) => Some(ConstValue::Float(x.to_f64())),
        Scalar::BF16(x) => Some(ConstValue::Float(x.to_f64())),
        Scalar::F64(x) => Some(ConstValue::Float(x)),
        Scalar::F8(d, b) => Some(ConstValue::Float(f64::from(f8_value(d, b)))),
        Scalar::Int(_, b) => Some(ConstValue::Int(b as i64)),
        Scalar::Ptr { .. } => None,
    }
}

fn const_scalar(c: ConstValue, d: DType) -> Scalar {
    match (c, d) {
        (ConstValue::Int(i), DType::I1) => Scalar::I1(i != 0),
        (ConstValue::Int(i), DType::F32) => Scalar::F32(i as f32),
        (ConstValue::Float(x), DType::F32) => Scalar::F32(x as f32),
        (ConstValue::Float(x), DType::I1) => Scalar::I1(x != 0.0),
        (ConstValue::Int(i), DType::F16) => Scalar::F16(half::f16::from_f64(i as f64)),
        (ConstValue::Float(x), DType::F16) => Scalar::F16(half::f16::from_f64(x)),
        (ConstValue::Int(i), DType::BF16) => Scalar::BF16(half::bf16::from_f64(i as f64)),
        (ConstValue::Float(x), DType::BF16) => Scalar::BF16(half::bf16::from_f64(x)),
        (ConstValue::Int(i), DType::F64) => Scalar::F64(i as f64),
        (ConstValue::Float(x), DType::F64) => Scalar::F64(x),
        (ConstValue::Int(i), d) if d.is_f8() => f8_scalar(d, i as f64 as f32),
        (ConstValue::Float(x), d) if d.is_f8() => f8_scalar(d, x as f32),
        // A `u64` above `i64::MAX` arrives as its bits.
        (ConstValue::Int(i), d) => int_scalar(d, i as u64),
        (ConstValue::Float(x), d) => float_to_int(x, d),
    }
}

/// IEEE 754-2019 `maximumNumber`, as PTX's `max.f32`/`max.f64`: a NaN operand yields the other
/// operand, and `+0` is above `-0` (Rust's `f64::max` may return either zero). `f32` operands
/// go through it exactly.
fn float_max(x: f64, y: f64) -> f64 {
    if x == 0.0 && y == 0.0 {
        return if x.is_sign_negative() && y.is_sign_negative() {
            -0.0
        } else {
            0.0
        };
    }
    x.max(y)
}

/// IEEE 754-2019 `minimumNumber`, as PTX's `min.f32`/`min.f64`: `-0` is below `+0`.
fn float_min(x: f64, y: f64) -> f64 {
    if x == 0.0 && y == 0.0 {
        return if x.is_sign_positive() && y.is_sign_positive() {
            0.0
        } else {
            -0.0
        };
    }
    x.min(y)
}

/// An integer scalar (not `i1`) as its type and its canonical bits (see [`Scalar::Int`]).
fn int_parts(s: Scalar) -> Option<(DType, u64)> {
    match s {
        Scalar::I32(x) => Some((DType::I32, x as i64 as u64)),
        Scalar::I64(x) => Some((DType::I64, x as u64)),
        Scalar::Int(d, b) => Some((d, b)),
        _ => None,
    }
}

/// `bits` truncated to `d`'s width and extended back to 64 bits as `d`'s signedness says.
fn canonical(d: DType, bits: u64) -> u64 {
    let w = d.int_bits().unwrap_or(64);
    let low = low_bits(w, bits);
    if w < 64 && !d.is_unsigned() && low >> (w - 1) & 1 == 1 {
        low | !low_bits(w, u64::MAX)
    } else {
        low
    }
}

/// The integer of type `d` whose low bits are `bits`'s (wrapping, as a cast between integers).
fn int_scalar(d: DType, bits: u64) -> Scalar {
    let b = canonical(d, bits);
    match d {
        DType::I1 => Scalar::I1(b & 1 == 1),
        DType::I32 => Scalar::I32(b as i32),
        DType::I64 => Scalar::I64(b as i64),
        _ => Scalar::Int(d, b),
    }
}

/// The value of canonical bits of `d`, exactly.
fn int_value(d: DType, bits: u64) -> i128 {
    if d.is_unsigned() {
        i128::from(bits)
    } else {
        i128::from(bits as i64)
    }
}

/// A float converted to the integer type `d` as `cast` defines it: truncated toward zero,
/// saturated at the type's range, NaN to 0 (Rust's `as`, PTX's `cvt.rzi.sat`).
fn float_to_int(x: f64, d: DType) -> Scalar {
    if x.is_nan() {
        return int_scalar(d, 0);
    }
    let Some(r) = d.int_range() else {
        return int_scalar(d, 0);
    };
    let t = x.trunc();
    let v = if t <= *r.start() as f64 {
        *r.start()
    } else if t >= *r.end() as f64 {
        *r.end()
    } else {
        t as i128
    };
    int_scalar(d, v as u64)
}

/// `op` on two integers of type `d` (canonical bits), with the semantics `BinOp` documents.
fn int_binary(op: BinOp, d: DType, x: u64, y: u64) -> u64 {
    let w = d.int_bits().unwrap_or(64);
    let (vx, vy) = (int_value(d, x), int_value(d, y));
    // A shift amount is read as unsigned: a negative one is past the width.
    let amount = low_bits(w, y);
    let r = match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        // Division by zero gives 0; `MIN / -1` wraps to `MIN`.
        BinOp::Div if vy == 0 => 0,
        BinOp::Rem if vy == 0 => 0,
        BinOp::Div => (vx / vy) as u64,
        BinOp::Rem => (vx % vy) as u64,
        BinOp::Min => vx.min(vy) as u64,
        BinOp::Max => vx.max(vy) as u64,
        BinOp::And => x & y,
        BinOp::Or => x | y,
        BinOp::Xor => x ^ y,
        BinOp::UMulHi => ((u128::from(low_bits(w, x)) * u128::from(low_bits(w, y))) >> w) as u64,
        BinOp::Shl if amount >= u64::from(w) => 0,
        BinOp::Shl => x << amount,
        BinOp::Shr if amount >= u64::from(w) => {
            if vx < 0 {
                u64::MAX
            } else {
                0
            }
        }
        // Canonical bits are extended by the type's signedness, so one 64-bit shift of the
        // right kind is the narrow type's shift.
        BinOp::Shr if d.is_unsigned() => x >> amount,
        BinOp::Shr => ((x as i64) >> amount) as u64,
    };
    canonical(d, r)
}

/// The low `w` bits of `bits` as an unsigned number.
fn low_bits(w: u32, bits: u64) -> u64 {
    if w >= 64 {
        bits
    } else {
        bits & ((1u64 << w) - 1)
    }
}

fn binary(op: BinOp, a: Scalar, b: Scalar) -> Scalar {
    use Scalar::*;
    if let (Some((d, x)), Some((e, y))) = (int_parts(a), int_parts(b)) {
        // Mixed operands never pass the verifier.
        return if d == e {
            int_scalar(d, int_binary(op, d, x, y))
        } else {
            a
        };
    }
    match (a, b) {
        (F32(x), F32(y)) => F32(match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            BinOp::Rem => x % y,
            BinOp::Min => float_min(x.into(), y.into()) as f32,
            BinOp::Max => float_max(x.into(), y.into()) as f32,
            // The verifier rejects bitwise ops and shifts on floats.
            BinOp::And | BinOp::Or | BinOp::Xor | BinOp::UMulHi | BinOp::Shl | BinOp::Shr => {
                f32::NAN
            }
        }),
        (F64(x), F64(y)) => F64(match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            BinOp::Rem => x % y,
            BinOp::Min => float_min(x, y),
            BinOp::Max => float_max(x, y),
            BinOp::And | BinOp::Or | BinOp::Xor | BinOp::UMulHi | BinOp::Shl | BinOp::Shr => {
                f64::NAN
            }
        }),
        (I1(x), I1(y)) => I1(match op {
            BinOp::And | BinOp::Min | BinOp::Mul => x & y,
            BinOp::Or | BinOp::Max => x | y,
            BinOp::Xor | BinOp::Add | BinOp::Sub => x ^ y,
            BinOp::Div | BinOp::Rem | BinOp::UMulHi | BinOp::Shl | BinOp::Shr => false,
        }),
        // Mixed operands never pass the verifier.
        (a, _) => a,
    }
}

fn compare(p: CmpPred, a: Scalar, b: Scalar) -> bool {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match (a, b, int_parts(a), int_parts(b)) {
        (_, _, Some((d, x)), Some((_, y))) => Some(int_value(d, x).cmp(&int_value(d, y))),
        (Scalar::I1(x), Scalar::I1(y), ..) => Some(x.cmp(&y)),
        (Scalar::F32(x), Scalar::F32(y), ..) => x.partial_cmp(&y),
        (Scalar::F16(x), Scalar::F16(y), ..) => x.partial_cmp(&y),
        (Scalar::BF16(x), Scalar::BF16(y), ..) => x.partial_cmp(&y),
        (Scalar::F64(x), Scalar::F64(y), ..) => x.partial_cmp(&y),
        _ => None,
    };
    match (p, ord) {
        // Unordered (NaN): every comparison false except `!=`, as IEEE and PTX's `setp.neu`.
        (CmpPred::Ne, None) => true,
        (_, None) => false,
        (CmpPred::Lt, Some(o)) => o == Ordering::Less,
        (CmpPred::Le, Some(o)) => o != Ordering::Greater,
        (CmpPred::Gt, Some(o)) => o == Ordering::Greater,
        (CmpPred::Ge, Some(o)) => o != Ordering::Less,
        (CmpPred::Eq, Some(o)) => o == Ordering::Equal,
        (CmpPred::Ne, Some(o)) => o != Ordering::Equal,
    }
}

fn unary(op: UnOp, a: Scalar) -> Scalar {
    use Scalar::*;
    if let Some((d, x)) = int_parts(a) {
        return int_scalar(
            d,
            match op {
                UnOp::Neg => x.wrapping_neg(),
                UnOp::Not => !x,
            },
        );
    }
    match (op, a) {
        (UnOp::Neg, F32(x)) => F32(-x),
        (UnOp::Neg, F16(x)) => F16(-x),
        (UnOp::Neg, BF16(x)) => BF16(-x),
        (UnOp::Neg, F64(x)) => F64(-x),
        (UnOp::Not, I1(x)) => I1(!x),
        // Rejected by the verifier (integers are handled above).
        (_, a @ (I32(_) | I64(_) | Int(..)))
        | (UnOp::Neg, a @ (I1(_) | F8(..) | Ptr { .. }))
        | (UnOp::Not, a @ (F32(_) | F16(_) | BF16(_) | F64(_) | F8(..) | Ptr { .. })) => a,
    }
}

fn as_f64(x: Scalar) -> f64 {
    match x {
        Scalar::I1(b) => b as u8 as f64,
        Scalar::I32(i) => i as f64,
        Scalar::I64(i) => i as f64,
        Scalar::Int(d, b) => int_value(d, b) as f64,
        Scalar::F32(v) => v as f64,
        Scalar::F16(v) => v.to_f64(),
        Scalar::BF16(v) => v.to_f64(),
        Scalar::F64(v) => v,
        Scalar::F8(d, b) => f64::from(f8_value(d, b)),
        Scalar::Ptr { off, .. } => off as f64,
    }
}

/// Element-wise conversion, as `cast` defines it.
fn cast(x: Scalar, to: DType) -> Scalar {
    use Scalar::*;
    if let Some((d, b)) = int_parts(x) {
        return if to == DType::I1 {
            I1(b != 0)
        } else if to.is_int() {
            int_scalar(to, b)
        } else if to == DType::F64 {
            // Rounded to nearest once, from the exact value (as `sitofp` / `uitofp`).
            F64(int_value(d, b) as f64)
        } else {
            // Rounded to nearest once to f32, from the exact value (as `sitofp` / `uitofp`).
            from_f32(int_value(d, b) as f32, to)
        };
    }
    match (x, to) {
        (I1(b), DType::I1) => I1(b),
        (I1(b), d) => const_scalar(ConstValue::Int(b as i64), d),
        (v, DType::I1) => I1(as_f64(v) != 0.0 || as_f64(v).is_nan()),
        (F32(v), d) => from_f32(v, d),
        (F16(v), d) => from_f32(v.to_f32(), d),
        (BF16(v), d) => from_f32(v.to_f32(), d),
        (F8(e, b), d) => from_f32(f8_value(e, b), d),
        // `f64` converts to integers and `f32` directly, to narrower floats through `f32`.
        (F64(v), DType::F64) => F64(v),
        (F64(v), d) if d.is_int() => float_to_int(v, d),
        (F64(v), d) => from_f32(v as f32, d),
        // Integers are handled above.
        (p @ (Ptr { .. } | I32(_) | I64(_) | Int(..)), _) => p,
    }
}

fn from_f32(v: f32, to: DType) -> Scalar {
    match to {
        DType::F32 => Scalar::F32(v),
        DType::F16 => Scalar::F16(half::f16::from_f32(v)),
        DType::BF16 => Scalar::BF16(half::bf16::from_f32(v)),
        DType::F64 => Scalar::F64(f64::from(v)),
        d if d.is_f8() => f8_scalar(d, v),
        DType::I1 => Scalar::I1(v != 0.0 || v.is_nan()),
        d => float_to_int(f64::from(v), d),
    }
}

/// The bits of a number (its width's low bits; a pointer's offset).
fn raw_bits(x: Scalar) -> u64 {
    match x {
        Scalar::F32(v) => u64::from(v.to_bits()),
        Scalar::F16(v) => u64::from(v.to_bits()),
        Scalar::BF16(v) => u64::from(v.to_bits()),
        Scalar::F64(v) => v.to_bits(),
        Scalar::F8(_, b) => u64::from(b),
        Scalar::I1(b) => u64::from(b),
        Scalar::I32(_) | Scalar::I64(_) | Scalar::Int(..) => {
            let (d, b) = int_parts(x).unwrap_or((DType::I64, 0));
            low_bits(d.int_bits().unwrap_or(64), b)
        }
        Scalar::Ptr { off, .. } => off as u64,
    }
}

/// Element-wise reinterpretation of the bits, as `bitcast` defines it (the verifier holds the
/// widths equal).
fn bitcast(x: Scalar, to: DType) -> Scalar {
    let b = raw_bits(x);
    match to {
        DType::F32 => Scalar::F32(f32::from_bits(b as u32)),
        DType::F16 => Scalar::F16(half::f16::from_bits(b as u16)),
        DType::BF16 => Scalar::BF16(half::bf16::from_bits(b as u16)),
        DType::F64 => Scalar::F64(f64::from_bits(b)),
        d if d.is_f8() => Scalar::F8(d, b as u8),
        d => int_scalar(d, b),
    }
}

/// The value of an 8-bit float's bits (exact).
fn f8_value(d: DType, bits: u8) -> f32 {
    if d == DType::F8E5M2 {
        f8e5m2::from_bits(bits).to_f32()
    } else {
        f8e4m3::from_bits(bits).to_f32()
    }
}

/// `v` rounded to the 8-bit float type `d` ([`crate::float8`]).
fn f8_scalar(d: DType, v: f32) -> Scalar {
    let bits = if d == DType::F8E5M2 {
        f8e5m2::from_f32(v).to_bits()
    } else {
        f8e4m3::from_f32(v).to_bits()
    };
    Scalar::F8(d, bits)
}

/// The float math functions, computed in f32 with the definitions `MathFn` documents (`fast`:
/// those of a `math = fast` kernel, with the GPU's argument rounding and flushing; the
/// hardware's approximations themselves are modelled by the exact results).
fn math(m: MathFn, fast: bool, a: Scalar, b: Option<Scalar>, c: Option<Scalar>) -> Scalar {
    let f = |s: Option<Scalar>| match s {
        Some(Scalar::F32(v)) => v,
        _ => f32::NAN,
    };
    if let (MathFn::Abs, Some((d, x))) = (m, int_parts(a)) {
        // Wrapping: `abs(MIN)` is `MIN`; an unsigned integer is its own absolute value.
        let neg = !d.is_unsigned() && (x as i64) < 0;
        return int_scalar(d, if neg { x.wrapping_neg() } else { x });
    }
    if let Scalar::F64(x) = a {
        let g = |s: Option<Scalar>| match s {
            Some(Scalar::F64(v)) => v,
            _ => f64::NAN,
        };
        // The verifier lets only these take `f64`.
        return Scalar::F64(match m {
            MathFn::Sqrt => x.sqrt(),
            MathFn::Abs => x.abs(),
            MathFn::Floor => x.floor(),
            MathFn::Ceil => x.ceil(),
            MathFn::Fma => x.mul_add(g(b), g(c)),
            _ => f64::NAN,
        });
    }
    let x = f(Some(a));
    Scalar::F32(match m {
        // Subnormal results are 0, as on the GPU (`ex2.approx.ftz`).
        MathFn::Exp if fast => flush_subnormal((x * std::f32::consts::LOG2_E).exp2()),
        MathFn::Exp => flush_subnormal(x.exp()),
        MathFn::Exp2 => flush_subnormal(x.exp2()),
        MathFn::Log => x.ln(),
        MathFn::Log2 => x.log2(),
        // `sqrt.approx.ftz` flushes a subnormal argument (and no result is subnormal).
        MathFn::Sqrt if fast => flush_subnormal(x).sqrt(),
        MathFn::Sqrt => x.sqrt(),
        MathFn::Rsqrt => 1.0 / x.sqrt(),
        MathFn::Erf => libm::erff(x),
        MathFn::Sin => libm::sinf(x),
        MathFn::Cos => libm::cosf(x),
        MathFn::Tanh => x.tanh(),
        MathFn::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        MathFn::Gelu => gelu(x),
        MathFn::Abs => x.abs(),
        MathFn::Floor => x.floor(),
        MathFn::Ceil => x.ceil(),
        MathFn::Pow => (f(b) * x.log2()).exp2(),
        MathFn::Fma => x.mul_add(f(b), f(c)),
    })
}

/// `y`, or 0 where `y` is subnormal (`exp` and `exp2` flush those on the GPU, and a fast `sqrt`
/// its argument).
fn flush_subnormal(y: f32) -> f32 {
    if y.is_subnormal() {
        0.0
    } else {
        y
    }
}

/// The exact GELU `x · Φ(x)`, as `0.5 · x · erfc(−x / √2)` in `f64` (no cancellation where
/// `Φ(x)` is small), rounded once; `gelu(−∞) = 0` (the limit, where the product is `−∞ · 0`).
fn gelu(x: f32) -> f32 {
    if x == f32::NEG_INFINITY {
        return 0.0;
    }
    let x = f64::from(x);
    (0.5 * x * libm::erfc(-x / std::f64::consts::SQRT_2)) as f32
}

/// `acc + a · b` for row-major `a` (`m × k`), `b` (`k × n`), `acc` (`m × n`, f32): per element,
/// one f32 fused multiply-add per `k` in order (the IR's definition of `dot`).
/// `dot` of `a` (`m × k`) and `b` (`k × n`) added to `acc`: the ordered `f32` fma chain, with
/// `f32` operands rounded to tf32 first under [`Precision::Tf32`] (16-bit operands are exact in
/// tf32 already).
fn dot(a: &[Scalar], b: &[Scalar], acc: &[Scalar], [m, k, n]: [usize; 3], p: Precision) -> Val {
    let f = |x: Scalar| match (p, x) {
        (Precision::Tf32, Scalar::F32(v)) => round_tf32(v),
        _ => as_f64(x) as f32,
    };
    let mut out = Vec::with_capacity(m * n);
    if let Some(Scalar::I32(_)) = acc.first() {
        // `i8` tiles: exact products summed in `i32`, wrapping (as `mma.sync`'s `.s32`).
        let int = |x: Scalar| int_parts(x).map_or(0, |(d, b)| int_value(d, b) as i32);
        for i in 0..m {
            for j in 0..n {
                let mut s = int(acc[i * n + j]);
                for kk in 0..k {
                    s = s.wrapping_add(int(a[i * k + kk]).wrapping_mul(int(b[kk * n + j])));
                }
                out.push(Scalar::I32(s));
            }
        }
        return out;
    }
    for i in 0..m {
        for j in 0..n {
            let mut s = as_f64(acc[i * n + j]) as f32;
            for kk in 0..k {
                s = f(a[i * k + kk]).mul_add(f(b[kk * n + j]), s);
            }
            out.push(Scalar::F32(s));
        }
    }
    out
}

/// Repeats `a` (row-major, shape `from`) along its extent-1 dimensions to shape `to` (same rank).
fn broadcast(a: &[Scalar], from: &[u32], to: &[u32]) -> Val {
    let n: usize = to.iter().map(|&d| d as usize).product();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0u32; to.len()];
    for _ in 0..n {
        // The source index: 0 along broadcast dimensions, the same index elsewhere.
        let src = idx.iter().zip(from).fold(0usize, |acc, (&i, &e)| {
            acc * e as usize + if e == 1 { 0 } else { i as usize }
        });
        out.push(a[src]);
        for d in (0..to.len()).rev() {
            idx[d] += 1;
            if idx[d] < to[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// The transpose of `a` (row-major, `rows × cols`): element `[j][i]` of the `cols × rows`
/// result is `a[i][j]`.
fn transpose(a: &[Scalar], rows: usize, cols: usize) -> Val {
    let mut out = Vec::with_capacity(a.len());
    for j in 0..cols {
        for i in 0..rows {
            out.push(a[i * cols + j]);
        }
    }
    out
}

/// `a` (row-major, `shape`) rotated by `shift` positions toward higher indices along `axis`.
fn roll(a: &[Scalar], shape: &[u32], axis: usize, shift: usize) -> Val {
    let n = shape[axis] as usize;
    // Elements along `axis` are `inner` apart; `outer` blocks of `n · inner` elements each.
    let inner: usize = shape[axis + 1..].iter().map(|&d| d as usize).product();
    let mut out = a.to_vec();
    for (block, chunk) in a.chunks(n * inner).enumerate() {
        for j in 0..n {
            let src = (j + n - shift % n) % n;
            for i in 0..inner {
                out[block * n * inner + j * inner + i] = chunk[src * inner + i];
            }
        }
    }
    out
}

/// `gather {axis}`: for each element of `index` (row-major, shape `to`), the element of `src`
/// (row-major, shape `from`) at the same coordinates but along `axis`, where it is the index
/// modulo the extent (its low bits; the extents are powers of two).
fn gather(src: &[Scalar], from: &[u32], index: &[Scalar], to: &[u32], axis: usize) -> Val {
    let n = from[axis] as usize;
    // Elements along `axis` are `inner` apart in both tensors.
    let inner: usize = to[axis + 1..].iter().map(|&d| d as usize).product();
    let m = to[axis] as usize;
    index
        .iter()
        .enumerate()
        .map(|(i, x)| {
            // An `i32` (verifier rule 32), exact as an `f64`.
            let at = (as_f64(*x) as i64 & (n as i64 - 1)) as usize;
            let (outer, rest) = (i / (m * inner), i % inner);
            src[(outer * n + at) * inner + rest]
        })
        .collect()
}

/// Reduces `a` (row-major, `shape`) along `axis`.
/// The running combination of `a` (row-major, `shape`) along `axis`, first to last (last to first
/// when `reverse`), each step one `binary` op in that order.
fn scan(kind: ScanKind, a: &[Scalar], shape: &[u32], axis: usize, reverse: bool) -> Val {
    let n = shape[axis] as usize;
    let inner: usize = shape[axis + 1..].iter().map(|&d| d as usize).product();
    let outer: usize = shape[..axis].iter().map(|&d| d as usize).product();
    let op = match kind {
        ScanKind::Sum => BinOp::Add,
        ScanKind::Prod => BinOp::Mul,
        ScanKind::Max => BinOp::Max,
        ScanKind::Min => BinOp::Min,
    };
    let mut out = a.to_vec();
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| (o * n + k) * inner + i;
            let order: Vec<usize> = if reverse {
                (0..n).rev().collect()
            } else {
                (0..n).collect()
            };
            for w in order.windows(2) {
                out[at(w[1])] = binary(op, out[at(w[0])], a[at(w[1])]);
            }
        }
    }
    out
}

fn reduce(kind: ReduceKind, a: &[Scalar], shape: &[u32], axis: usize) -> Val {
    let n = shape[axis] as usize;
    let inner: usize = shape[axis + 1..].iter().map(|&d| d as usize).product();
    let outer: usize = shape[..axis].iter().map(|&d| d as usize).product();
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let mut acc = a[o * n * inner + i];
            for k in 1..n {
                let x = a[(o * n + k) * inner + i];
                acc = match kind {
                    ReduceKind::Sum => binary(BinOp::Add, acc, x),
                    ReduceKind::Max => binary(BinOp::Max, acc, x),
                    ReduceKind::Min => binary(BinOp::Min, acc, x),
                };
            }
            out.push(acc);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{binary, Scalar};
    use crate::ir::BinOp;

    fn bits(op: BinOp, a: f32, b: f32) -> u32 {
        match binary(op, Scalar::F32(a), Scalar::F32(b)) {
            Scalar::F32(x) => x.to_bits(),
            _ => unreachable!("a float op gives a float"),
        }
    }

    /// `min`/`max` order `-0 < +0` whatever the operands' order, as PTX's `min.f32`/`max.f32`
    /// (Rust's `f32::max` may return either zero: the GPU and the interpreter disagreed on
    /// reductions over signed zeros until this was pinned).
    #[test]
    fn min_and_max_order_signed_zeros() {
        for (a, b) in [(0.0f32, -0.0f32), (-0.0, 0.0)] {
            assert_eq!(bits(BinOp::Max, a, b), 0.0f32.to_bits());
            assert_eq!(bits(BinOp::Min, a, b), (-0.0f32).to_bits());
        }
        assert_eq!(bits(BinOp::Max, -0.0, -0.0), (-0.0f32).to_bits());
        assert_eq!(bits(BinOp::Min, 0.0, 0.0), 0.0f32.to_bits());
        assert_eq!(bits(BinOp::Max, f32::NAN, -1.0), (-1.0f32).to_bits());
        assert_eq!(bits(BinOp::Min, 2.0, f32::NAN), 2.0f32.to_bits());
    }
}
