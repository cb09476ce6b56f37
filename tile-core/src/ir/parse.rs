//! Reads the textual form written by [`super::print`] back into a [`Function`].
//!
//! Layout alias lines (`#blocked0 = #blocked<…>`) may precede the kernel; a type names a layout by
//! its alias or spells it out.
//!
//! The parser checks syntax and names (every value defined once, before use, by a known op with the
//! right number of results; a `target` one that tile builds); whether the types fit the ops is the
//! verifier's job. Lines starting with `//` are comments.

use std::collections::HashMap;
use std::fmt;

use super::function::{BlockId, Function, OpId, ParamAttrs, ValueId};
use super::linear::LinearLayout;
use super::ops::{ConstValue, OpKind};
use super::types::{
    BlockedLayout, DType, DotOperandLayout, Elem, Layout, MmaLayout, SharedLayout, SliceLayout,
    Type,
};
use crate::Target;

/// A syntax error with its 1-based line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Line of the error.
    pub line: usize,
    /// Column of the error.
    pub col: usize,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.msg)
    }
}

impl std::error::Error for ParseError {}

/// The non-blank, non-comment lines of the text, read one at a time.
struct Lines<'a> {
    lines: Vec<&'a str>,
    idx: usize,
    /// Layout aliases defined above the kernel.
    aliases: HashMap<String, Layout>,
}

impl<'a> Lines<'a> {
    /// The next line and its 1-based number.
    fn next_line(&mut self) -> Option<(usize, &'a str)> {
        while self.idx < self.lines.len() {
            let l = self.lines[self.idx];
            self.idx += 1;
            let t = l.trim();
            if !t.is_empty() && !t.starts_with("//") {
                return Some((self.idx, l));
            }
        }
        None
    }

    /// The next line, or an error saying what was expected instead of the end of the input.
    fn expect_line(&mut self, what: &str) -> Result<(usize, &'a str), ParseError> {
        let last = self.lines.len();
        self.next_line().ok_or(ParseError {
            line: last,
            col: 1,
            msg: format!("expected {what}, found end of input"),
        })
    }
}

