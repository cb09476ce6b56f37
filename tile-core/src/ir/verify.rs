//! The verifier: the one place that states what a well-formed kernel is. Passes may assume it of
//! their input and must keep it; the interpreter and the LLVM lowering rely on it, so after
//! [`verify`] succeeds their lookups cannot fail.
//!
//! Invariants (each has a negative test in `tile-core/tests/verifier.rs`):
//!
//! 1. **dominance** — every operand is defined before its use: a kernel parameter, a block
//!    argument or op result of an enclosing loop body, or the result of an earlier op of the same
//!    block or of a block enclosing it.
//! 2. **operands** — each op has the number of operands its kind takes (`load`: 1 or 3, `store`:
//!    2 or 3, others fixed), and the number of results its kind defines.
//! 3. **shapes** — a tensor type has rank 1 to 4, each dimension a power of two; scalars have no
//!    layout.
//! 4. **layouts** — either no tensor has a layout (tile level) or every tensor has one (GPU level);
//!    a layout has the tensor's rank and spreads over `num_warps` warps; a blocked layout has 32
//!    threads per warp in all, nonzero `spt` and an `order` that is a permutation; a slice
//!    layout's parent is a layout of rank one more, and its `dim` is below that rank; an mma
//!    layout is version 2 over 2-D tensors; an operand layout's parent is an mma layout, its index
//!    0 or 1, its `k_width` 1 or 2. The layout's linear map ([`super::LinearLayout::check`])
//!    reaches every element, never holds one element twice in one thread pattern, and gives every
//!    register its own element.
//! 5. **elementwise** — `binary`, `unary`, `select` and `cmp` operands have one type (shape,
//!    element, layout) and so does the result (`i1` for `cmp`, the mask of `select` is `i1` of the
//!    same shape); bitwise ops take integers or booleans, arithmetic only i32, i64 and f32.
//! 6. **constant** — a scalar number whose value suits its type (integers for integer types, 0 or 1
//!    for `i1`, fitting in 32 bits for `i32`).
//! 7. **program_id / num_programs** — axis 0, 1 or 2; result `i32`.
//! 8. **arange** — `end > start`, result `tensor<(end-start) x i32>`.
//! 9. **splat** — a scalar operand, a tensor result of the same element type.
//! 10. **addptr** — a pointer (scalar or tensor) plus an integer offset of the same shape; the
//!     result has the pointer's type.
//! 11. **load / store** — a pointer operand; the value has the pointee element type and the
//!     pointer's shape; a mask is `i1` of that shape; `other` has the value's type; `vec` is a power
//!     of two that divides the elements each thread holds contiguously (or those span the whole
//!     dimension: the access narrows to the extent).
//! 12. **return** — exactly one, the last op of the kernel's body, without operands; the body is
//!     one block.
//! 13. **kernel** — `num_warps` is a power of two from 1 to 32; parameters are scalars (numbers or
//!     pointers), one name and one set of facts each, divisibility a power of two. A `target`
//!     needs no rule: its type, [`crate::Target`], holds only the targets tile builds.
//! 14. **math** — a float math function takes its arity's operands of one `f32` type (also
//!     integers for `abs`), and the result has that type.
//! 15. **cast** — one numeric operand; the result has its shape and layout and a numeric element
//!     type.
//! 16. **reduce** — a tensor of `i32`, `i64` or `f32`, `axis` below its rank; the result is the
//!     operand without that dimension (a scalar for rank 1); at the GPU level a tensor result's
//!     layout is the operand's layout sliced at `axis`.
//! 17. **expand_dims** — a tensor operand, `axis` at most its rank, rank 2 at most after it; the
//!     result is the operand with an extent-1 dimension inserted at `axis`, of the same element
//!     type; at the GPU level the operand's layout is the result's layout sliced at `axis`.
//! 18. **broadcast** — a tensor operand of the result's rank and element type whose every
//!     dimension is 1 or the result's; one layout for both.
//! 19. **convert_layout** — GPU level only: the operand and the result differ only in layout.
//! 20. **for** — operands: `i32` lower bound, upper bound and step, then the carried values'
//!     initial values; one result per carried value, of its type; one region of one block whose
//!     arguments are the `i32` induction variable and the carried values, ending with `yield` of
//!     one value per carried value, of its type. Values defined in the body are not used after
//!     the loop (dominance, rule 1); `for` owns one region, `if` two, other ops none.
//! 21. **yield** — only as the last op of a loop body or a branch of an `if`.
//! 22. **dot** — `a` is `M × K` and `b` is `K × N`, both of one element type (`f32`, `f16` or
//!     `bf16`); `acc` and the result are `M × N` `f32` of one layout; `precision = tf32` only
//!     with `f32` operands. At the GPU level, when that layout is mma (tensor cores), the operands
//!     are `f16` or `bf16` (`k_width` 2), or `f32` with `precision = tf32` (`k_width` 1), in the
//!     operand layouts of that parent (index 0 for `a`, 1 for `b`).
//! 23. **if** — one `i1` scalar operand; two regions (then, else) of one block without
//!     arguments, each ending with `yield` of one value per result, of its type.
//! 24. **roll** — a tensor operand, `axis` below its rank, `shift` below the extent of `axis`; the
//!     result has the operand's type, layout included.
//! 25. **shared memory** — GPU level only. An `smem<S x R x C x T, #shared…>` type has rank 3,
//!     `S` ≥ 1 stages (any count), `R` and `C` powers of two, a number element type, `vec` elements
//!     of 16 or 32 bytes, `per_phase` and `max_phase` powers of two with `max_phase · vec ≤ C`; no other
//!     value has a `#shared` layout. `local_alloc` has no operands and an `smem` result.
//!     `async_copy %buf, %stage, %ptr[, %mask]`: an `smem` buffer, an `i32` scalar stage, an
//!     `R × C` pointer tensor to `T` (the buffer's tile) and an `i1` mask of its shape; `vec` is a
//!     power of two dividing the pointer's contiguous run with `vec · size(T)` of 4, 8 or 16 bytes
//!     (or `vec` = 1). `local_load %buf, %stage` yields an `R × C` tensor of `T` in an mma operand
//!     layout: `T` f16 or bf16 with `k_width` 2, or f32 (tf32) with `k_width` 1. `async_commit`, `async_wait`, `barrier` take no operands.

