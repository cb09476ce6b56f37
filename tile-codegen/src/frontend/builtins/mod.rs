//! The kernel language's built-in functions and methods (Triton's `core.py`): one declaration per
//! builtin with its name, how it is written, its signature, its count of arguments where every
//! call is checked alike, and its documentation, from which the front end's dispatch (an
//! exhaustive match here, naming each builtin's lowering), the "unknown function" messages and
//! the language table in the crate documentation are derived.
//!
//! Each family's lowering has its own file: `grid.rs` (`program_id`, `num_programs`), `shape.rs`
//! (`arange`, `zeros`, `full`, `expand_dims`, `trans`, `reshape`, `broadcast_to`, `roll`,
//! `interleave`, `join`, `split`), `memory.rs` (`load`, `store`), `math.rs`
//! (the math functions, `min`, `max`, `umulhi`, `cdiv`, `select`), `dot.rs`, `reduce.rs` (`sum` …
//! `argmin`), `scans.rs` (`cumsum` … `associative_scan`), `random.rs` (`rand` … `randn`),
//! `gather.rs`, `atomics.rs` and `descriptors.rs` (`make_tensor_descriptor` and its `load` and
//! `store` methods); `args.rs` reads compile-time integers and named arguments for all of them.

mod args;
mod atomics;
mod descriptors;
mod dot;
mod gather;
mod grid;
mod math;
mod memory;
mod random;
mod reduce;
mod scans;
mod shape;

use quote::ToTokens;
use syn::Expr;
use tile_core::ir::{MathFn, ReduceKind};

use super::walker::{err, Lowering, Val};
use args::check_count;
pub use descriptors::Descriptor;

/// How a builtin is written in a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `f(x, …)`.
    Function,
    /// `x.f(…)`.
    Method,
    /// Either.
    Both,
}

impl Form {
    /// Whether a builtin of this form may be written as `call` (a function or a method).
    fn allows(self, call: Form) -> bool {
        self == Form::Both || self == call
    }
}

/// Declares [`Builtin`]: per builtin its variant, name, [`Form`], signature and documentation
/// (the doc comment, the language reference's row), and for the builtins whose function form
/// every call checks alike (`takes lo..=hi "what"`) its count of positional arguments. The
/// dispatch in [`Lowering::call`] and [`Lowering::method_call`] matches on it exhaustively; the
/// names in "unknown function" messages and the crate documentation's table are checked against
/// it.
macro_rules! builtins {
    (@takes) => { None };
    (@takes $lo:literal, $hi:literal, $what:literal) => { Some(($lo..=$hi, $what)) };
    ($(
        $(#[doc = $doc:literal])*
        $V:ident $name:literal $form:ident $sig:literal $(takes $lo:literal ..= $hi:literal $what:literal)?;
    )*) => {
        /// A built-in function or method of the kernel language (besides the math functions,
        /// [`MathFn`], which are written both ways).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Builtin {
            $( $(#[doc = $doc])* $V, )*
        }

        impl Builtin {
            /// Every builtin, in declaration order.
            pub const ALL: [Builtin; [$($name),*].len()] = [$(Builtin::$V),*];

            /// Its name in kernels.
            pub fn name(self) -> &'static str {
                match self {
                    $( Builtin::$V => $name, )*
                }
            }

            /// How it is written.
            pub fn form(self) -> Form {
                match self {
                    $( Builtin::$V => Form::$form, )*
                }
            }

            /// How it is called, as the language reference writes it.
            pub fn signature(self) -> &'static str {
                match self {
                    $( Builtin::$V => $sig, )*
                }
            }

            /// What it does.
            pub fn doc(self) -> &'static str {
                match self {
                    $( Builtin::$V => concat!($($doc),*), )*
                }
            }

            /// How many positional arguments its function form takes and how messages describe
            /// them, where the dispatch checks the count before lowering (`None`: the builtin's
            /// lowering reads its arguments itself, named ones included).
            pub fn takes(self) -> Option<(std::ops::RangeInclusive<usize>, &'static str)> {
                match self {
                    $( Builtin::$V => builtins!(@takes $($lo, $hi, $what)?), )*
                }
            }
        }
    };
}

