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
    let mut p = Printer {
        f,
        names: HashMap::new(),
        next: 0,
        out: String::new(),
        aliases: Aliases {
            inline: !aliases,
            ..Aliases::default()
        },
    };
    p.kernel();
    let mut text = p.aliases.defs;
    text.push_str(&p.out);
    text
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
    next: u32,
    out: String,
    aliases: Aliases,
}

impl Printer<'_> {
    fn kernel(&mut self) {
        let f = self.f;
        let _ = write!(self.out, "kernel @{}(", f.name);
        for (i, &v) in f.params().iter().enumerate() {
            let name = format!("%{}", f.param_names[i]);
            if i > 0 {
                self.out.push_str(", ");
            }
            let t = self.aliases.ty(f.ty(v));
            let _ = write!(self.out, "{name}: {t}");
            let div = f.param_attrs[i].divisibility;
            if div > 1 {
                let _ = write!(self.out, " {{divisibility = {div}}}");
            }
            self.names.insert(v, name);
        }
        let mut stages = if f.num_stages > 0 {
            format!(", num_stages = {}", f.num_stages)
        } else {
            String::new()
        };
        if let Some(t) = &f.target {
            let _ = write!(stages, ", target = {t}");
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
        let f = self.f;
        let op = f.op(id);
        let mut line = "  ".repeat(depth);
        if !op.results.is_empty() {
            let names: Vec<String> = op
                .results
                .iter()
                .map(|&r| {
                    let n = format!("%{}", self.next);
                    self.next += 1;
                    self.names.insert(r, n.clone());
                    n
                })
                .collect();
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
        if !op.regions.is_empty() {
            line.push_str(" {");
        }
        self.out.push_str(&line);
        self.out.push('\n');
        for &r in &op.regions {
            self.nested_region(r, depth);
        }
        if !op.regions.is_empty() {
            let _ = writeln!(self.out, "{}}}", "  ".repeat(depth));
        }
    }

    /// An op's region: each block's arguments on a line `^bbN(%a: T, …):`, then its ops indented.
    fn nested_region(&mut self, r: RegionId, depth: usize) {
        let f = self.f;
        for (bi, &b) in f.regions[r.index()].blocks.iter().enumerate() {
            let args: Vec<String> = f.blocks[b.index()]
                .args
                .iter()
                .map(|&a| {
                    let n = format!("%{}", self.next);
                    self.next += 1;
                    self.names.insert(a, n.clone());
                    format!("{n}: {}", self.aliases.ty(f.ty(a)))
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
