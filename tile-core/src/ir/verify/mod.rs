//! The verifier: the one place that states what a well-formed kernel is. Passes may assume it of
//! their input and must keep it; the interpreter and the LLVM lowering rely on it, so after
//! [`verify`] succeeds their lookups cannot fail.
//!
//! Invariants (each has a negative test in `tile-core/tests/verifier.rs`):
//!
//! 1. **dominance** — every operand is defined before its use: a kernel parameter, a block
//!    argument or op result of an enclosing loop body, or the result of an earlier op of the same
//!    block or of a block enclosing it.
//!    → `mod.rs`: `check_block`.
//! 2. **operands** — each op has the number of operands its kind takes (`load`: 1 or 3, `store`:
//!    2 or 3, others fixed), and the number of results its kind defines.
//!    → `mod.rs`: `check_block` (results, regions) and `takes` (operands).
//! 3. **shapes** — a tensor type has rank 1 to 4, each dimension a power of two; scalars have no
//!    layout.
//!    → `types.rs`: `check_type`.
//! 4. **layouts** — either no tensor has a layout (tile level) or every tensor has one (GPU level);
//!    a layout has the tensor's rank and spreads over `num_warps` warps; a blocked layout has 32
//!    threads per warp in all, nonzero `spt` and an `order` that is a permutation; a slice
//!    layout's parent is a layout of rank one more, and its `dim` is below that rank; an mma
//!    layout is version 2 over 2-D tensors; an operand layout's parent is an mma layout, its index
//!    0 or 1, its `k_width` 1, 2 or 4; a linear layout has the tensor's rank and extents at least
//!    the tensor's, powers of two. The layout's linear map ([`super::LinearLayout::check`])
//!    reaches every element, never holds one element twice in one thread pattern, and gives every
//!    register its own element.
//!    → `mod.rs`: `kernel` (all or none); `types.rs`: `check_type`, `layout_structure`,
//!    `layout_fields`.
//! 5. **elementwise** — `binary`, `unary`, `select` and `cmp` operands have one type (shape,
//!    element, layout) and so does the result (`i1` for `cmp`, the mask of `select` is `i1` of the
//!    same shape); bitwise ops take integers or booleans, shifts 32- and 64-bit integers,
//!    arithmetic only 32- and 64-bit integers, f32 and f64; `neg` and `cmp` do not take the 8-bit
//!    floats.
//!    → `elementwise.rs`: `binary`, `unary`, `cmp`, `select`.
//! 6. **constant** — a scalar number whose value suits its type (integers for integer types, floats
//!    for the float types, the 8-bit ones included; 0 or 1
//!    for `i1`, within the type's range for the narrower integers; a `u64` may be given by its
//!    two's-complement `i64` bits).
//!    → `elementwise.rs`: `constant`.
//! 7. **program_id / num_programs** — axis 0, 1 or 2; result `i32`.
//!    → `elementwise.rs`: `grid_index`.
//! 8. **arange** — `end > start`, result `tensor<(end-start) x i32>`.
//!    → `elementwise.rs`: `arange`.
//! 9. **splat** — a scalar operand, a tensor result of the same element type.
//!    → `elementwise.rs`: `splat`.
//! 10. **addptr** — a pointer (scalar or tensor) plus an integer offset of the same shape; the
//!     result has the pointer's type.
//!     → `elementwise.rs`: `addptr`.
//! 11. **load / store** — a pointer operand; the value has the pointee element type and the
//!     pointer's shape; a mask is `i1` of that shape; `other` has the value's type; `vec` is a power
//!     of two that divides the elements each thread holds contiguously (or those span the whole
//!     dimension: the access narrows to the extent).
//!     → `memory.rs`: `load`, `store`, `mask`, `vec`.
//! 12. **return** — exactly one, the last op of the kernel's body, without operands; the body is
//!     one block.
//!     → `mod.rs`: `kernel`, `check_block`; `control.rs`: `kernel_return`.
//! 13. **kernel** — `num_warps` is a power of two from 1 to 32; parameters are scalars (numbers or
//!     pointers), one name and one set of facts each, divisibility a power of two. A `target`
//!     needs no rule: its type, [`crate::Target`], holds only the targets tile builds.
//!     → `mod.rs`: `kernel`.
//! 14. **math** — a float math function takes its arity's operands of one `f32` type (also
//!     integers for `abs`, and `f64` for `sqrt`, `abs`, `floor`, `ceil` and `fma`), and the
//!     result has that type.
//!     → `elementwise.rs`: `math`.
//! 15. **cast** — one numeric operand; the result has its shape and layout and a numeric element
//!     type. **bitcast** — the same, between non-boolean numbers of one width. **int_to_ptr** —
//!     an `i64` or `u64` operand; the result is pointers of its shape and layout.
//!     → `elementwise.rs`: `cast`, `bitcast`, `int_to_ptr`.
//! 16. **reduce** — a tensor of a 32- or 64-bit integer type or `f32`, `axis` below its rank; the result is the
//!     operand without that dimension (a scalar for rank 1); at the GPU level a tensor result's
//!     layout is the operand's layout sliced at `axis`.
//!     → `reduce.rs`: `reduce`.
//! 17. **expand_dims** — a tensor operand, `axis` at most its rank, rank 2 at most after it; the
//!     result is the operand with an extent-1 dimension inserted at `axis`, of the same element
//!     type; at the GPU level the operand's layout is the result's layout sliced at `axis`.
//!     → `shape.rs`: `expand_dims`.
//! 18. **broadcast** — a tensor operand of the result's rank and element type whose every
//!     dimension is 1 or the result's; one layout for both.
//!     → `shape.rs`: `broadcast`.
//! 19. **convert_layout** — GPU level only: the operand and the result differ only in layout.
//!     → `shape.rs`: `convert_layout`.
//! 20. **for** — operands: `i32` lower bound, upper bound and step, then the carried values'
//!     initial values; one result per carried value, of its type; one region of one block whose
//!     arguments are the `i32` induction variable and the carried values, ending with `yield` of
//!     one value per carried value, of its type. Values defined in the body are not used after
//!     the loop (dominance, rule 1); `for` owns one region, `if` two, other ops none.
//!     → `control.rs`: `for_loop`; `mod.rs`: `check_block` (regions).
//! 21. **yield** — only as the last op of a loop body, a `while`'s condition, a branch of an
//!     `if` or a combiner.
//!     → `mod.rs`: `check_block`.
//! 22. **dot** — `a` is `M × K` and `b` is `K × N`, both of one element type (`f32`, `f16`,
//!     `bf16` or `i8`) or both 8-bit floats (`f8e4m3`, `f8e5m2`, the two may differ); `acc` and
//!     the result are `M × N` `f32` (`i32` for `i8`) of one layout; `precision = tf32` only with
//!     `f32` operands. At the GPU level, when that layout is mma (tensor cores), the operands are
//!     `f16` or `bf16` (`k_width` 2), `i8` or 8-bit floats (`k_width` 4), or
//!     `f32` with `precision = tf32` (`k_width` 1), in the operand layouts of that parent (index
//!     0 for `a`, 1 for `b`).
//!     → `dot.rs`: `dot`.
//! 23. **if** — one `i1` scalar operand; two regions (then, else) of one block without
//!     arguments, each ending with `yield` of one value per result, of its type.
//!     → `control.rs`: `if_else`.
//! 24. **roll** — a tensor operand, `axis` below its rank, `shift` below the extent of `axis`; the
//!     result has the operand's type, layout included.
//!     → `shape.rs`: `roll`.
//! 25. **shared memory** — GPU level only. An `smem<S x R x C x T, #shared…>` type has rank 3,
//!     `S` ≥ 1 stages (any count), `R` and `C` powers of two, a number element type, `vec` elements
//!     of 16 or 32 bytes, `per_phase` and `max_phase` powers of two with `max_phase · vec ≤ C`; no other
//!     value has a `#shared` layout. `local_alloc` has no operands and an `smem` result.
//!     `async_copy %buf, %stage, %ptr[, %mask]`: an `smem` buffer, an `i32` scalar stage, an
//!     `R × C` pointer tensor to `T` (the buffer's tile) and an `i1` mask of its shape; `vec` is a
//!     power of two dividing the pointer's contiguous run with `vec · size(T)` of 4, 8 or 16 bytes
//!     (or `vec` = 1). `local_load %buf, %stage` yields an `R × C` tensor of `T` in an mma operand
//!     layout: `T` f16 or bf16 with `k_width` 2, i8 with `k_width` 4 (`A` as stored, `B` only
//!     `{trans = true}`), or f32 (tf32) with `k_width` 1; or the whole stage, as stored, in a
//!     blocked or mma layout (a side ring read back where its load was). `async_commit`,
//!     `async_wait`, `barrier` and `fence_async_shared` take no operands.
//!     → `types.rs`: `check_shared_type`; `shared.rs`.
//! 26. **atomics** — `atomic_rmw %ptr, %value[, %mask]` and `atomic_cas %ptr, %cmp, %value[,
//!     %mask]`: a pointer operand whose pointee the update takes ([`super::AtomicOp::takes`],
//!     [`super::atomic_cas_takes`]); the values and the result have the pointee element type and
//!     the pointer's shape; a mask is `i1` of that shape.
//!     → `memory.rs`: `atomic_rmw`, `atomic_cas`, `atomic`.
//! 27. **scan** — a tensor of `i32`, `i64` or `f32`, `axis` below its rank; the result has the
//!     operand's type.
//!     → `reduce.rs`: `scan`.
//! 28. **warp_group_dot / warp_group_wait** — GPU level only. `warp_group_dot %a, %a_stage, %b,
//!     %b_stage, %acc` (`A` in shared memory) or `warp_group_dot %a, %b, %b_stage, %acc` (`A` in
//!     registers, in the `A` operand layout of the accumulator's mma layout): `smem` buffers with
//!     `i32` stages, f16 or bf16 `M × K` (`K × M` with `trans_a`) and `K × N` (`N × K` with `trans_b`) operands of one type, or 8-bit
//!     float operands (either kind) or `i8` ones read K-major only (`trans_b`, no `trans_a`),
//!     stages in their `wgmma` layouts, an `M × N` f32 accumulator (`i32` for `i8`) in an mma
//!     layout of version 3, and a result of
//!     the accumulator's type; `warp_group_wait` takes such an accumulator and yields its type.
//!     → `dot.rs`: `warp_group_dot`, `warp_group_wait`.
//! 29. **hint** — one integer operand (a tensor, or a scalar); the result has its type; `multiple_of` and
//!     `contiguous` are powers of two.
//!     → `elementwise.rs`: `hint`.
//! 30. **trans** — one 2-D tensor operand `M × N`; the result is `N × M` of its element type. At
//!     the GPU level the result's layout places each element where the operand's layout places
//!     its transposed element ([`super::Layout::transposed`]), a thread's registers at most
//!     renumbered: no data moves.
//!     → `shape.rs`: `trans`.
//! 31. **reshape** — one tensor operand; the result is a tensor of rank 2 at most with the same
//!     element type and count. At the GPU level the result's layout places each element where
//!     the operand's layout places the element of the same row-major index
//!     ([`super::Layout::reshaped`]), a thread's registers at most renumbered.
//!     → `shape.rs`: `reshape`.
//! 32. **gather** — a tensor `src` and an `i32` tensor `index` of its rank whose extents equal
//!     `src`'s except along `axis`, which is below the rank; the result has `index`'s shape and
//!     layout and `src`'s element type (`src` may have any layout of its shape).
//!     → `gather.rs`: `gather`.
//! 33. **desc_load / desc_store** — `slot` below the kernel's `descriptors`; the tile (the
//!     load's result, the store's last operand) is a tensor of rank 1 or 2, and the op takes
//!     `1 + 3 · rank` operands before it: a scalar pointer to the tile's element type, then
//!     per dimension an `i64` extent, then an `i64` stride, then an `i32` coordinate (scalars).
//!     → `memory.rs`: `desc_access`.
//! 35. **mbarriers and tma_load** — GPU level only. A barrier buffer is `smem<S x 1 x 2 x i64>`
//!     (one 16-byte stage per barrier object). `mbarrier_init %bars` and `mbarrier_inval %bars`
//!     take one; `mbarrier_expect {bytes} %bars, %stage, %pred` an `i32` stage, an `i1` scalar
//!     and `bytes` > 0; `mbarrier_wait %bars, %stage, %phase` an `i32` stage and phase. `tma_load
//!     {slot} %buf, %stage, %bars, %pred, %row, %col`: an `smem` buffer of f16, bf16 or an 8-bit float whose
//!     column blocks are 32, 64 or 128 bytes wide, an `i32` stage, a barrier buffer, an `i1`
//!     scalar, `i32` coordinates, and `slot` below the kernel's descriptor slots.
//!     → `tma.rs`.
//! 36. **associative_scan** — one or more tensors of one shape and layout, each of a 32- or
//!     64-bit integer type or `f32`, `axis` below their rank; one result of each operand's type;
//!     one region of one block whose arguments are two tuples of scalars of the operands'
//!     element types (earlier, then later), holding only element-wise ops (`constant`, `binary`,
//!     `unary`, `cmp`, `select`, `math`, `cast`, `bitcast`) on scalar numbers, which may be
//!     defined before the op, and ending with `yield` of one scalar of each element type.
//!     → `reduce.rs`: `associative_scan`.
//! 37. **interleave / deinterleave** — `interleave %a, %b`: two tensors of one type (layout
//!     included); the result has their element type and shape with the last extent doubled,
//!     rank 2 at most. `deinterleave %x`: one tensor whose last extent is even; two results of
//!     its element type and shape with the last extent halved, of one type. At the GPU level
//!     the interleaved tensor's layout is the halves' with every basis doubled and the pair's
//!     basis in registers ([`super::Layout::interleaved`]), a thread's registers at most
//!     renumbered: no data moves.
//!     → `shape.rs`: `interleave`, `deinterleave`.
//! 38. **while** — operands: the carried values' initial values; one result per carried value,
//!     of its type; two regions (condition, body) of one block each, whose arguments are the
//!     carried values; the condition ends with `yield` of one `i1` scalar, the body with `yield`
//!     of one value per carried value, of its type. Values of one region are not used in the
//!     other or after the loop (dominance, rule 1). `debug_barrier` takes no operands.
//!     → `control.rs`: `while_loop`.
//!
//! Each family of ops has its rule functions in one file of this folder (methods of one
//! `Verifier`), which `check_op` dispatches to by an exhaustive match on [`OpKind`]. An error
//! names the op by its id ([`OpId`]), carries its source location ([`OpData::loc`]) and quotes
//! the op's line as the printer writes it, every layout spelled out.