builtins! {
    /// This program's index along grid axis 0, 1 or 2 (`i32`).
    ProgramId "program_id" Function "program_id(axis)"
        takes 1..=1 "1 argument (the grid axis)";
    /// The grid's size along axis 0, 1 or 2 (`i32`).
    NumPrograms "num_programs" Function "num_programs(axis)"
        takes 1..=1 "1 argument (the grid axis)";
    /// The `i32` tile `start..end`: compile-time bounds, a power-of-two length.
    Arange "arange" Function "arange(start, end)"
        takes 2..=2 "2 arguments (start, end)";
    /// An f32 tile of zeros; `shape` is `N` or `[M, N]`.
    Zeros "zeros" Function "zeros(shape)"
        takes 1..=1 "1 argument (the shape: `N` or `[M, N]`)";
    /// A tile of `value` (its type, or `i32`/`f32` for a literal).
    Full "full" Function "full(shape, value)"
        takes 2..=2 "2 arguments (the shape, the value)";
    /// Inserts an extent-1 dimension at `axis` (Triton's `t[:, None]` is `t.expand_dims(1)`).
    ExpandDims "expand_dims" Both "expand_dims(t, axis)"
        takes 2..=2 "2 arguments (tile, axis)";
    /// The transpose of a 2-D tile (Triton's `tl.trans`, `t.T`): `[i][j]` of the result is
    /// `t[j][i]`. Also `t.trans()`. No data moves on the GPU: the result's layout is derived.
    Trans "trans" Both "trans(t)"
        takes 1..=1 "1 argument (the tile)";
    /// The tile's (or scalar's) bits read as another element type of the same width (Triton's
    /// `x.to(dtype, bitcast=True)`): `bitcast(x, u32)` of an `f32` tile is its IEEE bits. Also
    /// `x.bitcast(u32)`. Not booleans or pointers.
    Bitcast "bitcast" Both "bitcast(t, T)"
        takes 2..=2 "2 arguments (the tile, the element type)";
    /// The tile's elements in row-major order in another shape of the same element count (`N`
    /// or `[M, N]`, compile-time extents; Triton's `tl.reshape`, NumPy's C order). Also
    /// `t.reshape(shape)`. No data moves on the GPU: the result's layout is derived.
    Reshape "reshape" Both "reshape(t, shape)"
        takes 2..=2 "2 arguments (the tile, the shape)";
    /// Two tiles of one shape and element type merged along their last dimension, `a`'s
    /// elements at the even positions and `b`'s at the odd ones (Triton's `tl.interleave`): the
    /// result's last extent is twice theirs. Unpacking 4-bit values: `interleave(lo, hi)` of the
    /// low and high nibbles puts each byte's two values side by side. No data moves on the GPU.
    Interleave "interleave" Function "interleave(a, b)"
        takes 2..=2 "2 arguments (the tiles at the even and the odd positions)";
    /// Two 1-D tiles of one shape and element type stacked along a new last dimension of extent
    /// 2 (Triton's `tl.join`): `join(a, b)[i][0]` is `a[i]`, `[i][1]` is `b[i]`. Tiles have at
    /// most 2 dimensions, so the operands are 1-D; `interleave` merges 2-D tiles.
    Join "join" Function "join(a, b)"
        takes 2..=2 "2 arguments (the tiles for index 0 and index 1 of the new dimension)";
    /// The inverse of `join`: a 2-D tile whose last extent is 2 split into its two columns,
    /// `let (a, b) = split(t);` (Triton's `tl.split`). Also `t.split()`. Of an `interleave`d
    /// tile `x`, `split(x.reshape([n, 2]))` gives back the even and odd positions.
    Split "split" Both "split(t)"
        takes 1..=1 "1 argument (the tile, whose last extent is 2)";
    /// The tile (or scalar) repeated to `shape` by NumPy's rules (Triton's `tl.broadcast_to`):
    /// missing leading dimensions are added, extent-1 dimensions repeated. Also
    /// `t.broadcast_to(shape)`.
    BroadcastTo "broadcast_to" Both "broadcast_to(t, shape)"
        takes 2..=2 "2 arguments (the tile, the shape)";
    /// Reads through a pointer or tile of pointers; masked-off lanes touch no memory and give
    /// `other` (default 0). `mask` and `other` may be written by name, as Triton does
    /// (`load(p, mask = m, other = 0.0)`, or `load(p, m, other = 0.0)`).
    /// `evict = first` (data not read again soon) or `evict = last` asks the caches to evict its
    /// lines first or last (Triton's `eviction_policy`); a hint, the values are the same.
    Load "load" Function "load(ptrs[, mask[, other]][, evict = normal | first | last])";
    /// Writes where the mask is true (`mask` also by name: `store(p, v, mask = m)`);
    /// `evict = first | last` as for `load`.
    Store "store" Function "store(ptrs, values[, mask][, evict = normal | first | last])";
    /// `a` where the mask is true, else `b` (Triton's `where`).
    Select "select" Function "select(mask, a, b)"
        takes 3..=3 "3 arguments (mask, if true, if false)";
    /// Element-wise minimum; for floats a NaN operand yields the other.
    Min "min" Function "min(a, b)"
        takes 2..=2 "2 arguments";
    /// Element-wise maximum; for floats a NaN operand yields the other.
    Max "max" Function "max(a, b)"
        takes 2..=2 "2 arguments";
    /// `acc + a @ b` for an `M × K` and a `K × N` tile of one float type, f32 result (tensor
    /// cores for f16/bf16; `precision = tf32` opts f32 tiles into them).
    Dot "dot" Function "dot(a, b[, acc][, precision = ieee | tf32])";
    /// Sum along `axis` (`i32`, `i64`, `f32`); a 1-D tile may leave the axis out.
    Sum "sum" Method "t.sum(axis)";
    /// Maximum along `axis` (NaN ignored).
    MaxOf "max" Method "t.max(axis)";
    /// Minimum along `axis` (NaN ignored).
    MinOf "min" Method "t.min(axis)";
    /// The `i32` index of the first maximum along `axis` (NaN ignored; 0 where all are NaN).
    Argmax "argmax" Method "t.argmax(axis)";
    /// The `i32` index of the first minimum along `axis` (NaN ignored; 0 where all are NaN).
    Argmin "argmin" Method "t.argmin(axis)";
    /// Rotates along `axis` (NumPy's `roll`); `shift` and `axis` are compile-time integers.
    Roll "roll" Method "t.roll(shift, axis)";
    /// Picks elements of `src` along `axis` by the `i32` tile `index` (Triton's `tl.gather`):
    /// the result has `index`'s shape, and its element at `i` is `src` at `i` with the
    /// coordinate along `axis` replaced by `index[i]`. `index` has `src`'s rank and its extents
    /// off `axis`; an index outside `0..n` (`n` the extent of `axis`) is taken modulo `n`, so
    /// `-1` reads the last element, on both back ends. Also `src.gather(index, axis)`.
    Gather "gather" Both "gather(src, index, axis)"
        takes 3..=3 "3 arguments (the source tile, the index tile, the axis)";
    /// The high 32 bits of the product of two `i32` values read as unsigned (CUDA's `__umulhi`).
    UMulHi "umulhi" Function "umulhi(a, b)"
        takes 2..=2 "2 arguments";
    /// Ceiling division (Triton's `tl.cdiv`), element-wise on `i32` or `i64` scalars and tiles:
    /// `(a + b - 1) / b`, which is `⌈a / b⌉` for `a ≥ 0` and `b > 0`; with a negative operand it
    /// is that formula with division rounding toward zero (`cdiv(-6, 4)` is 0, not -1), and the
    /// addition wraps as integer arithmetic does; a divisor of 0 gives 0 at run time, as `/` does.
    /// Compile-time integers fold, an overflow being an error; a compile-time divisor of 0 is an
    /// error.
    Cdiv "cdiv" Function "cdiv(a, b)"
        takes 2..=2 "2 arguments (the dividend, the divisor)";
    /// `x` itself, with the promise that the first value of each contiguous run is a multiple of
    /// `d` (Triton's `tl.multiple_of`): an integer tile and a compile-time power of two. The
    /// compiler takes it on trust (wider, aligned accesses); the interpreter ignores it.
    MultipleOf "multiple_of" Function "multiple_of(x, d)"
        takes 2..=2 "2 arguments (the tile, the divisor)";
    /// `x` itself, with the promise that its values run in steps of one for `c` elements from
    /// every multiple of `c` along the last dimension (Triton's `tl.max_contiguous`): an integer
    /// tile and a compile-time power of two. The compiler takes it on trust (vector accesses);
    /// the interpreter ignores it.
    MaxContiguous "max_contiguous" Function "max_contiguous(x, c)"
        takes 2..=2 "2 arguments (the tile, the run length)";
    /// Uniform `f32` in `[0, 1)` from Philox-4x32-10, Triton's `tl.rand` stream bit for bit.
    Rand "rand" Function "rand(seed, offsets)"
        takes 2..=2 "2 arguments (the seed, the offsets)";
    /// 32 random bits (an `i32`) from Philox-4x32-10, Triton's `tl.randint` stream bit for bit.
    Randint "randint" Function "randint(seed, offsets)"
        takes 2..=2 "2 arguments (the seed, the offsets)";
    /// Word `k` (0 to 3) of Triton's `tl.randint4x(seed, offsets)`; the four words of one seed
    /// and offsets share one Philox evaluation.
    Randint4x "randint4x" Function "randint4x(seed, offsets, k)"
        takes 3..=3 "3 arguments (the seed, the offsets, the word 0 to 3)";
    /// Word `k` (0 to 3) of Triton's `tl.rand4x(seed, offsets)`: uniform `f32` in `[0, 1)`.
    Rand4x "rand4x" Function "rand4x(seed, offsets, k)"
        takes 3..=3 "3 arguments (the seed, the offsets, the word 0 to 3)";
    /// A standard normal `f32` as Triton's `tl.randn` makes it: Box–Muller on Philox words 0 and
    /// 1 (`u1 = max(1e-7, u₀)`, `sqrt(−2 log u1) · cos(2π u₂)`).
    Randn "randn" Function "randn(seed, offsets)"
        takes 2..=2 "2 arguments (the seed, the offsets)";
    /// Adds to the pointed-to elements where the mask is true (`mask` also by name), each in one
    /// indivisible step; returns the old values (0 where masked off). `i32`, `i64`, `f32`, `f16`, `bf16`. `sem` is `relaxed`,
    /// `acquire`, `release` or `acq_rel` (default), `scope` is `cta`, `gpu` (default) or `sys`.
    AtomicAdd "atomic_add" Function "atomic_add(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic maximum (integers signed; floats with `-0 < +0`); returns the old values.
    AtomicMax "atomic_max" Function "atomic_max(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic minimum; returns the old values.
    AtomicMin "atomic_min" Function "atomic_min(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic bitwise and (`i32`, `i64`); returns the old values.
    AtomicAnd "atomic_and" Function "atomic_and(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic bitwise or (`i32`, `i64`); returns the old values.
    AtomicOr "atomic_or" Function "atomic_or(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic bitwise exclusive or (`i32`, `i64`); returns the old values.
    AtomicXor "atomic_xor" Function "atomic_xor(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic exchange: writes the values, returns the old ones.
    AtomicXchg "atomic_xchg" Function "atomic_xchg(ptrs, values[, mask][, sem = …][, scope = …])";
    /// Atomic compare-and-swap: writes `values` where the element equals `cmp` (bitwise);
    /// returns the values found.
    AtomicCas "atomic_cas" Function "atomic_cas(ptrs, cmp, values[, mask][, sem = …][, scope = …])";
    /// Every thread of the program waits until all arrive; what the program wrote before it is
    /// visible to its threads after it (Triton's `tl.debug_barrier`). Before releasing a lock
    /// with a scalar `atomic_xchg` (applied by one thread), so that the program's stores are done.
    DebugBarrier "debug_barrier" Function "debug_barrier()"
        takes 0..=0 "no arguments";
    /// Running sum along `axis` (a 1-D tile may leave it out); `reverse = true` sums from the
    /// end. Bools count as `i32` 0 and 1.
    Cumsum "cumsum" Both "t.cumsum(axis[, reverse = true])";
    /// Running product along `axis`.
    Cumprod "cumprod" Both "t.cumprod(axis[, reverse = true])";
    /// Running maximum along `axis` (NaN ignored).
    Cummax "cummax" Both "t.cummax(axis[, reverse = true])";
    /// Running minimum along `axis` (NaN ignored).
    Cummin "cummin" Both "t.cummin(axis[, reverse = true])";
    /// Inclusive scan along `axis` with an associative combiner: `|a, b| a + b`, `|a, b| a * b`,
    /// `max` or `min` (also as `|a, b| max(a, b)`), the same as `cumsum`, `cumprod`, `cummax` and
    /// `cummin` (Triton's `tl.associative_scan` with those combiners).
    AssociativeScan "associative_scan" Function "associative_scan(t or (t1, t2, …), axis, |a, b| … or |(a1, a2, …), (b1, b2, …)| (…)[, reverse = true])";
    /// A tensor descriptor (Triton's `tl.make_tensor_descriptor`): the `rank`-dimensional array
    /// (rank 1 or 2) at the scalar pointer `base`, with extents `shape` and strides `strides` (in
    /// elements; `i32`/`i64` scalars or integer literals, one per dimension, outermost first),
    /// read and written in tiles of `block_shape` (compile-time powers of two). Not a value: bind
    /// it with `let`, pass it to tile functions as a `Tile`, and access it with `d.load` and
    /// `d.store`. On Hopper, a `dot` loop's descriptor loads may be fetched by the copy engine.
    MakeTensorDescriptor "make_tensor_descriptor" Function "make_tensor_descriptor(base, shape, strides, block_shape)"
        takes 4..=4 "4 arguments (the base pointer, the shape `[d0, d1]`, the strides `[s0, s1]`, the block shape `[B0, B1]`)";
    /// The block of descriptor `d` whose first element is at `coords` (`i32` scalars, one per
    /// dimension): element `i` is the array's element `coords + i`, or 0 where that lies outside
    /// the extents (no memory is touched there), so blocks may hang over any edge.
    DescLoad "load" Method "desc.load([c0, c1])";
    /// Writes `tile` (exactly the block shape, the array's element type) to the block of `d` at
    /// `coords`; elements outside the extents are not written.
    DescStore "store" Method "desc.store([c0, c1], tile)";
}