/// Parses one kernel.
pub fn parse(text: &str) -> Result<Function, ParseError> {
    let mut lines = Lines {
        lines: text.lines().collect(),
        idx: 0,
        aliases: HashMap::new(),
    };
    let (hline, header) = loop {
        let (ln, line) = lines.next_line().ok_or(ParseError {
            line: 1,
            col: 1,
            msg: "expected `kernel @name(...)`, found end of input".into(),
        })?;
        if !line.trim_start().starts_with('#') {
            break (ln, line);
        }
        let mut c = Cursor::new(line, ln, &lines.aliases);
        c.expect("#")?;
        let col = c.col();
        let name = format!("#{}", c.ident()?);
        c.expect("=")?;
        let layout = c.layout()?;
        c.end()?;
        if lines.aliases.contains_key(&name) {
            return Err(c.err_at(col, format!("layout alias `{name}` is defined twice")));
        }
        lines.aliases.insert(name, layout);
    };
    let mut f;
    let mut names: HashMap<String, ValueId> = HashMap::new();
    {
        let mut c = Cursor::new(header, hline, &lines.aliases);
        c.keyword("kernel")?;
        c.expect("@")?;
        let name = c.ident()?;
        c.expect("(")?;
        let mut params = Vec::new();
        let mut attrs = Vec::new();
        if !c.eat(")") {
            loop {
                c.expect("%")?;
                let pname = c.ident()?;
                c.expect(":")?;
                let ty = c.ty()?;
                let mut a = ParamAttrs { divisibility: 1 };
                if c.eat("{") {
                    c.keyword("divisibility")?;
                    c.expect("=")?;
                    a.divisibility = c.uint()? as u32;
                    c.expect("}")?;
                }
                params.push((pname, ty));
                attrs.push(a);
                if c.eat(")") {
                    break;
                }
                c.expect(",")?;
            }
        }
        c.keyword("attributes")?;
        c.expect("{")?;
        c.keyword("num_warps")?;
        c.expect("=")?;
        let num_warps = c.uint()? as u32;
        let mut num_stages = 0;
        let mut fast_math = false;
        let mut target = None;
        let mut desc_slots = 0;
        while c.eat(",") {
            let col = c.col();
            match c.ident()?.as_str() {
                "num_stages" => {
                    c.expect("=")?;
                    num_stages = c.uint()? as u32;
                }
                "math" => {
                    c.expect("=")?;
                    let col = c.col();
                    fast_math = match c.ident()?.as_str() {
                        "fast" => true,
                        "precise" => false,
                        other => {
                            return Err(c.err_at(
                                col,
                                format!("`math` is `fast` or `precise`, not `{other}`"),
                            ))
                        }
                    };
                }
                "descriptors" => {
                    c.expect("=")?;
                    desc_slots = c.uint()? as u32;
                }
                "target" => {
                    c.expect("=")?;
                    let col = c.col();
                    let name = c.ident()?;
                    let t = Target::parse(&name).map_err(|e| c.err_at(col, e.to_string()))?;
                    target = Some(t);
                }
                other => {
                    return Err(c.err_at(col, format!("unknown kernel attribute `{other}`")));
                }
            }
        }
        c.expect("}")?;
        c.expect("{")?;
        c.end()?;
        for (i, (p, _)) in params.iter().enumerate() {
            if params[..i].iter().any(|(q, _)| q == p) {
                return Err(c.err(format!("parameter `%{p}` is declared twice")));
            }
        }
        f = Function::new(name, params, num_warps);
        f.num_stages = num_stages;
        f.fast_math = fast_math;
        f.target = target;
        f.desc_slots = desc_slots;
        f.param_attrs = attrs;
        for (i, &v) in f.params().to_vec().iter().enumerate() {
            names.insert(format!("%{}", f.param_names[i]), v);
        }
    }
    let block: BlockId = f.entry();
    parse_block(
        &mut lines,
        &mut f,
        block,
        &mut names,
        "`}` closing the kernel",
    )?;
    if let Some((ln, _)) = lines.next_line() {
        return Err(ParseError {
            line: ln,
            col: 1,
            msg: "unexpected text after the kernel".into(),
        });
    }
    Ok(f)
}

/// How a block's list of ops ended.
enum BlockEnd {
    /// A line `}`.
    Close,
    /// A line opening the next region of the same op (`^bb0(…):`), not consumed.
    NextRegion,
}

/// Parses ops into `block` up to a line `}` (consumed) or, inside an op's region, the next
/// region's `^bb0(…):` line (left for [`parse_regions`]).
fn parse_block(
    lines: &mut Lines<'_>,
    f: &mut Function,
    block: BlockId,
    names: &mut HashMap<String, ValueId>,
    closing: &str,
) -> Result<BlockEnd, ParseError> {
    loop {
        let (ln, line) = lines.expect_line(closing)?;
        let mut c = Cursor::new(line, ln, &lines.aliases);
        if c.eat("}") {
            c.end()?;
            return Ok(BlockEnd::Close);
        }
        if c.peek_is("^") {
            lines.idx -= 1;
            return Ok(BlockEnd::NextRegion);
        }
        let op = parse_op(&mut c, f, block, names)?;
        if let Some(op) = op {
            parse_regions(lines, f, op, names)?;
        }
    }
}

