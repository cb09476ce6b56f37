//! Kernels for differential testing: valid, terminating, and deterministic by construction, each
//! with the launch that exercises it (buffers, scalars, grid) and, per output, how exactly the
//! GPU must agree with the interpreter.
//!
//! Loops that carry a tile are `for` loops or `while` loops over a counter.
//!
//! Three shapes of kernel, weighted toward the layout-heavy ones:
//! - **1-D**: a `[B]` tile per program over `n` ragged elements (`B` from 1 to 4096);
//! - **2-D**: a `[BM, BN]` tile (1 to 128 a side, up to 8192 elements) of an `m × n` row-major matrix (inputs read row-major or
//!   transposed), reductions and scans along either axis (linear recurrences of pairs by
//!   `associative_scan` among them), transposes of square tiles;
//! - **dot**: a `K` loop of `dot`s (f16, bf16, f32 exact or tf32) whose operands come from
//!   pointer tiles (affine or advanced in the loop, or gathered along `K` through a table the
//!   loop loads), tensor descriptors or a computed tile, with an element-wise epilogue.
//!
//! Every access is masked to its buffer, every output element has one writer (a program's own
//! tile, or one slot per program for its reductions), and the only shared outputs are atomics
//! whose result does not depend on order (integer adds, max and min). Float values are kept in
//! a modest range (divisions by `|y| + 1`, logarithms of `|x| + 1`, products of at most a few
//! factors) so that a tolerance relative to the output's largest value is meaningful.

use tile_core::ir::DType;

use crate::rng::Rng;

/// How a buffer is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Read only: random contents.
    Input,
    /// Written by stores: starts as a fill pattern, compared after the launch.
    Output,
    /// Updated by order-independent atomics: starts random, compared after the launch.
    Atomic,
}

/// How exactly the GPU's values of an output must match the interpreter's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tol {
    /// Bit for bit (NaNs of any payload are equal).
    Exact,
    /// Within `rtol` times the output's largest finite magnitude (at least 1), element-wise;
    /// NaN where the interpreter has NaN, the same infinity where it has one.
    Approx(f64),
    /// As `Approx`, for a `dot`'s result: where the interpreter's value is not finite, any
    /// non-finite value (tensor cores add a group of products before rounding, so `+inf` and
    /// `-inf` from overflowing products may cancel or not).
    Dot(f64),
}

/// One buffer parameter.
#[derive(Clone, Debug)]
pub struct Buf {
    /// Its name in the kernel.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Elements the kernel may touch.
    pub len: usize,
    /// Elements allocated before the kernel's first one (a misaligned start exercises the
    /// variants that assume nothing).
    pub offset: usize,
    /// What the kernel does with it.
    pub role: Role,
    /// For outputs and atomics: how the results compare.
    pub tol: Tol,
}

/// One parameter and its argument.
#[derive(Clone, Debug)]
pub enum Param {
    /// A buffer.
    Buf(Buf),
    /// An `i32` by value.
    I32(String, i32),
    /// An `f32` by value.
    F32(String, f32),
}

/// A generated kernel and its launch.
#[derive(Clone, Debug)]
pub struct Case {
    /// The kernel, as a user writes it (with its `#[tile_kernel]` attribute).
    pub text: String,
    /// Parameters in order, with their arguments.
    pub params: Vec<Param>,
    /// Programs along each axis.
    pub grid: [u32; 3],
    /// Inputs hold special values (NaN, ±0, ±∞, subnormals, extreme integers) now and then.
    pub special: bool,
    /// Seeds the inputs' contents.
    pub data_seed: u64,
}

/// A value the body has named: a tile of the kernel's shape.
#[derive(Clone)]
struct Var {
    name: String,
    ty: Ty,
    /// Holds a scalar ([`E::scalar`]).
    scalar: bool,
    /// Computed with bit-exact operations only.
    exact: bool,
    /// The value is a product (or its negation): an add that consumes it may become an FMA.
    mul: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ty {
    F,
    I,
    B,
}

/// An expression and what it promises.
struct E {
    s: String,
    exact: bool,
    mul: bool,
    /// A scalar (a literal, `s`, a 1-D reduction), which the tile-only operations take after a
    /// broadcast.
    scalar: bool,
}

impl E {
    fn new(s: String, exact: bool) -> E {
        E {
            s,
            exact,
            mul: false,
            scalar: false,
        }
    }

    fn scalar(mut self, scalar: bool) -> E {
        self.scalar = scalar;
        self
    }

    /// Moves data without rounding it (a transpose, reshape, roll, gather, a reduction or scan
    /// along an axis of one element): a product stays one that a later add may fuse.
    fn keeps_product(mut self, x: &E) -> E {
        self.mul = x.mul;
        self
    }
}

/// The shape of the kernel's tiles.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `[B]`.
    One(u32),
    /// `[BM, BN]`.
    Two(u32, u32),
}

struct Gen<'a> {
    r: &'a mut Rng,
    shape: Shape,
    vars: Vec<Var>,
    body: String,
    depth: usize,
    next: usize,
    params: Vec<Param>,
    /// `(name, dtype, transposed)` of the float inputs (`transposed`: read column-major).
    inputs: Vec<(String, DType, bool)>,
    /// The integer input, if any.
    int_input: Option<String>,
    /// Whether the kernel uses `rand`/`randint` (then it has a `seed` parameter).
    seed: bool,
}

/// A case from `r`.
pub fn case(r: &mut Rng) -> Case {
    let special = r.below(4) == 0;
    let data_seed = r.next_u64();
    let (text, params, grid) = match r.below(10) {
        0..=2 => one_d(r),
        3..=6 => two_d(r),
        _ => dot(r),
    };
    Case {
        text,
        params,
        grid,
        special,
        data_seed,
    }
}

/// The factors of a product, each made finite (infinities and NaNs to 0) where the other is
/// approximate: an approximate factor may be exactly 0 on one back end and a rounding error of
/// either sign on the other (a subtraction of a product from itself, contracted into an FMA on
/// the GPU), and times an infinite input that is NaN on one side and ±∞ on the other.
fn finite_factors(x: E, y: E) -> (E, E) {
    let finite = |e: E| E {
        s: format!("select(abs({s}) < 1.0e30, {s}, 0.0)", s = e.s),
        ..e
    };
    match (x.exact, y.exact) {
        (true, true) => (x, y),
        (true, false) => (finite(x), y),
        (false, true) => (x, finite(y)),
        (false, false) => (finite(x), finite(y)),
    }
}