mod control;
mod dot;
mod elementwise;
mod gather;
mod memory;
mod reduce;
mod shape;
mod shared;
mod tma;
mod types;

use std::fmt;

use super::function::{BlockId, Function, OpData, OpId, ValueDef, ValueId};
use super::ops::OpKind;
use super::print::OpPrinter;
use super::types::Type;

/// One broken invariant, located at an op (or at the kernel when `op` is `None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The offending op.
    pub op: Option<OpId>,
    /// The op's source location ([`OpData::loc`]), where it has one.
    pub loc: Option<u32>,
    /// The op's line as the printer writes it (every layout spelled out); empty for the kernel.
    pub op_text: String,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.op {
            Some(op) => write!(f, "{op} `{}`: {}", self.op_text, self.msg),
            None => write!(f, "kernel: {}", self.msg),
        }
    }
}

/// All errors found in one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyErrors(pub Vec<VerifyError>);

impl fmt::Display for VerifyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for VerifyErrors {}

/// Checks every invariant listed in the module documentation; returns all violations.
pub fn verify(f: &Function) -> Result<(), VerifyErrors> {
    let mut v = Verifier {
        f,
        errors: Vec::new(),
    };
    v.kernel();
    if v.errors.is_empty() {
        return Ok(());
    }
    // The ops' lines, printed only now that some op is to blame.
    let mut printer = OpPrinter::new(f);
    let errors = v
        .errors
        .into_iter()
        .map(|(op, msg)| VerifyError {
            op,
            loc: op.and_then(|o| f.op(o).loc),
            op_text: op.map(|o| printer.line(o)).unwrap_or_default(),
            msg,
        })
        .collect();
    Err(VerifyErrors(errors))
}