/// Parses the regions of `op` (whose line ended with `{`): for each, a line `^bb0(%a: T, …):` and
/// the block's ops; then the closing `}`.
fn parse_regions(
    lines: &mut Lines<'_>,
    f: &mut Function,
    op: OpId,
    names: &mut HashMap<String, ValueId>,
) -> Result<(), ParseError> {
    loop {
        let (ln, line) = lines.expect_line("`^bb0(…):` opening a region")?;
        let mut c = Cursor::new(line, ln, &lines.aliases);
        c.expect("^bb0(")?;
        let region = f.new_region();
        let block = f.new_block(region);
        if !c.eat(")") {
            loop {
                let col = c.col();
                c.expect("%")?;
                let n = format!("%{}", c.ident()?);
                if names.contains_key(&n) {
                    return Err(c.err_at(col, format!("value `{n}` is defined twice")));
                }
                c.expect(":")?;
                let ty = c.ty()?;
                let v = f.add_block_arg(block, ty);
                names.insert(n, v);
                if c.eat(")") {
                    break;
                }
                c.expect(",")?;
            }
        }
        c.expect(":")?;
        c.end()?;
        f.ops[op.index()].regions.push(region);
        match parse_block(lines, f, block, names, "`}` closing a region")? {
            BlockEnd::Close => return Ok(()),
            BlockEnd::NextRegion => {}
        }
    }
}

/// Parses one op line into `block`; returns the op when the line ends with `{` (a region follows).
fn parse_op(
    c: &mut Cursor<'_>,
    f: &mut Function,
    block: BlockId,
    names: &mut HashMap<String, ValueId>,
) -> Result<Option<OpId>, ParseError> {
    let mut result_names = Vec::new();
    if c.peek_is("%") {
        loop {
            let col = c.col();
            c.expect("%")?;
            let n = format!("%{}", c.ident()?);
            if names.contains_key(&n) || result_names.iter().any(|(r, _)| r == &n) {
                return Err(c.err_at(col, format!("value `{n}` is defined twice")));
            }
            result_names.push((n, col));
            if !c.eat(",") {
                break;
            }
        }
        c.expect("=")?;
    }
    let name_col = c.col();
    let opname = c.ident()?;
    let Some(mut kind) = OpKind::prototypes()
        .into_iter()
        .find(|k| k.name() == opname)
    else {
        return Err(c.err_at(name_col, format!("unknown op `{opname}`")));
    };
    kind.read_attrs(c)?;
    let mut operands = Vec::new();
    if c.peek_is("%") {
        loop {
            let col = c.col();
            c.expect("%")?;
            let n = format!("%{}", c.ident()?);
            let v = *names
                .get(&n)
                .ok_or_else(|| c.err_at(col, format!("use of undefined value `{n}`")))?;
            operands.push(v);
            if !c.eat(",") {
                break;
            }
        }
    }
    let mut types = Vec::new();
    if c.eat(":") {
        loop {
            types.push(c.ty()?);
            if !c.eat(",") {
                break;
            }
        }
    }
    let has_region = c.eat("{");
    c.end()?;
    if types.len() != result_names.len() {
        return Err(c.err_at(
            name_col,
            format!(
                "{} results named but {} types given",
                result_names.len(),
                types.len()
            ),
        ));
    }
    if let Some(n) = kind.num_results() {
        if n != result_names.len() {
            return Err(c.err_at(
                name_col,
                format!("`{opname}` has {n} result(s), found {}", result_names.len()),
            ));
        }
    }
    // A constant's literal takes the result's type.
    if let OpKind::Constant(v) = &mut kind {
        let is_float = types[0].dtype().is_some_and(DType::is_float);
        match *v {
            ConstValue::Int(i) if is_float => *v = ConstValue::Float(i as f64),
            ConstValue::Float(_) if !is_float => {
                return Err(c.err_at(
                    name_col,
                    format!("a float literal for a constant of type `{}`", types[0]),
                ))
            }
            _ => {}
        }
    }
    let op = f.push_op(block, kind, operands, types);
    for ((n, _), &v) in result_names.iter().zip(&f.op(op).results) {
        names.insert(n.clone(), v);
    }
    Ok(has_region.then_some(op))
}