fn pick<T: Copy>(r: &mut Rng, xs: &[T]) -> T {
    xs[r.below(xs.len())]
}

fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::I1 => "bool",
        _ => d.name(),
    }
}

/// The tolerance of a float output of type `d` computed by an expression that is `exact` or
/// not.
fn float_tol(d: DType, exact: bool) -> Tol {
    if exact {
        return Tol::Exact;
    }
    Tol::Approx(match d {
        DType::F16 => 4e-3,
        DType::BF16 => 3e-2,
        _ => 2e-4,
    })
}

/// An attribute line: warps, sometimes stages and specialization.
fn attribute(r: &mut Rng, dot: bool) -> String {
    let mut opts = Vec::new();
    match r.below(5) {
        0 => {}
        1 => opts.push("num_warps = auto".to_string()),
        _ => {
            let w = if dot {
                pick(r, &[4, 4, 8])
            } else {
                pick(r, &[1, 2, 4, 8])
            };
            opts.push(format!("num_warps = {w}"));
        }
    }
    if dot && r.below(2) == 0 {
        opts.push(format!("num_stages = {}", pick(r, &[1, 2, 3, 4])));
    }
    if opts.is_empty() {
        "#[tile_kernel]".into()
    } else {
        format!("#[tile_kernel({})]", opts.join(", "))
    }
}

/// A ragged extent for `blocks` blocks of `b`: sometimes exact, sometimes one short or long.
fn ragged(r: &mut Rng, b: u32, blocks: u32) -> u32 {
    let full = b * blocks;
    match r.below(4) {
        0 => full,
        1 => full.saturating_sub(1).max(1),
        _ => (full - b + 1 + r.below(b as usize) as u32).max(1),
    }
}

fn misalign(r: &mut Rng) -> usize {
    if r.below(4) == 0 {
        1 + r.below(3)
    } else {
        0
    }
}

impl<'a> Gen<'a> {
    fn new(r: &'a mut Rng, shape: Shape) -> Gen<'a> {
        Gen {
            r,
            shape,
            vars: Vec::new(),
            body: String::new(),
            depth: 1,
            next: 0,
            params: Vec::new(),
            inputs: Vec::new(),
            int_input: None,
            seed: false,
        }
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.depth {
            self.body.push_str("    ");
        }
        self.body.push_str(s);
        self.body.push('\n');
    }

    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("v{}", self.next)
    }

    fn bind(&mut self, ty: Ty, e: E) -> String {
        let name = self.fresh();
        self.line(&format!("let {name} = {};", e.s));
        self.vars.push(Var {
            name: name.clone(),
            ty,
            exact: e.exact,
            mul: e.mul,
            scalar: e.scalar,
        });
        name
    }

    fn var(&mut self, ty: Ty) -> Option<Var> {
        let c: Vec<&Var> = self.vars.iter().filter(|v| v.ty == ty).collect();
        (!c.is_empty()).then(|| c[self.r.below(c.len())].clone())
    }

    fn float_lit(&mut self) -> String {
        pick(
            self.r,
            &["0.0", "1.0", "-1.5", "0.5", "2.0", "0.25", "-0.0", "3.0"],
        )
        .to_string()
    }

    fn rank(&self) -> usize {
        match self.shape {
            Shape::One(_) => 1,
            Shape::Two(..) => 2,
        }
    }

    fn square(&self) -> bool {
        matches!(self.shape, Shape::Two(a, b) if a == b)
    }

