//! Kernels from a grammar of the whole language: parameters of every kind, `arange`, masked
//! loads and stores, arithmetic, comparisons, `select`, math functions, reductions, `expand_dims`,
//! `dot`, `roll`, casts, `for` loops and `if` on constants, with extreme constants, shapes and
//! nesting mixed in. Expressions follow the types (float data, integer indices, boolean masks) so
//! that most kernels compile and reach the later passes; in "chaos" kernels (one in four) any
//! choice may ignore the types, and literals, sizes and nesting go to extremes, so that the
//! errors are exercised too.

use crate::rng::Rng;
use tile_core::ir::MathFn;

/// What a value holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Float,
    Int,
    Bool,
}

/// A value the generator has named.
#[derive(Clone)]
struct Var {
    name: String,
    kind: Kind,
    /// 0 scalar, 1 a `[B]` tile, 2 a `[B2, B2]` tile.
    rank: usize,
}

/// Builds one kernel's text.
struct Gen<'a> {
    r: &'a mut Rng,
    vars: Vec<Var>,
    /// Pointer parameters and their element types.
    ptrs: Vec<(String, &'static str)>,
    out: String,
    depth: usize,
    next: usize,
    chaos: bool,
    /// The 1-D tile size, and the side of 2-D tiles.
    b1: u64,
    b2: u64,
}

const FLOATS: [&str; 3] = ["f32", "f16", "bf16"];
/// The one-operand math functions, from the IR's declaration (so a new one is fuzzed without
/// an edit here).
fn unary_math() -> Vec<&'static str> {
    MathFn::ALL
        .into_iter()
        .filter(|m| m.arity() == 1)
        .map(MathFn::name)
        .collect()
}

/// A kernel from `r`.
pub fn kernel(r: &mut Rng) -> String {
    let chaos = r.below(4) == 0;
    let b1 = 1u64 << (r.below(11));
    let b2 = 1u64 << (r.below(7));
    let mut g = Gen {
        r,
        vars: Vec::new(),
        ptrs: Vec::new(),
        out: String::new(),
        depth: 0,
        next: 0,
        chaos,
        b1,
        b2,
    };
    g.kernel();
    g.out
}

