//! The closed set of tile-IR operations and their attributes.
//!
//! Every consumer (printer, parser, verifier, interpreter, LLVM lowering) matches on [`OpKind`]
//! exhaustively, so adding an op is a checklist the compiler walks you through.

use std::fmt;

use super::attr::Attr;
use super::parse::{Cursor, ParseError};
use super::types::DType;

/// A compile-time constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConstValue {
    /// An integer (also booleans: 0 or 1).
    Int(i64),
    /// A floating-point number.
    Float(f64),
}

/// Declares a fieldless enum whose variants have names in IR text, with [`Self::ALL`] and
/// [`Self::name`] derived from the one list (a variant cannot be left out of either).
macro_rules! named_enum {
    (
        $(#[$m:meta])*
        pub enum $E:ident {
            $( $(#[$vm:meta])* $V:ident = $n:literal, )*
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $E {
            $( $(#[$vm])* $V, )*
        }

        impl $E {
            /// Every variant, in declaration order.
            pub const ALL: [$E; [$($n),*].len()] = [$($E::$V),*];

            /// The name in IR text (and in kernels, where the language spells it).
            pub fn name(self) -> &'static str {
                match self {
                    $( $E::$V => $n, )*
                }
            }

            /// The variant called `name`.
            pub fn from_name(name: &str) -> Option<$E> {
                Self::ALL.into_iter().find(|v| v.name() == name)
            }
        }
    };
}

named_enum! {
    /// Element-wise binary arithmetic; both operands and the result share one type.
    pub enum BinOp {
        /// `a + b` (wrapping for integers).
        Add = "add",
        /// `a - b` (wrapping for integers).
        Sub = "sub",
        /// `a * b` (wrapping for integers).
        Mul = "mul",
        /// `a / b`; integers truncate toward zero (unsigned ones divide the unsigned values).
        /// Floats are divided as IEEE 754 rounds, except `f32` in a `math = fast` kernel:
        /// within 2 ulp over the whole range (PTX's `div.full.f32`, Triton's `/`).
        Div = "div",
        /// Remainder with the sign of `a`.
        Rem = "rem",
        /// The smaller of the two; for floats IEEE 754-2019 `minimumNumber` (PTX's `min.f32`): a
        /// NaN operand yields the other operand, and `-0` is below `+0`.
        Min = "min",
        /// The larger of the two; for floats IEEE 754-2019 `maximumNumber` (PTX's `max.f32`).
        Max = "max",
        /// Bitwise and (integers and booleans).
        And = "and",
        /// Bitwise or (integers and booleans).
        Or = "or",
        /// Bitwise exclusive or (integers and booleans).
        Xor = "xor",
        /// The high 32 bits of the product of `a` and `b` read as unsigned 32-bit integers (`i32`
        /// only: CUDA's `__umulhi`, PTX `mul.hi.u32`; with the wrapping `mul`, the full 64-bit
        /// product). What Philox needs.
        UMulHi = "umulhi",
        /// `a << b` (integers): `b` read as unsigned; a shift by the width or more gives 0.
        Shl = "shl",
        /// `a >> b` (integers): arithmetic for signed types, logical for unsigned; `b` read as
        /// unsigned; a shift by the width or more gives 0, or -1 for a negative signed `a`
        /// (what PTX's `shr` computes, where LLVM's is undefined).
        Shr = "shr",
    }
}

impl BinOp {
    /// True for the ops only defined on integers and booleans.
    pub fn is_bitwise(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or | BinOp::Xor)
    }

    /// True for the shifts, defined on integers (not booleans).
    pub fn is_shift(self) -> bool {
        matches!(self, BinOp::Shl | BinOp::Shr)
    }
}

named_enum! {
    /// Comparison predicates; the result is `i1` of the operands' shape.
    pub enum CmpPred {
        /// `a < b`
        Lt = "lt",
        /// `a <= b`
        Le = "le",
        /// `a > b`
        Gt = "gt",
        /// `a >= b`
        Ge = "ge",
        /// `a == b`
        Eq = "eq",
        /// `a != b`
        Ne = "ne",
    }
}

named_enum! {
    /// Element-wise unary ops.
    pub enum UnOp {
        /// `-a` (wrapping for integers).
        Neg = "neg",
        /// Logical not of a boolean, bitwise not of an integer.
        Not = "not",
    }
}

named_enum! {
    /// Float math functions (`f32`). Results are within a few ulp of the exact value on both back
    /// ends, not bit-identical: the GPU uses the hardware's approximate `ex2`/`lg2`/`rsqrt`.
    pub enum MathFn {
        /// `e^x` (in a `math = fast` kernel `2^(x · log₂e)` with the product rounded, as Triton's
        /// `tl.exp`: a further relative error of up to `|x| · 2⁻²⁴`)
        Exp = "exp",
        /// `2^x`
        Exp2 = "exp2",
        /// natural logarithm
        Log = "log",
        /// base-2 logarithm
        Log2 = "log2",
        /// square root (IEEE, correctly rounded; in a `math = fast` kernel the hardware's
        /// approximation for `f32`, about 2⁻²³ relative, subnormals flushed, as Triton's `tl.sqrt`)
        Sqrt = "sqrt",
        /// `1 / sqrt(x)`
        Rsqrt = "rsqrt",
        /// error function
        Erf = "erf",
        /// hyperbolic tangent
        Tanh = "tanh",
        /// sine (radians)
        Sin = "sin",
        /// cosine (radians)
        Cos = "cos",
        /// `1 / (1 + e^-x)`
        Sigmoid = "sigmoid",
        /// the exact (erf) GELU, `x · Φ(x) = 0.5 · x · (1 + erf(x / √2))` with `Φ` the standard
        /// normal distribution function; `gelu(+∞) = +∞`, `gelu(−∞) = 0`
        Gelu = "gelu",
        /// `|x|` (also for integers)
        Abs = "abs",
        /// round toward −∞
        Floor = "floor",
        /// round toward +∞
        Ceil = "ceil",
        /// `pow(a, b) = 2^(b · log2 a)`: NaN for `a < 0`, 0 for `a == 0` and `b > 0`
        Pow = "pow",
        /// `fma(a, b, c) = a · b + c` rounded once
        Fma = "fma",
    }
}

impl MathFn {
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
            | MathFn::Sin
            | MathFn::Cos
            | MathFn::Sigmoid
            | MathFn::Gelu
            | MathFn::Abs
            | MathFn::Floor
            | MathFn::Ceil => 1,
        }
    }
}

named_enum! {
    /// How `dot` treats `f32` operands.
    #[derive(Default)]
    pub enum Precision {
        /// Exact: the operands as they are (the ordered IEEE `fma` chain on FMA units).
        #[default]
        Ieee = "ieee",
        /// Each `f32` operand element is first rounded to tf32 ([`round_tf32`]: 10 explicit
        /// mantissa bits, to nearest with ties away from zero), which lets the GPU use tensor cores
        /// (`mma.sync.m16n8k8.tf32`). Products of tf32 values are exact in `f32`; the sum's order
        /// and rounding are the hardware's. No effect on `f16`/`bf16` operands.
        Tf32 = "tf32",
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

named_enum! {
    /// How a reduction combines elements.
    pub enum ReduceKind {
        /// Sum (floats: in an unspecified order, so results differ in the last bits between back
        /// ends).
        Sum = "sum",
        /// Maximum (floats: NaN elements are ignored, as `max`).
        Max = "max",
        /// Minimum.
        Min = "min",
    }
}

named_enum! {
    /// The read-modify-write an `atomic_rmw` does to each element.
    pub enum AtomicOp {
        /// `old + v` (integers wrap; `f32` rounds as `fadd`; `f16` and `bf16` add exactly and
        /// round once to nearest even, which the interpreter approximates by an `f32` sum then
        /// one rounding: they differ only where that `f32` sum is itself inexact).
        Add = "add",
        /// The larger (integers signed; floats ordered as their sign and magnitude bits, see
        /// [`atomic_float_max`] and [`atomic_half_max`]).
        Max = "max",
        /// The smaller (integers signed; `f32` as [`atomic_float_min`]).
        Min = "min",
        /// Bitwise and (integers).
        And = "and",
        /// Bitwise or (integers).
        Or = "or",
        /// Bitwise exclusive or (integers).
        Xor = "xor",
        /// `v` (the old value is returned).
        Xchg = "xchg",
    }
}

impl AtomicOp {
    /// True for the ops only defined on integers.
    pub fn is_bitwise(self) -> bool {
        matches!(self, AtomicOp::And | AtomicOp::Or | AtomicOp::Xor)
    }

    /// Whether the op updates elements of type `d` (32- and 64-bit integers always, unsigned
    /// ones comparing as unsigned; `f32`, `f16` and `bf16` unless bitwise; `f64` for `add`
    /// and `xchg`; never booleans, 8- and 16-bit integers or 8-bit floats): the one statement
    /// of the rule, which the verifier and the front end ask.
    pub fn takes(self, d: DType) -> bool {
        match d {
            DType::I32 | DType::I64 | DType::U32 | DType::U64 => true,
            DType::F32 | DType::F16 | DType::BF16 => !self.is_bitwise(),
            DType::F64 => matches!(self, AtomicOp::Add | AtomicOp::Xchg),
            DType::I1 | DType::I8 | DType::I16 | DType::U8 | DType::F8E4M3 | DType::F8E5M2 => false,
        }
    }
}

/// Whether `atomic_cas` takes elements of type `d` (compared bitwise).
pub fn atomic_cas_takes(d: DType) -> bool {
    matches!(
        d,
        DType::I32
            | DType::I64
            | DType::U32
            | DType::U64
            | DType::F32
            | DType::F64
            | DType::F16
            | DType::BF16
    )
}

/// The maximum of two 16-bit floats' bit patterns (`f16` or `bf16`) in the order of
/// [`atomic_float_max`]: sign and magnitude, `-0 < +0`, a NaN with its sign clear above `+inf`.
/// On the GPU (no 16-bit `atom.max`) a compare-and-swap loop computes the same.
pub fn atomic_half_max(old: u16, v: u16) -> u16 {
    if half_key(v) > half_key(old) {
        v
    } else {
        old
    }
}

/// The minimum of [`atomic_half_max`]'s order.
pub fn atomic_half_min(old: u16, v: u16) -> u16 {
    if half_key(v) < half_key(old) {
        v
    } else {
        old
    }
}

/// A 16-bit float's bits as an unsigned key whose order is sign and magnitude: non-negative
/// values above every negative one, larger magnitudes further from the middle.
fn half_key(x: u16) -> u16 {
    if x >> 15 == 0 {
        x | 0x8000
    } else {
        !x
    }
}

/// The `f32` maximum an atomic computes on the GPU, where PTX has no float `atom.max`: a
/// non-negative `v` (sign bit clear) takes the signed-integer maximum of the bit patterns, a
/// negative one the unsigned minimum. That orders `-0 < +0`, puts a NaN with its sign bit clear
/// above `+inf` (so it wins) and one with the sign set below `-inf`; the interpreter computes the
/// same, bit for bit.
pub fn atomic_float_max(old: f32, v: f32) -> f32 {
    let (o, b) = (old.to_bits(), v.to_bits());
    let r = if b >> 31 == 0 {
        (o as i32).max(b as i32) as u32
    } else {
        o.min(b)
    };
    f32::from_bits(r)
}

/// The `f32` minimum of an atomic (the mirror of [`atomic_float_max`]: a non-negative `v` takes
/// the signed minimum of the bits, a negative one the unsigned maximum).
pub fn atomic_float_min(old: f32, v: f32) -> f32 {
    let (o, b) = (old.to_bits(), v.to_bits());
    let r = if b >> 31 == 0 {
        (o as i32).min(b as i32) as u32
    } else {
        o.max(b)
    };
    f32::from_bits(r)
}

named_enum! {
    /// The memory ordering of an atomic (PTX's `.sem`; Triton's `sem`).
    #[derive(Default)]
    pub enum MemSem {
        /// No ordering beyond the atomicity of the element's update.
        Relaxed = "relaxed",
        /// Later memory accesses of this thread are not moved before it.
        Acquire = "acquire",
        /// Earlier memory accesses of this thread are not moved after it.
        Release = "release",
        /// Both (Triton's default).
        #[default]
        AcqRel = "acq_rel",
    }
}

named_enum! {
    /// How long a `load` or `store` asks the caches to keep its lines (Triton's
    /// `eviction_policy`): a hint, which never changes what the program computes.
    #[derive(Default)]
    pub enum Evict {
        /// The caches' own policy.
        #[default]
        Normal = "normal",
        /// Evicted first: data not read again soon (the last read of a value, or a result
        /// written once), so that it does not push out data that is (on the GPU, PTX
        /// `.L1::evict_first` as Triton lowers it, and an `L2::evict_first` cache policy).
        First = "first",
        /// Evicted last: data read again soon (`.L1::evict_last` and an `L2::evict_last`
        /// policy).
        Last = "last",
    }
}

named_enum! {
    /// The threads an atomic's ordering is with (PTX's `.scope`; Triton's `scope`).
    #[derive(Default)]
    pub enum MemScope {
        /// The threads of this program (CUDA block).
        Cta = "cta",
        /// Every thread on the GPU (Triton's default).
        #[default]
        Gpu = "gpu",
        /// Every thread of the system, host included.
        Sys = "sys",
    }
}

named_enum! {
    /// How a scan combines elements.
    pub enum ScanKind {
        /// Running sum (`cumsum`; integers wrap, floats in index order on the interpreter).
        Sum = "sum",
        /// Running product (`cumprod`).
        Prod = "prod",
        /// Running maximum (floats: NaN ignored, as `max`).
        Max = "max",
        /// Running minimum.
        Min = "min",
    }
}

/// What an op does besides computing its results: the one statement of it that passes ask
/// (hoisting, CSE, DCE and the written-buffer analysis).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Nothing: the op may move, merge with an identical op, or go when its results are unused.
    Pure,
    /// Reads global memory (`load`): ordered after writes, free among other reads.
    Read,
    /// Writes global memory through its first operand (`store`), or holds ops that may (`for`,
    /// `while`, `if`).
    Write,
    /// Reads and writes global memory through its first operand as one indivisible step per
    /// element (`atomic_rmw`, `atomic_cas`): ordered with every op that touches memory, never
    /// merged or removed, even when its result is unused.
    Atomic,
    /// Reads or writes shared memory, or synchronizes threads or asynchronous copies: ordered
    /// with every op that has an effect, never merged or removed.
    Sync,
    /// Ends a block (`yield`, `return`).
    Terminator,
}

/// What an op does to shared memory at the GPU level (`OpKind::shared_memory_use`): the one
/// statement of it that the shared-memory allocation and the barrier placement ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharedMemoryUse {
    /// Nothing. Control flow (`for`, `while`, `if`) says nothing for the ops it holds, which say it
    /// themselves.
    None,
    /// Its lowering may borrow scratch bytes for the length of the op (how many, possibly none,
    /// follows from its types and layouts, and the back end says): moving elements between
    /// threads (`convert_layout`, `reduce`, `scan`, `roll`), an atomic's results, and a `dot`'s
    /// operands. It writes them, waits at a barrier of its own, then reads them.
    Scratch,
    /// Declares a buffer (`local_alloc`) that the allocation places; it touches no bytes itself.
    Allocates,
    /// Reads the buffers among its operands (those of a shared-buffer type: `local_load` its
    /// buffer, `warp_group_dot` the stages of its one or two operands in shared memory).
    ReadsBuffers,
    /// Writes the buffer that is its operand at this position asynchronously (`async_copy`): the
    /// write may land at any time up to the thread's `async_wait {pending = 0}`.
    WritesAsync(usize),
    /// Waits for every copy this thread has in flight (`async_wait {pending = 0}`): their writes
    /// are then complete in this thread.
    CompletesCopies,
    /// Orders every access before it against every access after it, across the program
    /// (`barrier`, `debug_barrier`).
    Barrier,
}

/// Where an op may appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// In tile-level IR (and kept at the GPU level).
    Tile,
    /// Only in GPU-level IR (layouts and shared memory): the interpreter refuses it.
    Gpu,
}

/// How many results an op declares: a number, or `regions(n)` for an op with `n` regions and one
/// result per carried or yielded value.
macro_rules! op_results {
    (regions($r:literal)) => {
        None
    };
    ($n:literal) => {
        Some($n)
    };
}

/// How many regions an op owns.
macro_rules! op_regions {
    (regions($r:literal)) => {
        $r
    };
    ($n:literal) => {
        0
    };
}

/// The pattern that matches op `$V`, binding a family's member to `$w` (`Binary(BinOp)`: the op's
/// name is the member's).
macro_rules! op_pattern {
    ($V:ident, [$Fam:ty], $w:ident) => {
        OpKind::$V($w)
    };
    ($V:ident, [], $w:ident) => {
        OpKind::$V { .. }
    };
}

/// The name of op `$V` matched by [`op_pattern`]: a family member's name, or the declared one.
macro_rules! op_name {
    ($w:ident, []) => {
        $w.name()
    };
    ($w:ident, [$n:literal]) => {
        $n
    };
}

/// Every op `$V` stands for with default attributes (for a family, one per member).
macro_rules! op_prototypes {
    ($out:ident, $V:ident, [], [$Fam:ty], []) => {
        $out.extend(<$Fam>::ALL.into_iter().map(OpKind::$V))
    };
    ($out:ident, $V:ident, [$W:ty], [], []) => {
        $out.push(OpKind::$V(<$W as Attr>::placeholder()))
    };
    ($out:ident, $V:ident, [], [], [$($f:ident : $F:ty $(= $d:expr)?),+]) => {
        $out.push(OpKind::$V { $( $f: op_default!($F $(, $d)?) ),+ })
    };
    ($out:ident, $V:ident, [], [], []) => {
        $out.push(OpKind::$V)
    };
}

/// A field's declared default, or a placeholder the parser overwrites.
macro_rules! op_default {
    ($F:ty) => {
        <$F as Attr>::placeholder()
    };
    ($F:ty, $d:expr) => {
        $d
    };
}

/// Whether a field without a declared default must be written.
macro_rules! op_required {
    () => {
        true
    };
    ($d:expr) => {
        false
    };
}

/// Whether field `$f` may be left out of the text: it has a declared default and holds it.
macro_rules! op_omit {
    ($f:ident) => {
        false
    };
    ($f:ident, $d:expr) => {
        *$f == $d
    };
}

/// Reads and writes op `$V`'s attributes (a word after the name for `Cmp(CmpPred)`, bare fields,
/// then `{key = value, …}` for the rest).
macro_rules! op_attrs {
    (write, $self:ident, $out:ident, $V:ident, [], [$Fam:ty], []) => {};
    (write, $self:ident, $out:ident, $V:ident, [$W:ty], [], []) => {
        if let OpKind::$V(w) = $self {
            $out.push(' ');
            Attr::write(w, $out);
        }
    };
    (write, $self:ident, $out:ident, $V:ident, [], [], [$($f:ident : $F:ty $(= $d:expr)?),+]) => {
        if let OpKind::$V { $($f),+ } = $self {
            let mut keyed: Vec<String> = Vec::new();
            $(
                if <$F as Attr>::BARE {
                    $out.push(' ');
                    Attr::write($f, $out);
                } else if !op_omit!($f $(, $d)?) {
                    let mut v = String::new();
                    Attr::write($f, &mut v);
                    keyed.push(format!("{} = {v}", stringify!($f)));
                }
            )+
            if !keyed.is_empty() {
                $out.push_str(" {");
                $out.push_str(&keyed.join(", "));
                $out.push('}');
            }
        }
    };
    (write, $self:ident, $out:ident, $V:ident, [], [], []) => {};
    (read, $self:ident, $c:ident, $V:ident, [], [$Fam:ty], []) => {};
    (read, $self:ident, $c:ident, $V:ident, [$W:ty], [], []) => {
        if let OpKind::$V(w) = $self {
            *w = Attr::read($c)?;
        }
    };
    (read, $self:ident, $c:ident, $V:ident, [], [], [$($f:ident : $F:ty $(= $d:expr)?),+]) => {
        if let OpKind::$V { $($f),+ } = $self {
            $(
                if <$F as Attr>::BARE {
                    *$f = Attr::read($c)?;
                }
            )+
            // `{k = v, …}` in declared order; a field with a default may be left out.
            let braced = $c.eat("{");
            let mut any = false;
            $(
                if !<$F as Attr>::BARE {
                    let key = stringify!($f);
                    let at = $c.save();
                    if braced && (!any || $c.eat(",")) && $c.peek_word(key) {
                        $c.keyword(key)?;
                        $c.expect("=")?;
                        *$f = Attr::read($c)?;
                        any = true;
                    } else if op_required!($($d)?) {
                        $c.restore(at);
                        let found = $c.found();
                        return Err($c.err(format!("expected `{key} = …`, found {found}")));
                    } else {
                        $c.restore(at);
                    }
                }
            )+
            if braced {
                $c.expect("}")?;
            }
        }
    };
    (read, $self:ident, $c:ident, $V:ident, [], [], []) => {};
}
/// Declares [`OpKind`], the closed set of ops, one entry per op: its documentation, variant
/// (a family of named ops such as `Binary[BinOp]`, a word after the name such as
/// `Cmp(CmpPred)`, or attribute fields, `= default` where the text may leave one out), IR name,
/// result count (or `regions(n)`: `n` regions, results as the regions yield), [`Effect`] and
/// [`Level`]. The name, the parser's table, the attribute text and
/// the three properties all come from this one list; every other consumer (verifier,
/// interpreter, passes, LLVM lowering) matches on [`OpKind`] exhaustively, so adding an op is a
/// checklist rustc walks.
macro_rules! declare_ops {
    (
        $(
            $(#[$vm:meta])*
            $V:ident
            $( ( $W:ty ) )?
            $( [ $Fam:ty ] )?
            $( { $( $(#[$fm:meta])* $f:ident : $F:ty $( = $d:expr )? ),+ $(,)? } )?
            $( $name:literal )?
            => $results:tt $( ( $nr:literal ) )?, $effect:ident, $level:ident;
        )*
    ) => {
        /// One operation. Operands and results live in the op's [`super::OpData`]; what is here
        /// are the attributes that are part of the op's meaning.
        #[derive(Clone, Debug, PartialEq)]
        pub enum OpKind {
            $(
                $(#[$vm])*
                $V $( ($W) )? $( ($Fam) )? $( { $( $(#[$fm])* $f: $F ),+ } )?,
            )*
        }

        impl OpKind {
            /// The op's name in IR text.
            pub fn name(&self) -> &'static str {
                match self {
                    $( op_pattern!($V, [$($Fam)?], w) => op_name!(w, [$($name)?]), )*
                }
            }

            /// How many results the op has, when its kind fixes it: `None` for `for`, `while` and `if`,
            /// which have one per carried or yielded value.
            pub fn num_results(&self) -> Option<usize> {
                match self {
                    $( OpKind::$V { .. } => op_results!($results $(($nr))?), )*
                }
            }

            /// How many regions the op owns (`for` one, `while` and `if` two).
            pub fn num_regions(&self) -> usize {
                match self {
                    $( OpKind::$V { .. } => op_regions!($results $(($nr))?), )*
                }
            }

            /// What the op does besides computing its results (see [`Effect`]).
            pub fn effect(&self) -> Effect {
                match self {
                    $( OpKind::$V { .. } => Effect::$effect, )*
                }
            }

            /// Where the op may appear (see [`Level`]).
            pub fn level(&self) -> Level {
                match self {
                    $( OpKind::$V { .. } => Level::$level, )*
                }
            }

            /// Every op with default attributes, each name once: what the parser looks names up in.
            #[allow(clippy::vec_init_then_push)] // one statement per declared op
            pub fn prototypes() -> Vec<OpKind> {
                let mut out = Vec::new();
                $( op_prototypes!(out, $V, [$($W)?], [$($Fam)?], [$( $($f : $F $(= $d)?),+ )?]); )*
                out
            }

            /// Appends the attributes that follow the name in IR text.
            pub(super) fn write_attrs(&self, out: &mut String) {
                $( op_attrs!(write, self, out, $V, [$($W)?], [$($Fam)?], [$( $($f : $F $(= $d)?),+ )?]); )*
            }

            /// Reads the attributes that follow the name into this prototype.
            #[allow(unused_assignments)] // the last keyed field's `any`
            pub(super) fn read_attrs(&mut self, c: &mut Cursor<'_>) -> Result<(), ParseError> {
                $( op_attrs!(read, self, c, $V, [$($W)?], [$($Fam)?], [$( $($f : $F $(= $d)?),+ )?]); )*
                Ok(())
            }
        }
    };
}

declare_ops! {
    /// A scalar constant; the result type says which.
    Constant(ConstValue) "constant" => 1, Pure, Tile;
    /// The program's index along a grid axis (0, 1 or 2): `i32`.
    ProgramId {
        /// Grid axis.
        axis: u32,
    } "program_id" => 1, Pure, Tile;
    /// The number of programs along a grid axis: `i32`.
    NumPrograms {
        /// Grid axis.
        axis: u32,
    } "num_programs" => 1, Pure, Tile;
    /// `tensor<(end - start) x i32>` holding `start, start + 1, …, end - 1`.
    Arange {
        /// First value.
        start: i64,
        /// One past the last value.
        end: i64,
    } "arange" => 1, Pure, Tile;
    /// A scalar broadcast to every element of a tensor.
    Splat "splat" => 1, Pure, Tile;
    /// The operand with a dimension of extent 1 inserted at `axis` (Triton's `x[:, None]` is
    /// `expand_dims {axis = 1}`). At the GPU level the operand's layout is the result's sliced at
    /// `axis`, so no data moves.
    ExpandDims {
        /// Where the new dimension goes (0 ..= the operand's rank).
        axis: u32,
    } "expand_dims" => 1, Pure, Tile;
    /// The operand repeated along its dimensions of extent 1 to the result's shape (same rank).
    Broadcast "broadcast" => 1, Pure, Tile;
    /// `trans %x`: the transpose of a 2-D tensor (Triton's `tl.trans`): element `[i][j]` of the
    /// `N × M` result is element `[j][i]` of the `M × N` operand. At the GPU level the result's
    /// layout is the operand's with its two dimensions swapped ([`Layout::transposed`]), so each
    /// thread keeps its registers and no data moves.
    ///
    /// [`Layout::transposed`]: super::Layout::transposed
    Trans "trans" => 1, Pure, Tile;
    /// `reshape %x`: the operand's elements, in row-major order, in the result's shape of the
    /// same element count (Triton's `tl.reshape`, NumPy's `reshape` in C order). At the GPU level
    /// an element's row-major index is its place in both, so the result's layout is the
    /// operand's relabeled ([`Layout::reshaped`]) and no data moves.
    ///
    /// [`Layout::reshaped`]: super::Layout::reshaped
    Reshape "reshape" => 1, Pure, Tile;
    /// `interleave %a, %b`: two tensors of one type merged along their last dimension, `a`'s
    /// elements at the even positions and `b`'s at the odd ones (Triton's `tl.interleave`; its
    /// `join` is this followed by a `reshape` that splits the pairs off into a last dimension of
    /// extent 2). The result's last extent is twice the operands'. In row-major order element
    /// `i` of an operand goes to position `2i` (`a`) or `2i + 1` (`b`), so at the GPU level the
    /// result's layout is the operands' with every basis doubled and the pair in one thread's
    /// registers ([`Layout::interleaved`]), and no data moves.
    ///
    /// [`Layout::interleaved`]: super::Layout::interleaved
    Interleave "interleave" => 1, Pure, Tile;
    /// `deinterleave %x`: the inverse of `interleave`, two results: the elements at the even
    /// positions of the last dimension, then those at the odd ones (Triton's `split` is a
    /// `reshape` that merges the last two dimensions followed by this). At the GPU level each
    /// pair must lie in one thread's registers, and the results' layout is the operand's with
    /// that register basis dropped and every other basis halved ([`Layout::deinterleaved`]).
    ///
    /// [`Layout::deinterleaved`]: super::Layout::deinterleaved
    Deinterleave "deinterleave" => 2, Pure, Tile;
    /// The same tensor in another layout (GPU level only; data moves through registers, lanes or
    /// shared memory).
    ConvertLayout "convert_layout" => 1, Pure, Gpu;
    /// The operand rotated along `axis` (NumPy's `roll`): element `j` of the result is element
    /// `(j − shift) mod n` of the operand, `n` the extent of `axis`. Same type and layout.
    Roll {
        /// The dimension rotated.
        axis: u32,
        /// Positions each element moves toward higher indices, `0 ≤ shift < n`.
        shift: u32,
    } "roll" => 1, Pure, Tile;
    /// Element-wise arithmetic.
    Binary[BinOp] => 1, Pure, Tile;
    /// Element-wise comparison.
    Cmp(CmpPred) "cmp" => 1, Pure, Tile;
    /// Element-wise unary op.
    Unary[UnOp] => 1, Pure, Tile;
    /// `select %cond, %a, %b`: `a` where `cond`, else `b`.
    Select "select" => 1, Pure, Tile;
    /// `addptr %ptr, %offset`: the pointer advanced by `offset` elements.
    AddPtr "addptr" => 1, Pure, Tile;
    /// `hint {multiple_of = d, contiguous = c} %x`: `x` itself (an integer tensor or scalar), with a promise
    /// the compiler takes on trust, as Triton's `tl.multiple_of` and `tl.max_contiguous`: along
    /// the last dimension the values run in steps of one for `contiguous` elements from every
    /// multiple of `contiguous`, and the first value of each run is a multiple of `multiple_of`
    /// (both powers of two). Same type as the operand. The interpreter ignores it; where a false
    /// promise feeds an address, the GPU may load other elements than the interpreter.
    Hint {
        /// What every element is a multiple of.
        multiple_of: u32 = 1,
        /// The length of the runs of consecutive values.
        contiguous: u32 = 1,
    } "hint" => 1, Pure, Tile;
    /// A float math function of 1 to 3 operands of one type.
    Math[MathFn] => 1, Pure, Tile;
    /// Element-wise conversion to the result's element type: floats to integers truncate toward
    /// zero and saturate (NaN → 0), to `f16`/`bf16` round to nearest even, to `i1` test `!= 0`.
    Cast "cast" => 1, Pure, Tile;
    /// Element-wise reinterpretation of the bits as the result's element type, of the same
    /// width (Triton's `x.to(dtype, bitcast=True)`); neither booleans nor pointers.
    Bitcast "bitcast" => 1, Pure, Tile;
    /// Element-wise conversion of `i64` or `u64` byte addresses into pointers of the result's
    /// element type (Triton's `x.to(tl.pointer_type(T))`): what an address loaded from memory (a
    /// table of buffers, as a grouped GEMM takes) becomes. Only an `unsafe` kernel holds it.
    IntToPtr "int_to_ptr" => 1, Pure, Tile;
    /// Combines the elements along `axis`; the result drops that dimension (a rank-1 tensor
    /// reduces to a scalar).
    Reduce {
        /// How elements combine.
        kind: ReduceKind,
        /// The dimension reduced.
        axis: u32,
    } "reduce" => 1, Pure, Tile;
    /// `dot %a, %b, %acc`: the matrix product of `a` (`M × K`) and `b` (`K × N`) added to `acc`
    /// (`M × N`, `f32`): each element is `acc[m][n]` followed by one fused multiply-add
    /// `fma(a[m][k], b[k][n], ·)` for `k = 0, 1, …, K − 1`, in that order, in `f32` (`f16`/`bf16`
    /// operands are widened exactly first), so both back ends agree bit for bit. How the GPU
    /// computes it is the lowering's business: the FMA chain, or tensor cores for 16-bit
    /// operands, whose sums may differ in order and rounding (ARCHITECTURE.md states the bound).
    /// With `precision = tf32`, `f32` operands are first rounded by [`round_tf32`]. For `i8`
    /// operands `acc` and the result are `i32`: exact products, summed wrapping, so every
    /// order agrees.
    Dot {
        /// How `f32` operands are treated.
        precision: Precision = Precision::Ieee,
    } "dot" => 1, Pure, Tile;
    /// `load %ptr[, %mask, %other]`: read the pointed-to elements; where `mask` is false no
    /// memory is touched and the element is `other`.
    Load {
        /// Elements each thread accesses with one instruction (GPU level; 1 at the tile level).
        vec: u32 = 1,
        /// The cache eviction hint.
        evict: Evict = Evict::Normal,
    } "load" => 1, Read, Tile;
    /// `store %ptr, %value[, %mask]`: write elements where `mask` is true.
    Store {
        /// Elements each thread accesses with one instruction (GPU level; 1 at the tile level).
        vec: u32 = 1,
        /// The cache eviction hint.
        evict: Evict = Evict::Normal,
    } "store" => 0, Write, Tile;
    /// `desc_load {slot} %ptr, %dim…, %stride…, %coord…`: the tile of a strided array that
    /// starts at `coord` (Triton's `desc.load(coord)` on a `tl.make_tensor_descriptor`). The
    /// array is `ptr` (a scalar pointer) with one `dim` (`i64`: extents) and one `stride`
    /// (`i64`: elements between neighbours along the dimension) per dimension of the result,
    /// and the tile's first element is at `coord` (`i32` scalars, one per dimension). Element
    /// `i` of the result is the array's element `coord + i` where every coordinate of it lies
    /// in `0 .. dim`, and 0 elsewhere, without touching memory there. `slot` names the
    /// `make_tensor_descriptor` the access came from: accesses with one slot describe one array,
    /// and on Hopper the slot's tensor map (built by the launch) lets a copy engine fetch it.
    DescLoad {
        /// The kernel's descriptor this access uses.
        slot: u32,
    } "desc_load" => 1, Read, Tile;
    /// `desc_store {slot} %ptr, %dim…, %stride…, %coord…, %value`: writes `value` to the tile of
    /// the array described as for `desc_load` that starts at `coord`; elements outside the
    /// array's extents are not written.
    DescStore {
        /// The kernel's descriptor this access uses.
        slot: u32,
    } "desc_store" => 0, Write, Tile;
    /// `atomic_rmw {op} %ptr, %value[, %mask]`: for each element where `mask` is true, replaces
    /// the pointed-to value `old` by `op(old, value)` in one indivisible step and yields `old`
    /// (elsewhere the result is 0 and no memory is touched). Elements of one tile pointing to
    /// one address are applied one after another in some order.
    AtomicRmw {
        /// The update.
        op: AtomicOp,
        /// Memory ordering.
        sem: MemSem = MemSem::AcqRel,
        /// The threads the ordering is with.
        scope: MemScope = MemScope::Gpu,
    } "atomic_rmw" => 1, Atomic, Tile;
    /// `atomic_cas %ptr, %cmp, %value[, %mask]`: for each element where `mask` is true, writes
    /// `value` if the pointed-to value equals `cmp` (bitwise), in one indivisible step, and
    /// yields the value found (0 where masked off).
    AtomicCas {
        /// Memory ordering.
        sem: MemSem = MemSem::AcqRel,
        /// The threads the ordering is with.
        scope: MemScope = MemScope::Gpu,
    } "atomic_cas" => 1, Atomic, Tile;
    /// Running combination along `axis`: element `j` of the result combines the operand's
    /// elements `0 ..= j` along it (with `reverse`, `j ..= n − 1`). Same type as the operand.
    Scan {
        /// How elements combine.
        kind: ScanKind,
        /// The dimension scanned.
        axis: u32,
        /// From the last element toward the first.
        reverse: bool = false,
    } "scan" => 1, Pure, Tile;
    /// `associative_scan {axis} %a…`: a running combination along `axis` of `n` tiles of one
    /// shape at once, by a combiner the one-block region spells (Triton's `tl.associative_scan`
    /// with a function). The region's arguments are `2n` scalars: the earlier tuple (one element
    /// of each operand) then the later one; it ends with `yield` of the `n` combined scalars, of
    /// the operands' element types. Result `i` at position `j` combines the tuples `0 ..= j`
    /// along the axis, earlier ones first (with `reverse`, `j ..= n − 1` taken from the last
    /// toward the first, as if the axis were flipped, scanned and flipped back). The combiner
    /// must be associative; the order it is applied in is not specified beyond that. The region
    /// holds element-wise ops on scalars only, and may use scalars defined before the op.
    AssociativeScan {
        /// The dimension scanned.
        axis: u32,
        /// From the last element toward the first.
        reverse: bool = false,
    } "associative_scan" => regions(1), Pure, Tile;
    /// `gather {axis} %src, %index`: elements of `src` picked along `axis` by the `i32` tensor
    /// `index` (Triton's `tl.gather`): the result has `index`'s shape and `src`'s element type,
    /// and element `i` of it is `src` at `i` with its coordinate along `axis` replaced by
    /// `index[i] mod n`, `n` the extent of `axis` in `src` (a power of two, so the index's low
    /// bits: an index outside `0..n` wraps, `-1` reading `n − 1`). `index` has `src`'s rank and
    /// its extents on the other dimensions; both back ends read the same element for every index.
    Gather {
        /// The dimension indexed.
        axis: u32,
    } "gather" => 1, Pure, Tile;
    /// `for %lb, %ub, %step, %init…`: runs its one-block body region for `iv = lb, lb + step, …`
    /// while `iv < ub` (`step` > 0; no iteration when `lb >= ub`). The body's arguments are `iv`
    /// (`i32`) and the loop-carried values, which start as the `init` operands; the body ends with
    /// `yield` of their next values. The op's results are the carried values after the last
    /// iteration (the `init` values when there was none). Its effect is its body's, at most a
    /// write.
    For "for" => regions(1), Write, Tile;
    /// `while %init…`: runs its first region (the condition) on the carried values, which start
    /// as the `init` operands; while the `i1` scalar it yields is true, runs its second region
    /// (the body) on them, whose `yield` gives their next values, and the condition again. Both
    /// regions are one block whose arguments are the carried values; the op's results are the
    /// carried values when the condition was false (the `init` values when it was false at
    /// once). The condition may have effects of its own (an `atomic_cas` that takes a lock); it
    /// runs once more than the body. Its effect is its regions', at most a write.
    While "while" => regions(2), Write, Tile;
    /// `if %cond`: runs its first region when the `i1` scalar `cond` is true, else its second;
    /// each region is one block without arguments ending with `yield` of one value per result of
    /// the op, which takes the yielded values of the region that ran.
    If "if" => regions(2), Write, Tile;
    /// Ends a loop body (the carried values of the next iteration), a `while`'s condition (the
    /// `i1` scalar it decides), or a branch of an `if` (the `if`'s results).
    Yield "yield" => 0, Terminator, Tile;
    /// Every thread of the program waits here until all have arrived; what each wrote to
    /// memory before it is visible to the program's threads after it (Triton's
    /// `tl.debug_barrier`, CUDA's `__syncthreads`). A program is one thread on the interpreter,
    /// where it does nothing. A spin lock needs it: the program's stores are done before its
    /// release (an `atomic_xchg` applied by one thread).
    DebugBarrier "debug_barrier" => 0, Sync, Tile;
    /// Ends the kernel.
    Return "return" => 0, Terminator, Tile;
    /// GPU level: a shared-memory buffer, the result's `smem<S x R x C x T, #shared…>` type (`S`
    /// stages of an `R × C` tile). Its bytes are the program's while it is live. An allocation
    /// is its own buffer: two are never one, so it is not pure.
    LocalAlloc "local_alloc" => 1, Sync, Gpu;
    /// GPU level: `async_copy %buf, %stage, %ptr[, %mask]` starts copying the `R × C` tile of
    /// elements `ptr` points to into stage `stage` (an `i32` scalar) of `buf` (`cp.async`), `vec`
    /// elements per instruction; where `mask` is false no global memory is read and the element
    /// is written as 0. The data is there once a later `async_wait` lets this thread's group
    /// finish, and visible to other threads after a `barrier` that follows it.
    AsyncCopy {
        /// Elements each thread copies with one instruction.
        vec: u32 = 1,
    } "async_copy" => 0, Sync, Gpu;
    /// GPU level: closes the group of this thread's copies issued since the last commit.
    AsyncCommit "async_commit" => 0, Sync, Gpu;
    /// GPU level: waits until at most `pending` of this thread's committed groups are unfinished.
    AsyncWait {
        /// Groups that may still be in flight.
        pending: u32,
    } "async_wait" => 0, Sync, Gpu;
    /// GPU level: every thread of the program waits here; shared memory written before it by any
    /// thread is visible to every read after it.
    Barrier "barrier" => 0, Sync, Gpu;
    /// GPU level: `local_load {offset = [r0, c0]} %buf, %stage` reads the window of stage `stage`
    /// of `buf` that starts at row `r0`, column `c0` and has the result's shape into registers in
    /// the result's layout (an mma operand layout: `ldmatrix`; or a blocked or mma accumulator
    /// layout, the whole stage, each thread its own elements). The window is one of the tiles of
    /// its shape that partition the stage (each offset a multiple of the result's extent); without
    /// an offset it is the whole stage. With `trans` the stage holds the operand transposed (a
    /// `B` loaded `N × K` for `dot(a, b.trans())`, an `A` loaded `K × M` for
    /// `dot(a.trans(), b)`): the result is the whole stage's transpose.
    LocalLoad {
        /// Row and column of the window's first element.
        offset: [u32; 2] = [0, 0],
        /// The stage holds the result transposed (`N × K` for a `K × N` `B`, `K × M` for an
        /// `M × K` `A`).
        trans: bool = false,
    } "local_load" => 1, Sync, Gpu;
    /// GPU level (Hopper): `warp_group_dot %a, %a_stage, %b, %b_stage, %acc` starts `acc + A · B`
    /// on the tensor cores (`wgmma.mma_async`), `A` stage `a_stage` of the buffer `a` (`M × K`,
    /// or `K × M` with `trans_a`) and `B` stage `b_stage` of `b` (`K × N`, or `N × K` with
    /// `trans_b`), both read by the
    /// hardware from shared memory in their `wgmma` layouts; or `warp_group_dot %a, %b,
    /// %b_stage, %acc` with `A` in registers (the `A` operand layout of the accumulator's). The
    /// accumulator has an mma layout of version 3. The result is not
    /// ready, nor are the stages free to overwrite, until a `warp_group_wait` lets this group
    /// finish; until then the result may only flow into another `warp_group_dot` or a wait.
    WarpGroupDot {
        /// `A`'s stage holds `Aᵀ` (`K × M`, `M` contiguous: "M-major", as a product over the
        /// rows of two row-major matrices loads its left operand, `xᵀ · y`) rather than `A`
        /// (`M × K`, `K` contiguous).
        trans_a: bool = false,
        /// `B`'s stage holds `Bᵀ` (`N × K`, `K` contiguous: "K-major", as flash attention's `K`
        /// tile is loaded for `Q Kᵀ`) rather than `B` (`K × N`, `N` contiguous).
        trans_b: bool = false,
    } "warp_group_dot" => 1, Sync, Gpu;
    /// GPU level (Hopper): `warp_group_wait {pending = P} %acc` waits until at most `P` of this
    /// thread's `warp_group_dot` groups are unfinished and yields `acc`; with `P = 0` the result
    /// is complete.
    WarpGroupWait {
        /// Groups that may still be in flight.
        pending: u32,
    } "warp_group_wait" => 1, Sync, Gpu;
    /// GPU level (Hopper): orders this thread's earlier writes to shared memory (`cp.async`
    /// included) before later reads of the tensor cores' asynchronous proxy (`wgmma`); a
    /// `barrier` after it extends that to every thread's writes.
    FenceAsyncShared "fence_async_shared" => 0, Sync, Gpu;
    /// GPU level (Hopper): `mbarrier_init %bars` makes each stage of the buffer `bars`
    /// (`smem<S x 1 x 1 x i64>`) a barrier object that completes a phase at one arrival and the
    /// bytes it was told to expect (one thread initializes; a `barrier` must follow before any
    /// other thread uses them).
    MbarrierInit "mbarrier_init" => 0, Sync, Gpu;
    /// GPU level (Hopper): `mbarrier_expect {bytes} %bars, %stage, %pred`: where the `i1` scalar
    /// `pred` holds, one thread arrives at barrier `stage` of `bars` announcing `bytes` bytes of
    /// copies that will complete on it (`mbarrier.arrive.expect_tx`).
    MbarrierExpect {
        /// Bytes the phase waits for.
        bytes: u32,
    } "mbarrier_expect" => 0, Sync, Gpu;
    /// GPU level (Hopper): `tma_load {slot} %buf, %stage, %bars, %pred, %coord…`: where `pred`
    /// holds, one thread starts the tensor-memory-accelerator copy of the tile of descriptor
    /// `slot` that starts at `coord` (`i32`, one per dimension of a stage) into stage `stage` of
    /// `buf`, in `buf`'s layout (a swizzled `wgmma` layout: one copy per column block), completing
    /// on barrier `stage` of `bars`. Elements outside the array are written as 0.
    TmaLoad {
        /// The kernel's descriptor (its tensor map, a parameter the launch adds).
        slot: u32,
    } "tma_load" => 0, Sync, Gpu;
    /// GPU level (Hopper): `mbarrier_wait %bars, %stage, %phase` waits until barrier `stage` of
    /// `bars` has completed the phase of parity `phase` (an `i32` scalar, 0 or 1): the copies
    /// announced for it have landed and are visible to this thread.
    MbarrierWait "mbarrier_wait" => 0, Sync, Gpu;
    /// GPU level (Hopper): `mbarrier_inval %bars` ends the barrier objects of `bars` (one thread),
    /// so their bytes may serve other data.
    MbarrierInval "mbarrier_inval" => 0, Sync, Gpu;
}

impl OpKind {
    /// True when the op has no effect besides its results (so it may be removed when they are
    /// unused, or merged with an identical op). A load is not: a store in the same program may
    /// change what it reads.
    pub fn is_pure(&self) -> bool {
        self.effect() == Effect::Pure
    }

    /// True for the loops, `for` and `while`: ops whose regions may run many times, so that a
    /// value from before them is live through all of them and what one iteration leaves meets
    /// the next.
    pub fn is_loop(&self) -> bool {
        matches!(self, OpKind::For | OpKind::While)
    }

    /// True for the ops that exist only at the GPU level (layouts and shared memory).
    pub fn is_gpu_only(&self) -> bool {
        self.level() == Level::Gpu
    }

    /// True for the ops an `associative_scan`'s combiner may hold: element-wise arithmetic on
    /// scalars (`constant`, `binary`, `unary`, `cmp`, `select`, `math`, `cast`, `bitcast`), which
    /// the lowering runs once per combination; and its `yield`.
    pub fn fits_combiner(&self) -> bool {
        matches!(
            self,
            OpKind::Constant(_)
                | OpKind::Binary(_)
                | OpKind::Unary(_)
                | OpKind::Cmp(_)
                | OpKind::Select
                | OpKind::Math(_)
                | OpKind::Cast
                | OpKind::Bitcast
                | OpKind::Yield
        )
    }

    /// True for the ops whose lowering may borrow scratch shared memory for the length of the op
    /// (how many bytes, possibly none, follows from its types and layouts): moving elements
    /// between threads (`convert_layout`, `reduce`, `scan`, `roll`, `gather`), an atomic's
    /// results, and a `dot`'s operands. The shared-memory allocation reserves bytes for these ops
    /// only.
    pub fn uses_scratch(&self) -> bool {
        self.shared_memory_use() == SharedMemoryUse::Scratch
    }

    /// What the op does to shared memory (see [`SharedMemoryUse`]).
    pub fn shared_memory_use(&self) -> SharedMemoryUse {
        match self {
            OpKind::ConvertLayout
            | OpKind::Reduce { .. }
            | OpKind::Scan { .. }
            | OpKind::AssociativeScan { .. }
            | OpKind::Roll { .. }
            | OpKind::AtomicRmw { .. }
            | OpKind::AtomicCas { .. }
            | OpKind::Dot { .. }
            | OpKind::Gather { .. } => SharedMemoryUse::Scratch,
            OpKind::LocalAlloc => SharedMemoryUse::Allocates,
            OpKind::LocalLoad { .. } => SharedMemoryUse::ReadsBuffers,
            // Its stages, asynchronously: a later write to them waits for the group, which
            // `pipeline-dot` orders, and for a barrier, which `insert-barriers` places.
            OpKind::WarpGroupDot { .. } => SharedMemoryUse::ReadsBuffers,
            OpKind::AsyncCopy { .. } => SharedMemoryUse::WritesAsync(0),
            OpKind::AsyncWait { pending: 0 } => SharedMemoryUse::CompletesCopies,
            OpKind::Barrier | OpKind::DebugBarrier => SharedMemoryUse::Barrier,
            OpKind::AsyncWait { .. }
            | OpKind::AsyncCommit
            | OpKind::WarpGroupWait { .. }
            | OpKind::FenceAsyncShared
            | OpKind::MbarrierInit
            | OpKind::MbarrierExpect { .. }
            | OpKind::TmaLoad { .. }
            | OpKind::MbarrierWait
            | OpKind::MbarrierInval
            | OpKind::DescLoad { .. }
            | OpKind::DescStore { .. }
            | OpKind::Constant(_)
            | OpKind::ProgramId { .. }
            | OpKind::NumPrograms { .. }
            | OpKind::Arange { .. }
            | OpKind::Splat
            | OpKind::ExpandDims { .. }
            | OpKind::Broadcast
            | OpKind::Trans
            | OpKind::Reshape
            | OpKind::Interleave
            | OpKind::Deinterleave
            | OpKind::Binary(_)
            | OpKind::Cmp(_)
            | OpKind::Unary(_)
            | OpKind::Select
            | OpKind::AddPtr
            | OpKind::Hint { .. }
            | OpKind::Math(_)
            | OpKind::Cast
            | OpKind::Bitcast
            | OpKind::IntToPtr
            | OpKind::Load { .. }
            | OpKind::Store { .. }
            | OpKind::For
            | OpKind::While
            | OpKind::If
            | OpKind::Yield
            | OpKind::Return => SharedMemoryUse::None,
        }
    }

    /// True for the ops whose tensor operands and results all have one layout at the GPU level,
    /// as the verifier's rules require: the element-wise ops, `splat`, `broadcast`, `roll`,
    /// `scan`, and the memory accesses (pointers, masks and values). False for ops without
    /// tensor operands, for those that change the shape or layout, and for control flow (whose
    /// carried values each have their own).
    pub fn keeps_layout(&self) -> bool {
        match self {
            OpKind::Splat
            | OpKind::Broadcast
            | OpKind::Roll { .. }
            | OpKind::Binary(_)
            | OpKind::Cmp(_)
            | OpKind::Unary(_)
            | OpKind::Select
            | OpKind::AddPtr
            | OpKind::Hint { .. }
            | OpKind::Math(_)
            | OpKind::Cast
            | OpKind::Bitcast
            | OpKind::IntToPtr
            | OpKind::Scan { .. }
            | OpKind::AssociativeScan { .. }
            | OpKind::Load { .. }
            | OpKind::Store { .. }
            | OpKind::AtomicRmw { .. }
            | OpKind::AtomicCas { .. } => true,
            OpKind::Constant(_)
            | OpKind::ProgramId { .. }
            | OpKind::NumPrograms { .. }
            | OpKind::Arange { .. }
            | OpKind::ExpandDims { .. }
            | OpKind::Trans
            | OpKind::Reshape
            | OpKind::Interleave
            | OpKind::Deinterleave
            | OpKind::ConvertLayout
            | OpKind::Reduce { .. }
            | OpKind::Dot { .. }
            | OpKind::Gather { .. }
            | OpKind::For
            | OpKind::While
            | OpKind::If
            | OpKind::Yield
            | OpKind::Return
            | OpKind::LocalAlloc
            | OpKind::AsyncCopy { .. }
            | OpKind::AsyncCommit
            | OpKind::AsyncWait { .. }
            | OpKind::Barrier
            | OpKind::DebugBarrier
            | OpKind::LocalLoad { .. }
            | OpKind::WarpGroupDot { .. }
            | OpKind::WarpGroupWait { .. }
            | OpKind::FenceAsyncShared
            | OpKind::MbarrierInit
            | OpKind::MbarrierExpect { .. }
            | OpKind::TmaLoad { .. }
            | OpKind::MbarrierWait
            | OpKind::MbarrierInval
            | OpKind::DescLoad { .. }
            | OpKind::DescStore { .. } => false,
        }
    }
}

impl ConstValue {
    /// True for the integer 0 and the float +0.0 (not −0.0, which is not an additive identity
    /// bit for bit: `−0.0 + +0.0` is +0.0).
    pub fn is_zero(&self) -> bool {
        match *self {
            ConstValue::Int(i) => i == 0,
            ConstValue::Float(x) => x == 0.0 && x.is_sign_positive(),
        }
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
    use std::collections::{HashMap, HashSet};

    use super::super::parse::Cursor;
    use super::*;

    /// `kind`'s attributes printed, then read back into the prototype of its name.
    fn reread(kind: &OpKind) -> Result<OpKind, String> {
        let mut text = String::new();
        kind.write_attrs(&mut text);
        let aliases = HashMap::new();
        let mut c = Cursor::new(&text, 1, &aliases);
        let mut back = OpKind::prototypes()
            .into_iter()
            .find(|p| p.name() == kind.name())
            .ok_or("no prototype")?;
        back.read_attrs(&mut c).map_err(|e| e.to_string())?;
        c.end().map_err(|e| e.to_string())?;
        Ok(back)
    }

    #[test]
    fn op_table() {
        let protos = OpKind::prototypes();
        let mut names = HashSet::new();
        for p in &protos {
            assert!(names.insert(p.name()), "`{}` named twice", p.name());
            assert_eq!(reread(p).as_ref(), Ok(p), "{}", p.name());
        }
        let samples = [
            OpKind::Constant(ConstValue::Int(-7)),
            OpKind::ProgramId { axis: 2 },
            OpKind::Arange { start: -4, end: 4 },
            OpKind::Roll { axis: 1, shift: 3 },
            OpKind::Gather { axis: 1 },
            OpKind::Cmp(CmpPred::Ne),
            OpKind::Reduce {
                kind: ReduceKind::Max,
                axis: 1,
            },
            OpKind::Dot {
                precision: Precision::Tf32,
            },
            OpKind::Load {
                vec: 4,
                evict: Evict::Normal,
            },
            OpKind::Load {
                vec: 1,
                evict: Evict::First,
            },
            OpKind::Store {
                vec: 2,
                evict: Evict::Last,
            },
            OpKind::AsyncWait { pending: 2 },
            OpKind::LocalLoad {
                offset: [16, 32],
                trans: false,
            },
            OpKind::LocalLoad {
                offset: [0, 0],
                trans: true,
            },
        ];
        for k in &samples {
            assert_eq!(reread(k).as_ref(), Ok(k));
        }
        let mut t = String::new();
        OpKind::Reduce {
            kind: ReduceKind::Min,
            axis: 0,
        }
        .write_attrs(&mut t);
        assert_eq!(t, " min {axis = 0}");
        // Attributes out of range or missing are errors, not truncations or defaults.
        let aliases = HashMap::new();
        for (name, text, want) in [
            ("program_id", " {axis = 4294967296}", "does not fit in u32"),
            ("program_id", "", "expected `axis = …`"),
            ("roll", " {axis = 1}", "expected `shift = …`"),
            ("reduce", " mean {axis = 0}", "unknown reduction `mean`"),
        ] {
            let mut k = protos.iter().find(|p| p.name() == name).unwrap().clone();
            let mut c = Cursor::new(text, 1, &aliases);
            let e = k.read_attrs(&mut c).unwrap_err();
            assert!(e.msg.contains(want), "{name}{text}: {}", e.msg);
        }
    }

    /// Every op that touches shared memory other than through scratch exists only at the GPU
    /// level and is ordered with every effect (`Sync`); only a wait for every group completes
    /// the copies.
    #[test]
    fn shared_memory_uses() {
        for p in OpKind::prototypes() {
            let u = p.shared_memory_use();
            // `debug_barrier`, the one tile-level barrier, which the interpreter needs nothing for.
            if !matches!(u, SharedMemoryUse::None | SharedMemoryUse::Scratch)
                && !matches!(p, OpKind::DebugBarrier)
            {
                assert_eq!(
                    (p.level(), p.effect()),
                    (Level::Gpu, Effect::Sync),
                    "{}",
                    p.name()
                );
            }
        }
        for (pending, u) in [
            (0, SharedMemoryUse::CompletesCopies),
            (1, SharedMemoryUse::None),
        ] {
            assert_eq!(OpKind::AsyncWait { pending }.shared_memory_use(), u);
        }
    }

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
