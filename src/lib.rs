//! **tile**: a Triton-style tile language embedded in Rust. Kernels are written as Rust functions
//! marked `#[tile_kernel]`, compiled to PTX for sm_90a and sm_80 while `cargo build` runs, and
//! launched through a typed, checked wrapper — on a CUDA GPU through cudarc, or on the CPU
//! interpreter when there is none. No LLVM, NVRTC or Python at run time.
//!
//! ```ignore
//! use tile::prelude::*;
//!
//! #[tile_kernel]
//! fn add_mul(x: Ptr<f32, n>, y: Ptr<f32, n>, z: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
//!     let offs = program_id(0) * BLOCK + arange(0, BLOCK);
//!     let mask = offs < n;
//!     let r = (load(x + offs, mask) + load(y + offs, mask)) * load(z + offs, mask);
//!     store(out + offs, r, mask);
//! }
//!
//! let (dev, _why_not_cuda) = Device::best_available();
//! let x = dev.upload(&host_x)?; // ... y, z
//! let mut out = dev.zeros::<f32>(n as usize)?;
//! add_mul::launch(&dev, Grid::x(cdiv(n, 1024)), &x, &y, &z, &mut out, n)?;
//! ```
//!
//! # The kernel language
//!
//! Parameters: `Ptr<T>` / `Ptr<T, extent>` (a buffer of `f32`, `f64`, `f16`, `bf16`, `f8e4m3`,
//! `f8e5m2`, `i8`, `i16`, `i32`, `i64`, `u8`, `u32`, `u64` or `bool`; the
//! extent, an integer expression of the other parameters, is checked against the buffer's length
//! at launch), `i32`, `i64`, `u32`, `u64`, `f32`, `f64` by value, and compile-time constants: `NAME: Const<N>`, or
//! `NAME: Const<{[N1, N2, …]}>` to compile one specialization per value — the launch wrapper then
//! takes `NAME: i32` and dispatches, returning an `Err` naming the declared values for any other
//! (`kernel::values::NAME` lists them). Element types specialize the same way: `T: Type<{[f32,
//! f16]}>` declares a type parameter that `Ptr<T>` and `x as T` use; each declared type is
//! compiled, `launch` becomes generic over `T` and runs the instance of its buffers' type (an
//! undeclared type is an `Err` naming the declared ones). Options: `#[tile_kernel(num_warps = 8)]`, or
//! `num_warps = auto` (4, 8 or 16 warps by the largest tile), `auto(E)` / `auto(E, max = W)` (each
//! thread `E` elements of the largest tile, at most `W` warps, per instance); `num_stages = S` (1 to 8; 1 for no
//! software pipelining, as in Triton) for a pipelined `dot` loop; `math = fast` for Triton's
//! (and CUDA's `--use_fast_math`) floating point: `f32` `/` within 2 ulp (`div.full.f32`),
//! `exp` without the compensation of `x · log₂e`'s rounding, `sqrt` approximate
//! (`sqrt.approx.ftz`) — a softmax's division by its row sum becomes one multiply per element.
//! Each instance is compiled in specializations, chosen at launch from the
//! arguments: every pointer 16-byte aligned and the integers that matter multiples of what keeps
//! that code (8 for the row length of an f16 matrix, say), then less, then nothing assumed.
//! `specialize = aligned` compiles the first only: a launch whose arguments break it is an `Err`
//! that names each (`` `k` = 1001 is not a multiple of 8 ``), on the interpreter too — as a
//! CUTLASS kernel refuses a problem its alignment cannot implement. For kernels whose unaligned
//! form does not fit the registers (`examples/gemm_bias_act`'s 128 × 256 tile). Where integer
//! arguments multiply offsets (strides) and, assumed 1, let copies run as vectors, a first
//! specialization assumes them 1 (Triton specializes unit strides the same way);
//! `specialize = unit` compiles that one only (Triton's tutorial matmul at 128 × 256 × 64, its
//! strides arguments: `` `stride_bn` = 300 is not 1 `` is then an `Err`).
//!
//! Body: `let` bindings and assignments (also `+=` …); integer, float and bool literals (typed by
//! context) and `f32::INFINITY`, `f32::NEG_INFINITY`, `f32::NAN`, `i32::MAX`…; `+ - * /`, `%`
//! (integers), comparisons, `& | ^ && || !` on tiles and scalars, `<<` and `>>` on 32- and 64-bit
//! integers, with scalars broadcast to tiles; `ptr + offsets` for tiles of pointers; `x as T`
//! conversions between any element types (as Rust's `as`: integers widen by their own
//! signedness and narrow by keeping the low bits, floats to integers truncate and saturate with
//! NaN to 0, to halves round to nearest even). Unsigned integers divide, compare, take `min`/`max`
//! and shift right (logically) as unsigned; signed `>>` is arithmetic; a shift by the width or more
//! (or by a negative amount) gives 0, or -1 for a negative signed value shifted right, where
//! Rust would panic; the amount may be of another integer type. `f16`/`bf16` are storage types:
//! convert to `f32` for arithmetic; so are `f8e4m3`/`f8e5m2` (converting to them rounds to
//! nearest even and saturates to the largest finite value; NaN becomes `0x7f`: [`float8`]) and
//! `i8`, `i16` and `u8` (convert to `i32` or `u32`). `f64` computes (the transcendental functions
//! take `f32`).
//! Functions:
//!
//! | function | meaning |
//! |---|---|
//! | `program_id(axis)`, `num_programs(axis)` | this program's index / the grid's size along axis 0, 1 or 2 |
//! | `arange(start, end)` | the tile `start..end` (`i32`; compile-time bounds, a power-of-two length) |
//! | `load(ptrs)`, `load(ptrs, mask)`, `load(ptrs, mask, other)`, each with an optional `evict = normal \| first \| last` last | read; masked-off lanes touch no memory and give `other` (default 0). `mask` and `other` may be written by name as in Triton, after the positional arguments: `load(ptrs, mask = m, other = 0.0)`, `load(ptrs, m, other = 0.0)`. `evict` is a cache hint (Triton's `eviction_policy`): `first` for data not read again soon, `last` for data read again soon; on the GPU the access's L1 eviction priority and its L2 cache policy, on the interpreter nothing; the values are the same either way |
//! | `store(ptrs, values)`, `store(ptrs, values, mask)`, with an optional `evict = …` last | write where the mask is true (`mask = m` by name too); `evict` as for `load` |
//! | `select(mask, a, b)` | `a` where the mask is true, else `b` (Triton's `where`) |
//! | `min(a, b)`, `max(a, b)` | element-wise; for floats a NaN operand yields the other |
//! | `exp exp2 log log2 sqrt rsqrt erf tanh sin cos sigmoid gelu abs floor ceil` | f32 math (`abs` also on integers; `gelu` the exact `x · Φ(x)`), as `exp(x)` or `x.exp()` |
//! | `pow(a, b)`, `fma(a, b, c)` | `2^(b·log2 a)`; `a·b + c` rounded once |
//! | `t.sum(axis)`, `t.max(axis)`, `t.min(axis)` | reduce along `axis` (`i32`, `i64`, `u32`, `u64`, `f32`): a 1-D tile to a scalar (the axis may be left out), a 2-D tile to a 1-D tile |
//! | `t.argmax(axis)`, `t.argmin(axis)` | the `i32` index of the first maximum / minimum along `axis` (NaN ignored; 0 where all are NaN) |
//! | `expand_dims(t, axis)`, `t.expand_dims(axis)` | insert an extent-1 dimension at `axis` (Triton's `t[:, None]` is `t.expand_dims(1)`) |
//! | `trans(t)`, `t.trans()` | the transpose of a 2-D tile: `[i][j]` of the result is `t[j][i]` (Triton's `tl.trans`); no data moves on the GPU |
//! | `bitcast(t, T)`, `t.bitcast(T)` | the bits of each element read as the element type `T` of the same width (Triton's `x.to(T, bitcast=True)`; `f32` ↔ `u32`/`i32`, `f16`/`bf16` ↔ `i16`, …); not booleans |
//! | `t as Ptr<T>` | `i64` or `u64` addresses (a table of buffer addresses loaded from memory: a grouped GEMM's matrices) as pointers to `T`, Triton's `x.to(tl.pointer_type(T))`. Only in an `unsafe fn` kernel, whose launch is `unsafe`: pass the addresses in a [`PointerTable`], which keeps their buffers borrowed; the interpreter reports an address in none of the launch's buffers. A `dot` loop whose operands such addresses (or loaded strides) reach runs in two versions, picked by a run-time test of their alignment |
//! | `reshape(t, shape)`, `t.reshape(shape)` | the elements in row-major order in `shape` (`N` or `[M, N]`, compile-time, the same element count; Triton's `tl.reshape`); no data moves on the GPU |
//! | `interleave(a, b)` | two tiles of one shape and element type merged along their last dimension: `a`'s elements at the even positions, `b`'s at the odd ones, the last extent doubled (Triton's `tl.interleave`; unpacking two 4-bit values per byte is `interleave(x & 15, x >> 4)`); no data moves on the GPU |
//! | `join(a, b)` | two 1-D tiles of one shape and element type stacked along a new last dimension of extent 2: `[i][0]` is `a[i]`, `[i][1]` is `b[i]` (Triton's `tl.join`); no data moves on the GPU |
//! | `let (a, b) = split(t)`, `t.split()` | the two columns of a 2-D tile whose last extent is 2, the inverse of `join` (Triton's `tl.split`); of a 1-D tile's even and odd positions, `split(t.reshape([n, 2]))`. No data moves on the GPU where a thread holds both columns of a row |
//! | `broadcast_to(t, shape)`, `t.broadcast_to(shape)` | `t` repeated to `shape` by NumPy's rules: leading dimensions added, extent-1 dimensions repeated (Triton's `tl.broadcast_to`) |
//! | `t.roll(shift, axis)` | rotate along `axis` (NumPy's `roll`: element `j` takes element `(j - shift) mod n`); `shift` and `axis` are compile-time integers. A shift of half the extent, as rotary embeddings use, is a lane shuffle or a register swap in most layouts |
//! | `gather(src, index, axis)`, `src.gather(index, axis)` | pick elements along `axis` by an `i32` tile of indices (Triton's `tl.gather`): the result has `index`'s shape, element `[i][j]` is `src[index[i][j]][j]` for axis 0 and `src[i][index[i][j]]` for axis 1; `index` has `src`'s rank and its extents off `axis`. An index outside `0..n` is taken modulo `n` (`-1` reads the last element) on both back ends. Through shared memory, or a select among a thread's registers when it holds the whole axis |
//! | `zeros(shape)`, `full(shape, v)` | an f32 tile of zeros / a tile of `v`; `shape` is `N` or `[M, N]` |
//! | `rand(seed, offsets)`, `randint(seed, offsets)` | counter-based random numbers, Triton's `tl.rand` / `tl.randint` stream bit for bit (Philox-4x32, 10 rounds; [`random`] is the reference): `f32` uniform in `[0, 1)` / 32 random bits as an `i32`, of the offsets' shape. `seed` is an `i32` or `i64` scalar (an `i32` seed is sign-extended to the 64-bit key, as Triton does); `offsets` are `i32` (zero-extended: a negative one is not the `i64` of the same value) or `i64`. The interpreter gives the same bits |
//! | `randn(seed, offsets)` | a standard normal `f32` of the offsets' shape, as Triton's `tl.randn` makes it: Box–Muller on Philox words 0 and 1 (`sqrt(−2 · log(max(1e-7, u₀))) · cos(2π · u₁)`, `u` as `rand4x`'s). The same Philox bits as Triton; the value agrees with Triton's within the error of `log` and `cos` (a few 1e-7 relative), not bit for bit |
//! | `randint4x(seed, offsets, k)`, `rand4x(seed, offsets, k)` | word `k` (a compile-time 0 to 3) of Triton's `tl.randint4x` / `tl.rand4x`: the four words of one Philox evaluation (the calls with the same seed and offsets share it), so a kernel that needs four random numbers per offset pays for one |
//! | `umulhi(a, b)` | the high 32 bits of the product of two `i32` values read as unsigned (CUDA's `__umulhi`) |
//! | `cdiv(a, b)` | ceiling division, Triton's `tl.cdiv`: `(a + b - 1) / b` element-wise on `i32` or `i64` scalars and tiles, which is `⌈a / b⌉` for `a ≥ 0`, `b > 0` (a loop's trip count: `for k in 0..cdiv(k_len, BK)`). With a negative operand it is that formula with division rounding toward zero (`cdiv(-6, 4)` is 0), and a divisor of 0 gives 0, as `/` does. On compile-time integers it is folded, and an overflow or a divisor of 0 is an error |
//! | `multiple_of(x, d)`, `max_contiguous(x, c)` | `x` itself with a promise the compiler takes on trust, Triton's `tl.multiple_of` / `tl.max_contiguous` on an `i32` or `i64` tile: the first value of each run is a multiple of `d`; the values run in steps of one for `c` elements from every multiple of `c` along the last dimension (`d`, `c` compile-time powers of two). It restores what an offset clamped with `select(offs < m, offs, 0)` loses, so its copies run as vectors; the interpreter ignores it, and a false promise that feeds an address may make the GPU load other elements |
//! | `atomic_add(ptrs, values[, mask][, sem = …][, scope = …])`, `atomic_max(…)`, `atomic_min(…)`, `atomic_and(…)`, `atomic_or(…)`, `atomic_xor(…)`, `atomic_xchg(…)` | for each element where the mask is true, one indivisible read-modify-write of the pointed-to value; returns the old values (0 where masked off). `add`, `max`, `min`, `xchg` take `i32`, `i64`, `u32`, `u64`, `f32`, `f16` and `bf16` (`f64`: `add` and `xchg`); `and`, `or`, `xor` integers. Float `max`/`min` order values by sign and magnitude bits (`-0 < +0`; [`ir::atomic_float_max`], [`ir::atomic_half_max`]). On the GPU, `f16` adds (and `bf16` adds on sm_90a) are the hardware's; the other 16-bit float atomics are compare-and-swap loops, correct under contention but slower. `sem` is `relaxed`, `acquire`, `release` or `acq_rel` (the default), `scope` `cta`, `gpu` (the default) or `sys`, as Triton's; `mask` may be named too (`mask = m`). A buffer written through atomics is written: the launch takes it as `&mut`. Elements of one tile that point to one address are all applied, one after another. The interpreter runs programs one after another, so its result is one of the outcomes the GPU allows |
//! | `atomic_cas(ptrs, cmp, values[, mask][, sem = …][, scope = …])` | compare-and-swap: writes `values` where the element's bits equal `cmp`'s; returns the values found (`i32`, `i64`, `f32`, `f16`, `bf16`). A spin lock: `while atomic_cas(lock, 0, 1) == 1 {}` takes it, `debug_barrier(); atomic_xchg(lock, 0);` releases it (a scalar atomic is applied by one thread, which hands the old value to all) |
//! | `debug_barrier()` | every thread of the program waits until all arrive, and what the program wrote before it is visible to its threads after it (Triton's `tl.debug_barrier`, CUDA's `__syncthreads`); a lock's release needs it. Nothing on the interpreter, where a program is one thread |
//! | `t.cumsum(axis)`, `t.cumprod(axis)`, `t.cummax(axis)`, `t.cummin(axis)` (or `cumsum(t, axis)` …), with `reverse = true`; `associative_scan(t, axis, \|a, b\| …)` or, over several tiles of one shape, `associative_scan((t1, t2), axis, \|(a1, a2), (b1, b2)\| (…, …))` | inclusive running sum / product / maximum / minimum along `axis` (32- and 64-bit integers, `f32`; a bool tile's `cumsum` counts in `i32`; a 1-D tile may leave the axis out); `reverse = true` runs from the last element to the first. `associative_scan` combines with any associative closure of element-wise arithmetic on scalars (earlier tuple first; `+`, `*`, `max`, `min` of one tile lower as the `cum*` scans), one result per tile: a linear recurrence is `\|(a1, b1), (a2, b2)\| (a1 * a2, b1 * a2 + b2)`. Float results agree with the interpreter's sequential order to rounding |
//! | `make_tensor_descriptor(base, shape, strides, block_shape)`; `desc.load([c0, c1])`, `desc.store([c0, c1], tile)` | a tensor descriptor (Triton's `tl.make_tensor_descriptor`): the array of rank 1 or 2 at the scalar pointer `base` with extents `shape` and strides `strides` (in elements, outermost first; `i32`/`i64` scalars or literals), accessed in blocks of `block_shape` (compile-time powers of two). `desc.load(coords)` is the block whose first element is at `coords` (`i32` scalars): element `i` is the array's element `coords + i`, 0 where that is outside the extents, so blocks may hang over any edge without a mask; `desc.store(coords, tile)` writes a tile of the block's shape and the array's element type, leaving out what lies outside. A descriptor is not a value: bind it with `let`, pass it to a tile function as a `Tile`. It compiles to the masked loads and stores one would write; on Hopper, a `dot` loop's descriptor loads may be fetched by the copy engine |
//! | `dot(a, b)`, `dot(a, b, acc)` | `acc + a @ b` for an `M × K` and a `K × N` tile of one float type, f32 result. The interpreter computes per element the ordered chain of f32 fused multiply-adds over `k`. On the GPU, f16 and bf16 tiles of at least 16 × 16 × 8 (`M × K × N`) run on tensor cores (`mma.sync.m16n8k16`, f32 accumulation), which sum in their own order: results agree with the interpreter and with an exact reference within `(K + 2) · 2⁻²² · (|acc| + Σₖ |aₖ bₖ|)` per element (products of 16-bit values are exact in f32). f32 tiles keep the ordered FMA chain on the GPU too (bit-identical). Two `i8` tiles give an `i32` result: exact products summed wrapping, on tensor cores (`mma.sync.m16n8k32.s8`) from 16 × 32 × 8 up, `B` best as the `.trans()` of an `N × K` tile (8-bit operands are read K-major). Two 8-bit float tiles (`f8e4m3`, `f8e5m2`, in any pairing) give an `f32` result from exact products: on sm_90a `wgmma`'s FP8 form when both are K-major (else `mma.sync`'s), whose accumulation is narrower than f32 (about 10⁻⁴ of the terms' magnitudes); on sm_80 their exact `f16` values on the 16-bit instructions |
//! | `dot(a, b, acc, precision = tf32)` | for f32 tiles, opts into tf32 tensor cores (Triton's `input_precision="tf32"`): every operand element is first rounded to tf32 (`tile::ir::round_tf32`: 10 mantissa bits, to nearest, ties away from zero; the interpreter and the GPU round alike), then multiplied exactly and summed in f32 — on `mma.sync.m16n8k8.tf32` for tiles of at least 16 × 8 × 8, within the same bound computed on the rounded operands; smaller tiles take the FMA chain on the rounded operands (bit-identical to the interpreter). `precision = ieee` is the default; on f16/bf16 tiles the option changes nothing. Expect a relative error near 2⁻¹¹ against the unrounded inputs |
//!
//! Control flow: `for i in a..b { … }` and `for i in (a..b).step_by(S) { … }` (`i32` bounds, a
//! positive compile-time step), `while c { … }` and `if c { … } else if … { … } else { … }` on a
//! scalar `bool`. A `while`'s condition is evaluated before every iteration, and may have effects
//! (`while atomic_cas(lock, 0, 1) == 1 {}`); it must be the same for every thread of the program
//! (a scalar of arguments, carried scalars, reductions and scalar atomics is), and a condition
//! that is always true is an error (there is no `break`). On the interpreter, where programs run
//! one after another, a loop that waits for another program never ends: the step budget stops it.
//! A condition that compares compile-time integers only (`if ACT == 1`, or `if (STAGE & 1) != 0`,
//! with `ACT` and `STAGE` `Const` parameters) is decided when the kernel is built: each
//! specialization contains only the branch it takes. `for k in static_range(a, b[, S])` (Triton's `tl.static_range`; literal or `Const`
//! bounds, at most 1024 values) copies its body once per `k` while the kernel is built, `k` a
//! compile-time integer in each copy.
//! A name bound before a loop or `if` and assigned inside it carries its value through the
//! iterations and out of it (start a tile accumulator with `zeros`); names bound inside stay inside.
//! Several names bound before take a tile function's results at once with `(a, b) = f(…)`.
//!
//! Tiles have one or two dimensions. Shapes broadcast as in NumPy and Triton: a scalar meets a tile
//! by being repeated; a 1-D tile meeting a 2-D one counts as a single row; then extent-1
//! dimensions repeat to the other side's extent. So a `BM × BN` block of a row-major matrix is
//!
//! ```ignore
//! let rows = program_id(0) * BM + arange(0, BM);
//! let cols = arange(0, BN);
//! let mask = (rows < m).expand_dims(1) & (cols < n).expand_dims(0);
//! let x = load(ptr + rows.expand_dims(1) * n + cols.expand_dims(0), mask);
//! let centered = x - (x.sum(1) / n as f32).expand_dims(1); // each row minus its mean
//! ```
//!
//! Integer arithmetic wraps (offsets used for addressing must not overflow `i32`); integer
//! division by zero gives 0 on every back end. Math functions are within a few 1e-7 of the exact
//! value on both back ends, not bit-identical; float sums may differ in the last bits (order),
//! and `a * b + c` may be one fused multiply-add on the GPU.