    /// A float expression of the tile's shape (or broadcast to it).
    fn fexpr(&mut self, budget: usize) -> E {
        if budget == 0 || self.r.below(4) == 0 {
            return self.fleaf();
        }
        let b = budget - 1;
        match self.r.below(20) {
            0..=3 => {
                let op = pick(self.r, &["+", "-", "+", "*"]);
                let x = self.fexpr(b);
                let y = self.fexpr(b);
                let exact = x.exact && y.exact && (op == "*" || !(x.mul || y.mul));
                let (x, y) = if op == "*" {
                    finite_factors(x, y)
                } else {
                    (x, y)
                };
                E {
                    s: format!("({} {op} {})", x.s, y.s),
                    exact,
                    mul: op == "*",
                    scalar: x.scalar && y.scalar,
                }
            }
            4 => {
                let x = self.fexpr(b);
                let y = self.fexpr(b);
                E::new(
                    format!("({} / (abs({}) + 1.0))", x.s, y.s),
                    x.exact && y.exact && !y.mul,
                )
                .scalar(x.scalar && y.scalar)
            }
            5 => {
                let (f, exact) = pick(
                    self.r,
                    &[
                        ("exp", false),
                        ("exp2", false),
                        ("erf", false),
                        ("tanh", false),
                        ("sin", false),
                        ("cos", false),
                        ("sigmoid", false),
                        ("gelu", false),
                        ("abs", true),
                        ("floor", true),
                        ("ceil", true),
                    ],
                );
                // `floor` and `ceil` jump by a whole unit: an operand a last bit off may land on
                // either side, so they take exact operands only.
                let x = if f == "floor" || f == "ceil" {
                    self.exact_fexpr(b)
                } else {
                    self.fexpr(b)
                };
                // Keep the arguments of exp (its values stay in range) and of sin and cos (an
                // argument's absolute error, which grows with it, is the result's) small.
                let arg = match f {
                    "exp" | "exp2" => format!("tanh({})", x.s),
                    "sin" | "cos" => format!("(tanh({}) * 4.0)", x.s),
                    _ => x.s,
                };
                let exact = exact && x.exact;
                E::new(format!("{f}({arg})"), exact).scalar(x.scalar)
            }
            6 => {
                let x = self.fexpr(b);
                let (s, exact) = match self.r.below(4) {
                    0 => (format!("sqrt(abs({}))", x.s), x.exact),
                    1 => (format!("log(abs({}) + 1.0)", x.s), false),
                    2 => (format!("pow(abs({}) + 0.5, 1.5)", x.s), false),
                    _ => (format!("rsqrt(abs({}) + 1.0)", x.s), false),
                };
                E::new(s, exact).scalar(x.scalar)
            }
            7 => {
                let f = pick(self.r, &["min", "max"]);
                let x = self.fexpr(b);
                let y = self.fexpr(b);
                // `min(p, p)` folds to `p`, whose product an add may then fuse.
                E {
                    s: format!("{f}({}, {})", x.s, y.s),
                    exact: x.exact && y.exact,
                    mul: x.mul || y.mul,
                    scalar: x.scalar && y.scalar,
                }
            }
            8 => {
                let c = self.bexpr(b);
                let x = self.fexpr(b);
                let y = self.fexpr(b);
                E {
                    s: format!("select({}, {}, {})", c.s, x.s, y.s),
                    exact: c.exact && x.exact && y.exact,
                    mul: x.mul || y.mul,
                    scalar: false,
                }
            }
            9 => {
                // Only exact values: rounding to 2 to 11 bits turns a last-bit difference into
                // one of a whole ulp of the narrow type, beyond an f32 tolerance.
                let x = self.exact_fexpr(b);
                let t = pick(self.r, &["f16", "bf16", "f8e4m3", "f8e5m2", "f64"]);
                let e = E::new(format!("(({}) as {t} as f32)", x.s), true).scalar(x.scalar);
                // Through `f64` and back is no rounding at all (LLVM drops the pair), so a
                // product stays one that a later add may fuse into an FMA.
                if t == "f64" {
                    e.keeps_product(&x)
                } else {
                    e
                }
            }
            10 => {
                // Small integers only: a sum of converted extremes (±2^31) is exact in no order.
                let x = self.iexpr(b);
                E::new(format!("(({} % 4096) as f32)", x.s), x.exact)
            }
            11 => {
                let x = self.fexpr(b);
                let y = self.fexpr(b);
                let z = self.fexpr(b);
                let exact = x.exact && y.exact && z.exact;
                let (x, y) = finite_factors(x, y);
                E::new(format!("fma({}, {}, {})", x.s, y.s, z.s), exact)
            }
            12 | 13 => self.reduce_back(b),
            14 => self.scan(b),
            15 if self.r.below(2) == 0 => {
                // A reshape there and back: the same values in another layout.
                let x = self.fexpr(b);
                let t = self.full(&x);
                let (there, back) = match self.shape {
                    Shape::One(n) if n >= 2 => (format!("[2, {}]", n / 2), format!("[{n}]")),
                    Shape::One(n) => (format!("[1, {n}]"), format!("[{n}]")),
                    Shape::Two(m, n) => (format!("[{}]", m * n), format!("[{m}, {n}]")),
                };
                E::new(format!("({t}).reshape({there}).reshape({back})"), x.exact).keeps_product(&x)
            }
            15 => {
                let x = self.fexpr(b);
                let axis = self.r.below(self.rank());
                let shift = self.r.below(5);
                E::new(
                    format!("({}).roll({shift}, {axis})", self.full(&x)),
                    x.exact,
                )
                .keeps_product(&x)
            }
            16 if self.square() => {
                let x = self.fexpr(b);
                E::new(format!("({}).trans()", self.full(&x)), x.exact).keeps_product(&x)
            }
            17 => {
                let x = self.fexpr(b);
                let i = self.iexpr(b);
                let axis = self.r.below(self.rank());
                E::new(
                    format!("gather({}, {}, {axis})", self.full(&x), self.ifull(&i)),
                    x.exact && i.exact,
                )
                .keeps_product(&x)
            }
            18 => {
                self.seed = true;
                let offs = self.offs();
                if self.r.below(4) == 0 {
                    E::new(format!("randn(seed, {offs})"), false)
                } else {
                    // `rand` ends in a product (the word times 2^-31), which an add that
                    // consumes it may fuse into an FMA.
                    E {
                        s: format!("rand(seed, {offs})"),
                        exact: true,
                        mul: true,
                        scalar: false,
                    }
                }
            }
            _ => {
                let x = self.fexpr(b);
                E {
                    s: format!("-({})", x.s),
                    exact: x.exact,
                    mul: x.mul,
                    scalar: x.scalar,
                }
            }
        }
    }