use std::fmt;

use super::function::{BlockId, Function, OpId, ValueDef, ValueId};
use super::ops::{ConstValue, OpKind, Precision, UnOp};
use super::print::print_with;
use super::types::{DType, DotOperandLayout, Elem, Layout, Type};

/// One broken invariant, located at an op (or at the kernel when `op` is `None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The offending op, by its position in program order (0-based).
    pub op: Option<usize>,
    /// The op's text, for the message.
    pub op_text: String,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.op {
            Some(i) => write!(f, "op #{i} `{}`: {}", self.op_text, self.msg),
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
        op_lines: Vec::new(),
    };
    v.run();
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(VerifyErrors(v.errors))
    }
}

struct Verifier<'a> {
    f: &'a Function,
    errors: Vec<VerifyError>,
    op_lines: Vec<String>,
}

impl Verifier<'_> {
    fn kernel_err(&mut self, msg: String) {
        self.errors.push(VerifyError {
            op: None,
            op_text: String::new(),
            msg,
        });
    }

    fn err(&mut self, pos: usize, msg: String) {
        let op_text = self.op_lines.get(pos).cloned().unwrap_or_default();
        self.errors.push(VerifyError {
            op: Some(pos),
            op_text,
            msg,
        });
    }

    fn run(&mut self) {
        let f = self.f;
        // Op lines for messages: the printed body, one line per op, in program order.
        let text = print_with(f, false);
        self.op_lines = text
            .lines()
            .skip_while(|l| !l.starts_with("kernel @"))
            .skip(1)
            .map(str::trim)
            .filter(|l| !l.starts_with('^') && *l != "}")
            .map(str::to_string)
            .collect();

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
        let mut pos = 0;
        self.check_block(f.entry(), &mut pos, &mut defined);
        if !body_ops
            .last()
            .is_some_and(|&op| matches!(f.op(op).kind, OpKind::Return))
        {
            self.kernel_err("the kernel's body does not end with `return`".into());
        }
    }

    /// Checks the ops of `block` in order (and the regions they own), `pos` counting ops in
    /// program order; `defined` holds the values in scope, and what a region defines leaves the
    /// scope with it.
    fn check_block(&mut self, block: BlockId, pos: &mut usize, defined: &mut Vec<bool>) {
        let f = self.f;
        let body_ops = &f.blocks[f.entry().index()].ops;
        for &op in &f.blocks[block.index()].ops {
            let here = *pos;
            *pos += 1;
            let data = f.op(op);
            for (i, &o) in data.operands.iter().enumerate() {
                if o.index() >= f.values.len() || !defined[o.index()] {
                    self.err(here, format!("operand #{i} is used before it is defined"));
                }
            }
            if let Some(n) = data.kind.num_results() {
                if data.results.len() != n {
                    self.err(
                        here,
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
                    here,
                    "`return` must be the last op of the kernel's body".into(),
                );
            }
            if matches!(data.kind, OpKind::Yield) {
                let last_of_loop =
                    f.blocks[block.index()].ops.last() == Some(&op) && block != f.entry();
                if !last_of_loop {
                    self.err(
                        here,
                        "`yield` must be the last op of a loop body or a branch".into(),
                    );
                }
            }
            let regions = data.kind.num_regions();
            if data.regions.len() != regions {
                self.err(
                    here,
                    format!(
                        "`{}` owns {} region(s), not {regions} (`for` owns one, `if` two, others none)",
                        data.kind.name(),
                        data.regions.len()
                    ),
                );
            }
            // Operand errors already reported; typing would only cascade.
            if data.operands.iter().all(|o| o.index() < f.values.len()) {
                self.check_op(here, op);
            }
            for &r in &data.regions {
                let blocks = &f.regions[r.index()].blocks;
                if blocks.len() != 1 {
                    self.err(here, "a region must have exactly one block".into());
                }
                for &b in blocks {
                    let before = defined.clone();
                    for &a in &f.blocks[b.index()].args {
                        let ty = f.ty(a).clone();
                        self.check_type(here, &ty);
                        defined[a.index()] = true;
                    }
                    self.check_block(b, pos, defined);
                    // Values of the region are not visible after it.
                    *defined = before;
                }
            }
            for (i, &r) in data.results.iter().enumerate() {
                if f.values[r.index()].def != ValueDef::OpResult(op, i as u32) {
                    self.err(here, "a result does not point back at its op".into());
                }
                let ty = f.ty(r).clone();
                self.check_type(here, &ty);
                defined[r.index()] = true;
            }
        }
    }

    fn check_type(&mut self, pos: usize, ty: &Type) {
        if let Some(Layout::Shared(s)) = &ty.layout {
            return self.check_shared_type(pos, ty, s);
        }
        if !ty.is_tensor() {
            if ty.layout.is_some() {
                self.err(pos, format!("scalar type `{ty}` has a layout"));
            }
            return;
        }
        if ty.shape.len() > 4 {
            self.err(
                pos,
                format!("`{ty}` has rank {}; at most 4 is supported", ty.shape.len()),
            );
        }
        if ty.shape.iter().any(|&d| d == 0 || !d.is_power_of_two()) {
            self.err(
                pos,
                format!("`{ty}` has a dimension that is not a power of two"),
            );
        }
        let Some(layout) = &ty.layout else { return };
        if let Err(e) = self.layout_structure(layout, ty.shape.len()) {
            return self.err(pos, format!("layout of `{ty}`: {e}"));
        }
        if let Err(e) = layout.linear(&ty.shape).and_then(|ll| ll.check()) {
            self.err(pos, format!("layout of `{ty}`: {e}"));
        }
    }

    /// Rule 25 for an `smem` type.
    fn check_shared_type(&mut self, pos: usize, ty: &Type, s: &super::types::SharedLayout) {
        let Elem::Scalar(d) = ty.elem else {
            return self.err(
                pos,
                format!("`{ty}` holds pointers; shared buffers hold numbers"),
            );
        };
        let [stages, rows, cols] = ty.shape[..] else {
            return self.err(pos, format!("`{ty}` is not stages × rows × columns"));
        };
        if stages == 0 || !rows.is_power_of_two() || !cols.is_power_of_two() {
            return self.err(
                pos,
                format!("`{ty}` needs at least one stage and power-of-two rows and columns"),
            );
        }
        let block_ok = s.block == 0 || (s.block.is_power_of_two() && s.block < cols);
        let width = if s.block == 0 {
            cols
        } else {
            s.block.min(cols)
        };
        let fields_ok = s.per_phase.is_power_of_two()
            && s.max_phase.is_power_of_two()
            && matches!(s.vec.checked_mul(d.size_bytes()), Some(16 | 32))
            && s.vec.checked_mul(s.max_phase).is_some_and(|w| w <= width);
        if !block_ok {
            return self.err(
                pos,
                format!("`{ty}`: a column block is a power of two below the columns"),
            );
        }
        if !fields_ok {
            self.err(
                pos,
                format!("`{ty}`: the swizzle needs 16- or 32-byte chunks, power-of-two phases and max_phase · vec ≤ columns (of a block)"),
            );
        }
    }

    /// The rules of rule 4 that concern a layout's own fields, for a tensor of rank `rank`.
    fn layout_structure(&self, layout: &Layout, rank: usize) -> Result<(), String> {
        self.layout_fields(layout, rank)?;
        if layout.rank() != rank {
            return Err(format!("it does not have the tensor's rank {rank}"));
        }
        if layout.num_warps() != self.f.num_warps {
            return Err(format!(
                "it spreads over {} warps, the kernel has {}",
                layout.num_warps(),
                self.f.num_warps
            ));
        }
        Ok(())
    }

    /// The fields of each kind of layout, for a tensor of rank `rank`.
    fn layout_fields(&self, layout: &Layout, rank: usize) -> Result<(), String> {
        match layout {
            Layout::Shared(_) => Err("a `#shared` layout belongs only to an `smem` buffer".into()),
            Layout::Blocked(b) => {
                if b.size_per_thread.len() != rank
                    || b.threads_per_warp.len() != rank
                    || b.warps_per_cta.len() != rank
                    || b.order.len() != rank
                {
                    return Err(format!("it does not have the tensor's rank {rank}"));
                }
                if b.threads_per_warp.iter().product::<u32>() != 32 {
                    return Err("it does not have 32 threads per warp".into());
                }
                if b.size_per_thread.contains(&0) {
                    return Err("it gives a thread no elements".into());
                }
                if b.size_per_thread
                    .iter()
                    .chain(&b.warps_per_cta)
                    .chain(&b.threads_per_warp)
                    .any(|x| !x.is_power_of_two())
                {
                    return Err("a factor is not a power of two".into());
                }
                let mut sorted = b.order.clone();
                sorted.sort_unstable();
                if sorted != (0..rank as u32).collect::<Vec<_>>() {
                    return Err("its order is not a permutation".into());
                }
                Ok(())
            }
            Layout::Slice(s) => {
                if s.dim as usize > rank {
                    return Err("it slices a dimension past its rank".into());
                }
                self.layout_structure(&s.parent, rank + 1)
            }
            Layout::Mma(m) => {
                if !matches!(m.version, 2 | 3) || m.warps_per_cta.len() != 2 {
                    return Err("an mma layout is version 2 or 3 over 2-D tensors".into());
                }
                if m.version == 3
                    && (!m.warps_per_cta[0].is_multiple_of(4) || m.warps_per_cta[1] != 1)
                {
                    return Err(
                        "an mma layout of version 3 has whole warpgroups along the rows: wpc = [4·g, 1]"
                            .into(),
                    );
                }
                Ok(())
            }
            Layout::DotOperand(d) => {
                if !matches!(*d.parent, Layout::Mma(_)) {
                    return Err("an operand layout's parent must be an mma layout".into());
                }
                if d.op_idx > 1 || !matches!(d.k_width, 1 | 2) {
                    return Err("an operand layout has index 0 or 1 and k_width 1 or 2".into());
                }
                self.layout_structure(&d.parent, rank)
            }
        }
    }

    fn ty(&self, v: ValueId) -> &Type {
        self.f.ty(v)
    }

    fn check_op(&mut self, pos: usize, op: OpId) {
        let f = self.f;
        let data = f.op(op);
        let ops = &data.operands;
        let res = data.results.first().map(|&r| f.ty(r).clone());
        let want = |n: &[usize]| n.contains(&ops.len());
        let arity_err = |me: &mut Self, n: &str| {
            me.err(
                pos,
                format!(
                    "`{}` takes {n} operand(s), found {}",
                    data.kind.name(),
                    ops.len()
                ),
            )
        };
        match &data.kind {
            OpKind::Constant(c) => {
                if !want(&[0]) {
                    return arity_err(self, "0");
                }
                let Some(ty) = res else { return };
                match (ty.elem, c) {
                    (_, _) if ty.is_tensor() => self.err(pos, "a constant is a scalar".into()),
                    (Elem::Scalar(DType::I1), ConstValue::Int(0 | 1)) => {}
                    (Elem::Scalar(DType::I32), ConstValue::Int(i)) if i32::try_from(*i).is_ok() => {
                    }
                    (Elem::Scalar(DType::I64), ConstValue::Int(_)) => {}
                    (Elem::Scalar(DType::F32 | DType::F16 | DType::BF16), ConstValue::Float(_)) => {
                    }
                    (e, c) => self.err(pos, format!("constant {c} does not fit type `{e}`")),
                }
            }
            OpKind::ProgramId { axis } | OpKind::NumPrograms { axis } => {
                if !want(&[0]) {
                    return arity_err(self, "0");
                }
                if *axis > 2 {
                    self.err(pos, format!("grid axis {axis} is not 0, 1 or 2"));
                }
                if res != Some(Type::scalar(DType::I32)) {
                    self.err(pos, "the result must be `i32`".into());
                }
            }
            OpKind::Arange { start, end } => {
                if !want(&[0]) {
                    return arity_err(self, "0");
                }
                let Some(ty) = res else { return };
                if end <= start {
                    self.err(pos, format!("empty range {start}..{end}"));
                } else if ty.elem != Elem::Scalar(DType::I32)
                    || ty.shape.len() != 1
                    || ty.shape[0] as i64 != end - start
                {
                    self.err(
                        pos,
                        format!("the result must be `tensor<{}xi32>`", end - start),
                    );
                }
                if i32::try_from(*start).is_err() || i32::try_from(*end).is_err() {
                    self.err(pos, "bounds must fit in i32".into());
                }
            }
            OpKind::Splat => {
                if !want(&[1]) {
                    return arity_err(self, "1");
                }
                let Some(ty) = res else { return };
                let a = self.ty(ops[0]).clone();
                if a.is_tensor() {
                    self.err(pos, "the operand of `splat` must be a scalar".into());
                }
                if !ty.is_tensor() || ty.elem != a.elem {
                    self.err(pos, format!("the result must be a tensor of `{}`", a.elem));
                }
            }
            OpKind::Binary(b) => {
                if !want(&[2]) {
                    return arity_err(self, "2");
                }
                let Some(ty) = res else { return };
                self.same_types(pos, &[ops[0], ops[1]], &ty);
                match ty.elem {
                    Elem::Ptr(_) => self.err(pos, format!("`{}` does not take pointers", b.name())),
                    Elem::Scalar(d) if *b == crate::ir::BinOp::UMulHi && d != DType::I32 => {
                        self.err(pos, format!("`umulhi` takes i32, found `{d}`"))
                    }
                    Elem::Scalar(d) if b.is_bitwise() && !d.is_int() => self.err(
                        pos,
                        format!("`{}` takes integers or booleans, found `{d}`", b.name()),
                    ),
                    Elem::Scalar(DType::I1) if !b.is_bitwise() => {
                        self.err(pos, format!("`{}` does not take booleans", b.name()))
                    }
                    Elem::Scalar(d) if !b.is_bitwise() && !d.is_arith() => self.err(
                        pos,
                        format!(
                            "`{}` takes i32, i64 or f32; cast `{d}` to f32 first",
                            b.name()
                        ),
                    ),
                    Elem::Scalar(_) => {}
                }
            }
            OpKind::Unary(u) => {
                if !want(&[1]) {
                    return arity_err(self, "1");
                }
                let Some(ty) = res else { return };
                self.same_types(pos, &[ops[0]], &ty);
                match (u, ty.elem) {
                    (_, Elem::Ptr(_)) => {
                        self.err(pos, format!("`{}` does not take pointers", u.name()))
                    }
                    (UnOp::Neg, Elem::Scalar(DType::I1)) => {
                        self.err(pos, "`neg` does not take booleans".into())
                    }
                    (UnOp::Not, Elem::Scalar(d)) if !d.is_int() => self.err(
                        pos,
                        format!("`not` takes integers or booleans, found `{d}`"),
                    ),
                    _ => {}
                }
            }
            OpKind::Cmp(_) => {
                if !want(&[2]) {
                    return arity_err(self, "2");
                }
                let Some(ty) = res else { return };
                let a = self.ty(ops[0]).clone();
                if a.elem.dtype().is_none() {
                    self.err(pos, "`cmp` does not take pointers".into());
                }
                self.same_types(pos, &[ops[1]], &a);
                if ty != a.with_elem(Elem::Scalar(DType::I1)) {
                    self.err(
                        pos,
                        format!(
                            "the result must be `{}`",
                            a.with_elem(Elem::Scalar(DType::I1))
                        ),
                    );
                }
            }
            OpKind::Select => {
                if !want(&[3]) {
                    return arity_err(self, "3");
                }
                let Some(ty) = res else { return };
                self.same_types(pos, &[ops[1], ops[2]], &ty);
                if *self.ty(ops[0]) != ty.with_elem(Elem::Scalar(DType::I1)) {
                    self.err(
                        pos,
                        format!(
                            "the condition must be `{}`",
                            ty.with_elem(Elem::Scalar(DType::I1))
                        ),
                    );
                }
            }
            OpKind::AddPtr => {
                if !want(&[2]) {
                    return arity_err(self, "2");
                }
                let Some(ty) = res else { return };
                let p = self.ty(ops[0]).clone();
                let o = self.ty(ops[1]).clone();
                if p.elem.pointee().is_none() {
                    self.err(pos, "operand #0 of `addptr` must be a pointer".into());
                }
                if !matches!(o.elem, Elem::Scalar(DType::I32 | DType::I64)) {
                    self.err(pos, "the offset of `addptr` must be `i32` or `i64`".into());
                }
                if o.shape != p.shape || o.layout != p.layout {
                    self.err(
                        pos,
                        "the offset of `addptr` must have the pointer's shape".into(),
                    );
                }
                if ty != p {
                    self.err(pos, format!("the result must be `{p}`"));
                }
            }
            OpKind::Load { vec, .. } => {
                if !want(&[1, 3]) {
                    return arity_err(self, "1 or 3");
                }
                let Some(ty) = res else { return };
                let p = self.ty(ops[0]).clone();
                let Some(pointee) = p.elem.pointee() else {
                    return self.err(pos, "operand #0 of `load` must be a pointer".into());
                };
                let want_ty = p.with_elem(Elem::Scalar(pointee));
                if ty != want_ty {
                    self.err(pos, format!("the result must be `{want_ty}`"));
                }
                if ops.len() == 3 {
                    self.mask(pos, ops[1], &p);
                    if *self.ty(ops[2]) != want_ty {
                        self.err(pos, format!("`other` must be `{want_ty}`"));
                    }
                }
                self.vec(pos, *vec, &p);
            }
            OpKind::Store { vec, .. } => {
                if !want(&[2, 3]) {
                    return arity_err(self, "2 or 3");
                }
                let p = self.ty(ops[0]).clone();
                let Some(pointee) = p.elem.pointee() else {
                    return self.err(pos, "operand #0 of `store` must be a pointer".into());
                };
                let want_ty = p.with_elem(Elem::Scalar(pointee));
                if *self.ty(ops[1]) != want_ty {
                    self.err(
                        pos,
                        format!(
                            "the stored value must be `{want_ty}`, found `{}`",
                            self.ty(ops[1])
                        ),
                    );
                }
                if ops.len() == 3 {
                    self.mask(pos, ops[2], &p);
                }
                self.vec(pos, *vec, &p);
            }
            OpKind::AtomicRmw { op: a, .. } => {
                if !want(&[2, 3]) {
                    return arity_err(self, "2 or 3");
                }
                self.atomic(pos, ops, 1, res.as_ref(), |d| a.takes(d), a.name());
            }
            OpKind::AtomicCas { .. } => {
                if !want(&[3, 4]) {
                    return arity_err(self, "3 or 4");
                }
                self.atomic(
                    pos,
                    ops,
                    2,
                    res.as_ref(),
                    crate::ir::atomic_cas_takes,
                    "cas",
                );
            }
            OpKind::Scan { axis, .. } => {
                if !want(&[1]) {
                    return arity_err(self, "1");
                }
                let Some(ty) = res else { return };
                let a = self.ty(ops[0]).clone();
                if !a.is_tensor() || (*axis as usize) >= a.shape.len() {
                    return self.err(pos, format!("axis {axis} is out of range for `{a}`"));
                }
                if !a.dtype().is_some_and(DType::is_arith) {
                    self.err(
                        pos,
                        format!("scans take i32, i64 or f32, found `{}`", a.elem),
                    );
                }
                if ty != a {
                    self.err(pos, format!("the result must be `{a}`"));
                }
            }
            OpKind::Math(m) => {
                let n = m.arity();
                if ops.len() != n {
                    return arity_err(self, &n.to_string());
                }
                let Some(ty) = res else { return };
                self.same_types(pos, ops, &ty);
                let ok = match ty.elem {
                    Elem::Scalar(DType::F32) => true,
                    Elem::Scalar(DType::I32 | DType::I64) => *m == crate::ir::MathFn::Abs,
                    _ => false,
                };
                if !ok {
                    self.err(pos, format!("`{}` does not take `{}`", m.name(), ty.elem));
                }
            }
            OpKind::Cast => {
                if !want(&[1]) {
                    return arity_err(self, "1");
                }
                let Some(ty) = res else { return };
                let a = self.ty(ops[0]).clone();
                if a.elem.dtype().is_none() || ty.elem.dtype().is_none() {
                    self.err(pos, "`cast` converts numbers, not pointers".into());
                }
                if a.shape != ty.shape || a.layout != ty.layout {
                    self.err(pos, format!("`cast` keeps the shape: `{a}` to `{ty}`"));
                }
            }
            OpKind::Reduce { axis, .. } => {
                if !want(&[1]) {
                    return arity_err(self, "1");
                }
                let Some(ty) = res else { return };
                let a = self.ty(ops[0]).clone();
                if !a.is_tensor() || (*axis as usize) >= a.shape.len() {
                    return self.err(pos, format!("axis {axis} is out of range for `{a}`"));
                }
                if !a.dtype().is_some_and(DType::is_arith) {
                    self.err(
                        pos,
                        format!("reductions take i32, i64 or f32, found `{}`", a.elem),
                    );
                }
                let mut shape = a.shape.clone();
                shape.remove(*axis as usize);
                if ty.elem != a.elem || ty.shape != shape {
                    let want = Type::tensor(a.elem, shape);
                    self.err(pos, format!("the result must be `{want}` (layout aside)"));
                }
                if ty.is_tensor() {
                    self.sliced(pos, &a, *axis, &ty, "the result");
                }
            }
            OpKind::ExpandDims { axis } => {
                if !want(&[1]) {
                    return arity_err(self, "1");
                }
                let Some(ty) = res else { return };
                let a = self.ty(ops[0]).clone();
                if !a.is_tensor() || (*axis as usize) > a.shape.len() {
                    return self.err(pos, format!("axis {axis} is out of range for `{a}`"));
                }
                let mut shape = a.shape.clone();
                shape.insert(*axis as usize, 1);
                if shape.len() > 2 {
                    self.err(pos, "tiles of rank > 2 are not supported".into());
                }
                if ty.elem != a.elem || ty.shape != shape {
                    let want = Type::tensor(a.elem, shape);
                    self.err(pos, format!("the result must be `{want}` (layout aside)"));
                }
                self.sliced(pos, &ty, *axis, &a, "the operand");
            }
            OpKind::Roll { axis, shift } => {
                if !want(&[1]) {
                    return arity_err(self, "1");
                }
                let Some(ty) = res else { return };
                let a = self.ty(ops[0]).clone();
                if !a.is_tensor() || (*axis as usize) >= a.shape.len() {
                    return self.err(pos, format!("axis {axis} is out of range for `{a}`"));
                }
                if *shift >= a.shape[*axis as usize] {
                    self.err(
                        pos,
                        format!("shift {shift} is not below the extent of axis {axis}"),
                    );
                }
                if ty != a {
                    self.err(pos, format!("the result must be `{a}`"));
                }
            }
            OpKind::Broadcast => {
                if !want(&[1]) {
                    return arity_err(self, "1");
                }
                let Some(ty) = res else { return };
                let a = self.ty(ops[0]).clone();
                let fits = a.is_tensor()
                    && a.shape.len() == ty.shape.len()
                    && a.shape
                        .iter()
                        .zip(&ty.shape)
                        .all(|(&x, &y)| x == y || x == 1);
                if !fits || a.elem != ty.elem {
                    self.err(pos, format!("`{a}` does not broadcast to `{ty}`"));
                }
                if a.layout != ty.layout {
                    self.err(pos, "`broadcast` keeps the layout".into());
                }
            }
            OpKind::ConvertLayout => {
                if !want(&[1]) {
                    return arity_err(self, "1");
                }
                let Some(ty) = res else { return };
                let a = self.ty(ops[0]).clone();
                if a.elem != ty.elem || a.shape != ty.shape || !a.is_tensor() {
                    self.err(
                        pos,
                        format!("`convert_layout` changes only the layout: `{a}` to `{ty}`"),
                    );
                }
                if ty.layout.is_none() {
                    self.err(pos, "`convert_layout` exists only at the GPU level".into());
                }
            }
            OpKind::For => {
                if ops.len() < 3 {
                    return arity_err(self, "3 or more");
                }
                for (i, what) in ["lower bound", "upper bound", "step"].iter().enumerate() {
                    if *self.ty(ops[i]) != Type::scalar(DType::I32) {
                        self.err(pos, format!("the {what} of `for` must be `i32`"));
                    }
                }
                let carried: Vec<Type> = ops[3..].iter().map(|&o| self.ty(o).clone()).collect();
                let results: Vec<Type> = data.results.iter().map(|&r| f.ty(r).clone()).collect();
                if results != carried {
                    self.err(
                        pos,
                        "the results of `for` must have the types of its carried values".into(),
                    );
                }
                let Some(&region) = data.regions.first() else {
                    return;
                };
                let Some(&body) = f.regions[region.index()].blocks.first() else {
                    return;
                };
                let args: Vec<Type> = f.blocks[body.index()]
                    .args
                    .iter()
                    .map(|&a| f.ty(a).clone())
                    .collect();
                let mut want_args = vec![Type::scalar(DType::I32)];
                want_args.extend(carried.iter().cloned());
                if args != want_args {
                    self.err(
                        pos,
                        "the body's arguments must be the `i32` induction variable and the carried values".into(),
                    );
                }
                let last = f.blocks[body.index()].ops.last().map(|&o| f.op(o));
                match last {
                    Some(y) if matches!(y.kind, OpKind::Yield) => {
                        let yielded: Vec<Type> =
                            y.operands.iter().map(|&o| f.ty(o).clone()).collect();
                        if yielded != carried {
                            self.err(
                                pos,
                                "`yield` must give one value of each carried value's type".into(),
                            );
                        }
                    }
                    _ => self.err(pos, "the body of `for` must end with `yield`".into()),
                }
            }
            OpKind::Dot { precision } => {
                if !want(&[3]) {
                    return arity_err(self, "3");
                }
                let Some(ty) = res else { return };
                let (a, b, acc) = (
                    self.ty(ops[0]).clone(),
                    self.ty(ops[1]).clone(),
                    self.ty(ops[2]).clone(),
                );
                if a.shape.len() != 2 || b.shape.len() != 2 {
                    return self.err(pos, "`dot` multiplies two 2-D tiles".into());
                }
                if a.shape[1] != b.shape[0] {
                    self.err(
                        pos,
                        format!(
                            "inner dimensions differ: `{a}` is {}×{}, `{b}` is {}×{}",
                            a.shape[0], a.shape[1], b.shape[0], b.shape[1]
                        ),
                    );
                }
                if a.elem != b.elem
                    || !matches!(a.dtype(), Some(DType::F32 | DType::F16 | DType::BF16))
                {
                    self.err(
                        pos,
                        format!(
                            "`dot` takes two tiles of one float type (f32, f16 or bf16), found `{}` and `{}`",
                            a.elem, b.elem
                        ),
                    );
                }
                let want_ty = Type {
                    elem: Elem::Scalar(DType::F32),
                    shape: vec![a.shape[0], b.shape[1]],
                    layout: ty.layout.clone(),
                };
                if ty != want_ty || acc != want_ty {
                    self.err(
                        pos,
                        format!("the accumulator and the result must be `{want_ty}`"),
                    );
                }
                let tf32 = *precision == Precision::Tf32;
                if tf32 && a.dtype() != Some(DType::F32) {
                    self.err(
                        pos,
                        format!(
                            "`precision = tf32` applies to f32 operands, found `{}`",
                            a.elem
                        ),
                    );
                }
                if let Some(parent @ Layout::Mma(_)) = &ty.layout {
                    let k_width = match a.dtype() {
                        Some(DType::F16 | DType::BF16) => 2,
                        Some(DType::F32) if tf32 => 1,
                        _ => {
                            return self.err(
                                pos,
                                format!(
                                    "a tensor-core `dot` takes f16, bf16, or f32 with `precision = tf32`, found `{}`",
                                    a.elem
                                ),
                            );
                        }
                    };
                    for (i, t) in [(0u32, &a), (1, &b)] {
                        let want = Layout::DotOperand(DotOperandLayout {
                            op_idx: i,
                            parent: Box::new(parent.clone()),
                            k_width,
                        });
                        if t.layout.as_ref() != Some(&want) {
                            self.err(
                                pos,
                                format!(
                                    "operand {i} of a tensor-core `dot` must be in the layout {want}"
                                ),
                            );
                        }
                    }
                }
            }
            OpKind::If => {
                if !want(&[1]) {
                    return arity_err(self, "1");
                }
                if *self.ty(ops[0]) != Type::scalar(DType::I1) {
                    self.err(pos, "the condition of `if` must be an `i1` scalar".into());
                }
                let results: Vec<Type> = data.results.iter().map(|&r| f.ty(r).clone()).collect();
                for (i, &region) in data.regions.iter().enumerate() {
                    let Some(&block) = f.regions[region.index()].blocks.first() else {
                        continue;
                    };
                    if !f.blocks[block.index()].args.is_empty() {
                        self.err(pos, "the branches of `if` take no arguments".into());
                    }
                    let branch = if i == 0 { "then" } else { "else" };
                    match f.blocks[block.index()].ops.last().map(|&o| f.op(o)) {
                        Some(y) if matches!(y.kind, OpKind::Yield) => {
                            let yielded: Vec<Type> =
                                y.operands.iter().map(|&o| f.ty(o).clone()).collect();
                            if yielded != results {
                                self.err(
                                    pos,
                                    format!("the {branch} branch must yield one value of each result's type"),
                                );
                            }
                        }
                        _ => self.err(
                            pos,
                            format!("the {branch} branch of `if` must end with `yield`"),
                        ),
                    }
                }
            }
            // Checked where the loop or branch is (`for`, `if`) and where it sits (last).
            OpKind::Yield => {}
            OpKind::LocalAlloc => {
                if !want(&[0]) {
                    return arity_err(self, "0");
                }
                if !res.is_some_and(|t| t.is_shared()) {
                    self.err(pos, "`local_alloc` yields an `smem` buffer".into());
                }
            }
            OpKind::AsyncCommit | OpKind::AsyncWait { .. } | OpKind::Barrier => {
                if !want(&[0]) {
                    arity_err(self, "0");
                }
            }
            OpKind::AsyncCopy { vec } => {
                if !want(&[3, 4]) {
                    return arity_err(self, "3 or 4");
                }
                let (buf, stage, p) = (
                    self.ty(ops[0]).clone(),
                    self.ty(ops[1]).clone(),
                    self.ty(ops[2]).clone(),
                );
                self.stage_operands(pos, &buf, &stage, "async_copy");
                let tile_ok = buf.is_shared()
                    && p.elem == Elem::Ptr(buf.dtype().unwrap_or(DType::I1))
                    && p.shape[..] == buf.shape[1..]
                    && p.layout.is_some();
                if !tile_ok {
                    self.err(
                        pos,
                        format!("`async_copy` needs pointers to one stage of `{buf}`, found `{p}`"),
                    );
                }
                if ops.len() == 4 {
                    self.mask(pos, ops[3], &p);
                }
                self.vec(pos, *vec, &p);
                let bytes = buf.dtype().map_or(0, |d| d.size_bytes()) * vec;
                if *vec > 1 && !matches!(bytes, 4 | 8 | 16) {
                    self.err(
                        pos,
                        format!("`async_copy` copies 4, 8 or 16 bytes at once, not {bytes}"),
                    );
                }
            }
            OpKind::LocalLoad { offset } => {
                if !want(&[2]) {
                    return arity_err(self, "2");
                }
                let (buf, stage) = (self.ty(ops[0]).clone(), self.ty(ops[1]).clone());
                self.stage_operands(pos, &buf, &stage, "local_load");
                let Some(ty) = res else { return };
                let ok = buf.is_shared()
                    && ty.elem == buf.elem
                    && ty.shape.len() == 2
                    && buf.shape.len() == 3
                    && match (&ty.layout, ty.dtype()) {
                        (Some(Layout::DotOperand(d)), Some(DType::F16 | DType::BF16)) => {
                            d.k_width == 2
                        }
                        (Some(Layout::DotOperand(d)), Some(DType::F32)) => d.k_width == 1,
                        _ => false,
                    };
                if !ok {
                    return self.err(
                        pos,
                        format!("`local_load` reads a window of one stage of `{buf}` into an operand layout (f16/bf16 with k_width 2, f32 with k_width 1), not `{ty}`"),
                    );
                }
                // One of the tiles of the result's shape that partition the stage.
                let fits = (0..2).all(|d| {
                    let (o, n, whole) = (offset[d], ty.shape[d], buf.shape[d + 1]);
                    n > 0 && o % n == 0 && o.checked_add(n).is_some_and(|end| end <= whole)
                });
                if !fits {
                    self.err(
                        pos,
                        format!(
                            "`local_load` window at [{}, {}] of shape {:?} is not one of the tiles of that shape in a stage of `{buf}`",
                            offset[0], offset[1], ty.shape
                        ),
                    );
                }
            }
            OpKind::WarpGroupDot => {
                if !want(&[5]) {
                    return arity_err(self, "5");
                }
                let t: Vec<Type> = ops.iter().map(|&v| self.ty(v).clone()).collect();
                self.stage_operands(pos, &t[0], &t[1], "warp_group_dot");
                self.stage_operands(pos, &t[2], &t[3], "warp_group_dot");
                let (a, b, acc) = (&t[0], &t[2], &t[4]);
                let sixteen = matches!(a.dtype(), Some(DType::F16 | DType::BF16));
                let shapes = a.shape.len() == 3
                    && b.shape.len() == 3
                    && acc.shape.len() == 2
                    && a.shape[2] == b.shape[1]
                    && acc.shape[..] == [a.shape[1], b.shape[2]];
                let wgmma_layout = |buf: &Type| match (&buf.layout, buf.dtype()) {
                    (Some(Layout::Shared(l)), Some(d)) if buf.shape.len() == 3 => {
                        *l == super::types::SharedLayout::wgmma(buf.shape[2], d.size_bytes())
                    }
                    _ => false,
                };
                let acc_ok = acc.dtype() == Some(DType::F32)
                    && matches!(&acc.layout, Some(Layout::Mma(m)) if m.version == 3);
                if !(sixteen && a.dtype() == b.dtype() && shapes) {
                    return self.err(
                        pos,
                        format!("`warp_group_dot` multiplies an f16 or bf16 `M × K` stage by a `K × N` stage of the same type into `M × N`, not `{a}` by `{b}` into `{acc}`"),
                    );
                }
                if !(wgmma_layout(a) && wgmma_layout(b)) {
                    self.err(
                        pos,
                        format!("`warp_group_dot` reads buffers in their `wgmma` layouts, not `{a}` and `{b}`"),
                    );
                }
                if !acc_ok {
                    self.err(
                        pos,
                        format!("the accumulator of `warp_group_dot` is f32 in an mma layout of version 3, not `{acc}`"),
                    );
                }
                if res.is_some_and(|r| r != *acc) {
                    self.err(pos, "`warp_group_dot` yields its accumulator's type".into());
                }
            }
            OpKind::WarpGroupWait { .. } => {
                if !want(&[1]) {
                    return arity_err(self, "1");
                }
                let acc = self.ty(ops[0]).clone();
                if !matches!(&acc.layout, Some(Layout::Mma(m)) if m.version == 3) {
                    self.err(
                        pos,
                        format!("`warp_group_wait` takes an accumulator in an mma layout of version 3, not `{acc}`"),
                    );
                }
                if res.is_some_and(|r| r != acc) {
                    self.err(pos, "`warp_group_wait` yields its operand's type".into());
                }
            }
            OpKind::FenceAsyncShared => {
                if !want(&[0]) {
                    arity_err(self, "0")
                }
            }
            OpKind::Return => {
                if !want(&[0]) {
                    arity_err(self, "0")
                }
            }
        }
    }

    /// At the GPU level, `part`'s layout (the lower-rank tensor `low`) must be `full`'s layout
    /// sliced at `axis`.
    fn sliced(&mut self, pos: usize, full: &Type, axis: u32, low: &Type, part: &str) {
        let (Some(fl), Some(ll)) = (&full.layout, &low.layout) else {
            return;
        };
        let ok = match (fl, ll) {
            (parent, Layout::Slice(s)) => s.dim == axis && *s.parent == *parent,
            (
                _,
                Layout::Blocked(_) | Layout::Mma(_) | Layout::DotOperand(_) | Layout::Shared(_),
            ) => false,
        };
        if !ok {
            self.err(
                pos,
                format!(
                    "{part}'s layout must be the layout of `{full}` sliced at dimension {axis}"
                ),
            );
        }
    }

    fn same_types(&mut self, pos: usize, vals: &[ValueId], ty: &Type) {
        for &v in vals {
            if self.ty(v) != ty {
                let found = self.ty(v).clone();
                self.err(pos, format!("operand type `{found}` differs from `{ty}`"));
                return;
            }
        }
    }

    /// A shared buffer and an `i32` scalar stage.
    fn stage_operands(&mut self, pos: usize, buf: &Type, stage: &Type, op: &str) {
        if !buf.is_shared() {
            self.err(
                pos,
                format!("operand #0 of `{op}` must be an `smem` buffer, found `{buf}`"),
            );
        }
        if *stage != Type::scalar(DType::I32) {
            self.err(
                pos,
                format!("the stage of `{op}` must be an `i32` scalar, found `{stage}`"),
            );
        }
    }

    /// An atomic's operands: a pointer, `values` operands of its pointee's type and shape (the
    /// value; `cmp` first for `cas`), an optional mask; the result is the old values.
    fn atomic(
        &mut self,
        pos: usize,
        ops: &[ValueId],
        values: usize,
        res: Option<&Type>,
        takes: impl Fn(DType) -> bool,
        what: &str,
    ) {
        let p = self.ty(ops[0]).clone();
        let Some(pointee) = p.elem.pointee() else {
            return self.err(pos, "operand #0 of an atomic must be a pointer".into());
        };
        if !takes(pointee) {
            self.err(pos, format!("atomic `{what}` does not take `{pointee}`"));
        }
        let want_ty = p.with_elem(Elem::Scalar(pointee));
        for &v in &ops[1..=values] {
            if *self.ty(v) != want_ty {
                let found = self.ty(v).clone();
                self.err(
                    pos,
                    format!("the atomic's value must be `{want_ty}`, found `{found}`"),
                );
            }
        }
        if let Some(&m) = ops.get(values + 1) {
            self.mask(pos, m, &p);
        }
        match res {
            Some(ty) if *ty != want_ty => {
                self.err(pos, format!("the result must be `{want_ty}`"));
            }
            _ => {}
        }
    }

    fn mask(&mut self, pos: usize, m: ValueId, ptr: &Type) {
        let want = ptr.with_elem(Elem::Scalar(DType::I1));
        if *self.ty(m) != want {
            let found = self.ty(m).clone();
            self.err(pos, format!("the mask must be `{want}`, found `{found}`"));
        }
    }

    fn vec(&mut self, pos: usize, vec: u32, ptr: &Type) {
        if vec == 0 || !vec.is_power_of_two() {
            return self.err(pos, format!("vec = {vec} is not a power of two"));
        }
        if vec == 1 {
            return;
        }
        match ptr.layout.as_ref().map(|l| l.linear(&ptr.shape)) {
            Some(Ok(ll)) => {
                // A run that covers its whole dimension may be narrower than `vec`: the access
                // narrows to the extent.
                let (dim, run) = ll.contiguous_run();
                let whole = run == u64::from(ll.shape[dim]);
                if run % u64::from(vec) != 0 && !whole {
                    self.err(
                        pos,
                        format!(
                            "vec = {vec} does not divide the elements a thread holds contiguously"
                        ),
                    );
                }
            }
            Some(Err(_)) => {}
            None => self.err(pos, format!("vec = {vec} needs a layout")),
        }
    }
}