/// A cursor over one line.
pub(super) struct Cursor<'a> {
    s: &'a str,
    pos: usize,
    line: usize,
    /// Layout aliases defined above the kernel.
    aliases: &'a HashMap<String, Layout>,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(s: &'a str, line: usize, aliases: &'a HashMap<String, Layout>) -> Self {
        Cursor {
            s,
            pos: 0,
            line,
            aliases,
        }
    }

    pub(super) fn col(&mut self) -> usize {
        self.ws();
        self.pos + 1
    }

    pub(super) fn err(&self, msg: String) -> ParseError {
        ParseError {
            line: self.line,
            col: self.pos + 1,
            msg,
        }
    }

    pub(super) fn err_at(&self, col: usize, msg: String) -> ParseError {
        ParseError {
            line: self.line,
            col,
            msg,
        }
    }

    fn ws(&mut self) {
        while self.s[self.pos..].starts_with([' ', '\t', '\r']) {
            self.pos += 1;
        }
    }

    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    /// The current position, to go back to with [`Cursor::restore`].
    pub(super) fn save(&self) -> usize {
        self.pos
    }

    /// Goes back to a position from [`Cursor::save`].
    pub(super) fn restore(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// Whether the next token is the word `w` (not merely a name starting with it).
    pub(super) fn peek_word(&mut self, w: &str) -> bool {
        self.ws();
        self.rest().strip_prefix(w).is_some_and(|after| {
            !after.starts_with(|ch: char| ch.is_ascii_alphanumeric() || ch == '_' || ch == '.')
        })
    }

    pub(super) fn peek_is(&mut self, t: &str) -> bool {
        self.ws();
        self.rest().starts_with(t)
    }

    pub(super) fn eat(&mut self, t: &str) -> bool {
        if self.peek_is(t) {
            self.pos += t.len();
            true
        } else {
            false
        }
    }

    pub(super) fn found(&mut self) -> String {
        self.ws();
        match self.rest().chars().next() {
            None => "end of line".into(),
            Some(ch) => format!("`{ch}`"),
        }
    }

    pub(super) fn expect(&mut self, t: &str) -> Result<(), ParseError> {
        if self.eat(t) {
            Ok(())
        } else {
            let found = self.found();
            Err(self.err(format!("expected `{t}`, found {found}")))
        }
    }

    pub(super) fn end(&mut self) -> Result<(), ParseError> {
        self.ws();
        if self.rest().is_empty() {
            Ok(())
        } else {
            let found = self.found();
            Err(self.err(format!("expected end of line, found {found}")))
        }
    }

    pub(super) fn ident(&mut self) -> Result<String, ParseError> {
        self.ws();
        let len = self
            .rest()
            .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '.'))
            .unwrap_or(self.rest().len());
        if len == 0 {
            let found = self.found();
            return Err(self.err(format!("expected a name, found {found}")));
        }
        let id = self.rest()[..len].to_string();
        self.pos += len;
        Ok(id)
    }

    pub(super) fn keyword(&mut self, k: &str) -> Result<(), ParseError> {
        let col = self.col();
        let id = self.ident()?;
        if id == k {
            Ok(())
        } else {
            Err(self.err_at(col, format!("expected `{k}`, found `{id}`")))
        }
    }

    fn digits(&mut self) -> &'a str {
        let len = self
            .rest()
            .find(|ch: char| !ch.is_ascii_digit())
            .unwrap_or(self.rest().len());
        let d = &self.rest()[..len];
        self.pos += len;
        d
    }

    pub(super) fn uint(&mut self) -> Result<u64, ParseError> {
        self.ws();
        let col = self.pos + 1;
        let d = self.digits();
        d.parse::<u64>()
            .map_err(|_| self.err_at(col, "expected an unsigned integer".into()))
    }

    pub(super) fn int(&mut self) -> Result<i64, ParseError> {
        self.ws();
        let col = self.pos + 1;
        let neg = self.eat("-");
        let d = self.digits();
        let text = if neg { format!("-{d}") } else { d.to_string() };
        text.parse::<i64>()
            .map_err(|_| self.err_at(col, "expected an integer".into()))
    }

    /// A number as written (`-12`, `1.5e-3`, `nan`, `-inf`) and its column.
    pub(super) fn number_literal(&mut self) -> Result<(String, usize), ParseError> {
        self.ws();
        let col = self.pos + 1;
        let len = self
            .rest()
            .find(|ch: char| !(ch.is_ascii_alphanumeric() || matches!(ch, '-' | '+' | '.')))
            .unwrap_or(self.rest().len());
        if len == 0 {
            let found = self.found();
            return Err(self.err(format!("expected a number, found {found}")));
        }
        let t = self.rest()[..len].to_string();
        self.pos += len;
        Ok((t, col))
    }

    fn dtype(&mut self) -> Result<DType, ParseError> {
        let col = self.col();
        let id = self.ident()?;
        DType::from_name(&id)
            .ok_or_else(|| self.err_at(col, format!("unknown element type `{id}`")))
    }

    fn elem(&mut self) -> Result<Elem, ParseError> {
        if self.eat("ptr<") {
            let d = self.dtype()?;
            self.expect(">")?;
            Ok(Elem::Ptr(d))
        } else {
            Ok(Elem::Scalar(self.dtype()?))
        }
    }

    fn ty(&mut self) -> Result<Type, ParseError> {
        let col = self.col();
        let shared = self.eat("smem<");
        if !shared && !self.eat("tensor<") {
            let e = self.elem()?;
            return Ok(Type {
                elem: e,
                shape: vec![],
                layout: None,
            });
        }
        let mut shape = Vec::new();
        while self.rest().starts_with(|ch: char| ch.is_ascii_digit()) {
            let col = self.pos + 1;
            let d = self.digits();
            shape.push(
                d.parse::<u32>()
                    .map_err(|_| self.err_at(col, "dimension too large".into()))?,
            );
            self.expect("x")?;
        }
        if shape.is_empty() {
            return Err(self.err("expected a dimension in the tensor type".into()));
        }
        let elem = self.elem()?;
        let mut layout = None;
        if self.eat(",") {
            layout = Some(self.layout()?);
        }
        self.expect(">")?;
        let ty = Type {
            elem,
            shape,
            layout,
        };
        if shared != ty.is_shared() {
            return Err(self.err_at(
                col,
                "`smem<…>` is the type with a `#shared` layout, and only it".into(),
            ));
        }
        Ok(ty)
    }

    /// A layout spelled out (`#blocked<…>`, `#slice<dim = D, parent = L>`, `#mma<…>`,
    /// `#dot_op<idx = I, parent = L, k_width = W>`) or an alias defined above the kernel.
    fn layout(&mut self) -> Result<Layout, ParseError> {
        if self.eat("#slice<") {
            self.keyword("dim")?;
            self.expect("=")?;
            let dim = self.uint()? as u32;
            self.expect(",")?;
            self.keyword("parent")?;
            self.expect("=")?;
            let parent = Box::new(self.layout()?);
            self.expect(">")?;
            return Ok(Layout::Slice(SliceLayout { dim, parent }));
        }
        if self.eat("#mma<") {
            self.keyword("version")?;
            self.expect("=")?;
            let version = self.uint()? as u32;
            self.expect(",")?;
            self.keyword("wpc")?;
            self.expect("=")?;
            let warps_per_cta = self.list()?;
            self.expect(">")?;
            return Ok(Layout::Mma(MmaLayout {
                version,
                warps_per_cta,
            }));
        }
        if self.eat("#dot_op<") {
            self.keyword("idx")?;
            self.expect("=")?;
            let op_idx = self.uint()? as u32;
            self.expect(",")?;
            self.keyword("parent")?;
            self.expect("=")?;
            let parent = Box::new(self.layout()?);
            self.expect(",")?;
            self.keyword("k_width")?;
            self.expect("=")?;
            let k_width = self.uint()? as u32;
            self.expect(">")?;
            return Ok(Layout::DotOperand(DotOperandLayout {
                op_idx,
                parent,
                k_width,
            }));
        }
        if self.eat("#shared<") {
            let mut f = [0u32; 3];
            for (i, key) in ["vec", "per_phase", "max_phase"].iter().enumerate() {
                if i > 0 {
                    self.expect(",")?;
                }
                self.keyword(key)?;
                self.expect("=")?;
                f[i] = self.uint()? as u32;
            }
            let mut block = 0;
            if self.eat(",") {
                self.keyword("block")?;
                self.expect("=")?;
                block = self.uint()? as u32;
            }
            self.expect(">")?;
            return Ok(Layout::Shared(SharedLayout {
                vec: f[0],
                per_phase: f[1],
                max_phase: f[2],
                block,
            }));
        }
        if self.peek_is("#blocked<") {
            return Ok(Layout::Blocked(self.blocked()?));
        }
        if self.eat("#linear<") {
            return Ok(Layout::Linear(self.linear()?));
        }
        let col = self.col();
        self.expect("#")?;
        let name = format!("#{}", self.ident()?);
        self.aliases
            .get(&name)
            .cloned()
            .ok_or_else(|| self.err_at(col, format!("unknown layout `{name}`")))
    }

    fn blocked(&mut self) -> Result<BlockedLayout, ParseError> {
        self.expect("#blocked<")?;
        self.keyword("spt")?;
        self.expect("=")?;
        let spt = self.list()?;
        self.expect(",")?;
        self.keyword("tpw")?;
        self.expect("=")?;
        let tpw = self.list()?;
        self.expect(",")?;
        self.keyword("wpc")?;
        self.expect("=")?;
        let wpc = self.list()?;
        self.expect(",")?;
        self.keyword("order")?;
        self.expect("=")?;
        let order = self.list()?;
        self.expect(">")?;
        Ok(BlockedLayout {
            size_per_thread: spt,
            threads_per_warp: tpw,
            warps_per_cta: wpc,
            order,
        })
    }

    /// The rest of `#linear<shape = [..], reg = [..], lane = [..], warp = [..]>`, each basis
    /// written as its coordinates (`[row, column]`), as [`LinearLayout`]'s display writes it.
    fn linear(&mut self) -> Result<LinearLayout, ParseError> {
        self.keyword("shape")?;
        self.expect("=")?;
        let shape = self.list()?;
        if shape.iter().any(|&d| d == 0 || !d.is_power_of_two()) {
            return Err(self.err(format!(
                "a linear layout's shape {shape:?} has an extent that is not a power of two"
            )));
        }
        let mut bases: [Vec<u64>; 3] = Default::default();
        for (i, key) in ["reg", "lane", "warp"].iter().enumerate() {
            self.expect(",")?;
            self.keyword(key)?;
            self.expect("=")?;
            self.expect("[")?;
            if !self.eat("]") {
                loop {
                    let col = self.col();
                    let coords = self.list()?;
                    if coords.len() != shape.len() || coords.iter().zip(&shape).any(|(c, n)| c >= n)
                    {
                        return Err(self.err_at(
                            col,
                            format!("basis {coords:?} is not an index of shape {shape:?}"),
                        ));
                    }
                    let flat = coords
                        .iter()
                        .zip(&shape)
                        .fold(0u64, |acc, (&c, &n)| acc * u64::from(n) + u64::from(c));
                    bases[i].push(flat);
                    if self.eat("]") {
                        break;
                    }
                    self.expect(",")?;
                }
            }
        }
        self.expect(">")?;
        let [reg, lane, warp] = bases;
        Ok(LinearLayout {
            shape,
            reg,
            lane,
            warp,
        })
    }

    fn list(&mut self) -> Result<Vec<u32>, ParseError> {
        self.expect("[")?;
        let mut v = Vec::new();
        if self.eat("]") {
            return Ok(v);
        }
        loop {
            v.push(self.uint()? as u32);
            if self.eat("]") {
                return Ok(v);
            }
            self.expect(",")?;
        }
    }
}