impl Gen<'_> {
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.r.below(xs.len())]
    }

    /// True with probability 1/n, in chaos kernels only.
    fn wild(&mut self, n: usize) -> bool {
        self.chaos && self.r.below(n) == 0
    }

    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("v{}", self.next)
    }

    fn int_lit(&mut self) -> String {
        if self.wild(3) {
            return self
                .pick(&[
                    "9223372036854775807",
                    "-9223372036854775807",
                    "2147483647",
                    "-2147483648",
                    "0",
                    "1048576",
                ])
                .to_string();
        }
        format!("{}", self.r.below(9))
    }

    fn float_lit(&mut self) -> String {
        if self.wild(3) {
            return self
                .pick(&["1e38", "-3.4e38", "1e-45", "1e300", "0.0"])
                .to_string();
        }
        format!("{}.{}", self.r.below(4), self.r.below(100))
    }

    /// The size of a tile of `rank`, sometimes (chaos) an illegal one.
    fn dims(&mut self, rank: usize) -> String {
        if self.wild(4) {
            return self
                .pick(&[
                    "[100]",
                    "[0]",
                    "[2097152]",
                    "[65536, 65536]",
                    "[-4]",
                    "[4, 4, 4]",
                ])
                .to_string();
        }
        match rank {
            1 => format!("[{}]", self.b1),
            _ => format!("[{}, {}]", self.b2, self.b2),
        }
    }

    fn line(&mut self, s: &str) {
        for _ in 0..=self.depth {
            self.out.push_str("    ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn var(&mut self, kind: Kind, rank: usize) -> Option<String> {
        let any = self.wild(6);
        let c: Vec<String> = self
            .vars
            .iter()
            .filter(|v| any || (v.kind == kind && v.rank == rank))
            .map(|v| v.name.clone())
            .collect();
        (!c.is_empty()).then(|| c[self.r.below(c.len())].clone())
    }

    fn push(&mut self, kind: Kind, rank: usize, e: String) -> String {
        let v = self.fresh();
        self.line(&format!("let {v} = {e};"));
        self.vars.push(Var {
            name: v.clone(),
            kind,
            rank,
        });
        v
    }

    fn kernel(&mut self) {
        match self.r.below(8) {
            0 => self.out.push_str("#[tile_kernel(num_warps = 8)]\n"),
            1 => {
                let w = self.pick(&["1", "2", "16", "auto", "auto(4)", "auto(16)"]);
                self.out
                    .push_str(&format!("#[tile_kernel(num_warps = {w})]\n"));
            }
            2 => {
                let s = self.pick(&["1", "2", "3", "4"]);
                self.out
                    .push_str(&format!("#[tile_kernel(num_stages = {s})]\n"));
            }
            3 if self.chaos => {
                let w = self.pick(&["0", "3", "32", "auto(0)", "x"]);
                self.out
                    .push_str(&format!("#[tile_kernel(num_warps = {w})]\n"));
            }
            _ => self.out.push_str("#[tile_kernel]\n"),
        }
        let mut params = Vec::new();
        for i in 0..1 + self.r.below(3) {
            let t = self.pick(&FLOATS);
            let extent = match self.r.below(5) {
                0 => String::new(),
                1 => ", { n * m }".into(),
                2 if self.chaos => ", {}".into(),
                _ => ", n".into(),
            };
            let name = format!("p{i}");
            params.push(format!("{name}: Ptr<{t}{extent}>"));
            self.ptrs.push((name, t));
        }
        params.push("n: i32".into());
        params.push("m: i32".into());
        for (name, kind) in [("n", Kind::Int), ("m", Kind::Int)] {
            self.vars.push(Var {
                name: name.into(),
                kind,
                rank: 0,
            });
        }
        if self.r.below(3) == 0 {
            params.push("s: f32".into());
            self.vars.push(Var {
                name: "s".into(),
                kind: Kind::Float,
                rank: 0,
            });
        }
        self.out
            .push_str(&format!("fn k({}) {{\n", params.join(", ")));
        // Index tiles to build on: one 1-D, and rows and columns of a 2-D one.
        let b1 = self.b1;
        let o = if self.wild(4) {
            format!("arange({}, {})", self.int_lit(), self.int_lit())
        } else {
            format!("program_id(0) * {b1} + arange(0, {b1})")
        };
        self.push(Kind::Int, 1, o);
        let b2 = self.b2;
        let rows = format!("(program_id(1) * {b2} + arange(0, {b2})).expand_dims(1)");
        let cols = format!("arange(0, {b2}).expand_dims(0)");
        self.push(Kind::Int, 2, format!("{rows} * {b2} + {cols}"));
        for _ in 0..2 + self.r.below(8) {
            self.stmt();
        }
        if self.r.below(6) != 0 {
            self.store();
        }
        self.out.push_str("}\n");
    }

    fn expr(&mut self, kind: Kind, rank: usize, budget: usize) -> String {
        let kind = if self.wild(8) {
            self.pick(&[Kind::Float, Kind::Int, Kind::Bool])
        } else {
            kind
        };
        if budget == 0 || self.r.below(3) == 0 {
            return self.leaf(kind, rank);
        }
        let b = budget - 1;
        match kind {
            Kind::Float => match self.r.below(12) {
                0..=2 => {
                    let op = self.pick(&["+", "-", "*", "/"]);
                    let x = self.expr(Kind::Float, rank, b);
                    let yr = if self.r.below(3) == 0 { 0 } else { rank };
                    let y = self.expr(Kind::Float, yr, b);
                    format!("({x} {op} {y})")
                }
                3 => {
                    let f = self.pick(&unary_math());
                    let x = self.expr(Kind::Float, rank, b);
                    if self.r.below(2) == 0 {
                        format!("{f}({x})")
                    } else {
                        format!("({x}).{f}()")
                    }
                }
                4 => {
                    let c = self.expr(Kind::Bool, rank, b);
                    let x = self.expr(Kind::Float, rank, b);
                    let y = self.expr(Kind::Float, rank, b);
                    format!("select({c}, {x}, {y})")
                }
                5 => {
                    let f = self.pick(&["min", "max"]);
                    let x = self.expr(Kind::Float, rank, b);
                    let y = self.expr(Kind::Float, rank, b);
                    format!("{f}({x}, {y})")
                }
                6 => {
                    let x = self.expr(Kind::Int, rank, b);
                    format!("({x} as f32)")
                }
                7 if rank < 2 => {
                    let x = self.expr(Kind::Float, rank + 1, b);
                    let f = self.pick(&["sum", "max", "min"]);
                    if rank == 0 && self.r.below(2) == 0 {
                        format!("({x}).{f}()")
                    } else {
                        let axis = if self.wild(3) {
                            2
                        } else {
                            self.r.below(rank + 1)
                        };
                        format!("({x}).{f}({axis})")
                    }
                }
                8 if rank == 2 => {
                    let x = self.expr(Kind::Float, 2, b);
                    let y = self.expr(Kind::Float, 2, b);
                    match self.r.below(3) {
                        0 => format!("dot({x}, {y}, precision = tf32)"),
                        1 => format!("dot({x} as f16, {y} as f16)"),
                        _ => format!("dot({x}, {y})"),
                    }
                }
                10 if rank >= 1 => {
                    // A scan: any kind, any direction, an axis sometimes out of range.
                    let x = self.expr(Kind::Float, rank, b);
                    let f = self.pick(&["cumsum", "cumprod", "cummax", "cummin"]);
                    let axis = if self.wild(3) {
                        rank
                    } else {
                        self.r.below(rank)
                    };
                    let rev = self.pick(&["", ", reverse = true", ", reverse = false"]);
                    if self.r.below(3) == 0 {
                        // The same scans as `associative_scan`, with a combiner by name or
                        // closure, and sometimes one the language does not take.
                        let combine = self.pick(&[
                            "|a, b| a + b",
                            "|a, b| b * a",
                            "max",
                            "|p, q| min(q, p)",
                            "|a, b| a - b",
                            "|a| a",
                        ]);
                        return format!("associative_scan({x}, {axis}, {combine}{rev})");
                    }
                    if self.r.below(4) == 0 {
                        // A pair scanned by a closure over tuples (a recurrence), bound by a
                        // tuple `let` before the statement that uses it (or, wild, used as one
                        // value); the closure sometimes malformed (a parameter short, a scalar
                        // where a pair goes).
                        let y = self.expr(Kind::Float, rank, b);
                        let combine = self.pick(&[
                            "|(a1, b1), (a2, b2)| (a1 * a2, b1 * a2 + b2)",
                            "|(a1, b1), (a2, b2)| { let t = a1 * a2; (t, max(b1, b2)) }",
                            "|(a1, b1), a2| (a1, b1)",
                            "|(a1, b1), (a2, b2)| a1",
                            "|(a1, _), (_, b2)| (a1, b2 + 1.0)",
                        ]);
                        let scan = format!("associative_scan(({x}, {y}), {axis}, {combine}{rev})");
                        if self.wild(4) {
                            return scan;
                        }
                        let v = self.fresh();
                        self.line(&format!("let (_, {v}) = {scan};"));
                        return v;
                    }
                    format!("({x}).{f}({axis}{rev})")
                }
                9 if rank >= 1 => {
                    let x = self.expr(Kind::Float, rank, b);
                    let shift = if self.wild(3) {
                        self.int_lit()
                    } else {
                        format!("{}", self.r.below(4))
                    };
                    format!("({x}).roll({shift}, {})", self.r.below(rank))
                }
                _ => {
                    let x = self.expr(Kind::Float, rank, b);
                    format!("-({x})")
                }
            },
            Kind::Int => match self.r.below(6) {
                0..=2 => {
                    let op = self.pick(&["+", "-", "*", "/", "%"]);
                    let x = self.expr(Kind::Int, rank, b);
                    let y = self.expr(Kind::Int, 0, b);
                    format!("({x} {op} {y})")
                }
                3 if rank < 2 => {
                    let x = self.expr(Kind::Float, rank + 1, b);
                    let f = self.pick(&["argmax", "argmin"]);
                    format!("({x}).{f}({})", self.r.below(rank + 1))
                }
                4 if rank == 2 => {
                    let x = self.expr(Kind::Int, 1, b);
                    let y = self.expr(Kind::Int, 1, b);
                    format!("({x}).expand_dims(1) * {} + ({y}).expand_dims(0)", self.b2)
                }
                5 if self.r.below(2) == 0 => {
                    // Triton's `tl.cdiv`, and its hints on an integer tile (wild values too).
                    let x = self.expr(Kind::Int, rank, b);
                    if rank == 0 || self.r.below(2) == 0 {
                        let y = self.expr(Kind::Int, 0, b);
                        return format!("cdiv({x}, {y})");
                    }
                    let (d, c) = if self.wild(3) {
                        (self.pick(&["0", "3", "-8"]), self.pick(&["1", "6"]))
                    } else {
                        (self.pick(&["1", "8", "16"]), self.pick(&["1", "4", "64"]))
                    };
                    format!("max_contiguous(multiple_of({x}, {d}), {c})")
                }
                _ => {
                    let f = self.pick(&["min", "max"]);
                    let x = self.expr(Kind::Int, rank, b);
                    let y = self.expr(Kind::Int, rank, b);
                    format!("{f}({x}, {y})")
                }
            },
            Kind::Bool => match self.r.below(4) {
                0 => {
                    let op = self.pick(&["&", "|"]);
                    let x = self.expr(Kind::Bool, rank, b);
                    let y = self.expr(Kind::Bool, rank, b);
                    format!("({x} {op} {y})")
                }
                1 => {
                    let x = self.expr(Kind::Bool, rank, b);
                    format!("!({x})")
                }
                2 => {
                    let op = self.pick(&["<", "<=", ">", ">=", "==", "!="]);
                    let x = self.expr(Kind::Float, rank, b);
                    let y = self.expr(Kind::Float, rank, b);
                    format!("({x} {op} {y})")
                }
                _ => {
                    let op = self.pick(&["<", ">=", "=="]);
                    let x = self.expr(Kind::Int, rank, b);
                    let y = self.expr(Kind::Int, 0, b);
                    format!("({x} {op} {y})")
                }
            },
        }
    }

    fn leaf(&mut self, kind: Kind, rank: usize) -> String {
        if let Some(v) = self.var(kind, rank) {
            if self.r.below(4) != 0 {
                return v;
            }
        }
        match (kind, rank) {
            (Kind::Float, 0) => self.float_lit(),
            (Kind::Float, _) => {
                let d = self.dims(rank);
                if self.r.below(2) == 0 {
                    format!("zeros({d})")
                } else {
                    format!("full({d}, {})", self.float_lit())
                }
            }
            (Kind::Int, 0) => self.int_lit(),
            (Kind::Int, 1) => format!("arange(0, {})", self.b1),
            (Kind::Int, _) => format!(
                "arange(0, {b}).expand_dims(1) * {b} + arange(0, {b}).expand_dims(0)",
                b = self.b2
            ),
            (Kind::Bool, 0) => "(n > 0)".into(),
            (Kind::Bool, _) => {
                let i = self.leaf(Kind::Int, rank);
                format!("({i} < n)")
            }
        }
    }

    /// A pointer expression of `rank` and its mask (`, mask` or nothing).
    fn address(&mut self, rank: usize) -> (String, &'static str, String) {
        let (p, t) = self.ptrs[self.r.below(self.ptrs.len())].clone();
        let off = self.expr(Kind::Int, rank, 2);
        let mask = if self.r.below(4) == 0 {
            String::new()
        } else {
            let m = self.expr(Kind::Bool, rank, 1);
            format!(", {m}")
        };
        (format!("{p} + {off}"), t, mask)
    }

    fn store(&mut self) {
        let rank = 1 + self.r.below(2);
        let (addr, t, mask) = self.address(rank);
        let v = self.expr(Kind::Float, rank, 3);
        let cast = if t == "f32" && !self.wild(2) {
            String::new()
        } else {
            format!(" as {t}")
        };
        if self.r.below(4) == 0 {
            // An atomic in place of the store (its old values sometimes used).
            let f = self.pick(&[
                "atomic_add",
                "atomic_max",
                "atomic_min",
                "atomic_xchg",
                "atomic_or",
            ]);
            let sem = self.pick(&[
                "",
                ", sem = relaxed",
                ", scope = cta",
                ", sem = acq_rel, scope = sys",
            ]);
            let call = format!("{f}({addr}, ({v}){cast}{mask}{sem})");
            if self.r.below(2) == 0 {
                self.push(Kind::Float, rank, format!("{call} as f32"));
            } else {
                self.line(&format!("{call};"));
            }
            return;
        }
        let evict = self.evict();
        self.line(&format!("store({addr}, ({v}){cast}{mask}{evict});"));
    }

    /// A load's or store's trailing eviction hint, three times in eight (`normal` among them).
    fn evict(&mut self) -> &'static str {
        self.pick(&[
            "",
            "",
            "",
            "",
            "",
            ", evict = first",
            ", evict = last",
            ", evict = normal",
        ])
    }

    fn stmt(&mut self) {
        match self.r.below(12) {
            0..=3 => {
                let kind = self.pick(&[Kind::Float, Kind::Float, Kind::Int, Kind::Bool]);
                let rank = self.r.below(3);
                let e = self.expr(kind, rank, 3);
                self.push(kind, rank, e);
            }
            4..=6 => {
                let rank = 1 + self.r.below(2);
                let (addr, t, mask) = self.address(rank);
                let other = if !mask.is_empty() && self.r.below(3) == 0 {
                    format!(", {}", self.float_lit())
                } else {
                    String::new()
                };
                // Triton's spelling: the mask and `other` by name.
                let (mask, other) = if self.r.below(3) == 0 {
                    (
                        mask.replacen(", ", ", mask = ", 1),
                        other.replacen(", ", ", other = ", 1),
                    )
                } else {
                    (mask, other)
                };
                let cast = if t == "f32" { "" } else { " as f32" };
                let evict = self.evict();
                self.push(
                    Kind::Float,
                    rank,
                    format!("load({addr}{mask}{other}{evict}){cast}"),
                );
            }
            7..=8 => self.store(),
            9 if self.depth < 2 => {
                // A loop carrying one value.
                let v = self.fresh();
                let rank = self.r.below(3);
                let init = self.expr(Kind::Float, rank, 1);
                self.line(&format!("let mut {v} = {init};"));
                let step = if self.wild(3) {
                    self.pick(&["0", "-1", "2147483647"])
                } else {
                    self.pick(&["1", "16", "64"])
                };
                let ub = self.pick(&["n", "m", "4"]);
                // A `while` over a counter carried beside the value: the counter is the body's
                // `i`, its step a positive one always (a step of 0 would not end, on the GPU
                // either).
                let counter = format!("{v}_i");
                let form = self.r.below(4);
                if form == 0 {
                    // Unrolled at build time: compile-time bounds (sometimes a run-time one, a
                    // bad step or too many copies, which must be located errors).
                    let range = if self.wild(3) {
                        self.pick(&["0, n", "0, 5000", "0, 4, 0", "4, 0"])
                            .to_string()
                    } else {
                        self.pick(&["0, 4", "1, 8, 3", "0, 2"]).to_string()
                    };
                    self.line(&format!("for i in static_range({range}) {{"));
                } else if form == 1 {
                    let step = self.pick(&["1", "3", "64"]);
                    self.line(&format!("let mut {counter} = 0;"));
                    self.line(&format!("while {counter} < {ub} {{"));
                    self.line(&format!("    let i = {counter};"));
                    self.line(&format!("    {counter} += {step};"));
                } else {
                    self.line(&format!("for i in (0..{ub}).step_by({step}) {{"));
                }
                self.depth += 1;
                let before = self.vars.len();
                self.vars.push(Var {
                    name: "i".into(),
                    kind: Kind::Int,
                    rank: 0,
                });
                for _ in 0..1 + self.r.below(3) {
                    self.stmt();
                }
                let upd = self.expr(Kind::Float, rank, 2);
                self.line(&format!("{v} = {v} + {upd};"));
                self.vars.truncate(before);
                self.depth -= 1;
                self.line("}");
                self.vars.push(Var {
                    name: v,
                    kind: Kind::Float,
                    rank,
                });
            }
            10 if self.depth < 2 => {
                let c = self.pick(&["1 < 2", "2 < 1"]);
                self.line(&format!("if {c} {{"));
                self.depth += 1;
                let before = self.vars.len();
                self.stmt();
                self.vars.truncate(before);
                self.depth -= 1;
                self.line("}");
            }
            _ if self.chaos => {
                // Deep nesting of parentheses or unary minus.
                let d = self.pick(&[5usize, 50, 500, 5000]);
                let e = if self.r.below(2) == 0 {
                    format!("{}n{}", "(".repeat(d), ")".repeat(d))
                } else {
                    format!("{}n", "-".repeat(d))
                };
                self.push(Kind::Int, 0, e);
            }
            _ => {
                let e = self.expr(Kind::Bool, 1, 2);
                self.push(Kind::Bool, 1, e);
            }
        }
    }
}
