//! The closed set of tile-IR operations and their attributes.
//!
//! Every consumer (printer, parser, verifier, interpreter, LLVM lowering) matches on [`OpKind`]
//! exhaustively, so adding an op is a checklist the compiler walks you through.

use std::fmt;

/// A compile-time constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConstValue {
    /// An integer (also booleans: 0 or 1).
    Int(i64),
    /// A floating-point number.
    Float(f64),
}

/// Element-wise binary arithmetic; both operands and the result share one type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `a + b` (wrapping for integers).
    Add,
    /// `a - b` (wrapping for integers).
    Sub,
    /// `a * b` (wrapping for integers).
    Mul,
    /// `a / b`; integers truncate toward zero.
    Div,
    /// Remainder with the sign of `a`.
    Rem,
    /// The smaller of the two; for floats IEEE `minNum`: a NaN operand yields the other operand.
    Min,
    /// The larger of the two; for floats IEEE `maxNum`.
    Max,
    /// Bitwise and (integers and booleans).
    And,
    /// Bitwise or (integers and booleans).
    Or,
    /// Bitwise exclusive or (integers and booleans).
    Xor,
}

impl BinOp {
    /// Every binary op.
    pub const ALL: [BinOp; 10] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::Min,
        BinOp::Max,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
    ];

    /// The op's name in IR text.
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::Rem => "rem",
            BinOp::Min => "min",
            BinOp::Max => "max",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
        }
    }

    /// True for the ops only defined on integers and booleans.
    pub fn is_bitwise(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or | BinOp::Xor)
    }
}

/// Comparison predicates; the result is `i1` of the operands' shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpPred {
    /// `a < b`
    Lt,
    /// `a <= b`
    Le,
    /// `a > b`
    Gt,
    /// `a >= b`
    Ge,
    /// `a == b`
    Eq,
    /// `a != b`
    Ne,
}

impl CmpPred {
    /// Every predicate.
    pub const ALL: [CmpPred; 6] = [
        CmpPred::Lt,
        CmpPred::Le,
        CmpPred::Gt,
        CmpPred::Ge,
        CmpPred::Eq,
        CmpPred::Ne,
    ];

    /// The predicate's name in IR text.
    pub fn name(self) -> &'static str {
        match self {
            CmpPred::Lt => "lt",
            CmpPred::Le => "le",
            CmpPred::Gt => "gt",
            CmpPred::Ge => "ge",
            CmpPred::Eq => "eq",
            CmpPred::Ne => "ne",
        }
    }
}

/// Element-wise unary ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `-a` (wrapping for integers).
    Neg,
    /// Logical not of a boolean, bitwise not of an integer.
    Not,
}

impl UnOp {
    /// Every unary op.
    pub const ALL: [UnOp; 2] = [UnOp::Neg, UnOp::Not];

    /// The op's name in IR text.
    pub fn name(self) -> &'static str {
        match self {
            UnOp::Neg => "neg",
            UnOp::Not => "not",
        }
    }
}

/// Float math functions (`f32`). Results are within a few ulp of the exact value on both back
/// ends, not bit-identical: the GPU uses the hardware's approximate `ex2`/`lg2`/`rsqrt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    /// `e^x`
    Exp,
    /// `2^x`
    Exp2,
    /// natural logarithm
    Log,
    /// base-2 logarithm
    Log2,
    /// square root (IEEE, correctly rounded)
    Sqrt,
    /// `1 / sqrt(x)`
    Rsqrt,
    /// error function
    Erf,
    /// hyperbolic tangent
    Tanh,
    /// `1 / (1 + e^-x)`
    Sigmoid,
    /// `|x|` (also for integers)
    Abs,
    /// round toward −∞
    Floor,
    /// round toward +∞
    Ceil,
    /// `pow(a, b) = 2^(b · log2 a)`: NaN for `a < 0`, 0 for `a == 0` and `b > 0`
    Pow,
    /// `fma(a, b, c) = a · b + c` rounded once
    Fma,
}

impl MathFn {
    /// Every math function.
    pub const ALL: [MathFn; 14] = [
        MathFn::Exp,
        MathFn::Exp2,
        MathFn::Log,
        MathFn::Log2,
        MathFn::Sqrt,
        MathFn::Rsqrt,
        MathFn::Erf,
        MathFn::Tanh,
        MathFn::Sigmoid,
        MathFn::Abs,
        MathFn::Floor,
        MathFn::Ceil,
        MathFn::Pow,
        MathFn::Fma,
    ];

