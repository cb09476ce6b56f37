//! The textual form of the IR. [`print`] and [`super::parse`] round-trip: printing, parsing and
//! printing again gives the same text, with values renumbered `%0, %1, …` in program order and
//! parameters named after the kernel's arguments.
//!
//! ```text
//! kernel @add(%x: ptr<f32> {divisibility = 16}, %n: i32) attributes {num_warps = 4} {
//!   %0 = program_id {axis = 0} : i32
//!   %1 = arange {start = 0, end = 1024} : tensor<1024xi32>
//!   store %x, %1
//!   return
//! }
//! ```
//!
//! An op with regions (`for`, `if`) ends its line with `{`; each region's block follows as
//! `^bb0(%i: i32, %acc: f32):` (`^bb0():` without arguments) and its ops, one level deeper; a
//! line `}` closes the op.
//!
//! At the GPU level every layout is printed once, as a named alias above the kernel, in order of
//! first use (`#blocked0 = #blocked<…>`, `#slice0 = #slice<dim = 1, parent = #blocked0>`, `#mma0`,
//! `#dot_op0`); types name the alias: `tensor<64x64xf32, #mma0>`.

use std::collections::HashMap;
use std::fmt::Write;

use super::function::{Function, OpId, RegionId, ValueId};
use super::types::{Layout, Type};

/// Prints a kernel in the textual form.
pub fn print(f: &Function) -> String {
    print_with(f, true)
}

/// Prints a kernel, with layout aliases (what [`print`] does) or with every layout spelled out in
/// every type (what error messages quote, so that one line says everything).
pub(crate) fn print_with(f: &Function, aliases: bool) -> String {
    let mut p = Printer::new(f, !aliases);
    p.kernel();
    let mut text = p.aliases.defs;
    text.push_str(&p.out);
    text
}

/// Single ops' lines as [`print`] writes them, for messages: without indentation or regions,
/// every layout spelled out, and values named as in the whole kernel's text (the names are
/// assigned once, when the printer is made).
pub(crate) struct OpPrinter<'a>(Printer<'a>);

impl<'a> OpPrinter<'a> {
    /// A printer for the ops of `f`.
    pub(crate) fn new(f: &'a Function) -> OpPrinter<'a> {
        OpPrinter(Printer::new(f, true))
    }

    /// The line of `op`: `%3 = add %1, %2 : i32`.
    pub(crate) fn line(&mut self, op: OpId) -> String {
        self.0.op_line(op)
    }
}

/// Layout aliases, named in order of first use.
#[derive(Default)]
struct Aliases {
    names: HashMap<Layout, String>,
    counts: HashMap<&'static str, usize>,
    /// The definitions, one line each.
    defs: String,
    /// Spell every layout out instead.
    inline: bool,
}

impl Aliases {
    /// The alias of `l`, defining it (and its parents first) on first use.
    fn name(&mut self, l: &Layout) -> String {
        if let Some(n) = self.names.get(l) {
            return n.clone();
        }
        let body = match l {
            Layout::Blocked(b) => b.to_string(),
            Layout::Mma(m) => m.to_string(),
            Layout::Shared(s) => s.to_string(),
            Layout::Linear(l) => format!("#{l}"),
            Layout::Slice(s) => {
                let parent = self.name(&s.parent);
                format!("#slice<dim = {}, parent = {parent}>", s.dim)
            }
            Layout::DotOperand(d) => {
                let parent = self.name(&d.parent);
                format!(
                    "#dot_op<idx = {}, parent = {parent}, k_width = {}>",
                    d.op_idx, d.k_width
                )
            }
        };
        let kind = l.kind_name();
        let count = self.counts.entry(kind).or_insert(0);
        let name = format!("#{kind}{count}");
        *count += 1;
        let _ = writeln!(self.defs, "{name} = {body}");
        self.names.insert(l.clone(), name.clone());
        name
    }

    /// A type with its layout (if any) as an alias.
    fn ty(&mut self, t: &Type) -> String {
        let Some(l) = t.layout.as_ref().filter(|_| !self.inline) else {
            return t.to_string();
        };
        let mut s = String::from(if t.is_shared() { "smem<" } else { "tensor<" });
        for d in &t.shape {
            let _ = write!(s, "{d}x");
        }
        let _ = write!(s, "{}, {}>", t.elem, self.name(l));
        s
    }
}

struct Printer<'a> {
    f: &'a Function,
    names: HashMap<ValueId, String>,
    out: String,
    aliases: Aliases,
}