    /// The element offsets of the program's tile (row-major over the output).
    fn offs(&self) -> &'static str {
        match self.shape {
            Shape::One(_) => "offs",
            Shape::Two(..) => "offs2",
        }
    }

    /// `e` as a tile of the kernel's full shape (scalars and reduced rows or columns
    /// broadcast), for the operations that take only tiles.
    fn full(&self, e: &E) -> String {
        if e.mul {
            // Not `+ 0.0`: the add may fuse with the product into an FMA, which keeps the sign
            // of an underflowed product (`-a·a + 0` is `+0` rounded twice, `-0` fused).
            let offs = self.offs();
            return format!("select({offs} == {offs}, {}, 0.0)", e.s);
        }
        let shape = match self.shape {
            Shape::One(b) => format!("[{b}]"),
            Shape::Two(m, n) => format!("[{m}, {n}]"),
        };
        format!("({} + zeros({shape}))", e.s)
    }

    /// An integer `e` as a tile of the kernel's full shape.
    fn ifull(&self, e: &E) -> String {
        format!("({} + {} * 0)", e.s, self.offs())
    }

    /// The program's in-bounds mask.
    fn mask(&self) -> &'static str {
        match self.shape {
            Shape::One(_) => "mask",
            Shape::Two(..) => "mask2",
        }
    }

    /// A float expression computed with bit-exact operations only, for what turns a float into
    /// an integer or a truth value: an index or a comparison of approximate values may differ
    /// by a whole step, which no tolerance on the result can allow for. Integers and booleans
    /// are therefore exact everywhere.
    fn exact_fexpr(&mut self, budget: usize) -> E {
        for _ in 0..4 {
            let e = self.fexpr(budget);
            if e.exact {
                return e;
            }
        }
        E::new(self.float_lit(), true).scalar(true)
    }

    fn fleaf(&mut self) -> E {
        match self.r.below(8) {
            0 => E::new(self.float_lit(), true).scalar(true),
            1 => E::new("s".into(), true).scalar(true),
            _ => match self.var(Ty::F) {
                Some(v) => E {
                    s: v.name,
                    exact: v.exact,
                    mul: v.mul,
                    scalar: v.scalar,
                },
                None => E::new(self.float_lit(), true).scalar(true),
            },
        }
    }

    /// A reduction along an axis, broadcast back to the tile's shape.
    fn reduce_back(&mut self, b: usize) -> E {
        let x = self.fexpr(b);
        let f = pick(self.r, &["sum", "max", "min", "sum"]);
        let exact = x.exact && f != "sum";
        match self.shape {
            Shape::One(_) => E::new(format!("({}).{f}(0)", self.full(&x)), exact)
                .scalar(true)
                .keeps_product(&x),
            Shape::Two(m, n) => {
                let axis = self.r.below(2);
                let back = if self.r.below(3) == 0 {
                    format!(".broadcast_to([{m}, {n}])")
                } else {
                    String::new()
                };
                E::new(
                    format!("({}).{f}({axis}).expand_dims({axis}){back}", self.full(&x)),
                    exact,
                )
                .keeps_product(&x)
            }
        }
    }

    fn scan(&mut self, b: usize) -> E {
        if self.r.below(4) == 0 {
            return self.tuple_scan(b);
        }
        let x = self.fexpr(b);
        let (f, exact) = pick(
            self.r,
            &[
                ("cumsum", false),
                ("cummax", true),
                ("cummin", true),
                ("cumprod", false),
            ],
        );
        // Products of many factors leave any range, and where they underflow depends on their
        // order: scan factors within 1% of 1 (1024 of them stay within e^±11).
        let arg = if f == "cumprod" {
            format!("(1.0 + 0.01 * tanh({}))", self.full(&x))
        } else {
            self.full(&x)
        };
        let axis = self.r.below(self.rank());
        let rev = if self.r.below(3) == 0 {
            ", reverse = true"
        } else {
            ""
        };
        let exact = exact && x.exact && f != "cumprod";
        if self.r.below(3) == 0 {
            // The same scan through `associative_scan` and a combiner.
            let combine = match f {
                "cumsum" => "|a, b| a + b",
                "cumprod" => "|a, b| a * b",
                "cummax" => "max",
                _ => "|p, q| min(p, q)",
            };
            return E::new(
                format!("associative_scan({arg}, {axis}, {combine}{rev})"),
                exact,
            )
            .keeps_product(&x);
        }
        E::new(format!("({arg}).{f}({axis}{rev})"), exact).keeps_product(&x)
    }

    /// A first-order linear recurrence `h = a·h + b` by `associative_scan` of a pair of tiles
    /// (bound by a `let` of a tuple before the statement that uses it): in f32 with decays in
    /// (0.25, 0.75) (well conditioned, compared with a tolerance: the GPU reassociates), or in
    /// wrapping `i32` (exact whatever the order, so the GPU must give the interpreter's bits).
    fn tuple_scan(&mut self, b: usize) -> E {
        let axis = self.r.below(self.rank());
        let rev = if self.r.below(3) == 0 {
            ", reverse = true"
        } else {
            ""
        };
        let name = self.fresh();
        let combine = "|(a1, b1), (a2, b2)| (a1 * a2, b1 * a2 + b2)";
        if self.r.below(2) == 0 {
            let (a, y) = (self.fexpr(b), self.fexpr(b));
            let decay = format!("(0.5 + 0.25 * tanh({}))", self.full(&a));
            let add = self.full(&y);
            self.line(&format!(
                "let (_, {name}) = associative_scan(({decay}, {add}), {axis}, {combine}{rev});"
            ));
            E::new(name, false)
        } else {
            let (a, y) = (self.iexpr(b), self.iexpr(b));
            let offs = self.offs();
            self.line(&format!(
                "let (_, {name}) = associative_scan((({}) + {offs} * 0, ({}) + {offs} * 0), {axis}, {combine}{rev});",
                a.s, y.s
            ));
            E::new(format!("({name} as f32)"), true)
        }
    }

    fn iexpr(&mut self, budget: usize) -> E {
        if budget == 0 || self.r.below(3) == 0 {
            return match self.var(Ty::I) {
                Some(v) if self.r.below(4) != 0 => E::new(v.name, true),
                _ => E::new(self.offs().into(), true),
            };
        }
        let b = budget - 1;
        match self.r.below(10) {
            0..=2 => {
                let op = pick(self.r, &["+", "-", "*"]);
                let x = self.iexpr(b);
                let y = self.iexpr(b);
                E::new(format!("({} {op} {})", x.s, y.s), true)
            }
            3 => {
                let op = pick(self.r, &["/", "%"]);
                let x = self.iexpr(b);
                let d = pick(self.r, &[0, 1, 3, 7, -5, 16]);
                E::new(format!("({} {op} {d})", x.s), true)
            }
            4 => {
                let f = pick(self.r, &["min", "max", "umulhi"]);
                let x = self.iexpr(b);
                let y = self.iexpr(b);
                E::new(format!("{f}({}, {})", x.s, y.s), true)
            }
            5 => {
                let x = self.exact_fexpr(b);
                E::new(format!("((({}) * 8.0) as i32)", x.s), true)
            }
            6 => {
                let x = self.exact_fexpr(b);
                let f = pick(self.r, &["argmax", "argmin"]);
                match self.shape {
                    Shape::One(_) => E::new(format!("({}).{f}(0)", self.full(&x)), x.exact),
                    Shape::Two(..) => {
                        let axis = self.r.below(2);
                        let t = self.full(&x);
                        E::new(format!("({t}).{f}({axis}).expand_dims({axis})"), x.exact)
                    }
                }
            }
            7 => {
                let x = self.iexpr(b);
                let axis = self.r.below(self.rank());
                let f = pick(self.r, &["cumsum", "cummax", "sum"]);
                if f == "sum" {
                    return match self.shape {
                        Shape::One(_) => E::new(format!("({}).sum(0)", self.ifull(&x)), true),
                        Shape::Two(..) => E::new(
                            format!("({}).sum({axis}).expand_dims({axis})", self.ifull(&x)),
                            true,
                        ),
                    };
                }
                E::new(format!("({}).{f}({axis})", self.ifull(&x)), true)
            }
            8 => {
                // Unsigned arithmetic, shifts (amounts past the width and negative ones
                // included), narrow integers and bitcasts, back to `i32`.
                let x = self.iexpr(b);
                let y = self.iexpr(b);
                let (x, y) = (x.s, y.s);
                let s = match self.r.below(10) {
                    0 => format!("((({x}) as u32) >> (({y}) & 31)) as i32"),
                    1 => format!("((({x}) as u32) << (({y}) % 40)) as i32"),
                    2 => format!("(({x}) >> (({y}) % 40))"),
                    3 => format!("((({x}) as u32) / ((({y}) as u32) | 1)) as i32"),
                    4 => format!("((({x}) as u32) % ((({y}) as u32) + 3)) as i32"),
                    5 => format!("max(({x}) as u32, ({y}) as u32) as i32"),
                    6 => format!("(((({x}) as u64) * 2654435761) >> 17) as i32"),
                    7 => {
                        let t = pick(self.r, &["i8", "u8", "i16"]);
                        format!("((({x}) as {t}) as i32)")
                    }
                    8 => format!("select((({x}) as u32) < (({y}) as u32), 1, 0)"),
                    _ => {
                        // A NaN's bits differ between the back ends (either is a NaN).
                        let f = self.exact_fexpr(b).s;
                        format!("((bitcast(select({f} == {f}, {f}, 0.0), u32) >> 20) as i32)")
                    }
                };
                E::new(s, true)
            }
            _ => {
                self.seed = true;
                let offs = self.offs();
                E::new(format!("(randint(seed, {offs}) % 1000)"), true)
            }
        }
    }

    fn bexpr(&mut self, budget: usize) -> E {
        let b = budget.saturating_sub(1);
        match self.r.below(5) {
            0 => {
                let op = pick(self.r, &["<", "<=", ">", ">=", "==", "!="]);
                let x = self.exact_fexpr(b);
                let y = self.exact_fexpr(b);
                E::new(format!("({} {op} {})", x.s, y.s), true)
            }
            1 => {
                let op = pick(self.r, &["<", ">=", "==", "!="]);
                let x = self.iexpr(b);
                let y = self.iexpr(b);
                E::new(format!("({} {op} {})", x.s, y.s), true)
            }
            2 if budget > 0 => {
                let op = pick(self.r, &["&", "|"]);
                let x = self.bexpr(b);
                let y = self.bexpr(b);
                E::new(format!("({} {op} {})", x.s, y.s), x.exact && y.exact)
            }
            3 if budget > 0 => {
                let x = self.bexpr(b);
                E::new(format!("!({})", x.s), x.exact)
            }
            _ => match self.var(Ty::B) {
                Some(v) => E::new(v.name, v.exact),
                None => E::new(self.mask().into(), true),
            },
        }
    }

    fn add_buf(&mut self, name: &str, dtype: DType, len: usize, role: Role, tol: Tol) {
        let offset = misalign(self.r);
        self.params.push(Param::Buf(Buf {
            name: name.into(),
            dtype,
            len,
            offset,
            role,
            tol,
        }));
    }

    /// Statements: bindings, loads of the inputs, loops carrying a tile.
    fn stmts(&mut self, count: usize) {
        for _ in 0..count {
            match self.r.below(10) {
                0..=4 => {
                    let e = self.fexpr(3);
                    self.bind(Ty::F, e);
                }
                5 => {
                    let e = self.iexpr(2);
                    self.bind(Ty::I, e);
                }
                6 => {
                    let e = self.bexpr(2);
                    self.bind(Ty::B, e);
                }
                7 if !self.inputs.is_empty() => self.load_input(),
                8 if self.depth < 3 => self.carried_loop(),
                _ => {
                    let e = self.fexpr(2);
                    self.bind(Ty::F, e);
                }
            }
        }
    }

    /// A load of a float input at the program's tile, sometimes shifted by an index so that
    /// the mask and `other` matter.
    fn load_input(&mut self) {
        let (name, dtype, trans) = self.inputs[self.r.below(self.inputs.len())].clone();
        let (addr, mask) = match (self.shape, trans) {
            (Shape::One(_), _) => ("offs", "mask"),
            (Shape::Two(..), false) => ("offs2", "mask2"),
            (Shape::Two(..), true) => ("offs2t", "mask2"),
        };
        let other = self.float_lit();
        let evict = pick(self.r, &["", "", ", evict = first", ", evict = last"]);
        let cast = if dtype == DType::F32 { "" } else { " as f32" };
        let e = E::new(
            format!("load({name} + {addr}, {mask}, {other}{evict}){cast}"),
            true,
        );
        self.bind(Ty::F, e);
    }

    /// A loop that carries a float tile: a `for`, or a `while` over a counter carried beside
    /// it (whose condition sometimes adds a reduction of zeros, so that the condition region
    /// holds a reduction across the program).
    fn carried_loop(&mut self) {
        let v = self.fresh();
        let init = self.fexpr(1);
        let init = self.full(&init);
        self.line(&format!("let mut {v} = {init};"));
        let trips = pick(self.r, &["3", "n % 4", "1", "0"]);
        let i = self.fresh();
        if self.r.below(3) == 0 {
            let zero = pick(self.r, &["", " + (arange(0, 64) * 0).max()"]);
            self.line(&format!("let mut {i}_w = 0;"));
            self.line(&format!("while {i}_w{zero} < {trips} {{"));
            self.line(&format!("    let {i} = {i}_w;"));
            self.line(&format!("    {i}_w += 1;"));
        } else {
            self.line(&format!("for {i} in 0..{trips} {{"));
        }
        self.depth += 1;
        let before = self.vars.len();
        self.vars.push(Var {
            name: format!("({i} as f32)"),
            ty: Ty::F,
            exact: true,
            mul: false,
            scalar: true,
        });
        let count = 1 + self.r.below(2);
        self.stmts(count);
        let upd = self.fexpr(2);
        let keep = pick(self.r, &["0.5", "0.25", "-0.5"]);
        self.line(&format!("{v} = {v} * {keep} + {};", upd.s));
        self.vars.truncate(before);
        self.depth -= 1;
        self.line("}");
        self.vars.push(Var {
            name: v,
            ty: Ty::F,
            exact: false,
            mul: false,
            scalar: false,
        });
    }

    /// The kernel's float and integer inputs, loaded at the top.
    fn inputs(&mut self, len: usize) {
        for i in 0..1 + self.r.below(3) {
            let dtype = pick(self.r, &[DType::F32, DType::F32, DType::F16, DType::BF16]);
            let trans = matches!(self.shape, Shape::Two(..)) && self.r.below(3) == 0;
            let name = format!("x{i}");
            self.add_buf(&name, dtype, len, Role::Input, Tol::Exact);
            self.inputs.push((name, dtype, trans));
            self.load_input();
        }
        if self.r.below(2) == 0 {
            let dtype = pick(
                self.r,
                &[
                    DType::I32,
                    DType::I32,
                    DType::I64,
                    DType::I8,
                    DType::I16,
                    DType::U8,
                    DType::U32,
                    DType::U64,
                ],
            );
            self.add_buf("j", dtype, len, Role::Input, Tol::Exact);
            let (addr, mask) = match self.shape {
                Shape::One(_) => ("offs", "mask"),
                Shape::Two(..) => ("offs2", "mask2"),
            };
            let cast = if dtype == DType::I32 { "" } else { " as i32" };
            let e = E::new(format!("load(j + {addr}, {mask}, 7){cast}"), true);
            self.bind(Ty::I, e);
            self.int_input = Some("j".into());
        }
    }

    /// Stores of one to three results, per-program reduction slots and atomics.
    fn outputs(&mut self, len: usize, programs: usize) {
        let (offs, mask) = match self.shape {
            Shape::One(_) => ("offs", "mask"),
            Shape::Two(..) => ("offs2", "mask2"),
        };
        for o in 0..1 + self.r.below(2) {
            let dtype = pick(self.r, &[DType::F32, DType::F32, DType::F16, DType::BF16]);
            let e = self.fexpr(3);
            let e = self.sink(e);
            let name = format!("y{o}");
            self.add_buf(&name, dtype, len, Role::Output, float_tol(dtype, e.exact));
            let cast = if dtype == DType::F32 {
                String::new()
            } else {
                format!(" as {}", dtype_name(dtype))
            };
            let evict = pick(self.r, &["", "", ", evict = first"]);
            self.line(&format!(
                "store({name} + {offs}, ({}){cast}, {mask}{evict});",
                e.s
            ));
        }
        if self.r.below(2) == 0 {
            let e = self.iexpr(2);
            self.add_buf("yi", DType::I32, len, Role::Output, Tol::Exact);
            self.line(&format!("store(yi + {offs}, {}, {mask});", e.s));
        }
        if self.r.below(3) == 0 {
            // An integer result narrowed, or widened by its signedness, into another type.
            let e = self.iexpr(2);
            let dtype = pick(
                self.r,
                &[DType::I8, DType::I16, DType::U8, DType::U32, DType::U64],
            );
            self.add_buf("yn", dtype, len, Role::Output, Tol::Exact);
            self.line(&format!(
                "store(yn + {offs}, ({}) as {}, {mask});",
                e.s,
                dtype_name(dtype)
            ));
        }
        if self.r.below(3) == 0 {
            // One slot per program: the whole tile reduced (masked elements give 0).
            let e = self.fexpr(2);
            let pid = match self.shape {
                Shape::One(_) => "program_id(0)".to_string(),
                Shape::Two(..) => "program_id(0) * num_programs(1) + program_id(1)".to_string(),
            };
            let f = pick(self.r, &["sum", "max", "min"]);
            let reduced = match self.shape {
                Shape::One(_) => format!("select({mask}, {}, 0.0).{f}()", e.s),
                Shape::Two(..) => format!("select({mask}, {}, 0.0).{f}(1).{f}(0)", e.s),
            };
            self.add_buf(
                "red",
                DType::F32,
                programs,
                Role::Output,
                float_tol(DType::F32, e.exact && f != "sum"),
            );
            self.line(&format!("store(red + {pid}, {reduced});"));
        }
        if self.r.below(3) == 0 {
            // Order-independent atomics into a few slots.
            let slots = pick(self.r, &[1usize, 3, 16, 64]);
            let (f, dtype) = pick(
                self.r,
                &[
                    ("atomic_add", DType::I32),
                    ("atomic_max", DType::I32),
                    ("atomic_min", DType::I32),
                    ("atomic_max", DType::F32),
                    ("atomic_min", DType::F32),
                    ("atomic_add", DType::U32),
                    ("atomic_max", DType::U32),
                    ("atomic_min", DType::U32),
                ],
            );
            let v = if dtype == DType::I32 {
                let e = self.iexpr(2);
                format!("(({}) % 1000)", e.s)
            } else if dtype == DType::U32 {
                // Negative values become large unsigned ones: max and min see both ends.
                let e = self.iexpr(2);
                format!("((({}) % 1000) as u32)", e.s)
            } else {
                // A NaN's sign decides the float atomics' order, and the back ends' NaNs differ
                // in sign (a NaN produced by the CPU has it set, the GPU's canonical one clear).
                let e = self.fexpr(2);
                let e = E {
                    s: format!("select({s} == {s}, {s}, 0.0)", s = e.s),
                    ..e
                };
                if !e.exact {
                    // Approximate inputs to a max are still compared within the tolerance.
                    self.add_buf("acc", dtype, slots, Role::Atomic, float_tol(dtype, false));
                    let idx = format!("(({offs} % {slots}) + {slots}) % {slots}");
                    self.line(&format!("{f}(acc + {idx}, {}, {mask});", e.s));
                    return;
                }
                e.s
            };
            self.add_buf("acc", dtype, slots, Role::Atomic, Tol::Exact);
            let idx = format!("(({offs} % {slots}) + {slots}) % {slots}");
            self.line(&format!("{f}(acc + {idx}, {v}, {mask});"));
        }
    }

    /// `e` combined with the most recent float bindings, so that what the body computed
    /// reaches an output instead of being dead code.
    fn sink(&mut self, e: E) -> E {
        let last: Vec<Var> = self
            .vars
            .iter()
            .rev()
            .filter(|v| v.ty == Ty::F && !v.scalar)
            .take(2)
            .cloned()
            .collect();
        last.into_iter().fold(e, |acc, v| {
            let f = ["max", "min"][self.r.below(2)];
            E {
                s: format!("{f}({}, {})", v.name, acc.s),
                exact: acc.exact && v.exact,
                mul: false,
                scalar: false,
            }
        })
    }

    /// The parameter list in the kernel's text (buffers, then the scalars).
    fn signature(&self) -> String {
        let mut ps: Vec<String> = self
            .params
            .iter()
            .map(|p| match p {
                Param::Buf(b) => format!("{}: Ptr<{}>", b.name, dtype_name(b.dtype)),
                Param::I32(n, _) => format!("{n}: i32"),
                Param::F32(n, _) => format!("{n}: f32"),
            })
            .collect();
        if matches!(self.shape, Shape::One(_)) {
            ps.push("B: Const<BLK>".into());
        }
        ps.join(", ")
    }
}