    /// The function's name in IR text and in kernels.
    pub fn name(self) -> &'static str {
        match self {
            MathFn::Exp => "exp",
            MathFn::Exp2 => "exp2",
            MathFn::Log => "log",
            MathFn::Log2 => "log2",
            MathFn::Sqrt => "sqrt",
            MathFn::Rsqrt => "rsqrt",
            MathFn::Erf => "erf",
            MathFn::Tanh => "tanh",
            MathFn::Sigmoid => "sigmoid",
            MathFn::Abs => "abs",
            MathFn::Floor => "floor",
            MathFn::Ceil => "ceil",
            MathFn::Pow => "pow",
            MathFn::Fma => "fma",
        }
    }

    /// Operands it takes.
    pub fn arity(self) -> usize {
        match self {
            MathFn::Pow => 2,
            MathFn::Fma => 3,
            MathFn::Exp
            | MathFn::Exp2
            | MathFn::Log
            | MathFn::Log2
            | MathFn::Sqrt
            | MathFn::Rsqrt
            | MathFn::Erf
            | MathFn::Tanh
            | MathFn::Sigmoid
            | MathFn::Abs
            | MathFn::Floor
            | MathFn::Ceil => 1,
        }
    }
}

/// How `dot` treats `f32` operands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// Exact: the operands as they are (the ordered IEEE `fma` chain on FMA units).
    #[default]
    Ieee,
    /// Each `f32` operand element is first rounded to tf32 ([`round_tf32`]: 10 explicit mantissa
    /// bits, to nearest with ties away from zero), which lets the GPU use tensor cores
    /// (`mma.sync.m16n8k8.tf32`). Products of tf32 values are exact in `f32`; the sum's order and
    /// rounding are the hardware's. No effect on `f16`/`bf16` operands.
    Tf32,
}

impl Precision {
    /// Every precision.
    pub const ALL: [Precision; 2] = [Precision::Ieee, Precision::Tf32];

    /// The name in IR text and in the kernel language (`precision = tf32`).
    pub fn name(self) -> &'static str {
        match self {
            Precision::Ieee => "ieee",
            Precision::Tf32 => "tf32",
        }
    }
}

/// `x` rounded to tf32 (`cvt.rna.tf32.f32`): the nearest `f32` whose 13 low mantissa bits are
/// zero, ties away from zero; NaN stays NaN, values past the largest tf32 become infinite.
pub fn round_tf32(x: f32) -> f32 {
    if x.is_nan() {
        return f32::NAN;
    }
    // Sign and magnitude: adding half of the dropped unit to the magnitude rounds ties away
    // from zero, and a carry into the exponent is the correct next binade (or infinity).
    f32::from_bits(x.to_bits().wrapping_add(0x1000) & !0x1fff)
}

/// How a reduction combines elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    /// Sum (floats: in an unspecified order, so results differ in the last bits between back ends).
    Sum,
    /// Maximum (floats: NaN elements are ignored, as `max`).
    Max,
    /// Minimum.
    Min,
}

impl ReduceKind {
    /// Every reduction.
    pub const ALL: [ReduceKind; 3] = [ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min];

    /// The name in IR text and in kernels.
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "sum",
            ReduceKind::Max => "max",
            ReduceKind::Min => "min",
        }
    }
}