pub use half::{bf16, f16};
pub use tile_core::float8;
pub use tile_core::float8::{f8e4m3, f8e5m2};
pub use tile_core::interp;
pub use tile_core::ir;
pub use tile_core::random;
#[doc(inline)]
pub use tile_core::runtime::autotune;
pub use tile_core::runtime::{
    cdiv, launch, preload, Arg, BufArg, Buffer, DescScalar, DescSpec, Device, Element, Error,
    Event, Graph, Grid, KernelSpec, ModuleCache, ParamKind, ParamSpec, PointerTable, TargetPtx,
    TensorMut, TensorRef, Timer, TmaSpec, Variant, TARGET_ENV,
};
pub use tile_core::{Target, UnknownTarget};
#[doc(hidden)]
pub use tile_macros::{__tile_fn_resume, __tile_kernel_resume};
pub use tile_macros::{tile_fn, tile_kernel};

// The tile functions of `stdlib` reach the macros' callbacks as `::tile::…`, as users' do.
extern crate self as tile;

pub mod stdlib;

/// The types a tile function's signature is written with (`#[tile_fn]`). They exist for the
/// documentation rustdoc shows of a tile function; kernels never hold values of them.
pub mod lang {
    /// Any value of the kernel language: a tile, a scalar, a pointer or a tile of pointers.
    #[derive(Debug)]
    pub struct Tile;
    /// A compile-time integer (a literal or a kernel's `Const`).
    #[derive(Debug)]
    pub struct Const;
    /// An element type (`f32`, `f64`, `f16`, `bf16`, `f8e4m3`, `f8e5m2`, `i8`, `i16`, `i32`,
    /// `i64`, `u8`, `u32`, `u64` or `bool`) or a `Type` parameter.
    #[derive(Debug)]
    pub struct Type;
    /// A tile function passed by its path (a `#[tile_fn]`, or a `Fn` parameter passed on).
    #[derive(Debug)]
    pub struct Fn;
}