/// Scalars every kernel takes; `seed` only where random numbers are drawn (it must be
/// declared before the body is generated, so it is always declared and sometimes unused).
fn scalars(r: &mut Rng, params: &mut Vec<Param>, ints: &[(&str, i32)]) {
    for &(n, v) in ints {
        params.push(Param::I32(n.into(), v));
    }
    let s = pick(r, &[0.5f32, -1.25, 2.0, 0.0]);
    params.push(Param::F32("s".into(), s));
    params.push(Param::I32("seed".into(), r.next_u64() as i32));
}

fn one_d(r: &mut Rng) -> (String, Vec<Param>, [u32; 3]) {
    // Up to 1024 mostly, now and then 2048 or 4096 (register limits reject some of those).
    let b = 1u32
        << if r.below(8) == 0 {
            11 + r.below(2)
        } else {
            r.below(11)
        };
    let blocks = 1 + r.below(4) as u32;
    let n = ragged(r, b, blocks);
    let extra = r.below(3) as u32 / 2;
    let grid = n.div_ceil(b) + extra;
    let attr = attribute(r, false);
    let mut g = Gen::new(r, Shape::One(b));
    g.line("let offs = program_id(0) * B + arange(0, B);");
    g.line("let mask = offs < n;");
    g.inputs(n as usize);
    let count = 2 + g.r.below(5);
    g.stmts(count);
    g.outputs(n as usize, grid as usize);
    let mut params = std::mem::take(&mut g.params);
    scalars(g.r, &mut params, &[("n", n as i32)]);
    g.params = params;
    let text = format!(
        "{attr}\nfn kern({}) {{\n{}}}\n",
        g.signature().replace("BLK", &b.to_string()),
        g.body
    );
    (text, g.params, [grid, 1, 1])
}