/// What a name called in a kernel refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callee {
    /// A builtin of the table.
    Builtin(Builtin),
    /// A math function (`exp(x)` or `x.exp()`).
    Math(MathFn),
}

/// The builtin `name` written as `form` ([`Form::Function`] or [`Form::Method`]); failing that, a
/// builtin of that name written the other way (which the caller reports as such).
pub fn lookup(name: &str, form: Form) -> Option<Callee> {
    let named = || Builtin::ALL.into_iter().filter(|b| b.name() == name);
    named()
        .find(|b| b.form().allows(form))
        .or_else(|| named().next())
        .map(Callee::Builtin)
        .or_else(|| MathFn::from_name(name).map(Callee::Math))
}

/// The names that may be written as `form`, for "unknown function" messages.
pub fn names(form: Form) -> String {
    let mut out: Vec<&str> = Builtin::ALL
        .into_iter()
        .filter(|b| b.form().allows(form))
        .map(Builtin::name)
        .collect();
    out.extend(MathFn::ALL.into_iter().map(MathFn::name));
    out.join(", ")
}

impl Lowering {
    /// A call `f(…)`: the builtin or math function `f` names, its count of arguments checked where
    /// the table gives it, lowered by its family's file.
    pub(super) fn call(&mut self, c: &syn::ExprCall) -> syn::Result<Val> {
        let Expr::Path(p) = &*c.func else {
            return Err(err(
                &c.func,
                "only the DSL's functions can be called in kernels",
            ));
        };
        let name = p
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_else(|| p.to_token_stream().to_string());
        let args: Vec<&Expr> = c.args.iter().collect();
        if name == "static_range" {
            return Err(err(
                c,
                "`static_range` is the range of a loop unrolled at build time: `for k in static_range(a, b) { … }`",
            ));
        }
        let Some(callee) = lookup(&name, Form::Function) else {
            if let Some(index) = self.tile_fn(&p.path) {
                let results = self.inline_call(index, c)?;
                return match results.as_deref() {
                    Some([v]) => Ok(*v),
                    Some(vs) => Err(err(
                        c,
                        format!(
                            "`{name}` returns {} values: bind them with `let (a, b, …) = {name}(…);`",
                            vs.len()
                        ),
                    )),
                    None => Ok(Val::Int(0)),
                };
            }
            return Err(err(
                &c.func,
                format!(
                    "unknown function `{name}`; the kernel language has: {}; and methods: {}",
                    names(Form::Function),
                    names(Form::Method)
                ),
            ));
        };
        let b = match callee {
            Callee::Builtin(b) => b,
            Callee::Math(m) => {
                let n = m.arity();
                check_count(c, &name, args.len(), n..=n, &format!("{n} argument(s)"))?;
                return self.math_call(m, &args, c);
            }
        };
        if let Some((count, what)) = b.takes() {
            check_count(c, &name, args.len(), count, what)?;
        }
        match b {
            Builtin::ProgramId | Builtin::NumPrograms => self.grid_index(b, &args),
            Builtin::Arange => self.arange(&args, c),
            Builtin::Zeros | Builtin::Full => self.full(b, &args, c),
            Builtin::ExpandDims => {
                let v = self.expr(args[0])?;
                self.expand_dims(v, args[0], args[1])
            }
            Builtin::Trans => {
                let v = self.expr(args[0])?;
                self.trans(v, args[0])
            }
            Builtin::Reshape => {
                let v = self.expr(args[0])?;
                self.reshape(v, args[0], args[1])
            }
            Builtin::Bitcast => {
                let v = self.expr(args[0])?;
                self.bitcast(v, args[0], args[1])
            }
            Builtin::BroadcastTo => {
                let v = self.expr(args[0])?;
                self.broadcast_to(v, args[0], args[1])
            }
            Builtin::Interleave | Builtin::Join => {
                let (x, y) = (self.expr(args[0])?, self.expr(args[1])?);
                self.interleave(b == Builtin::Join, x, y, args[0], args[1])
            }
            Builtin::Split => Err(self.split_one_value(c)),
            Builtin::Load => self.load(&args, c),
            Builtin::Store => self.store(&args, c),
            Builtin::Select => self.select(&args, c),
            Builtin::Min | Builtin::Max => self.min_max(b, &args, c),
            Builtin::UMulHi => self.umulhi(&args, c),
            Builtin::Cdiv => self.cdiv(&args, c),
            Builtin::MultipleOf | Builtin::MaxContiguous => self.hint(b, &args),
            Builtin::Dot => self.dot(&args, c),
            Builtin::Rand
            | Builtin::Randint
            | Builtin::Rand4x
            | Builtin::Randint4x
            | Builtin::Randn => self.random(b, &args),
            Builtin::AtomicAdd
            | Builtin::AtomicMax
            | Builtin::AtomicMin
            | Builtin::AtomicAnd
            | Builtin::AtomicOr
            | Builtin::AtomicXor
            | Builtin::AtomicXchg
            | Builtin::AtomicCas => self.atomic(b, &args, c),
            Builtin::DebugBarrier => {
                self.f.push_op(
                    self.block,
                    tile_core::ir::OpKind::DebugBarrier,
                    vec![],
                    vec![],
                );
                Ok(Val::Int(0))
            }
            Builtin::Cumsum | Builtin::Cumprod | Builtin::Cummax | Builtin::Cummin => {
                self.scan_call(b, &args, c)
            }
            Builtin::AssociativeScan => self.associative_scan(&args, c),
            Builtin::Gather => self.gather(args[0], args[1], args[2]),
            Builtin::MakeTensorDescriptor => self.make_tensor_descriptor(&args, c),
            Builtin::Sum
            | Builtin::MaxOf
            | Builtin::MinOf
            | Builtin::Argmax
            | Builtin::Argmin
            | Builtin::Roll
            | Builtin::DescLoad
            | Builtin::DescStore => Err(err(
                &c.func,
                format!("`{name}` is a method: `{}`", b.signature()),
            )),
        }
    }