impl<'a> Printer<'a> {
    /// A printer with every value of `f` named: parameters after the kernel's arguments, then
    /// `%0, %1, …` for results and block arguments in program order (the order they are printed).
    fn new(f: &'a Function, inline: bool) -> Printer<'a> {
        let mut p = Printer {
            f,
            names: HashMap::new(),
            out: String::new(),
            aliases: Aliases {
                inline,
                ..Aliases::default()
            },
        };
        for (i, &v) in f.params().iter().enumerate() {
            let name = match f.param_names.get(i) {
                Some(n) => format!("%{n}"),
                None => format!("%arg{i}"),
            };
            p.names.insert(v, name);
        }
        let mut next = 0;
        p.name_region(f.body, false, &mut next);
        p
    }

    /// Names the values `r` defines, `next` counting; a nested region's block arguments are
    /// named (the kernel's entry block's are the parameters).
    fn name_region(&mut self, r: RegionId, nested: bool, next: &mut u32) {
        let f = self.f;
        for &b in &f.regions[r.index()].blocks {
            let args = if nested {
                &f.blocks[b.index()].args[..]
            } else {
                &[]
            };
            for &a in args {
                self.names.insert(a, format!("%{next}"));
                *next += 1;
            }
            for &op in &f.blocks[b.index()].ops {
                for &v in &f.op(op).results {
                    self.names.insert(v, format!("%{next}"));
                    *next += 1;
                }
                for &inner in &f.op(op).regions {
                    self.name_region(inner, true, next);
                }
            }
        }
    }

    fn kernel(&mut self) {
        let f = self.f;
        let _ = write!(self.out, "kernel @{}(", f.name);
        for (i, &v) in f.params().iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            let t = self.aliases.ty(f.ty(v));
            let name = self.name(v).to_string();
            let _ = write!(self.out, "{name}: {t}");
            let div = f.param_attrs.get(i).map_or(1, |a| a.divisibility);
            if div > 1 {
                let _ = write!(self.out, " {{divisibility = {div}}}");
            }
        }
        let mut stages = if f.num_stages > 0 {
            format!(", num_stages = {}", f.num_stages)
        } else {
            String::new()
        };
        if f.fast_math {
            stages.push_str(", math = fast");
        }
        if let Some(t) = &f.target {
            let _ = write!(stages, ", target = {t}");
        }
        if f.desc_slots > 0 {
            let _ = write!(stages, ", descriptors = {}", f.desc_slots);
        }
        let _ = writeln!(
            self.out,
            ") attributes {{num_warps = {}{stages}}} {{",
            f.num_warps
        );
        self.region_body(f.body, 1);
        self.out.push_str("}\n");
    }

    fn region_body(&mut self, r: RegionId, depth: usize) {
        let f = self.f;
        for (bi, &b) in f.regions[r.index()].blocks.iter().enumerate() {
            // The entry block of the kernel has its arguments in the signature.
            if bi > 0 {
                let _ = writeln!(self.out, "{}^bb{bi}:", "  ".repeat(depth));
            }
            for &op in &f.blocks[b.index()].ops {
                self.op(op, depth);
            }
        }
    }

    fn name(&self, v: ValueId) -> &str {
        self.names
            .get(&v)
            .map(String::as_str)
            .unwrap_or("%<undefined>")
    }

    fn op(&mut self, id: OpId, depth: usize) {
        let op = self.f.op(id);
        let line = self.op_line(id);
        let _ = write!(self.out, "{}{line}", "  ".repeat(depth));
        if !op.regions.is_empty() {
            self.out.push_str(" {");
        }
        self.out.push('\n');
        for &r in &op.regions {
            self.nested_region(r, depth);
        }
        if !op.regions.is_empty() {
            let _ = writeln!(self.out, "{}}}", "  ".repeat(depth));
        }
    }

    /// The op's own line, without indentation or the ` {` that opens its regions.
    fn op_line(&mut self, id: OpId) -> String {
        let f = self.f;
        let op = f.op(id);
        let mut line = String::new();
        if !op.results.is_empty() {
            let names: Vec<&str> = op.results.iter().map(|&r| self.name(r)).collect();
            let _ = write!(line, "{} = ", names.join(", "));
        }
        line.push_str(op.kind.name());
        op.kind.write_attrs(&mut line);
        let operands: Vec<&str> = op.operands.iter().map(|&v| self.name(v)).collect();
        if !operands.is_empty() {
            let _ = write!(line, " {}", operands.join(", "));
        }
        if !op.results.is_empty() {
            let tys: Vec<String> = op
                .results
                .iter()
                .map(|&r| self.aliases.ty(f.ty(r)))
                .collect();
            let _ = write!(line, " : {}", tys.join(", "));
        }
        line
    }

    /// An op's region: each block's arguments on a line `^bbN(%a: T, …):`, then its ops indented.
    fn nested_region(&mut self, r: RegionId, depth: usize) {
        let f = self.f;
        for (bi, &b) in f.regions[r.index()].blocks.iter().enumerate() {
            let args: Vec<String> = f.blocks[b.index()]
                .args
                .iter()
                .map(|&a| {
                    let ty = self.aliases.ty(f.ty(a));
                    format!("{}: {ty}", self.name(a))
                })
                .collect();
            let _ = writeln!(
                self.out,
                "{}^bb{bi}({}):",
                "  ".repeat(depth),
                args.join(", ")
            );
            for &op in &f.blocks[b.index()].ops {
                self.op(op, depth + 1);
            }
        }
    }
}
