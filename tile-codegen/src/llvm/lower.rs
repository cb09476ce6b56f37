//! Lowering of a GPU-level kernel to one LLVM function: the kernel signature and its NVVM
//! annotations, the map from IR values to per-thread LLVM scalars, the accessors through which
//! every op's lowering reads its operands, results and layouts (a failure there is a bug, see
//! [`bug`]), and the dispatch of each op to its lowering: element-wise ops, constants and
//! control flow here; memory accesses in `memory`, math functions and casts in `math`,
//! reductions in `reduce`, scans in `scan`, `roll` in `roll`, `gather` in `gather`, atomics in
//! `atomic`, shared-memory buffers, copies and layout conversions in `shared` and `smem`, `dot`
//! in `dot` (FMA), `ldmatrix` (mma.sync) and `wgmma`.
//!
//! Representation (kept for every value): a scalar IR value is one LLVM value; a tensor is the
//! list of scalars this thread owns, in the register order of its layout's linear map
//! (`layout`). Element types map to registers as `i1 → i1`, `i32 → i32`, `i64 → i64`,
//! `f16 → half`, `bf16 → bfloat`, `f32 → float`, `ptr<T> → ptr addrspace(1)`. Element-wise ops
//! work slot by slot, which is correct because the verifier makes operands of one op share one
//! type (layout included); layouts change only through `convert_layout`.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt::Display;

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::Module;
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{
    BasicMetadataValueEnum, BasicValueEnum, FastMathFlags, FloatValue, FunctionValue, IntValue,
    PhiValue, PointerValue, ValueKind,
};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};
use tile_core::float8::{f8e4m3, f8e5m2};
use tile_core::ir::{
    BinOp, BlockId, CmpPred, ConstValue, DType, Elem, Function, InDim, OpData, OpId, OpKind, Type,
    UnOp, ValueId,
};

use super::atomic::Atomic;
use super::layout::Distribution;
use super::ldmatrix::OperandRead;
use crate::analysis::axis_info::AxisInfo;
use crate::analysis::shared_alloc::Allocation;
use crate::analysis::Analyses;

/// LLVM's calling convention number for PTX kernel entry points (`ptx_kernel`).
const PTX_KERNEL_CC: u32 = 71;

/// The address space of global memory in NVPTX.
pub(super) const GLOBAL: u16 = 1;

/// Errors inside the lowering: a message, located at an op by [`lower_kernel`]. Only what a
/// verified kernel may still ask beyond the lowering's reach (a limit, an unsupported
/// combination) is an `Err`; a state the verifier rules out is a bug (see [`bug`]).
pub(super) type Result<T> = std::result::Result<T, String>;

/// Inkwell's results (building an instruction, setting an alignment): an error there is the
/// lowering misusing the builder (no insertion point, a value of the wrong kind), a [`bug`].
/// The `Result` it returns is always `Ok`; it keeps the `?` of the lowering's builder chains.
pub(super) trait OrLlvm<T> {
    /// The value, or a [`bug`] naming the LLVM error.
    fn llvm(self) -> Result<T>;
}

impl<T, E: Display> OrLlvm<T> for std::result::Result<T, E> {
    #[track_caller]
    fn llvm(self) -> Result<T> {
        match self {
            Ok(v) => Ok(v),
            Err(e) => bug(format_args!("a working LLVM builder ({e})")),
        }
    }
}

/// Stops the lowering at a state that the verifier rules out (an operand missing, a value of
/// the wrong type, a tensor without a layout) or that the lowering's own invariants exclude: a
/// bug in tile, never a property of the kernel. The one panic path of the lowering:
/// [`lower_kernel`] catches it and reports an internal error at the op being lowered, by its id
/// (`opN`, as the verifier names ops), saying "expected `expected`". The panic's location is the
/// caller's (the accessors pass theirs on), where the lowering met the state.
#[track_caller]
pub(super) fn bug(expected: impl Display) -> ! {
    panic!("expected {expected}")
}

/// The value of an `Option` or `Result` that the verifier (or the lowering itself) guarantees;
/// otherwise a [`bug`] saying what was expected.
pub(super) trait OrBug<T> {
    /// The value, or a [`bug`] naming what was expected.
    fn or_bug(self, expected: &str) -> T;
}

impl<T> OrBug<T> for Option<T> {
    #[track_caller]
    fn or_bug(self, expected: &str) -> T {
        match self {
            Some(v) => v,
            None => bug(expected),
        }
    }
}

impl<T, E: std::fmt::Debug> OrBug<T> for std::result::Result<T, E> {
    #[track_caller]
    fn or_bug(self, expected: &str) -> T {
        match self {
            Ok(v) => v,
            Err(e) => bug(format_args!("{expected} ({e:?})")),
        }
    }
}

/// Builds the kernel `f` into `module`, reading the `analyses` computed on it: its dynamic shared
/// memory, and the programs per SM it asks ptxas to fit (`programs_per_sm` where given, else
/// the back end's choice; see [`declare_kernel`]).
pub(super) fn lower_kernel<'a, 'ctx>(
    context: &'ctx Context,
    module: &'a Module<'ctx>,
    f: &'a Function,
    analyses: &'a Analyses,
    programs_per_sm: Option<u32>,
) -> std::result::Result<(DynSharedBytes, u32), LowerError> {
    let at_op = |op: OpId, msg: String| LowerError {
        op: Some(op),
        msg: format!("{op} `{}`: {msg}", f.op(op).kind.name()),
        internal: false,
    };
    let internal = |op: OpId, msg: String| LowerError {
        internal: true,
        ..at_op(op, format!("internal error: {msg}"))
    };
    // The verifier takes tile-level IR (no layouts) too; the lowering needs every tensor placed.
    if let Some((op, ty)) = tensor_without_layout(f) {
        return Err(at_op(
            op,
            format!("`{ty}` has no layout; the LLVM back end takes GPU-level IR (run layout assignment first)"),
        ));
    }
    let shared = analyses
        .shared
        .as_ref()
        .map_err(|(op, e)| at_op(*op, e.clone()))?;
    // Scratch users and buffers share bytes; only the barriers `insert-barriers` placed keep
    // their accesses apart. A kernel that lacks one is refused, not lowered with a race.
    if let Some(&op) = shared.unordered.first() {
        return Err(internal(
            op,
            "its shared-memory accesses may race an earlier op's with no barrier between (the `insert-barriers` pass places them)".into(),
        ));
    }
    let (function, programs_per_sm) = declare_kernel(context, module, f, programs_per_sm)?;
    let builder = context.create_builder();
    let entry = context.append_basic_block(function, "entry");
    builder.position_at_end(entry);

    let mut l = Lowerer {
        f,
        context,
        module,
        builder,
        values: vec![None; f.values.len()],
        tid: None,
        tma_leader: None,
        current_op: None,
        addressing: addressing_values(f),
        alloc: &shared.alloc,
        smem_base: None,
        scratch_used: (None, 0),
        axis: &analyses.axis,
        wide_products: RefCell::default(),
        thresholds: RefCell::default(),
        sliced_ops: HashSet::new(),
        sliced: HashMap::new(),
    };
    l.sliced_ops = l.plan_sliced_reads();
    let dyn_shared = l.create_shared()?;
    for (i, &p) in f.params().iter().enumerate() {
        let v = function
            .get_nth_param(i as u32)
            .or_bug("an LLVM parameter per kernel parameter");
        l.values[p.index()] = Some(vec![v]);
    }
    // Read in the entry block, so that every later use (also after a loop) is dominated by it.
    l.tid()?;
    if uses_copy_engine(f) {
        l.tma_leader = Some(l.elect_leader()?);
    }
    for &op in &f.blocks[f.entry().index()].ops {
        // A `bug` (or any other panic) while lowering an op is tile's fault: an internal error
        // at the innermost op being lowered, not a crash of the caller.
        let lowered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| l.op(op)));
        match lowered {
            Ok(r) => r.map_err(|e| at_op(l.current_op.unwrap_or(op), e))?,
            Err(payload) => {
                return Err(internal(
                    l.current_op.unwrap_or(op),
                    panic_message(payload.as_ref()),
                ))
            }
        }
    }
    Ok((dyn_shared, programs_per_sm))
}

/// The message of a panic's payload (`panic!` with a message gives a `String` or a `&str`).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// The first op (in program order) with a tensor operand or result that has no layout, and that
/// tensor's type: a tile-level kernel, which the verifier accepts but the lowering cannot place.
fn tensor_without_layout(f: &Function) -> Option<(OpId, &Type)> {
    f.walk().into_iter().find_map(|op| {
        let d = f.op(op);
        d.operands
            .iter()
            .chain(&d.results)
            .map(|&v| f.ty(v))
            .find(|t| t.is_tensor() && t.layout.is_none())
            .map(|t| (op, t))
    })
}

/// Why lowering failed, and at which op, where one is to blame.
#[derive(Debug)]
pub(super) struct LowerError {
    /// The op to blame, by id.
    pub op: Option<OpId>,
    /// What went wrong, naming the op (`opN`, as the verifier names ops).
    pub msg: String,
    /// Whether the failure is a bug in tile (a [`bug`] or another panic), not a limit of the
    /// kernel.
    pub internal: bool,
}

impl From<String> for LowerError {
    fn from(msg: String) -> Self {
        LowerError {
            op: None,
            msg,
            internal: false,
        }
    }
}

impl From<&str> for LowerError {
    fn from(msg: &str) -> Self {
        LowerError {
            op: None,
            msg: msg.to_string(),
            internal: false,
        }
    }
}

/// The kernel's dynamic shared memory in bytes, as [`lower_kernel`] reports it.
pub(super) type DynSharedBytes = u64;