/// One operation. Operands and results live in the op's [`super::OpData`]; what is here are the
/// attributes that are part of the op's meaning.
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// A scalar constant; the result type says which.
    Constant(ConstValue),
    /// The program's index along a grid axis (0, 1 or 2): `i32`.
    ProgramId {
        /// Grid axis.
        axis: u32,
    },
    /// The number of programs along a grid axis: `i32`.
    NumPrograms {
        /// Grid axis.
        axis: u32,
    },
    /// `tensor<(end - start) x i32>` holding `start, start + 1, …, end - 1`.
    Arange {
        /// First value.
        start: i64,
        /// One past the last value.
        end: i64,
    },
    /// A scalar broadcast to every element of a tensor.
    Splat,
    /// The operand with a dimension of extent 1 inserted at `axis` (Triton's `x[:, None]` is
    /// `expand_dims {axis = 1}`). At the GPU level the operand's layout is the result's sliced at
    /// `axis`, so no data moves.
    ExpandDims {
        /// Where the new dimension goes (0 ..= the operand's rank).
        axis: u32,
    },
    /// The operand repeated along its dimensions of extent 1 to the result's shape (same rank).
    Broadcast,
    /// The same tensor in another layout (GPU level only; data moves through shared memory).
    ConvertLayout,
    /// The operand rotated along `axis` (NumPy's `roll`): element `j` of the result is element
    /// `(j − shift) mod n` of the operand, `n` the extent of `axis`. Same type and layout.
    Roll {
        /// The dimension rotated.
        axis: u32,
        /// Positions each element moves toward higher indices, `0 ≤ shift < n`.
        shift: u32,
    },
    /// Element-wise arithmetic.
    Binary(BinOp),
    /// Element-wise comparison.
    Cmp(CmpPred),
    /// Element-wise unary op.
    Unary(UnOp),
    /// `select %cond, %a, %b`: `a` where `cond`, else `b`.
    Select,
    /// `addptr %ptr, %offset`: the pointer advanced by `offset` elements.
    AddPtr,
    /// A float math function of 1 to 3 operands of one type.
    Math(MathFn),
    /// Element-wise conversion to the result's element type: floats to integers truncate toward
    /// zero and saturate (NaN → 0), to `f16`/`bf16` round to nearest even, to `i1` test `!= 0`.
    Cast,
    /// Combines the elements along `axis`; the result drops that dimension (a rank-1 tensor
    /// reduces to a scalar).
    Reduce {
        /// How elements combine.
        kind: ReduceKind,
        /// The dimension reduced.
        axis: u32,
    },
    /// `dot %a, %b, %acc`: the matrix product of `a` (`M × K`) and `b` (`K × N`) added to `acc`
    /// (`M × N`, `f32`): each element is `acc[m][n]` followed by one fused multiply-add
    /// `fma(a[m][k], b[k][n], ·)` for `k = 0, 1, …, K − 1`, in that order, in `f32` (`f16`/`bf16`
    /// operands are widened exactly first), so both back ends agree bit for bit. How the GPU
    /// computes it is the lowering's business: the FMA chain, or tensor cores for 16-bit
    /// operands, whose sums may differ in order and rounding (ARCHITECTURE.md states the bound).
    /// With `precision = tf32`, `f32` operands are first rounded by [`round_tf32`].
    Dot {
        /// How `f32` operands are treated.
        precision: Precision,
    },
    /// `load %ptr[, %mask, %other]`: read the pointed-to elements; where `mask` is false no memory is
    /// touched and the element is `other`.
    Load {
        /// Elements each thread accesses with one instruction (GPU level; 1 at the tile level).
        vec: u32,
    },
    /// `store %ptr, %value[, %mask]`: write elements where `mask` is true.
    Store {
        /// Elements each thread accesses with one instruction (GPU level; 1 at the tile level).
        vec: u32,
    },
    /// `for %lb, %ub, %step, %init…`: runs its one-block body region for `iv = lb, lb + step, …`
    /// while `iv < ub` (`step` > 0; no iteration when `lb >= ub`). The body's arguments are `iv`
    /// (`i32`) and the loop-carried values, which start as the `init` operands; the body ends with
    /// `yield` of their next values. The op's results are the carried values after the last
    /// iteration (the `init` values when there was none).
    For,
    /// `if %cond`: runs its first region when the `i1` scalar `cond` is true, else its second;
    /// each region is one block without arguments ending with `yield` of one value per result of
    /// the op, which takes the yielded values of the region that ran.
    If,
    /// Ends a loop body (the carried values of the next iteration) or a branch of an `if` (the
    /// `if`'s results).
    Yield,
    /// Ends the kernel.
    Return,
    /// GPU level: a shared-memory buffer, the result's `smem<S x R x C x T, #shared…>` type (`S`
    /// stages of an `R × C` tile). Its bytes are the program's for the whole kernel.
    LocalAlloc,
    /// GPU level: `async_copy %buf, %stage, %ptr[, %mask]` starts copying the `R × C` tile of
    /// elements `ptr` points to into stage `stage` (an `i32` scalar) of `buf` (`cp.async`), `vec`
    /// elements per instruction; where `mask` is false no global memory is read and the element
    /// is written as 0. The data is there once a later `async_wait` lets this thread's group
    /// finish, and visible to other threads after a `barrier` that follows it.
    AsyncCopy {
        /// Elements each thread copies with one instruction.
        vec: u32,
    },
    /// GPU level: closes the group of this thread's copies issued since the last commit.
    AsyncCommit,
    /// GPU level: waits until at most `pending` of this thread's committed groups are unfinished.
    AsyncWait {
        /// Groups that may still be in flight.
        pending: u32,
    },
    /// GPU level: every thread of the program waits here; shared memory written before it by any
    /// thread is visible to every read after it.
    Barrier,
    /// GPU level: `local_load {offset = [r0, c0]} %buf, %stage` reads the window of stage `stage`
    /// of `buf` that starts at row `r0`, column `c0` and has the result's shape into registers in
    /// the result's layout (an mma operand layout: `ldmatrix`). The window is one of the tiles of
    /// its shape that partition the stage (each offset a multiple of the result's extent); without
    /// an offset it is the whole stage.
    LocalLoad {
        /// Row and column of the window's first element.
        offset: [u32; 2],
    },
}