fn two_d(r: &mut Rng) -> (String, Vec<Param>, [u32; 3]) {
    let (bm, bn) = loop {
        let bm = 1u32 << r.below(8);
        let bn = if r.below(3) == 0 {
            bm
        } else {
            1u32 << r.below(8)
        };
        if bm * bn <= 8192 {
            break (bm, bn);
        }
    };
    let (gm, gn) = (1 + r.below(3) as u32, 1 + r.below(3) as u32);
    let m = ragged(r, bm, gm);
    let n = ragged(r, bn, gn);
    let grid = [
        m.div_ceil(bm) + r.below(3) as u32 / 2,
        n.div_ceil(bn) + r.below(3) as u32 / 2,
        1,
    ];
    let attr = attribute(r, false);
    let mut g = Gen::new(r, Shape::Two(bm, bn));
    g.line(&format!(
        "let rows = (program_id(0) * {bm} + arange(0, {bm})).expand_dims(1);"
    ));
    g.line(&format!(
        "let cols = (program_id(1) * {bn} + arange(0, {bn})).expand_dims(0);"
    ));
    g.line("let mask2 = (rows < m) & (cols < n);");
    g.line("let offs2 = rows * n + cols;");
    g.line("let offs2t = cols * m + rows;");
    let len = (m * n) as usize;
    g.inputs(len);
    let count = 2 + g.r.below(5);
    g.stmts(count);
    g.outputs(len, (grid[0] * grid[1]) as usize);
    let mut params = std::mem::take(&mut g.params);
    scalars(g.r, &mut params, &[("m", m as i32), ("n", n as i32)]);
    g.params = params;
    let text = format!("{attr}\nfn kern({}) {{\n{}}}\n", g.signature(), g.body);
    (text, g.params, grid)
}