/// What a kernel file needs: the attribute, devices, buffers, grids.
pub mod prelude {
    pub use crate::{
        bf16, cdiv, f16, f8e4m3, f8e5m2, tile_fn, tile_kernel, Buffer, Device, Error, Grid,
        PointerTable, TensorMut, TensorRef,
    };
}

/// The user guide (docs/guide/), included so that `cargo test` compiles and runs every Rust
/// block in it as a documentation test.
#[cfg(doctest)]
pub mod guide {
    #[doc = include_str!("../docs/guide/getting-started.md")]
    pub struct GettingStarted;
    #[doc = include_str!("../docs/guide/language.md")]
    pub struct Language;
    #[doc = include_str!("../docs/guide/functions.md")]
    pub struct Functions;
    #[doc = include_str!("../docs/guide/autotuning.md")]
    pub struct Autotuning;
    #[doc = include_str!("../docs/guide/attention.md")]
    pub struct Attention;
    #[doc = include_str!("../docs/guide/debugging.md")]
    pub struct Debugging;
    #[doc = include_str!("../docs/guide/performance.md")]
    pub struct Performance;
    #[doc = include_str!("../docs/guide/interop.md")]
    pub struct Interop;
    #[doc = include_str!("../docs/guide/triton.md")]
    pub struct Triton;
}