/// What an op does besides computing its results: the one statement of it that passes ask
/// (hoisting, CSE, DCE and the written-buffer analysis).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Nothing: the op may move, merge with an identical op, or go when its results are unused.
    Pure,
    /// Reads global memory (`load`): ordered after writes, free among other reads.
    Read,
    /// Writes global memory (`store`), or holds ops that may (`for`, `if`).
    Write,
    /// Reads or writes shared memory, or synchronizes threads or asynchronous copies: ordered
    /// with every op that has an effect, never merged or removed.
    Sync,
    /// Ends a block (`yield`, `return`).
    Terminator,
}

impl OpKind {
    /// The op's name in IR text.
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Constant(_) => "constant",
            OpKind::ProgramId { .. } => "program_id",
            OpKind::NumPrograms { .. } => "num_programs",
            OpKind::Arange { .. } => "arange",
            OpKind::Splat => "splat",
            OpKind::ExpandDims { .. } => "expand_dims",
            OpKind::Broadcast => "broadcast",
            OpKind::ConvertLayout => "convert_layout",
            OpKind::Roll { .. } => "roll",
            OpKind::Binary(b) => b.name(),
            OpKind::Cmp(_) => "cmp",
            OpKind::Unary(u) => u.name(),
            OpKind::Select => "select",
            OpKind::AddPtr => "addptr",
            OpKind::Math(m) => m.name(),
            OpKind::Cast => "cast",
            OpKind::Reduce { .. } => "reduce",
            OpKind::Dot { .. } => "dot",
            OpKind::Load { .. } => "load",
            OpKind::Store { .. } => "store",
            OpKind::For => "for",
            OpKind::If => "if",
            OpKind::Yield => "yield",
            OpKind::Return => "return",
            OpKind::LocalAlloc => "local_alloc",
            OpKind::AsyncCopy { .. } => "async_copy",
            OpKind::AsyncCommit => "async_commit",
            OpKind::AsyncWait { .. } => "async_wait",
            OpKind::Barrier => "barrier",
            OpKind::LocalLoad { .. } => "local_load",
        }
    }

    /// How many results the op has, when its kind fixes it: `None` for `for` and `if`, which have
    /// one per carried or yielded value.
    pub fn num_results(&self) -> Option<usize> {
        Some(match self {
            OpKind::For | OpKind::If => return None,
            OpKind::Store { .. }
            | OpKind::Return
            | OpKind::Yield
            | OpKind::AsyncCopy { .. }
            | OpKind::AsyncCommit
            | OpKind::AsyncWait { .. }
            | OpKind::Barrier => 0,
            OpKind::Constant(_)
            | OpKind::ProgramId { .. }
            | OpKind::NumPrograms { .. }
            | OpKind::Arange { .. }
            | OpKind::Splat
            | OpKind::ExpandDims { .. }
            | OpKind::Broadcast
            | OpKind::ConvertLayout
            | OpKind::Roll { .. }
            | OpKind::Binary(_)
            | OpKind::Cmp(_)
            | OpKind::Unary(_)
            | OpKind::Select
            | OpKind::AddPtr
            | OpKind::Math(_)
            | OpKind::Cast
            | OpKind::Reduce { .. }
            | OpKind::Dot { .. }
            | OpKind::Load { .. }
            | OpKind::LocalAlloc
            | OpKind::LocalLoad { .. } => 1,
        })
    }

    /// What the op does besides computing its results (see [`Effect`]).
    pub fn effect(&self) -> Effect {
        match self {
            OpKind::Load { .. } => Effect::Read,
            OpKind::Store { .. } | OpKind::For | OpKind::If => Effect::Write,
            OpKind::Yield | OpKind::Return => Effect::Terminator,
            // An allocation is its own buffer: two are never one.
            OpKind::LocalAlloc
            | OpKind::AsyncCopy { .. }
            | OpKind::AsyncCommit
            | OpKind::AsyncWait { .. }
            | OpKind::Barrier
            | OpKind::LocalLoad { .. } => Effect::Sync,
            OpKind::Constant(_)
            | OpKind::ProgramId { .. }
            | OpKind::NumPrograms { .. }
            | OpKind::Arange { .. }
            | OpKind::Splat
            | OpKind::ExpandDims { .. }
            | OpKind::Broadcast
            | OpKind::ConvertLayout
            | OpKind::Roll { .. }
            | OpKind::Binary(_)
            | OpKind::Cmp(_)
            | OpKind::Unary(_)
            | OpKind::Select
            | OpKind::AddPtr
            | OpKind::Math(_)
            | OpKind::Cast
            | OpKind::Dot { .. }
            | OpKind::Reduce { .. } => Effect::Pure,
        }
    }

    /// True when the op has no effect besides its results (so it may be removed when they are
    /// unused, or merged with an identical op). A load is not: a store in the same program may
    /// change what it reads.
    pub fn is_pure(&self) -> bool {
        self.effect() == Effect::Pure
    }

    /// True for the ops that exist only at the GPU level (layouts and shared memory).
    pub fn is_gpu_only(&self) -> bool {
        matches!(
            self,
            OpKind::ConvertLayout
                | OpKind::LocalAlloc
                | OpKind::AsyncCopy { .. }
                | OpKind::AsyncCommit
                | OpKind::AsyncWait { .. }
                | OpKind::Barrier
                | OpKind::LocalLoad { .. }
        )
    }
}