/// A `K` loop of `dot`s: `acc[BM, BN] += A[BM, BK] · B[BK, BN]` over `k`, then an epilogue.
fn dot(r: &mut Rng) -> (String, Vec<Param>, [u32; 3]) {
    let (dt, prec) = pick(
        r,
        &[
            (DType::F16, ""),
            (DType::F16, ""),
            (DType::BF16, ""),
            (DType::F32, ""),
            (DType::F32, ", precision = tf32"),
        ],
    );
    let small = r.below(5) == 0;
    let (bm, bn, bk) = if small {
        (1u32 << r.below(5), 1u32 << r.below(5), 1u32 << r.below(5))
    } else {
        (
            pick(r, &[16u32, 32, 64, 128]),
            pick(r, &[16u32, 32, 64, 128]),
            pick(r, &[16u32, 32, 64]),
        )
    };
    let (gm, gn) = (1 + r.below(2) as u32, 1 + r.below(2) as u32);
    let m = ragged(r, bm, gm);
    let n = ragged(r, bn, gn);
    let k = if r.below(8) == 0 {
        0
    } else {
        let gk = 1 + r.below(4) as u32;
        ragged(r, bk, gk)
    };
    let grid = [m.div_ceil(bm), n.div_ceil(bn), 1];
    let attr = attribute(r, true);
    // How the operands are addressed: affine in the loop, advanced pointer tiles, descriptors,
    // or gathered along `K` through a table the loop loads (a paged cache's block table).
    let form = r.below(4);
    // B stored as N × K and transposed in the kernel.
    let bt = r.below(3) == 0;
    let tn = dtype_name(dt);
    let mut g = Gen::new(r, Shape::Two(bm, bn));
    g.add_buf("a", dt, (m * k) as usize, Role::Input, Tol::Exact);
    g.add_buf("b", dt, (k * n) as usize, Role::Input, Tol::Exact);
    g.line(&format!("let rm = program_id(0) * {bm} + arange(0, {bm});"));
    g.line(&format!("let rn = program_id(1) * {bn} + arange(0, {bn});"));
    g.line(&format!("let rk = arange(0, {bk});"));
    g.line(
        "let mut acc = zeros([BM, BN]);"
            .replace("BM", &bm.to_string())
            .replace("BN", &bn.to_string())
            .as_str(),
    );
    // A computed left operand: the loaded tile scaled in registers before the product.
    let computed = g.r.below(4) == 0;
    let fold = g.r.below(3) == 0;
    let product = |a: &str, b: &str| -> String {
        let a = if computed {
            format!("((({a}) as f32 * 0.5) as {tn})")
        } else {
            a.to_string()
        };
        let b = if bt {
            format!("({b}).trans()")
        } else {
            b.to_string()
        };
        if fold {
            format!("acc += dot({a}, {b}{prec});")
        } else {
            format!("acc = dot({a}, {b}, acc{prec});")
        }
    };
    let b_shape = if bt {
        format!("[{bn}, {bk}]")
    } else {
        format!("[{bk}, {bn}]")
    };
    match form {
        0 => {
            g.line(&format!("for k0 in ({}..k).step_by({bk}) {{", 0));
            g.line("    let kk = k0 + rk;");
            g.line("    let ta = load(a + rm.expand_dims(1) * k + kk.expand_dims(0), (rm.expand_dims(1) < m) & (kk.expand_dims(0) < k), 0.0);");
            if bt {
                g.line("    let tb = load(b + rn.expand_dims(1) * k + kk.expand_dims(0), (rn.expand_dims(1) < n) & (kk.expand_dims(0) < k), 0.0);");
            } else {
                g.line("    let tb = load(b + kk.expand_dims(1) * n + rn.expand_dims(0), (kk.expand_dims(1) < k) & (rn.expand_dims(0) < n), 0.0);");
            }
            let p = product("ta", "tb");
            g.line(&format!("    {p}"));
            g.line("}");
        }
        1 => {
            g.line("let mut pa = a + rm.expand_dims(1) * k + rk.expand_dims(0);");
            if bt {
                g.line("let mut pb = b + rn.expand_dims(1) * k + rk.expand_dims(0);");
            } else {
                g.line("let mut pb = b + rk.expand_dims(1) * n + rn.expand_dims(0);");
            }
            g.line(&format!("for kb in 0..cdiv(k, {bk}) {{"));
            g.line(&format!("    let rem = k - kb * {bk};"));
            g.line(
                "    let ta = load(pa, (rm.expand_dims(1) < m) & (rk.expand_dims(0) < rem), 0.0);",
            );
            if bt {
                g.line("    let tb = load(pb, (rn.expand_dims(1) < n) & (rk.expand_dims(0) < rem), 0.0);");
            } else {
                g.line("    let tb = load(pb, (rk.expand_dims(1) < rem) & (rn.expand_dims(0) < n), 0.0);");
            }
            let p = product("ta", "tb");
            g.line(&format!("    {p}"));
            g.line(&format!("    pa += {bk};"));
            if bt {
                g.line(&format!("    pb += {bk};"));
            } else {
                g.line(&format!("    pb += {bk} * n;"));
            }
            g.line("}");
        }
        3 => {
            // Any `i32`, taken into `0 .. k`: the index of `A`'s column and `B`'s row.
            g.add_buf(
                "perm",
                DType::I32,
                k.max(1) as usize,
                Role::Input,
                Tol::Exact,
            );
            g.line(&format!("for k0 in (0..k).step_by({bk}) {{"));
            g.line("    let kk = k0 + rk;");
            g.line("    let kin = kk < k;");
            g.line("    let kc = ((load(perm + kk, kin, 0) % k) + k) % k;");
            g.line("    let ta = load(a + rm.expand_dims(1) * k + kc.expand_dims(0), (rm.expand_dims(1) < m) & kin.expand_dims(0), 0.0);");
            if bt {
                g.line("    let tb = load(b + rn.expand_dims(1) * k + kc.expand_dims(0), (rn.expand_dims(1) < n) & kin.expand_dims(0), 0.0);");
            } else {
                g.line("    let tb = load(b + kc.expand_dims(1) * n + rn.expand_dims(0), kin.expand_dims(1) & (rn.expand_dims(0) < n), 0.0);");
            }
            let p = product("ta", "tb");
            g.line(&format!("    {p}"));
            g.line("}");
        }
        _ => {
            g.line(&format!(
                "let da = make_tensor_descriptor(a, [m, k], [k, 1], [{bm}, {bk}]);"
            ));
            if bt {
                g.line(&format!(
                    "let db = make_tensor_descriptor(b, [n, k], [k, 1], [{bn}, {bk}]);"
                ));
            } else {
                g.line(&format!(
                    "let db = make_tensor_descriptor(b, [k, n], [n, 1], [{bk}, {bn}]);"
                ));
            }
            g.line(&format!("for k0 in (0..k).step_by({bk}) {{"));
            g.line(&format!(
                "    let ta = da.load([program_id(0) * {bm}, k0]);"
            ));
            if bt {
                g.line(&format!(
                    "    let tb = db.load([program_id(1) * {bn}, k0]);"
                ));
            } else {
                g.line(&format!(
                    "    let tb = db.load([k0, program_id(1) * {bn}]);"
                ));
            }
            let p = product("ta", "tb");
            g.line(&format!("    {p}"));
            g.line("}");
        }
    }
    let _ = b_shape;
    // The epilogue: element-wise work on the accumulator (and a bias), then the store.
    g.line("let rows = rm.expand_dims(1);");
    g.line("let cols = rn.expand_dims(0);");
    g.line("let mask2 = (rows < m) & (cols < n);");
    g.line("let offs2 = rows * n + cols;");
    g.vars.push(Var {
        name: "acc".into(),
        ty: Ty::F,
        exact: false,
        mul: false,
        scalar: false,
    });
    if g.r.below(2) == 0 {
        g.add_buf("bias", DType::F32, n as usize, Role::Input, Tol::Exact);
        g.bind(
            Ty::F,
            E::new("load(bias + cols, cols < n, 0.0)".into(), true),
        );
    }
    let count = g.r.below(3);
    g.stmts(count);
    let out_t = pick(g.r, &[DType::F32, DType::F16, dt]);
    let e = if g.r.below(2) == 0 {
        E::new("acc".into(), false)
    } else {
        g.fexpr(2)
    };
    let cast = if out_t == DType::F32 {
        String::new()
    } else {
        format!(" as {}", dtype_name(out_t))
    };
    g.add_buf(
        "c",
        out_t,
        (m * n) as usize,
        Role::Output,
        dot_tol(out_t, dt, prec),
    );
    if form == 2 && g.r.below(2) == 0 {
        // Through a descriptor: the block at the program's corner, the edges left unwritten.
        let t = g.full(&e);
        g.line(&format!(
            "let dc = make_tensor_descriptor(c, [m, n], [n, 1], [{bm}, {bn}]);"
        ));
        g.line(&format!(
            "dc.store([program_id(0) * {bm}, program_id(1) * {bn}], ({t}){cast});"
        ));
    } else {
        g.line(&format!("store(c + offs2, ({}){cast}, mask2);", e.s));
    }
    let mut params = std::mem::take(&mut g.params);
    scalars(
        g.r,
        &mut params,
        &[("m", m as i32), ("n", n as i32), ("k", k as i32)],
    );
    g.params = params;
    let _ = e.exact;
    let text = format!("{attr}\nfn kern({}) {{\n{}}}\n", g.signature(), g.body);
    (text, g.params, grid)
}

/// A `dot`'s output tolerance: the accumulation order differs between the back ends, and tf32
/// operands lose 13 bits.
fn dot_tol(out: DType, _operands: DType, prec: &str) -> Tol {
    match float_tol(out, false) {
        Tol::Approx(t) if !prec.is_empty() => Tol::Dot(t.max(2e-3)),
        Tol::Approx(t) => Tol::Dot(t),
        t => t,
    }
}