/// Declares the kernel: one LLVM parameter per kernel parameter, the PTX kernel calling convention,
/// alignment facts on pointers, and `nvvm.annotations` (`kernel`, `maxntidx` = threads per program
/// so that ptxas knows the block size, `minctasm` = `programs_per_sm` where given, else 1 for
/// kernels with a `dot`, a 16-bit float atomic, or 1024 threads; the count returned is the one
/// set, 0 for none).
fn declare_kernel<'ctx>(
    context: &'ctx Context,
    module: &Module<'ctx>,
    f: &Function,
    programs_per_sm: Option<u32>,
) -> Result<(FunctionValue<'ctx>, u32)> {
    let mut params: Vec<BasicMetadataTypeEnum> = Vec::with_capacity(f.params().len());
    for (i, &p) in f.params().iter().enumerate() {
        let elem = f.ty(p).elem;
        if let Some(d) = elem.dtype().filter(|d| d.is_storage_float()) {
            // The front end passes half-precision scalars as `f32`; a by-value 16-bit kernel
            // argument would need its own launch-time packing.
            return Err(format!(
                "kernel parameter #{i} is a scalar `{d}`; pass it as `f32` and cast it"
            ));
        }
        params.push(register_type(context, elem).into());
    }
    // One hidden parameter per tensor descriptor: its `CUtensorMap` (128 bytes, 64-aligned) by
    // value, which the launch passes after the kernel's own arguments.
    let user_params = params.len() as u32;
    for _ in 0..f.desc_slots {
        params.push(context.ptr_type(AddressSpace::default()).into());
    }
    let function = module.add_function(&f.name, context.void_type().fn_type(&params, false), None);
    function.set_call_conventions(PTX_KERNEL_CC);
    let tensor_map = context.i8_type().array_type(128);
    let byval = Attribute::get_named_enum_kind_id("byval");
    let align_kind = Attribute::get_named_enum_kind_id("align");
    for slot in 0..f.desc_slots {
        let at = AttributeLoc::Param(user_params + slot);
        function.add_attribute(
            at,
            context.create_type_attribute(
                byval,
                inkwell::types::AnyType::as_any_type_enum(&tensor_map),
            ),
        );
        function.add_attribute(at, context.create_enum_attribute(align_kind, 64));
        if let Some(p) = function.get_nth_param(user_params + slot) {
            p.set_name(&format!("tensor_map_{slot}"));
        }
    }

    for (i, &p) in f.params().iter().enumerate() {
        if let Some(param) = function.get_nth_param(i as u32) {
            param.set_name(f.param_names.get(i).map(String::as_str).unwrap_or(""));
        }
        // Buffers may alias (a read-only input may be passed twice), so no `noalias`.
        let div = f.param_attrs.get(i).map_or(1, |a| a.divisibility);
        if matches!(f.ty(p).elem, Elem::Ptr(_)) && div > 1 {
            let attr = context.create_enum_attribute(align_kind, u64::from(div.min(16)));
            function.add_attribute(AttributeLoc::Param(i as u32), attr);
        }
    }

    let i32_ty = context.i32_type();
    let fn_ptr = function.as_global_value().as_pointer_value();
    let annotate = |key: &str, value: u64| {
        let node = context.metadata_node(&[
            fn_ptr.into(),
            context.metadata_string(key).into(),
            i32_ty.const_int(value, false).into(),
        ]);
        module.add_global_metadata("nvvm.annotations", &node).llvm()
    };
    annotate("kernel", 1)?;
    // The tensor maps the module copies through are read in place (`__grid_constant__`): LLVM
    // then takes their address with `cvta.param` instead of copying them to local memory.
    let tma = f
        .walk()
        .iter()
        .any(|&op| matches!(f.op(op).kind, OpKind::TmaLoad { .. }));
    if tma && f.desc_slots > 0 {
        let indices: Vec<_> = (0..f.desc_slots)
            .map(|s| {
                i32_ty
                    .const_int(u64::from(user_params + s + 1), false)
                    .into()
            })
            .collect();
        let node = context.metadata_node(&[
            fn_ptr.into(),
            context.metadata_string("grid_constant").into(),
            context.metadata_node(&indices).into(),
        ]);
        module
            .add_global_metadata("nvvm.annotations", &node)
            .llvm()?;
    }
    annotate("maxntidx", 32 * u64::from(f.num_warps))?;
    // A kernel with a `dot` is compute-bound and holds large tiles: one program per SM is
    // enough, so ptxas must not trade registers for occupancy (its default for a known block
    // size may cap registers low enough to spill: the FMA matmul of softmax_regression_simple
    // spilled 92 bytes at 80 registers on sm_80). So is a program of 1024 threads: it fills
    // half an SM alone, and a second one would leave each thread 32 registers; ptxas chose
    // exactly that for cross_entropy's one-tile kernel (32 registers, 928 bytes of spills,
    // 0.14x the two-pass kernel on the H100) where 64 hold it without spilling. Other
    // memory-bound kernels keep ptxas's default, except those with a 16-bit float atomic: its
    // compare-and-swap loop made ptxas cap a fuzzed 4-warp kernel at 40 registers and spill 8
    // bytes, where 46 hold it.
    let needs_registers = f.walk().iter().any(|&op| {
        let d = f.op(op);
        match d.kind {
            OpKind::Dot { .. } => true,
            OpKind::AtomicRmw { .. } | OpKind::AtomicCas { .. } => d
                .operands
                .first()
                .and_then(|&p| f.ty(p).elem.pointee())
                .is_some_and(|t| matches!(t, DType::F16 | DType::BF16)),
            _ => false,
        }
    });
    // The pipeline asks for one too when ptxas spilled without it, and for two where they fit
    // (`pipeline::spill`).
    let n = programs_per_sm.unwrap_or(u32::from(needs_registers || f.num_warps >= 32));
    if n > 0 {
        annotate("minctasm", u64::from(n))?;
    }
    Ok((function, n))
}

/// The LLVM type of one element held in a register.
pub(super) fn register_type(context: &Context, elem: Elem) -> BasicTypeEnum<'_> {
    match elem {
        Elem::Ptr(_) => context
            .ptr_type(AddressSpace::from(GLOBAL))
            .as_basic_type_enum(),
        Elem::Scalar(DType::I1) => context.bool_type().as_basic_type_enum(),
        // LLVM's integers have no sign: the ops choose it (`sdiv`/`udiv`, `ashr`/`lshr`...).
        // An 8-bit float is held as its bits; casts decode and encode it.
        Elem::Scalar(DType::I8 | DType::U8 | DType::F8E4M3 | DType::F8E5M2) => {
            context.i8_type().as_basic_type_enum()
        }
        Elem::Scalar(DType::I16) => context.i16_type().as_basic_type_enum(),
        Elem::Scalar(DType::I32 | DType::U32) => context.i32_type().as_basic_type_enum(),
        Elem::Scalar(DType::I64 | DType::U64) => context.i64_type().as_basic_type_enum(),
        Elem::Scalar(DType::F16) => context.f16_type().as_basic_type_enum(),
        Elem::Scalar(DType::BF16) => context.bf16_type().as_basic_type_enum(),
        Elem::Scalar(DType::F32) => context.f32_type().as_basic_type_enum(),
        Elem::Scalar(DType::F64) => context.f64_type().as_basic_type_enum(),
    }
}

/// The LLVM type of one element in memory: a boolean is one byte.
pub(super) fn memory_type(context: &Context, d: DType) -> BasicTypeEnum<'_> {
    match d {
        DType::I1 => context.i8_type().as_basic_type_enum(),
        _ => register_type(context, Elem::Scalar(d)),
    }
}