impl fmt::Display for ConstValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstValue::Int(i) => write!(f, "{i}"),
            // `{:?}` always keeps a decimal point or exponent, so it reads back as a float.
            ConstValue::Float(x) => {
                if x.is_nan() {
                    f.write_str("nan")
                } else if x.is_infinite() {
                    f.write_str(if *x > 0.0 { "inf" } else { "-inf" })
                } else {
                    write!(f, "{x:?}")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::round_tf32;

    #[test]
    fn tf32_rounding() {
        let ulp = 2f32.powi(-10);
        // tf32 values stay; below half an ulp rounds down, half and above rounds away from 0.
        assert_eq!(round_tf32(1.0), 1.0);
        assert_eq!(round_tf32(1.0 + ulp), 1.0 + ulp);
        assert_eq!(round_tf32(1.0 + ulp * 0.499), 1.0);
        assert_eq!(round_tf32(1.0 + ulp * 0.5), 1.0 + ulp);
        assert_eq!(round_tf32(-(1.0 + ulp * 0.5)), -(1.0 + ulp));
        assert_eq!(round_tf32(1.0 + ulp * 1.5), 1.0 + 2.0 * ulp);
        // A carry into the exponent, past the largest tf32 value, and the specials.
        assert_eq!(round_tf32(2.0 - ulp * 0.5), 2.0);
        assert_eq!(round_tf32(f32::MAX), f32::INFINITY);
        assert_eq!(round_tf32(f32::NEG_INFINITY), f32::NEG_INFINITY);
        assert!(round_tf32(f32::NAN).is_nan());
        assert!(round_tf32(f32::from_bits(0x7f80_0001)).is_nan());
        assert_eq!(round_tf32(-0.0).to_bits(), (-0.0f32).to_bits());
        // Every result has its 13 low mantissa bits clear.
        let mut x = 0x1234_5678u32;
        for _ in 0..10_000 {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let v = f32::from_bits(x);
            if v.is_normal() && round_tf32(v).is_finite() {
                let r = round_tf32(v);
                assert_eq!(r.to_bits() & 0x1fff, 0, "{v}");
                assert!(
                    (r - v).abs() <= r.abs().max(v.abs()) * 2f32.powi(-11),
                    "{v} -> {r}"
                );
            }
        }
    }
}