    /// A method call `x.f(…)`: the reductions (`x.sum()`, `x.max()`, …, optional axis), the
    /// methods of the table, and math functions written as methods (`x.exp()`, `a.pow(b)`,
    /// `a.fma(b, c)`).
    pub(super) fn method_call(&mut self, mc: &syn::ExprMethodCall, e: &Expr) -> syn::Result<Val> {
        let name = mc.method.to_string();
        let Some(callee) = lookup(&name, Form::Method) else {
            return Err(err(
                &mc.method,
                format!(
                    "unknown method `{name}`; the kernel language has the methods {}; and the functions {}",
                    names(Form::Method),
                    names(Form::Function)
                ),
            ));
        };
        let b = match callee {
            Callee::Builtin(b) => b,
            Callee::Math(m) => return self.math_method(m, mc, e),
        };
        match b {
            Builtin::ExpandDims => self.expand_dims_method(mc, e),
            Builtin::Trans | Builtin::Reshape | Builtin::BroadcastTo => self.shape_method(b, mc, e),
            Builtin::Split => Err(self.split_one_value(e)),
            Builtin::Roll => self.roll_method(mc, e),
            Builtin::Bitcast => {
                if mc.args.len() != 1 {
                    return Err(err(
                        e,
                        format!(
                            "`.bitcast()` takes 1 argument (the element type), found {}",
                            mc.args.len()
                        ),
                    ));
                }
                let v = self.expr(&mc.receiver)?;
                self.bitcast(v, &mc.receiver, &mc.args[0])
            }
            Builtin::Gather => self.gather_method(mc, e),
            Builtin::Cumsum | Builtin::Cumprod | Builtin::Cummax | Builtin::Cummin => {
                let args: Vec<&Expr> = mc.args.iter().collect();
                self.scan(b, &mc.receiver, &args, e)
            }
            Builtin::Sum => self.reduce_method(ReduceKind::Sum, false, mc, e),
            Builtin::MaxOf => self.reduce_method(ReduceKind::Max, false, mc, e),
            Builtin::MinOf => self.reduce_method(ReduceKind::Min, false, mc, e),
            Builtin::Argmax => self.reduce_method(ReduceKind::Max, true, mc, e),
            Builtin::Argmin => self.reduce_method(ReduceKind::Min, true, mc, e),
            Builtin::DescLoad => self.desc_load(mc, e),
            Builtin::DescStore => self.desc_store(mc, e),
            Builtin::ProgramId
            | Builtin::NumPrograms
            | Builtin::Arange
            | Builtin::Zeros
            | Builtin::Full
            | Builtin::Load
            | Builtin::Store
            | Builtin::Select
            | Builtin::Min
            | Builtin::Max
            | Builtin::Dot
            | Builtin::UMulHi
            | Builtin::Cdiv
            | Builtin::MultipleOf
            | Builtin::MaxContiguous
            | Builtin::Rand
            | Builtin::Randint
            | Builtin::Rand4x
            | Builtin::Randint4x
            | Builtin::Randn
            | Builtin::AtomicAdd
            | Builtin::AtomicMax
            | Builtin::AtomicMin
            | Builtin::AtomicAnd
            | Builtin::AtomicOr
            | Builtin::AtomicXor
            | Builtin::AtomicXchg
            | Builtin::AtomicCas
            | Builtin::DebugBarrier
            | Builtin::AssociativeScan
            | Builtin::Interleave
            | Builtin::Join
            | Builtin::MakeTensorDescriptor => Err(err(
                &mc.method,
                format!("`{name}` is a function: `{}`", b.signature()),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The language reference (the `tile` crate's documentation) has a row for every builtin and
    /// math function, written as the table declares it.
    #[test]
    fn reference_documents_every_builtin() {
        let reference = include_str!("../../../../src/lib.rs");
        for b in Builtin::ALL {
            let sig = b.signature();
            let head = &sig[..sig.find('(').unwrap_or(sig.len()) + 1];
            assert!(
                reference.contains(&format!("`{head}")),
                "src/lib.rs does not document `{}` (as `{sig}`)",
                b.name()
            );
        }
        for m in MathFn::ALL {
            assert!(
                reference.contains(m.name()),
                "src/lib.rs does not document `{}`",
                m.name()
            );
        }
    }

    /// A name resolves to the builtin written its way, or reports the other form.
    #[test]
    fn lookup_by_form() {
        assert_eq!(
            lookup("max", Form::Function),
            Some(Callee::Builtin(Builtin::Max))
        );
        assert_eq!(
            lookup("max", Form::Method),
            Some(Callee::Builtin(Builtin::MaxOf))
        );
        assert_eq!(
            lookup("sum", Form::Function),
            Some(Callee::Builtin(Builtin::Sum))
        );
        assert_eq!(lookup("exp", Form::Method), Some(Callee::Math(MathFn::Exp)));
        assert_eq!(lookup("softplus", Form::Function), None);
        assert!(names(Form::Function).contains("dot"));
        assert!(names(Form::Method).contains("roll"));
    }
}