/// The state of one run: the kernel and what is wrong with it so far (the op to blame, or
/// `None` for the kernel, and the message).
struct Verifier<'a> {
    f: &'a Function,
    errors: Vec<(Option<OpId>, String)>,
}

/// The op a rule function checks.
struct Op<'a> {
    /// Its id, which errors name.
    id: OpId,
    /// Its data.
    data: &'a OpData,
    /// Its operands.
    ops: &'a [ValueId],
    /// The type of its first result, where it has one.
    res: Option<Type>,
}

impl Verifier<'_> {
    fn kernel_err(&mut self, msg: String) {
        self.errors.push((None, msg));
    }

    fn err(&mut self, op: OpId, msg: String) {
        self.errors.push((Some(op), msg));
    }

    fn ty(&self, v: ValueId) -> &Type {
        self.f.ty(v)
    }

    /// Rule 2 for `o`: whether it has one of the operand counts its kind takes (else an error).
    fn takes(&mut self, o: &Op<'_>, counts: &[usize]) -> bool {
        if counts.contains(&o.ops.len()) {
            return true;
        }
        let n: Vec<String> = counts.iter().map(usize::to_string).collect();
        self.err(
            o.id,
            format!(
                "`{}` takes {} operand(s), found {}",
                o.data.kind.name(),
                n.join(" or "),
                o.ops.len()
            ),
        );
        false
    }

    /// The kernel as a whole (rules 4, 12 and 13), then its body.
    fn kernel(&mut self) {
        let f = self.f;
        if !(1..=32).contains(&f.num_warps) || !f.num_warps.is_power_of_two() {
            self.kernel_err(format!(
                "num_warps = {} is not a power of two from 1 to 32",
                f.num_warps
            ));
        }
        if f.param_names.len() != f.params().len() || f.param_attrs.len() != f.params().len() {
            self.kernel_err("parameter names or facts do not match the parameters".into());
        }
        for (i, &p) in f.params().iter().enumerate() {
            if f.ty(p).is_tensor() {
                self.kernel_err(format!(
                    "parameter #{i} is a tensor; parameters are scalars or pointers"
                ));
            }
            if let Some(a) = f.param_attrs.get(i) {
                if a.divisibility == 0 || !a.divisibility.is_power_of_two() {
                    self.kernel_err(format!(
                        "parameter #{i} has divisibility {}, not a power of two",
                        a.divisibility
                    ));
                }
            }
        }

        // Layout level: all tensors with a layout, or none.
        let mut with = 0;
        let mut without = 0;
        for val in &f.values {
            if val.ty.is_tensor() {
                if val.ty.layout.is_some() {
                    with += 1;
                } else {
                    without += 1;
                }
            }
        }
        if with > 0 && without > 0 {
            self.kernel_err(format!(
                "{with} tensor values have a layout and {without} do not; a kernel is either at the tile level (none) or the GPU level (all)"
            ));
        }

        let mut defined: Vec<bool> = vec![false; f.values.len()];
        for &p in f.params() {
            defined[p.index()] = true;
        }
        let body_ops = &f.blocks[f.entry().index()].ops;
        if f.regions[f.body.index()].blocks.len() != 1 {
            self.kernel_err("the kernel's body must have exactly one block".into());
        }
        self.check_block(f.entry(), &mut defined);
        if !body_ops
            .last()
            .is_some_and(|&op| matches!(f.op(op).kind, OpKind::Return))
        {
            self.kernel_err("the kernel's body does not end with `return`".into());
        }
    }

    /// Checks the ops of `block` in order (and the regions they own); `defined` holds the values
    /// in scope, and what a region defines leaves the scope with it.
    fn check_block(&mut self, block: BlockId, defined: &mut Vec<bool>) {
        let f = self.f;
        let body_ops = &f.blocks[f.entry().index()].ops;
        for &op in &f.blocks[block.index()].ops {
            let data = f.op(op);
            for (i, &o) in data.operands.iter().enumerate() {
                if o.index() >= f.values.len() || !defined[o.index()] {
                    self.err(op, format!("operand #{i} is used before it is defined"));
                }
            }
            if let Some(n) = data.kind.num_results() {
                if data.results.len() != n {
                    self.err(
                        op,
                        format!(
                            "`{}` defines {n} result(s), found {}",
                            data.kind.name(),
                            data.results.len()
                        ),
                    );
                }
            }
            if matches!(data.kind, OpKind::Return) && body_ops.last() != Some(&op) {
                self.err(
                    op,
                    "`return` must be the last op of the kernel's body".into(),
                );
            }
            if matches!(data.kind, OpKind::Yield) {
                let last_of_loop =
                    f.blocks[block.index()].ops.last() == Some(&op) && block != f.entry();
                if !last_of_loop {
                    self.err(
                        op,
                        "`yield` must be the last op of a loop body, a branch or a combiner".into(),
                    );
                }
            }
            let regions = data.kind.num_regions();
            if data.regions.len() != regions {
                self.err(
                    op,
                    format!(
                        "`{}` owns {} region(s), not {regions} (`for` and `associative_scan` own one, `while` and `if` two, others none)",
                        data.kind.name(),
                        data.regions.len()
                    ),
                );
            }
            // Operand errors already reported; typing would only cascade.
            if data.operands.iter().all(|o| o.index() < f.values.len()) {
                self.check_op(op);
            }
            for &r in &data.regions {
                let blocks = &f.regions[r.index()].blocks;
                if blocks.len() != 1 {
                    self.err(op, "a region must have exactly one block".into());
                }
                for &b in blocks {
                    let before = defined.clone();
                    for &a in &f.blocks[b.index()].args {
                        let ty = f.ty(a).clone();
                        self.check_type(op, &ty);
                        defined[a.index()] = true;
                    }
                    self.check_block(b, defined);
                    // Values of the region are not visible after it.
                    *defined = before;
                }
            }
            for (i, &r) in data.results.iter().enumerate() {
                if f.values[r.index()].def != ValueDef::OpResult(op, i as u32) {
                    self.err(op, "a result does not point back at its op".into());
                }
                let ty = f.ty(r).clone();
                self.check_type(op, &ty);
                defined[r.index()] = true;
            }
        }
    }

    /// The rules of `op`'s kind: one rule function per kind (or per family of kinds that share
    /// their rules), in the file of its family.
    fn check_op(&mut self, op: OpId) {
        let f = self.f;
        let data = f.op(op);
        let o = Op {
            id: op,
            data,
            ops: &data.operands,
            res: data.results.first().map(|&r| f.ty(r).clone()),
        };
        let o = &o;
        match &data.kind {
            OpKind::Constant(c) => self.constant(o, c),
            OpKind::ProgramId { axis } | OpKind::NumPrograms { axis } => self.grid_index(o, axis),
            OpKind::Arange { start, end } => self.arange(o, start, end),
            OpKind::Splat => self.splat(o),
            OpKind::Binary(b) => self.binary(o, b),
            OpKind::Unary(u) => self.unary(o, u),
            OpKind::Cmp(_) => self.cmp(o),
            OpKind::Select => self.select(o),
            OpKind::AddPtr => self.addptr(o),
            OpKind::Hint {
                multiple_of,
                contiguous,
            } => self.hint(o, *multiple_of, *contiguous),
            OpKind::Math(m) => self.math(o, m),
            OpKind::Cast => self.cast(o),
            OpKind::Bitcast => self.bitcast(o),
            OpKind::IntToPtr => self.int_to_ptr(o),
            OpKind::Load { vec, .. } => self.load(o, vec),
            OpKind::Store { vec, .. } => self.store(o, vec),
            OpKind::AtomicRmw { op: a, .. } => self.atomic_rmw(o, a),
            OpKind::AtomicCas { .. } => self.atomic_cas(o),
            OpKind::Reduce { axis, .. } => self.reduce(o, axis),
            OpKind::Scan { axis, .. } => self.scan(o, axis),
            OpKind::AssociativeScan { axis, .. } => self.associative_scan(o, axis),
            OpKind::ExpandDims { axis } => self.expand_dims(o, axis),
            OpKind::Broadcast => self.broadcast(o),
            OpKind::Trans => self.trans(o),
            OpKind::Reshape => self.reshape(o),
            OpKind::Interleave => self.interleave(o),
            OpKind::Deinterleave => self.deinterleave(o),
            OpKind::ConvertLayout => self.convert_layout(o),
            OpKind::Roll { axis, shift } => self.roll(o, axis, shift),
            OpKind::Gather { axis } => self.gather(o, axis),
            OpKind::Dot { precision } => self.dot(o, precision),
            OpKind::WarpGroupDot { trans_a, trans_b } => self.warp_group_dot(o, *trans_a, *trans_b),
            OpKind::WarpGroupWait { .. } => self.warp_group_wait(o),
            OpKind::For => self.for_loop(o),
            OpKind::While => self.while_loop(o),
            OpKind::If => self.if_else(o),
            // Where it sits, and what it yields, are checked with the block and the loop or
            // branch that it ends.
            OpKind::Yield => {}
            OpKind::Return => self.kernel_return(o),
            OpKind::LocalAlloc => self.local_alloc(o),
            OpKind::AsyncCopy { vec } => self.async_copy(o, vec),
            OpKind::LocalLoad { offset, trans } => self.local_load(o, offset, *trans),
            OpKind::AsyncCommit
            | OpKind::AsyncWait { .. }
            | OpKind::Barrier
            | OpKind::DebugBarrier
            | OpKind::FenceAsyncShared => self.no_operands(o),
            OpKind::DescLoad { slot } => self.desc_access(o, *slot, false),
            OpKind::DescStore { slot } => self.desc_access(o, *slot, true),
            OpKind::MbarrierInit | OpKind::MbarrierInval => self.mbarrier_whole(o),
            OpKind::MbarrierExpect { bytes } => self.mbarrier_stage(o, Some(*bytes)),
            OpKind::MbarrierWait => self.mbarrier_stage(o, None),
            OpKind::TmaLoad { slot } => self.tma_load(o, *slot),
        }
    }
}