/// A register as an LLVM integer (the register types of [`register_type`] make it one).
#[track_caller]
pub(super) fn int(v: BasicValueEnum<'_>) -> IntValue<'_> {
    match IntValue::try_from(v) {
        Ok(x) => x,
        Err(()) => bug(format_args!("an integer, found `{}`", v.get_type())),
    }
}

/// A register as an LLVM float.
#[track_caller]
pub(super) fn float(v: BasicValueEnum<'_>) -> FloatValue<'_> {
    match FloatValue::try_from(v) {
        Ok(x) => x,
        Err(()) => bug(format_args!("a float, found `{}`", v.get_type())),
    }
}

/// A register as an LLVM pointer.
#[track_caller]
pub(super) fn pointer(v: BasicValueEnum<'_>) -> PointerValue<'_> {
    match PointerValue::try_from(v) {
        Ok(x) => x,
        Err(()) => bug(format_args!("a pointer, found `{}`", v.get_type())),
    }
}

/// The number type of a value's elements.
#[track_caller]
pub(super) fn dtype(ty: &Type) -> DType {
    match ty.dtype() {
        Some(d) => d,
        None => bug(format_args!("numbers, found `{ty}`")),
    }
}

/// The element type a pointer value points to.
#[track_caller]
pub(super) fn pointee(ty: &Type) -> DType {
    match ty.elem.pointee() {
        Some(d) => d,
        None => bug(format_args!("pointers, found `{ty}`")),
    }
}

/// Whether `f` has ops that one thread issues for the program (barrier setup, expected bytes,
/// copy-engine loads): those need [`Lowerer::tma_leader`].
fn uses_copy_engine(f: &Function) -> bool {
    f.ops.iter().any(|op| {
        matches!(
            op.kind,
            OpKind::MbarrierInit
                | OpKind::MbarrierExpect { .. }
                | OpKind::TmaLoad { .. }
                | OpKind::MbarrierInval
        )
    })
}

/// The state of one kernel's lowering.
pub(super) struct Lowerer<'a, 'ctx> {
    pub(super) f: &'a Function,
    pub(super) context: &'ctx Context,
    pub(super) module: &'a Module<'ctx>,
    pub(super) builder: Builder<'ctx>,
    /// Per IR value, the scalars this thread holds (one for a scalar value).
    pub(super) values: Vec<Option<Vec<BasicValueEnum<'ctx>>>>,
    /// `tid.x`, read once.
    tid: Option<IntValue<'ctx>>,
    /// Whether this is the one thread that issues the copy engine's work (`tma.rs`), an `i1`: computed in
    /// the entry block of a kernel that has such ops.
    pub(super) tma_leader: Option<IntValue<'ctx>>,
    /// The op being lowered (names per-op globals such as a reduction's shared memory).
    pub(super) current_op: Option<OpId>,
    /// Integer values that only exist to compute pointer offsets (see [`addressing_values`]).
    addressing: Vec<bool>,
    /// Where each user of shared memory has its bytes.
    pub(super) alloc: &'a Allocation,
    /// The kernel's one shared array (see `shared`), once created.
    pub(super) smem_base: Option<PointerValue<'ctx>>,
    /// The op whose scratch arrays are being carved, and the bytes carved so far.
    pub(super) scratch_used: (Option<OpId>, u64),
    /// Contiguity, divisibility and constancy of every value (`analysis::axis_info`): which
    /// pointers of a thread differ by a constant, so that one address register serves them.
    pub(super) axis: &'a [AxisInfo],
    /// The double-width products `umulhi` made, per (block, operands): a wrapping `mul` of the
    /// same operands in the same block takes the low half of it, so that the pair becomes one
    /// `mul.wide.u32` (one `IMAD.WIDE.U32` instead of an `IMAD` and an `IMAD.HI`: Philox's
    /// rounds multiply each word both ways).
    wide_products: RefCell<HashMap<WideKey<'ctx>, IntValue<'ctx>>>,
    /// The integer thresholds of `rand > p` per (block, `p`) (see `threshold`).
    pub(super) thresholds: RefCell<HashMap<ThresholdKey<'ctx>, ThresholdValues<'ctx>>>,
    /// The ops whose mma operand reads wait for their `dot` ([`Lowerer::plan_sliced_reads`]).
    pub(super) sliced_ops: HashSet<OpId>,
    /// Those reads, by the value they define, until their `dot` takes them.
    pub(super) sliced: HashMap<ValueId, OperandRead<'ctx>>,
}

/// The key of a remembered double-width product: the block it is in and its two operands.
type WideKey<'ctx> = (BasicBlock<'ctx>, IntValue<'ctx>, IntValue<'ctx>);

/// The key of remembered `rand > p` thresholds: the block and `p`.
pub(super) type ThresholdKey<'ctx> = (BasicBlock<'ctx>, FloatValue<'ctx>);

/// `rand > p`'s keep-all predicate, `t + 1` and the interval's length (see `threshold`).
pub(super) type ThresholdValues<'ctx> = (IntValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>);

/// The integer values whose arithmetic computes a pointer offset: the offsets of `addptr` and,
/// transitively, the operands of the `add`/`sub`/`mul`/`splat` that produce them. Their
/// arithmetic is emitted `nsw` (an offset that overflows `i32` addresses the wrong memory anyway;
/// Triton makes the same assumption), which lets LLVM fold each thread's constant element
/// strides into the load's immediate offset instead of keeping one 64-bit address per chunk.
fn addressing_values(f: &Function) -> Vec<bool> {
    let mut marked = vec![false; f.values.len()];
    let mut stack: Vec<ValueId> = Vec::new();
    for op in f.walk() {
        let d = f.op(op);
        if matches!(d.kind, OpKind::AddPtr) {
            stack.extend(d.operands.get(1));
        }
    }
    while let Some(v) = stack.pop() {
        if std::mem::replace(&mut marked[v.index()], true) {
            continue;
        }
        if let Some(def) = f.def_op(v) {
            let d = f.op(def);
            if matches!(
                d.kind,
                OpKind::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul) | OpKind::Splat
            ) {
                stack.extend(d.operands.iter().copied());
            }
        }
    }
    marked
}

impl<'a, 'ctx> Lowerer<'a, 'ctx> {
    /// The scalars this thread holds for `v` (dominance makes it lowered before its uses).
    #[track_caller]
    pub(super) fn get(&self, v: ValueId) -> &[BasicValueEnum<'ctx>] {
        match self.values.get(v.index()).and_then(|x| x.as_deref()) {
            Some(regs) => regs,
            None => bug(format_args!("{v} to be lowered before its use")),
        }
    }

    /// The id of the op being lowered.
    #[track_caller]
    pub(super) fn op_id(&self) -> OpId {
        self.current_op.or_bug("an op being lowered")
    }

    /// Operand `i` of `data`, by value id (the verifier checks each op's operand count).
    #[track_caller]
    pub(super) fn operand_id(&self, data: &OpData, i: usize) -> ValueId {
        match data.operands.get(i) {
            Some(&v) => v,
            None => bug(format_args!("an operand {i} of `{}`", data.kind.name())),
        }
    }

    /// The type of operand `i` of `data`.
    #[track_caller]
    pub(super) fn operand_type(&self, data: &OpData, i: usize) -> &'a Type {
        self.f.ty(self.operand_id(data, i))
    }

    /// The one register of scalar operand `i` (for a tensor: its first).
    #[track_caller]
    pub(super) fn scalar_operand(&self, data: &OpData, i: usize) -> BasicValueEnum<'ctx> {
        match self.operand(data, i).first() {
            Some(&r) => r,
            None => bug(format_args!("a register of operand {i}")),
        }
    }

    /// How many scalars a thread holds for a value of type `ty`.
    #[track_caller]
    pub(super) fn count(&self, ty: &Type) -> usize {
        match self.distribution(ty) {
            Some(d) => d.elems_per_thread(),
            None => 1,
        }
    }

    /// The distribution of a tensor type (`None` for a scalar).
    #[track_caller]
    pub(super) fn distribution(&self, ty: &Type) -> Option<Distribution> {
        // A shared buffer is one pointer, held by every thread.
        if !ty.is_tensor() || ty.is_shared() {
            return None;
        }
        Some(self.tensor_distribution(ty))
    }

    /// How many consecutive registers of `v` hold one value, by the axis analysis: its constancy
    /// along the innermost dimension, within the thread's run of consecutive elements along that
    /// dimension ([`Distribution::contiguous_run`]), where no lane or warp bit lands inside such
    /// a group. 1 when nothing is known.
    pub(super) fn equal_registers(&self, v: ValueId) -> Result<usize> {
        let ty = self.f.ty(v);
        let constancy = self.axis.get(v.index()).map_or(1, |a| a.constancy);
        let Some(dist) = self.distribution(ty) else {
            return Ok(1);
        };
        let (dim, run) = dist.contiguous_run();
        if dim + 1 != dist.rank() {
            return Ok(1);
        }
        let run = run.min(constancy).max(1);
        let ll = dist.linear();
        if ll.lane.iter().chain(&ll.warp).any(|&b| b & (run - 1) != 0) {
            return Ok(1);
        }
        Ok(run as usize)
    }

    /// The distribution of a tensor type, which must be a tensor with a layout that fits its
    /// shape (the verifier's rules 3 and 4; [`lower_kernel`] refuses tile-level IR).
    #[track_caller]
    pub(super) fn tensor_distribution(&self, ty: &Type) -> Distribution {
        Distribution::of(ty).or_bug("a tensor with a layout")
    }

    /// Per dimension of `dist`, this thread's part of its indices (see `layout`): the lane and
    /// warp bits of the layout's bases, moved into place with masks and shifts.
    pub(super) fn thread_coords(&mut self, dist: &Distribution) -> Result<Vec<IntValue<'ctx>>> {
        (0..dist.rank())
            .map(|d| self.thread_part(dist, d, &[InDim::Lane, InDim::Warp]))
            .collect()
    }

    /// This thread's part of its index along `d` from the terms of the inputs in `inputs` (lane
    /// and warp for the whole part, warp alone for a warp's base).
    pub(super) fn thread_part(
        &mut self,
        dist: &Distribution,
        d: usize,
        inputs: &[InDim],
    ) -> Result<IntValue<'ctx>> {
        let i32_ty = self.context.i32_type();
        let c = |x: u64| i32_ty.const_int(x, false);
        let tid = self.tid()?;
        let b = &self.builder;
        let lane = b.build_and(tid, c(31), "lane").llvm()?;
        let warp = b.build_right_shift(tid, c(5), false, "warp").llvm()?;
        let mut acc: Option<IntValue<'ctx>> = None;
        for t in dist.thread_terms(d) {
            if !inputs.contains(&t.input) {
                continue;
            }
            let x = if t.input == InDim::Lane { lane } else { warp };
            let shifted = if t.shift > 0 {
                b.build_right_shift(x, c(u64::from(t.shift)), false, "")
                    .llvm()?
            } else {
                x
            };
            let masked = b.build_and(shifted, c((1 << t.len) - 1), "").llvm()?;
            let moved = if t.to > 0 {
                b.build_left_shift(masked, c(u64::from(t.to)), "").llvm()?
            } else {
                masked
            };
            // The terms set distinct bits: `or` is their sum.
            acc = Some(match acc {
                None => moved,
                Some(a) => b.build_or(a, moved, "").llvm()?,
            });
        }
        Ok(acc.unwrap_or_else(|| c(0)))
    }

    /// Whether the bits `mask` of this thread's id are all 0; `None` when `mask` is 0 (true for
    /// every thread).
    pub(super) fn tid_bits_clear(&mut self, mask: u64) -> Result<Option<IntValue<'ctx>>> {
        if mask == 0 {
            return Ok(None);
        }
        let i32_ty = self.context.i32_type();
        let tid = self.tid()?;
        let b = &self.builder;
        let bits = b.build_and(tid, i32_ty.const_int(mask, false), "").llvm()?;
        Ok(Some(
            b.build_int_compare(IntPredicate::EQ, bits, i32_ty.const_zero(), "")
                .llvm()?,
        ))
    }

    /// Whether this thread is the owner of its elements (its copy bits are 0, see `layout`), so
    /// that writing each element once is done by owners only; `None` when no thread holds copies.
    pub(super) fn owner(&mut self, dist: &Distribution) -> Result<Option<IntValue<'ctx>>> {
        self.tid_bits_clear(dist.free_lanes() | (dist.free_warps() << 5))
    }

    /// The logical index along dimension `d` of register `k` of this thread, given its part `t`
    /// from [`Lowerer::thread_coords`]: the sum of the two parts (their XOR where they may share
    /// bits). Below 2^21, so the arithmetic is `nsw`.
    pub(super) fn index_along(
        &self,
        dist: &Distribution,
        t: &[IntValue<'ctx>],
        d: usize,
        k: usize,
    ) -> Result<IntValue<'ctx>> {
        let i32_ty = self.context.i32_type();
        let off = i32_ty.const_int(dist.reg_offset(k)[d], false);
        if dist.extent(d) == 1 {
            return Ok(i32_ty.const_zero());
        }
        let b = &self.builder;
        if dist.disjoint(d) {
            b.build_int_nsw_add(t[d], off, "").llvm()
        } else {
            b.build_xor(t[d], off, "").llvm()
        }
    }

    /// Lowers one op; `current_op` names it meanwhile (an op nested in a loop body or a
    /// branch names itself, and the enclosing op again once it is done), so that an error or a
    /// [`bug`] is reported at the innermost op being lowered.
    fn op(&mut self, id: OpId) -> Result<()> {
        let outer = self.current_op.replace(id);
        let r = self.lower_op(id);
        if r.is_ok() {
            self.current_op = outer;
        }
        r
    }

    /// Lowers an op of a region that its enclosing op's lowering walks itself (a scan's
    /// combiner, once per combination).
    pub(super) fn lower_nested(&mut self, id: OpId) -> Result<()> {
        self.op(id)
    }

    /// [`Lowerer::op`] without the bookkeeping of `current_op`.
    fn lower_op(&mut self, id: OpId) -> Result<()> {
        let f = self.f;
        let data = f.op(id);
        if matches!(data.kind, OpKind::For) {
            return self.for_loop(data);
        }
        if matches!(data.kind, OpKind::While) {
            return self.while_loop(data);
        }
        if matches!(data.kind, OpKind::If) {
            return self.if_op(data);
        }
        // These change the layout by definition (a dimension dropped or added, or a conversion),
        // hold several values of their own layouts, or (`dot`) take operands in layouts of their
        // own that the verifier checks.
        if !matches!(
            data.kind,
            OpKind::Reduce { .. }
                | OpKind::ExpandDims { .. }
                | OpKind::Trans
                | OpKind::Reshape
                | OpKind::Interleave
                | OpKind::Deinterleave
                | OpKind::ConvertLayout
                | OpKind::Yield
                | OpKind::Dot { .. }
                | OpKind::Gather { .. }
                | OpKind::AsyncCopy { .. }
                | OpKind::LocalLoad { .. }
                | OpKind::WarpGroupDot { .. }
                | OpKind::MbarrierInit
                | OpKind::MbarrierExpect { .. }
                | OpKind::TmaLoad { .. }
                | OpKind::MbarrierWait
                | OpKind::MbarrierInval
        ) {
            self.check_layouts(data);
        }
        let result = match &data.kind {
            OpKind::Constant(c) => Some(vec![self.constant(*c, self.result_type(data))?]),
            OpKind::ProgramId { axis } => Some(vec![self.sreg("ctaid", *axis)?]),
            OpKind::NumPrograms { axis } => Some(vec![self.sreg("nctaid", *axis)?]),
            OpKind::Arange { start, .. } => Some(self.arange(*start, self.result_type(data))?),
            OpKind::Splat => {
                let n = self.count(self.result_type(data));
                let x = self.scalar_operand(data, 0);
                Some(vec![x; n])
            }
            // The operand's slice layout places its elements as the result's layout places the
            // expanded tensor, slot for slot (see `layout`).
            OpKind::ExpandDims { .. } => Some(self.operand(data, 0).to_vec()),
            // A promise to the axis analysis: the operand's values.
            OpKind::Hint { .. } => Some(self.operand(data, 0).to_vec()),
            OpKind::Broadcast => Some(self.broadcast(data)?),
            // The result's layout is the operand's relabeled (the verifier's rule): each register
            // of the result is one of the operand's, renumbered at most.
            OpKind::Trans => Some(self.relabel(data, |c| vec![c[1], c[0]])?),
            OpKind::Reshape => {
                let (from, to) = (
                    &self.operand_type(data, 0).shape,
                    &self.result_type(data).shape,
                );
                Some(self.relabel(data, |c| {
                    // The row-major index in the result's shape, as coordinates of the operand's.
                    let flat = c.iter().zip(to).fold(0, |a, (&i, &n)| a * u64::from(n) + i);
                    let mut rest = flat;
                    let mut out = vec![0; from.len()];
                    for (o, &n) in out.iter_mut().zip(from).rev() {
                        *o = rest % u64::from(n);
                        rest /= u64::from(n);
                    }
                    out
                })?)
            }
            OpKind::ConvertLayout => Some(self.convert_layout(data)?),
            OpKind::Interleave => Some(self.interleave(data)?),
            OpKind::Deinterleave => {
                let halves = self.deinterleave(data)?;
                for (&r, v) in data.results.iter().zip(halves) {
                    self.values[r.index()] = Some(v);
                }
                return Ok(());
            }
            OpKind::Roll { axis, shift } => Some(self.roll(data, *axis, *shift)?),
            OpKind::Gather { axis } => Some(self.gather(data, *axis)?),
            OpKind::Binary(b) => {
                let d = dtype(self.result_type(data));
                let nsw = data
                    .results
                    .first()
                    .is_some_and(|r| self.addressing[r.index()]);
                let (a, c) = (self.operand(data, 0), self.operand(data, 1));
                Some(self.zip(a, c, |me, x, y| me.binary(*b, d, x, y, nsw))?)
            }
            OpKind::Cmp(p) => {
                let d = dtype(self.operand_type(data, 0));
                // Operand `i` the same for the whole program (a scalar or a splat of one).
                let uniform = |i: usize| {
                    data.operands.get(i).is_some_and(|&v| {
                        !f.ty(v).is_tensor()
                            || f.def_op(v)
                                .is_some_and(|o| matches!(f.op(o).kind, OpKind::Splat))
                    })
                };
                // `rand > p` (or `p < rand`) with `p` uniform: one integer compare per element
                // (see `threshold`).
                let rand_side = match p {
                    CmpPred::Gt if d == DType::F32 && uniform(1) => Some(false),
                    CmpPred::Lt if d == DType::F32 && uniform(0) => Some(true),
                    _ => None,
                };
                let (a, c) = (self.operand(data, 0), self.operand(data, 1));
                let mut out = self.zip(a, c, |me, x, y| {
                    if let Some(swap) = rand_side {
                        let (u, q) = if swap { (y, x) } else { (x, y) };
                        if let Some(k) = me.uniform_above(float(u), float(q))? {
                            return Ok(k.into());
                        }
                    }
                    me.cmp(*p, d, x, y)
                })?;
                // Registers that the axis analysis proves equal share the first one's bit, so
                // that a mask like `cols < n` (n a multiple of 8) is one predicate per vector,
                // not one per element kept live to the store; LLVM drops the unused compares.
                if let Some(&r) = data.results.first() {
                    let g = self.equal_registers(r)?;
                    for k in 0..out.len() {
                        out[k] = out[k - k % g];
                    }
                }
                Some(out)
            }
            OpKind::Unary(u) => {
                let d = dtype(self.result_type(data));
                let a = self.operand(data, 0).to_vec();
                Some(
                    a.into_iter()
                        .map(|x| self.unary(*u, d, x))
                        .collect::<Result<_>>()?,
                )
            }
            OpKind::Select => {
                let cond = self.operand(data, 0).to_vec();
                let (a, b) = (self.operand(data, 1), self.operand(data, 2));
                let pairs = self.zip(a, b, |_, x, y| Ok((x, y)))?;
                if cond.len() != pairs.len() {
                    bug("operands holding the same number of registers");
                }
                let mut out = Vec::with_capacity(pairs.len());
                for (c, (x, y)) in cond.into_iter().zip(pairs) {
                    out.push(self.builder.build_select(int(c), x, y, "").llvm()?);
                }
                Some(out)
            }
            OpKind::AddPtr => {
                let pointee = pointee(self.operand_type(data, 0));
                let (p, o) = (self.operand(data, 0), self.operand(data, 1));
                Some(self.zip(p, o, |me, x, y| me.addptr(pointee, x, y))?)
            }
            OpKind::Math(m) => Some(self.math_op(*m, data)?),
            OpKind::Cast => Some(self.cast_op(data)?),
            OpKind::Bitcast => {
                let to = register_type(self.context, self.result_type(data).elem);
                let vals = self.operand(data, 0).to_vec();
                Some(
                    vals.into_iter()
                        .map(|v| {
                            if v.get_type() == to {
                                Ok(v)
                            } else {
                                self.builder.build_bit_cast(v, to, "").llvm()
                            }
                        })
                        .collect::<Result<_>>()?,
                )
            }
            OpKind::IntToPtr => {
                let to = self.context.ptr_type(AddressSpace::from(GLOBAL));
                let vals = self.operand(data, 0).to_vec();
                Some(
                    vals.into_iter()
                        .map(|v| {
                            Ok(self
                                .builder
                                .build_int_to_ptr(v.into_int_value(), to, "")
                                .llvm()?
                                .into())
                        })
                        .collect::<Result<_>>()?,
                )
            }
            OpKind::Reduce { kind, axis } => Some(self.reduce_op(*kind, *axis, data)?),
            OpKind::Dot { .. } => Some(self.dot(data)?),
            OpKind::Load { vec, evict } => Some(self.load(data, *vec, *evict)?),
            OpKind::Store { vec, evict } => {
                self.store(data, *vec, *evict)?;
                None
            }
            OpKind::AtomicRmw { op, sem, scope } => {
                Some(self.atomic(data, Atomic::Rmw(*op), *sem, *scope)?)
            }
            OpKind::AtomicCas { sem, scope } => {
                Some(self.atomic(data, Atomic::Cas, *sem, *scope)?)
            }
            OpKind::Scan {
                kind,
                axis,
                reverse,
            } => Some(self.scan_op(*kind, *axis, *reverse, data)?),
            OpKind::AssociativeScan { axis, reverse } => {
                let outs = self.associative_scan_op(*axis, *reverse, data)?;
                for (&r, v) in data.results.iter().zip(outs) {
                    self.values[r.index()] = Some(v);
                }
                return Ok(());
            }
            OpKind::Return => {
                self.builder.build_return(None).llvm()?;
                None
            }
            OpKind::LocalAlloc => Some(self.local_alloc()?),
            OpKind::AsyncCopy { vec } => {
                self.async_copy(data, *vec)?;
                None
            }
            OpKind::AsyncCommit => {
                self.async_commit()?;
                None
            }
            OpKind::AsyncWait { pending } => {
                self.async_wait(*pending)?;
                None
            }
            OpKind::Barrier | OpKind::DebugBarrier => {
                self.barrier()?;
                None
            }
            OpKind::LocalLoad { offset, trans } => Some(self.local_load(data, *offset, *trans)?),
            OpKind::WarpGroupDot { .. } => Some(self.warp_group_dot(data)?),
            OpKind::WarpGroupWait { pending } => Some(self.warp_group_wait(data, *pending)?),
            OpKind::FenceAsyncShared => {
                self.fence_async_shared()?;
                None
            }
            OpKind::DescLoad { .. } | OpKind::DescStore { .. } => bug(format_args!(
                "`{}` reached the back end: `lower-descriptors` expands every access that \
                 `pipeline-dot` does not copy with the tensor memory accelerator",
                data.kind.name()
            )),
            OpKind::MbarrierInit => {
                self.mbarrier_init(data)?;
                None
            }
            OpKind::MbarrierExpect { bytes } => {
                self.mbarrier_expect(data, *bytes)?;
                None
            }
            OpKind::TmaLoad { slot } => {
                self.tma_load(data, *slot)?;
                None
            }
            OpKind::MbarrierWait => {
                self.mbarrier_wait(data)?;
                None
            }
            OpKind::MbarrierInval => {
                self.mbarrier_inval(data)?;
                None
            }
            // `for_loop`, `while_loop` and `if_op` read the yielded values; they never get here.
            OpKind::Yield | OpKind::For | OpKind::While | OpKind::If => None,
        };
        match (result, data.results.first()) {
            (Some(vals), Some(&r)) => {
                // A read left to its `dot` holds no registers yet (`read_or_slice`).
                let want = if self.sliced.contains_key(&r) {
                    0
                } else {
                    self.count(f.ty(r))
                };
                if vals.len() != want {
                    bug(format_args!(
                        "{want} registers per thread for the result, not {}",
                        vals.len()
                    ));
                }
                self.values[r.index()] = Some(vals);
                Ok(())
            }
            (None, None) => Ok(()),
            (Some(_), None) | (None, Some(_)) => bug("as many results as the op's kind defines"),
        }
    }

    /// `for`: a loop over `k = 0 .. trips` with `iv = lb + k · step`, where the trip count
    /// `max(0, ceil((ub − lb) / step))` is computed in 64 bits (no wrap near `i32::MAX`; a step
    /// that is not positive runs no iteration). Every scalar a thread holds of a carried value is a
    /// phi in the loop header (see [`Lowerer::counted_loop`]).
    fn for_loop(&mut self, data: &OpData) -> Result<()> {
        let f = self.f;
        let i64_ty = self.context.i64_type();
        let bound = |me: &Self, i: usize| -> Result<IntValue<'ctx>> {
            let v = int(me.scalar_operand(data, i));
            me.builder.build_int_s_extend(v, i64_ty, "").llvm()
        };
        let (lb, ub, step) = (bound(self, 0)?, bound(self, 1)?, bound(self, 2)?);
        let (init, counts) = self.carried_registers(data, 3);
        let region = *data.regions.first().or_bug("a loop body");
        let body = *f.regions[region.index()]
            .blocks
            .first()
            .or_bug("a block in the loop body");

        let b = &self.builder;
        let zero = i64_ty.const_zero();
        let one = i64_ty.const_int(1, false);
        let span = b.build_int_sub(ub, lb, "").llvm()?;
        let runs = b
            .build_int_compare(IntPredicate::SGT, span, zero, "")
            .llvm()?;
        let forward = b
            .build_int_compare(IntPredicate::SGT, step, zero, "")
            .llvm()?;
        let runs = b.build_and(runs, forward, "").llvm()?;
        let divisor = int(b.build_select(forward, step, one, "").llvm()?);
        let up = b.build_int_add(span, divisor, "").llvm()?;
        let up = b.build_int_sub(up, one, "").llvm()?;
        let trips = b.build_int_signed_div(up, divisor, "").llvm()?;
        let trips = int(b.build_select(runs, trips, zero, "trips").llvm()?);
        // At most 2^32 − 1 iterations (i32 bounds, a positive step): the counter runs in 32 bits,
        // compared unsigned, and the induction variable `lb + k·step` wraps to its true value,
        // which lies in `[lb, ub)`. Two registers fewer than 64-bit counting in a loop that
        // holds 255.
        let i32_ty = self.context.i32_type();
        let trips = b.build_int_truncate(trips, i32_ty, "").llvm()?;
        let lb = b.build_int_truncate(lb, i32_ty, "").llvm()?;
        let divisor = b.build_int_truncate(divisor, i32_ty, "").llvm()?;

        let last = self.counted_loop(trips, init, |me, k, current| {
            let b = &me.builder;
            let scaled = b.build_int_mul(k, divisor, "").llvm()?;
            let iv = b.build_int_add(lb, scaled, "iv").llvm()?;
            let args = &f.blocks[body.index()].args;
            me.values[args.first().or_bug("the induction variable").index()] =
                Some(vec![iv.into()]);
            me.bind_split(&args[1..], &counts, &current);
            let yielded = me.region_block(body)?;
            if yielded.len() != current.len() {
                bug("the loop body to yield as many registers as it carries");
            }
            Ok(yielded)
        })?;
        self.bind_split(&data.results, &counts, &last);
        Ok(())
    }

    /// The registers of operands `from..` of `data` (a loop's initial carried values), in one
    /// flat list, and how many each operand holds.
    fn carried_registers(
        &self,
        data: &OpData,
        from: usize,
    ) -> (Vec<BasicValueEnum<'ctx>>, Vec<usize>) {
        let mut flat = Vec::new();
        let mut counts = Vec::new();
        for i in from..data.operands.len() {
            let v = self.operand(data, i);
            counts.push(v.len());
            flat.extend_from_slice(v);
        }
        (flat, counts)
    }

    /// Gives each of `values` its registers: the next `counts[i]` of the flat list `flat`.
    fn bind_split(&mut self, values: &[ValueId], counts: &[usize], flat: &[BasicValueEnum<'ctx>]) {
        let mut rest = flat;
        for (&v, &n) in values.iter().zip(counts) {
            let (head, tail) = rest.split_at(n.min(rest.len()));
            self.values[v.index()] = Some(head.to_vec());
            rest = tail;
        }
    }

    /// Lowers the ops of `block` (a loop body, a `while`'s condition or a branch) up to its
    /// `yield`, and returns the registers it yields, its operands' in order.
    fn region_block(&mut self, block: BlockId) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let f = self.f;
        let mut yielded = Vec::new();
        for &op in &f.blocks[block.index()].ops {
            let d = f.op(op);
            if matches!(d.kind, OpKind::Yield) {
                for i in 0..d.operands.len() {
                    yielded.extend_from_slice(self.operand(d, i));
                }
            } else {
                self.op(op)?;
            }
        }
        Ok(yielded)
    }

    /// `while`: a header block with one phi per scalar a thread holds of a carried value, fed
    /// by the initial values and by the body's; the condition region runs in the header and
    /// branches to the body or out. The results are the header's phis, the values the
    /// condition last saw. Every thread decides alike where the condition's value is the same
    /// for the whole program, as a scalar computed from arguments, carried scalars and scalar
    /// atomics (whose old value thread 0 hands to all) is.
    fn while_loop(&mut self, data: &OpData) -> Result<()> {
        let f = self.f;
        let (init, counts) = self.carried_registers(data, 0);
        let block_of = |i: usize| -> BlockId {
            let region = *data.regions.get(i).or_bug("a condition and a body");
            *f.regions[region.index()]
                .blocks
                .first()
                .or_bug("a block in each region of `while`")
        };
        let (cond, body) = (block_of(0), block_of(1));
        let [pre, header, body_bb, exit] = self.open_loop("while")?;
        let phis = self.carried_phis(&init, pre)?;
        let current: Vec<BasicValueEnum<'ctx>> = phis.iter().map(|p| p.as_basic_value()).collect();
        self.bind_split(&f.blocks[cond.index()].args, &counts, &current);
        let decided = self.region_block(cond)?;
        let &[go] = decided.as_slice() else {
            bug("the condition of `while` to yield one register");
        };
        self.builder
            .build_conditional_branch(int(go), body_bb, exit)
            .llvm()?;
        self.builder.position_at_end(body_bb);
        self.bind_split(&f.blocks[body.index()].args, &counts, &current);
        let next = self.region_block(body)?;
        if next.len() != phis.len() {
            bug("the body of `while` to yield as many registers as it carries");
        }
        let latch = self.builder.get_insert_block().or_bug("an insertion block");
        for (phi, v) in phis.iter().zip(&next) {
            phi.add_incoming(&[(v, latch)]);
        }
        self.builder.build_unconditional_branch(header).llvm()?;
        self.builder.position_at_end(exit);
        self.bind_split(&data.results, &counts, &current);
        Ok(())
    }

    /// `if`: a branch on the scalar condition to the two regions' blocks, and a phi per scalar
    /// each result holds where they meet.
    fn if_op(&mut self, data: &OpData) -> Result<()> {
        let f = self.f;
        let ctx = self.context;
        let cond = int(self.scalar_operand(data, 0));
        let function = self
            .builder
            .get_insert_block()
            .and_then(|bb| bb.get_parent())
            .or_bug("the builder inside the kernel");
        let then_bb = ctx.append_basic_block(function, "if.then");
        let else_bb = ctx.append_basic_block(function, "if.else");
        let merge = ctx.append_basic_block(function, "if.end");
        self.builder
            .build_conditional_branch(cond, then_bb, else_bb)
            .llvm()?;
        let mut incoming = Vec::with_capacity(2);
        for (&region, bb) in data.regions.iter().zip([then_bb, else_bb]) {
            self.builder.position_at_end(bb);
            let block = *f.regions[region.index()]
                .blocks
                .first()
                .or_bug("a block in each branch");
            let yielded = self.region_block(block)?;
            let end = self.builder.get_insert_block().or_bug("an insertion block");
            self.builder.build_unconditional_branch(merge).llvm()?;
            incoming.push((yielded, end));
        }
        self.builder.position_at_end(merge);
        let [(then_vals, then_end), (else_vals, else_end)] =
            <[_; 2]>::try_from(incoming).or_bug("two branches");
        if then_vals.len() != else_vals.len() {
            bug("both branches to yield as many registers");
        }
        let mut merged = Vec::with_capacity(then_vals.len());
        for (t, e) in then_vals.iter().zip(&else_vals) {
            let phi = self.builder.build_phi(t.get_type(), "if.value").llvm()?;
            phi.add_incoming(&[(t, then_end), (e, else_end)]);
            merged.push(phi.as_basic_value());
        }
        let mut rest = &merged[..];
        for &r in &data.results {
            let n = self.count(f.ty(r));
            if rest.len() < n {
                bug("the branches to yield a register per result register");
            }
            let (head, tail) = rest.split_at(n);
            self.values[r.index()] = Some(head.to_vec());
            rest = tail;
        }
        Ok(())
    }

    /// Emits a loop running `body` for `k = 0 .. trips` (unsigned, of `trips`' integer type), with
    /// one phi per value of
    /// `init` in the loop header, fed by `init` and by what `body` returns (the same number of
    /// values, of the same types); returns the values after the last iteration (`init` when
    /// `trips ≤ 0`). The builder continues after the loop.
    pub(super) fn counted_loop(
        &mut self,
        trips: IntValue<'ctx>,
        init: Vec<BasicValueEnum<'ctx>>,
        body: impl FnOnce(
            &mut Self,
            IntValue<'ctx>,
            Vec<BasicValueEnum<'ctx>>,
        ) -> Result<Vec<BasicValueEnum<'ctx>>>,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let count_ty = trips.get_type();
        let [pre, header, body_bb, exit] = self.open_loop("loop")?;
        let b = &self.builder;
        let k = b.build_phi(count_ty, "k").llvm()?;
        let zero = count_ty.const_zero();
        k.add_incoming(&[(&zero, pre)]);
        let phis = self.carried_phis(&init, pre)?;
        let b = &self.builder;
        let kv = k.as_basic_value().into_int_value();
        let more = b
            .build_int_compare(IntPredicate::ULT, kv, trips, "")
            .llvm()?;
        b.build_conditional_branch(more, body_bb, exit).llvm()?;
        b.position_at_end(body_bb);
        let current: Vec<BasicValueEnum<'ctx>> = phis.iter().map(|p| p.as_basic_value()).collect();
        let next = body(self, kv, current.clone())?;
        if next.len() != phis.len() {
            bug("the loop body to return a value per carried value");
        }
        let b = &self.builder;
        let latch = b.get_insert_block().or_bug("an insertion block");
        let k_next = b
            .build_int_nuw_add(kv, count_ty.const_int(1, false), "")
            .llvm()?;
        k.add_incoming(&[(&k_next, latch)]);
        for (phi, v) in phis.iter().zip(&next) {
            phi.add_incoming(&[(v, latch)]);
        }
        b.build_unconditional_branch(header).llvm()?;
        b.position_at_end(exit);
        Ok(current)
    }

    /// Starts a loop after the current block: its header, body and exit blocks (`{name}.header`,
    /// …), a branch into the header, and the builder there. Returns the block before the loop,
    /// the header, the body and the exit.
    fn open_loop(&mut self, name: &str) -> Result<[BasicBlock<'ctx>; 4]> {
        let ctx = self.context;
        let b = &self.builder;
        let function = b
            .get_insert_block()
            .and_then(|bb| bb.get_parent())
            .or_bug("the builder inside the kernel");
        let pre = b.get_insert_block().or_bug("an insertion block");
        let header = ctx.append_basic_block(function, &format!("{name}.header"));
        let body = ctx.append_basic_block(function, &format!("{name}.body"));
        let exit = ctx.append_basic_block(function, &format!("{name}.exit"));
        b.build_unconditional_branch(header).llvm()?;
        b.position_at_end(header);
        Ok([pre, header, body, exit])
    }

    /// One phi per value of `init` at the builder (a loop's header), fed by `init` from `pre`.
    fn carried_phis(
        &self,
        init: &[BasicValueEnum<'ctx>],
        pre: BasicBlock<'ctx>,
    ) -> Result<Vec<PhiValue<'ctx>>> {
        let mut phis = Vec::with_capacity(init.len());
        for v in init {
            let phi = self.builder.build_phi(v.get_type(), "carried").llvm()?;
            phi.add_incoming(&[(v, pre)]);
            phis.push(phi);
        }
        Ok(phis)
    }

    /// Checks that the op's tensor operands and results share one layout, as the verifier's
    /// rules for the ops the lowering takes slot by slot make them (a [`bug`] otherwise).
    #[track_caller]
    fn check_layouts(&self, data: &OpData) {
        let mut layouts = data
            .operands
            .iter()
            .chain(&data.results)
            .map(|&v| self.f.ty(v))
            .filter(|t| t.is_tensor())
            .map(|t| &t.layout);
        if let Some(first) = layouts.next() {
            if layouts.any(|l| l != first) {
                bug("tensors of one layout (layout conversion is an op of its own)");
            }
        }
    }

    /// The type of the op's (first) result; the verifier checks each op's result count.
    #[track_caller]
    pub(super) fn result_type(&self, data: &OpData) -> &'a Type {
        match data.results.first() {
            Some(&r) => self.f.ty(r),
            None => bug(format_args!("a result of `{}`", data.kind.name())),
        }
    }

    /// The registers this thread holds of operand `i`.
    #[track_caller]
    pub(super) fn operand(&self, data: &OpData, i: usize) -> &[BasicValueEnum<'ctx>] {
        self.get(self.operand_id(data, i))
    }

    /// Applies `g` slot by slot to two values that hold the same number of scalars (operands of
    /// one type: the verifier's elementwise rules).
    fn zip<T>(
        &self,
        a: &[BasicValueEnum<'ctx>],
        b: &[BasicValueEnum<'ctx>],
        mut g: impl FnMut(&Self, BasicValueEnum<'ctx>, BasicValueEnum<'ctx>) -> Result<T>,
    ) -> Result<Vec<T>> {
        if a.len() != b.len() {
            bug("operands holding the same number of registers");
        }
        a.iter().zip(b).map(|(&x, &y)| g(self, x, y)).collect()
    }

    fn constant(&self, c: ConstValue, ty: &Type) -> Result<BasicValueEnum<'ctx>> {
        let ctx = self.context;
        Ok(match (ty.elem, c) {
            (Elem::Scalar(DType::I1), ConstValue::Int(i)) => {
                ctx.bool_type().const_int(i as u64 & 1, false).into()
            }
            (Elem::Scalar(DType::I32), ConstValue::Int(i)) => {
                ctx.i32_type().const_int(i as u64, true).into()
            }
            (Elem::Scalar(DType::I64), ConstValue::Int(i)) => {
                ctx.i64_type().const_int(i as u64, true).into()
            }
            // The other integers: the low bits of the value (a `u64` constant is its bits).
            (Elem::Scalar(d), ConstValue::Int(i)) if d.is_int() => register_type(ctx, ty.elem)
                .into_int_type()
                .const_int(i as u64, true)
                .into(),
            // LLVM rounds the double to the type once, to nearest even (as the interpreter does).
            (Elem::Scalar(DType::F32), ConstValue::Float(x)) => {
                ctx.f32_type().const_float(x).into()
            }
            (Elem::Scalar(DType::F16), ConstValue::Float(x)) => {
                ctx.f16_type().const_float(x).into()
            }
            (Elem::Scalar(DType::BF16), ConstValue::Float(x)) => {
                ctx.bf16_type().const_float(x).into()
            }
            (Elem::Scalar(DType::F64), ConstValue::Float(x)) => {
                ctx.f64_type().const_float(x).into()
            }
            // An 8-bit float is its bits, rounded as a cast from `f32` rounds.
            (Elem::Scalar(DType::F8E4M3), ConstValue::Float(x)) => ctx
                .i8_type()
                .const_int(u64::from(f8e4m3::from_f64(x).to_bits()), false)
                .into(),
            (Elem::Scalar(DType::F8E5M2), ConstValue::Float(x)) => ctx
                .i8_type()
                .const_int(u64::from(f8e5m2::from_f64(x).to_bits()), false)
                .into(),
            (e, c) => bug(format_args!("a constant of type `{e}`, found {c}")),
        })
    }

    /// Calls an intrinsic (overloaded on `types` when it is overloaded) and returns its result.
    pub(super) fn intrinsic(
        &self,
        name: &str,
        types: &[BasicTypeEnum<'ctx>],
        args: &[BasicMetadataValueEnum<'ctx>],
    ) -> Result<BasicValueEnum<'ctx>> {
        let decl = Intrinsic::find(name)
            .and_then(|i| i.get_declaration(self.module, types))
            .unwrap_or_else(|| bug(format_args!("LLVM to have the intrinsic `{name}`")));
        match self
            .builder
            .build_call(decl, args, "")
            .llvm()?
            .try_as_basic_value()
        {
            ValueKind::Basic(v) => Ok(v),
            ValueKind::Instruction(_) => bug(format_args!("intrinsic `{name}` to return a value")),
        }
    }

    /// A special register: `llvm.nvvm.read.ptx.sreg.{reg}.{x,y,z}`.
    fn sreg(&self, reg: &str, axis: u32) -> Result<BasicValueEnum<'ctx>> {
        let axis = match axis {
            0 => "x",
            1 => "y",
            2 => "z",
            _ => bug(format_args!("grid axis 0, 1 or 2, found {axis}")),
        };
        self.intrinsic(&format!("llvm.nvvm.read.ptx.sreg.{reg}.{axis}"), &[], &[])
    }

    /// The thread's index in its program, read once.
    pub(super) fn tid(&mut self) -> Result<IntValue<'ctx>> {
        if let Some(t) = self.tid {
            return Ok(t);
        }
        let t = int(self.sreg("tid", 0)?);
        self.tid = Some(t);
        Ok(t)
    }

    /// `arange`: register `k` holds `start + i` where `i` is its logical index.
    fn arange(&mut self, start: i64, ty: &Type) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let dist = self.tensor_distribution(ty);
        let t = self.thread_coords(&dist)?;
        let i32_ty = self.context.i32_type();
        let mut out = Vec::with_capacity(dist.elems_per_thread());
        for k in 0..dist.elems_per_thread() {
            let i = self.index_along(&dist, &t, 0, k)?;
            let v = self
                .builder
                .build_int_nsw_add(i, i32_ty.const_int(start as u64, true), "")
                .llvm()?;
            out.push(v.into());
        }
        Ok(out)
    }

    /// `broadcast`: each register of the result takes the operand's register at the same offset
    /// with 0 along the dimensions the operand has extent 1 (the layouts are one, so the threads'
    /// parts agree along the others).
    /// `trans` and `reshape`: register `k` of the result is the operand's register holding the
    /// element `source` maps the result's register offset to (a thread's part of the index maps
    /// the same way, which the verifier checks), so no instruction is emitted.
    fn relabel(
        &self,
        data: &OpData,
        source: impl Fn(&[u64]) -> Vec<u64>,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let src = self.tensor_distribution(self.operand_type(data, 0));
        let dst = self.tensor_distribution(self.result_type(data));
        let vals = self.operand(data, 0);
        (0..dst.elems_per_thread())
            .map(|k| {
                let j = src
                    .reg_at(&source(&dst.reg_offset(k)))
                    .or_bug("an operand register per relabeled register");
                Ok(*vals.get(j).or_bug("a register of the operand"))
            })
            .collect()
    }

    /// `interleave`: the result's layout is the operands' interleaved (the verifier's rule), so
    /// each register of the result is a register of one operand: position `2i` of the last
    /// dimension is `a`'s element `i`, position `2i + 1` is `b`'s.
    fn interleave(&self, data: &OpData) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let src = self.tensor_distribution(self.operand_type(data, 0));
        let dst = self.tensor_distribution(self.result_type(data));
        let halves = [self.operand(data, 0), self.operand(data, 1)];
        (0..dst.elems_per_thread())
            .map(|k| {
                let mut at = dst.reg_offset(k);
                let last = at
                    .last_mut()
                    .or_bug("an interleaved tensor has a dimension");
                let half = (*last % 2) as usize;
                *last /= 2;
                let j = src
                    .reg_at(&at)
                    .or_bug("an operand register per interleaved register");
                Ok(*halves[half].get(j).or_bug("a register of the operand"))
            })
            .collect()
    }

    /// `deinterleave`: the operand's layout is the results' interleaved (the verifier's rule), so
    /// each register of either result (both have one type) is one of the operand's: the even
    /// positions of its last dimension, then the odd ones.
    fn deinterleave(&self, data: &OpData) -> Result<Vec<Vec<BasicValueEnum<'ctx>>>> {
        (0..2)
            .map(|half| {
                self.relabel(data, |c| {
                    let mut at = c.to_vec();
                    if let Some(last) = at.last_mut() {
                        *last = *last * 2 + half;
                    }
                    at
                })
            })
            .collect()
    }

    fn broadcast(&mut self, data: &OpData) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let from = self.operand_type(data, 0);
        let to = self.result_type(data);
        let (src, dst) = (self.tensor_distribution(from), self.tensor_distribution(to));
        let vals = self.operand(data, 0);
        let mut out = Vec::with_capacity(dst.elems_per_thread());
        for k in 0..dst.elems_per_thread() {
            let mut off = dst.reg_offset(k);
            for (d, o) in off.iter_mut().enumerate() {
                if src.extent(d) == 1 {
                    *o = 0;
                }
            }
            let j = src
                .reg_at(&off)
                .or_bug("a source register per broadcast register");
            out.push(*vals.get(j).or_bug("a register of the operand"));
        }
        Ok(out)
    }

    pub(super) fn binary(
        &self,
        op: BinOp,
        d: DType,
        x: BasicValueEnum<'ctx>,
        y: BasicValueEnum<'ctx>,
        nsw: bool,
    ) -> Result<BasicValueEnum<'ctx>> {
        if d.is_float() {
            self.float_binary(op, float(x), float(y))
        } else {
            // No signed-wrap promise for unsigned types: their values past the signed range
            // are ordinary.
            self.int_binary(op, int(x), int(y), nsw && !d.is_unsigned(), d.is_unsigned())
        }
    }

    fn float_binary(
        &self,
        op: BinOp,
        x: FloatValue<'ctx>,
        y: FloatValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.builder;
        // `contract` lets LLVM fuse a multiply and an add into one fma, as Triton allows.
        let contract = |v: FloatValue<'ctx>| -> Result<BasicValueEnum<'ctx>> {
            if let Some(inst) = v.as_instruction() {
                inst.set_fast_math_flags(FastMathFlags::AllowContract)
                    .llvm()?;
            }
            Ok(v.into())
        };
        match op {
            BinOp::Add => contract(b.build_float_add(x, y, "").llvm()?),
            BinOp::Sub => contract(b.build_float_sub(x, y, "").llvm()?),
            BinOp::Mul => contract(b.build_float_mul(x, y, "").llvm()?),
            // Triton's `/`: one reciprocal per divisor (ptxas shares it) and a multiply, scaled
            // where the divisor is huge; within 2 ulp.
            BinOp::Div if self.f.fast_math && x.get_type() == self.context.f32_type() => {
                Ok(self.f32_asm2("div.full.f32 $0, $1, $2;", x, y)?.into())
            }
            BinOp::Div => Ok(b.build_float_div(x, y, "").llvm()?.into()),
            BinOp::Rem => Ok(b.build_float_rem(x, y, "").llvm()?.into()),
            BinOp::Min | BinOp::Max => self.float_min_max(op == BinOp::Max, x, y),
            BinOp::And | BinOp::Or | BinOp::Xor | BinOp::UMulHi | BinOp::Shl | BinOp::Shr => {
                bug(format_args!("integers for `{}`", op.name()))
            }
        }
    }

    /// PTX's `max.f32` / `min.f32` (`.f64` for doubles; IEEE 754-2019 `maximumNumber` / `minimumNumber`) as inline
    /// assembly without side effects, not `llvm.maxnum`: LLVM 19's InstSimplify crashes on
    /// `maxnum(f(a, b), maxnum(a, b))` for another intrinsic `f` (`fma`, `copysign`; found by the
    /// differential tester, reproduced with `opt -passes=early-cse`), and its NVPTX combine turns
    /// `llvm.nvvm.fmax.f` into `maxnum` first. The instruction is the one `maxnum` became.
    fn float_min_max(
        &self,
        max: bool,
        x: FloatValue<'ctx>,
        y: FloatValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let op = if max { "max" } else { "min" };
        if x.get_type() == self.context.f64_type() {
            let text = format!("{op}.f64 $0, $1, $2;");
            return self.pure_asm(&text, "=d,d,d", x.get_type().into(), &[x.into(), y.into()]);
        }
        Ok(self
            .f32_asm2(&format!("{op}.f32 $0, $1, $2;"), x, y)?
            .into())
    }

    /// Inline PTX `text` without side effects, of one `f32` result (`$0`) and two `f32`
    /// operands (`$1` = `a`, `$2` = `b`): an instruction LLVM would otherwise expand or, for
    /// `max`, crash on.
    pub(super) fn f32_asm2(
        &self,
        text: &str,
        a: FloatValue<'ctx>,
        b: FloatValue<'ctx>,
    ) -> Result<FloatValue<'ctx>> {
        let f32_ty = self.context.f32_type().into();
        Ok(float(self.pure_asm(
            text,
            "=f,f,f",
            f32_ty,
            &[a.into(), b.into()],
        )?))
    }

    /// Inline PTX `text` without side effects: result `$0` of type `ret`, then `args`.
    pub(super) fn pure_asm(
        &self,
        text: &str,
        constraints: &str,
        ret: BasicTypeEnum<'ctx>,
        args: &[BasicValueEnum<'ctx>],
    ) -> Result<BasicValueEnum<'ctx>> {
        let arg_types: Vec<_> = args.iter().map(|a| a.get_type().into()).collect();
        let fn_ty = ret.fn_type(&arg_types, false);
        let asm = self.context.create_inline_asm(
            fn_ty,
            text.into(),
            constraints.into(),
            false,
            false,
            None,
            false,
        );
        let operands: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        let call = self
            .builder
            .build_indirect_call(fn_ty, asm, &operands, "")
            .llvm()?;
        match call.try_as_basic_value() {
            ValueKind::Basic(v) => Ok(v),
            ValueKind::Instruction(_) => bug(format_args!("a value from `{text}`")),
        }
    }

    /// `zext(x) * zext(y)` at twice the width, remembered for a later `mul` of `x` and `y` in
    /// the same block (see `wide_products`).
    fn wide_product(&self, x: IntValue<'ctx>, y: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        let b = &self.builder;
        let block = b.get_insert_block().or_bug("an insertion block");
        let wide = if x.get_type().get_bit_width() == 32 {
            self.context.i64_type()
        } else {
            self.context.i128_type()
        };
        let xw = b.build_int_z_extend(x, wide, "").llvm()?;
        let yw = b.build_int_z_extend(y, wide, "").llvm()?;
        let p = b.build_int_mul(xw, yw, "").llvm()?;
        self.wide_products.borrow_mut().insert((block, x, y), p);
        Ok(p)
    }

    /// The double-width product of `x` and `y` (either order) made in the current block.
    fn known_wide_product(&self, x: IntValue<'ctx>, y: IntValue<'ctx>) -> Option<IntValue<'ctx>> {
        let block = self.builder.get_insert_block()?;
        let known = self.wide_products.borrow();
        known
            .get(&(block, x, y))
            .or_else(|| known.get(&(block, y, x)))
            .copied()
    }

    /// `op` on integers, `unsigned` choosing how division, remainder, `min`/`max` and `>>` read
    /// the bits.
    fn int_binary(
        &self,
        op: BinOp,
        x: IntValue<'ctx>,
        y: IntValue<'ctx>,
        nsw: bool,
        unsigned: bool,
    ) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.builder;
        let ty = x.get_type();
        let v = match op {
            BinOp::Add if nsw => b.build_int_nsw_add(x, y, "").llvm()?,
            BinOp::Sub if nsw => b.build_int_nsw_sub(x, y, "").llvm()?,
            BinOp::Mul if nsw => b.build_int_nsw_mul(x, y, "").llvm()?,
            BinOp::Add => b.build_int_add(x, y, "").llvm()?,
            BinOp::Sub => b.build_int_sub(x, y, "").llvm()?,
            BinOp::Mul => match self.known_wide_product(x, y) {
                // The low half of the product `umulhi` already made: one `mul.wide`.
                Some(p) => b.build_int_truncate(p, ty, "").llvm()?,
                None => b.build_int_mul(x, y, "").llvm()?,
            },
            BinOp::UMulHi => {
                // Zero-extended to twice the width, multiplied, the high half: `mul.hi.u32`
                // (or, with a `mul` of the same operands after it, `mul.wide.u32`).
                let bits = ty.get_bit_width();
                let p = self.wide_product(x, y)?;
                let wide = p.get_type();
                let hi = b
                    .build_right_shift(p, wide.const_int(u64::from(bits), false), false, "")
                    .llvm()?;
                b.build_int_truncate(hi, ty, "").llvm()?
            }
            BinOp::Div | BinOp::Rem if unsigned => {
                // Total division: x / 0 = 0, x % 0 = 0; the hardware divisor is 1 there.
                let zero = ty.const_zero();
                let is_zero = b.build_int_compare(IntPredicate::EQ, y, zero, "").llvm()?;
                let divisor = int(b
                    .build_select(is_zero, ty.const_int(1, false), y, "")
                    .llvm()?);
                if op == BinOp::Rem {
                    // x % 1 = 0.
                    b.build_int_unsigned_rem(x, divisor, "").llvm()?
                } else {
                    let q = b.build_int_unsigned_div(x, divisor, "").llvm()?;
                    int(b.build_select(is_zero, zero, q, "").llvm()?)
                }
            }
            BinOp::Shl | BinOp::Shr => {
                // LLVM's shifts by the width or more are poison; PTX's clamp the amount, which
                // is `BinOp`'s definition: a shift by `min(amount, width)` read as unsigned,
                // where a logical shift by the width gives 0 and an arithmetic one the sign.
                let width = ty.const_int(u64::from(ty.get_bit_width()), false);
                let past = b
                    .build_int_compare(IntPredicate::UGE, y, width, "")
                    .llvm()?;
                let last = ty.const_int(u64::from(ty.get_bit_width() - 1), false);
                let amount = int(b.build_select(past, last, y, "").llvm()?);
                if op == BinOp::Shr && !unsigned {
                    // A shift by width − 1 already gives the sign in every bit.
                    b.build_right_shift(x, amount, true, "").llvm()?
                } else {
                    let v = if op == BinOp::Shl {
                        b.build_left_shift(x, amount, "").llvm()?
                    } else {
                        b.build_right_shift(x, amount, false, "").llvm()?
                    };
                    int(b.build_select(past, ty.const_zero(), v, "").llvm()?)
                }
            }
            BinOp::Div | BinOp::Rem => {
                // Total division: x / 0 = 0, x % 0 = 0, MIN / -1 = MIN (wrapping), MIN % -1 = 0.
                // The hardware divisor is 1 where the IR's is 0 or -1, so sdiv/srem never trap.
                let zero = ty.const_zero();
                let is_zero = b.build_int_compare(IntPredicate::EQ, y, zero, "").llvm()?;
                let is_m1 = b
                    .build_int_compare(IntPredicate::EQ, y, ty.const_all_ones(), "")
                    .llvm()?;
                let special = b.build_or(is_zero, is_m1, "").llvm()?;
                let divisor = int(b
                    .build_select(special, ty.const_int(1, false), y, "")
                    .llvm()?);
                if op == BinOp::Rem {
                    // x % 1 = 0 is already the answer for both special divisors.
                    b.build_int_signed_rem(x, divisor, "").llvm()?
                } else {
                    let q = b.build_int_signed_div(x, divisor, "").llvm()?;
                    let neg = b.build_int_sub(zero, x, "").llvm()?;
                    let q = int(b.build_select(is_m1, neg, q, "").llvm()?);
                    int(b.build_select(is_zero, zero, q, "").llvm()?)
                }
            }
            BinOp::Min | BinOp::Max => {
                let name = match (op == BinOp::Min, unsigned) {
                    (true, false) => "llvm.smin",
                    (false, false) => "llvm.smax",
                    (true, true) => "llvm.umin",
                    (false, true) => "llvm.umax",
                };
                return self.intrinsic(name, &[ty.into()], &[x.into(), y.into()]);
            }
            BinOp::And => b.build_and(x, y, "").llvm()?,
            BinOp::Or => b.build_or(x, y, "").llvm()?,
            BinOp::Xor => b.build_xor(x, y, "").llvm()?,
        };
        Ok(v.into())
    }

    fn cmp(
        &self,
        p: CmpPred,
        d: DType,
        x: BasicValueEnum<'ctx>,
        y: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.builder;
        if d.is_float() {
            let pred = match p {
                CmpPred::Lt => FloatPredicate::OLT,
                CmpPred::Le => FloatPredicate::OLE,
                CmpPred::Gt => FloatPredicate::OGT,
                CmpPred::Ge => FloatPredicate::OGE,
                CmpPred::Eq => FloatPredicate::OEQ,
                // `!=` is true when either side is NaN.
                CmpPred::Ne => FloatPredicate::UNE,
            };
            return Ok(b
                .build_float_compare(pred, float(x), float(y), "")
                .llvm()?
                .into());
        }
        // Booleans order false < true, so they compare unsigned.
        let signed = !d.is_unsigned();
        let pred = match (p, signed) {
            (CmpPred::Lt, true) => IntPredicate::SLT,
            (CmpPred::Le, true) => IntPredicate::SLE,
            (CmpPred::Gt, true) => IntPredicate::SGT,
            (CmpPred::Ge, true) => IntPredicate::SGE,
            (CmpPred::Lt, false) => IntPredicate::ULT,
            (CmpPred::Le, false) => IntPredicate::ULE,
            (CmpPred::Gt, false) => IntPredicate::UGT,
            (CmpPred::Ge, false) => IntPredicate::UGE,
            (CmpPred::Eq, _) => IntPredicate::EQ,
            (CmpPred::Ne, _) => IntPredicate::NE,
        };
        Ok(b.build_int_compare(pred, int(x), int(y), "").llvm()?.into())
    }

    fn unary(&self, op: UnOp, d: DType, x: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.builder;
        match (op, d.is_float()) {
            (UnOp::Neg, true) => Ok(b.build_float_neg(float(x), "").llvm()?.into()),
            (UnOp::Neg, false) => {
                let x = int(x);
                Ok(b.build_int_sub(x.get_type().const_zero(), x, "")
                    .llvm()?
                    .into())
            }
            // xor with all ones: bitwise not, and logical not for i1.
            (UnOp::Not, false) => Ok(b.build_not(int(x), "").llvm()?.into()),
            (UnOp::Not, true) => bug("integers for `not`"),
        }
    }

    fn addptr(
        &self,
        pointee: DType,
        p: BasicValueEnum<'ctx>,
        off: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.builder;
        let off = int(off);
        let i64_ty = self.context.i64_type();
        let off = if off.get_type().get_bit_width() < 64 {
            b.build_int_s_extend(off, i64_ty, "").llvm()?
        } else {
            off
        };
        let elem = memory_type(self.context, pointee);
        // SAFETY: a GEP with one index over an element type only computes an address
        // (`p + off * sizeof(elem)`, no `inbounds`), so it cannot create undefined behaviour by
        // itself; the index is an i64 integer and `elem` a sized type, as LLVM requires.
        let q = unsafe { b.build_gep(elem, pointer(p), &[off], "") }.llvm()?;
        Ok(q.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state the verifier rules out, met while lowering an op, is an internal error at that
    /// op (by id), saying what was expected: not a panic out of the back end.
    #[test]
    fn a_bug_is_an_internal_error_at_the_op() {
        let mut f = tile_core::ir::parse(
            "kernel @k(%x: ptr<f32>) attributes {num_warps = 4} {
  %0 = constant 1.0 : f32
  store %x, %0
  return
}",
        )
        .unwrap();
        tile_core::ir::verify(&f).unwrap();
        // The store loses its value: the kernel no longer verifies, and the lowering (which
        // relies on the verifier) meets the missing operand.
        let store = f.walk()[1];
        f.ops[store.index()].operands.truncate(1);
        let context = Context::create();
        let module = context.create_module("k");
        let analyses = Analyses::of(&f, super::super::scratch_bytes);
        let e = lower_kernel(&context, &module, &f, &analyses, None).unwrap_err();
        assert!(e.internal, "{e:?}");
        assert_eq!(e.op, Some(store));
        assert_eq!(
            e.msg,
            format!("{store} `store`: internal error: expected an operand 1 of `store`")
        );
    }

    /// Tile-level IR (no layouts) is refused at the first op with a tensor: a limit of the
    /// back end, not a bug.
    #[test]
    fn tile_level_ir_is_refused_not_a_bug() {
        let f = tile_core::ir::parse(
            "kernel @k(%x: ptr<f32>) attributes {num_warps = 4} {
  %0 = constant 1.0 : f32
  %1 = splat %0 : tensor<128xf32>
  return
}",
        )
        .unwrap();
        let context = Context::create();
        let module = context.create_module("k");
        let analyses = Analyses::of(&f, super::super::scratch_bytes);
        let e = lower_kernel(&context, &module, &f, &analyses, None).unwrap_err();
        assert!(!e.internal, "{e:?}");
        assert!(
            e.msg
                .starts_with("op1 `splat`: `tensor<128xf32>` has no layout"),
            "{}",
            e.msg
        );
    }
}
