//! Shrinking a failing kernel on its syntax tree: delete a statement, or replace an expression
//! by one of its operands (`min(a, min(b, c))` → `min(b, c)` → `b`), keeping each step that
//! still fails, until no step does or the budget is spent; then its launch ([`shrink_launch`]:
//! fewer programs, smaller extents).
//!
//! What makes a generated kernel deterministic is left alone: the bindings of its offsets and
//! masks ([`PROTECTED`]), the address and mask of every store and atomic, and the coordinates of
//! a descriptor's store. Shrinking
//! `rows * n + cols` to `rows + cols` would make programs write one element in an order the
//! back ends need not share, a mismatch that is the shrinker's, not the compiler's.

use syn::visit_mut::{self, VisitMut};
use syn::{Block, Expr, ItemFn};

/// The `k`-th edit of [`Edits`]' order applied to a copy of `f`, or `None` past the last one.
pub fn edit(f: &ItemFn, k: usize) -> Option<ItemFn> {
    let mut g = f.clone();
    let mut e = Edits {
        target: k,
        seen: 0,
        done: false,
    };
    e.visit_item_fn_mut(&mut g);
    e.done.then_some(g)
}

/// Walks a kernel counting the possible edits and makes the `target`-th: statements first
/// within each block, then, expression by expression (outermost first), the replacement of an
/// expression by each of its operands.
struct Edits {
    target: usize,
    seen: usize,
    done: bool,
}

impl Edits {
    /// Counts one possible edit; true when it is the one to make.
    fn hit(&mut self) -> bool {
        let hit = !self.done && self.seen == self.target;
        self.seen += 1;
        hit
    }
}

/// Bindings the shrinker keeps as they are: the generator's index, offset, mask and descriptor
/// names.
pub const PROTECTED: [&str; 13] = [
    "offs", "mask", "rows", "cols", "mask2", "offs2", "offs2t", "rm", "rn", "rk", "da", "db", "dc",
];

/// Whether `stmt` binds one of [`PROTECTED`].
fn protected(stmt: &syn::Stmt) -> bool {
    match stmt {
        syn::Stmt::Local(l) => match &l.pat {
            syn::Pat::Ident(i) => PROTECTED.iter().any(|p| i.ident == p),
            _ => false,
        },
        _ => false,
    }
}

/// For a call of `store` or an atomic, the index of the one argument shrinking may touch (the
/// value); `None` for other expressions.
fn writer_value(e: &Expr) -> Option<usize> {
    let Expr::Call(c) = e else { return None };
    let Expr::Path(p) = &*c.func else { return None };
    let name = p.path.segments.last()?.ident.to_string();
    (name == "store" || name.starts_with("atomic_")).then_some(1)
}

/// The operands of `e` that may stand in its place.
fn operands(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Binary(b) => vec![&*b.left, &*b.right],
        Expr::Call(c) => c.args.iter().collect(),
        Expr::MethodCall(m) => std::iter::once(&*m.receiver).chain(m.args.iter()).collect(),
        Expr::Paren(p) => vec![&*p.expr],
        Expr::Unary(u) => vec![&*u.expr],
        Expr::Cast(c) => vec![&*c.expr],
        _ => Vec::new(),
    }
}

impl VisitMut for Edits {
    fn visit_block_mut(&mut self, b: &mut Block) {
        for i in 0..b.stmts.len() {
            if !protected(&b.stmts[i]) && self.hit() {
                b.stmts.remove(i);
                self.done = true;
                return;
            }
        }
        for stmt in &mut b.stmts {
            if !protected(stmt) {
                self.visit_stmt_mut(stmt);
            }
        }
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if self.done {
            return;
        }
        if let Some(v) = writer_value(e) {
            if let Expr::Call(c) = e {
                if let Some(arg) = c.args.iter_mut().nth(v) {
                    self.visit_expr_mut(arg);
                }
            }
            return;
        }
        // A descriptor's store: its coordinates stay, only the value shrinks.
        if let Expr::MethodCall(m) = e {
            if m.method == "store" {
                if let Some(arg) = m.args.iter_mut().nth(1) {
                    self.visit_expr_mut(arg);
                }
                return;
            }
        }
        let ops: Vec<Expr> = operands(e).into_iter().cloned().collect();
        for op in ops {
            if self.hit() {
                *e = op;
                self.done = true;
                return;
            }
        }
        visit_mut::visit_expr_mut(self, e);
    }
}

/// `f` as a person would write it.
pub fn print(f: &ItemFn) -> String {
    prettyplease::unparse(&syn::File {
        shebang: None,
        attrs: Vec::new(),
        items: vec![syn::Item::Fn(f.clone())],
    })
}

/// The smallest kernel reached from `text` by [`edit`]s for which `fails` holds, trying at most
/// `budget` candidates.
pub fn shrink(text: &str, mut budget: usize, mut fails: impl FnMut(&str) -> bool) -> String {
    let Ok(mut f) = syn::parse_str::<ItemFn>(text) else {
        return text.to_string();
    };
    let mut k = 0;
    while budget > 0 {
        let Some(g) = edit(&f, k) else { break };
        budget -= 1;
        if fails(&print(&g)) {
            // Keep it and try the same position again: the next edit now sits there.
            f = g;
        } else {
            k += 1;
        }
    }
    print(&f)
}

/// The smallest launch of `case` for which `fails` holds, trying at most `budget` candidates:
/// each grid axis cut to one program, then halved; each extent (`m`, `n`, `k`) halved. Buffers
/// keep their lengths, which the smaller extents' masks stay within.
pub fn shrink_launch(
    case: &super::gen::Case,
    mut budget: usize,
    mut fails: impl FnMut(&super::gen::Case) -> bool,
) -> super::gen::Case {
    use super::gen::Param;
    let mut best = case.clone();
    let mut progress = true;
    while progress && budget > 0 {
        progress = false;
        let mut candidates = Vec::new();
        for axis in 0..3 {
            for smaller in [1, best.grid[axis] / 2] {
                if smaller >= 1 && smaller < best.grid[axis] {
                    let mut c = best.clone();
                    c.grid[axis] = smaller;
                    candidates.push(c);
                }
            }
        }
        for (i, p) in best.params.iter().enumerate() {
            if let Param::I32(name, v) = p {
                if ["m", "n", "k"].contains(&name.as_str()) && *v > 1 {
                    let mut c = best.clone();
                    c.params[i] = Param::I32(name.clone(), v / 2);
                    candidates.push(c);
                }
            }
        }
        for c in candidates {
            if budget == 0 {
                break;
            }
            budget -= 1;
            if fails(&c) {
                best = c;
                progress = true;
                break;
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shrinking keeps only what the failure needs: here, a `min` of `b` anywhere.
    #[test]
    fn shrinks_to_what_fails() {
        let text =
            "fn k(a: f32, b: f32) { let x = a + b; let y = min(a, min(x, b) * 2.0); store(p, y); }";
        let small = shrink(text, 500, |t| t.contains("min") && t.contains("b"));
        assert!(!small.contains("let x"), "{small}");
        assert!(small.contains("min"), "{small}");
        assert!(small.len() < text.len(), "{small}");
    }

    /// Offsets, masks and the addresses of stores stay.
    #[test]
    fn keeps_what_makes_writes_unique() {
        let text = "fn k(p: Ptr<f32>, n: i32) { let offs2 = rows * n + cols; let v = min(a, b); store(p + offs2, v + 1.0, offs2 < n); }";
        let small = shrink(text, 500, |t| t.contains("store"));
        assert!(small.contains("let offs2 = rows * n + cols;"), "{small}");
        assert!(small.contains("store(p + offs2,"), "{small}");
        assert!(small.contains("offs2 < n"), "{small}");
        assert!(!small.contains("let v"), "{small}");
    }

    /// A launch shrinks while the failure stays: here it needs `n >= 5` and two programs.
    #[test]
    fn shrinks_the_launch() {
        use crate::diff::gen::{Case, Param};
        let case = Case {
            text: String::new(),
            params: vec![Param::I32("n".into(), 100), Param::I32("seed".into(), 77)],
            grid: [8, 4, 1],
            special: false,
            data_seed: 0,
        };
        let n = |c: &Case| match c.params[0] {
            Param::I32(_, v) => v,
            _ => 0,
        };
        let small = shrink_launch(&case, 100, |c| n(c) >= 5 && c.grid[0] >= 2);
        assert_eq!(small.grid, [2, 1, 1]);
        assert_eq!(n(&small), 6);
        // Parameters other than the extents stay.
        assert!(matches!(small.params[1], Param::I32(_, 77)));
    }

    /// Edits are numbered from the outside in and end.
    #[test]
    fn edits_are_enumerated() {
        let f: ItemFn = syn::parse_str("fn k() { let y = min(a, b); }").unwrap();
        let all: Vec<String> = (0..10)
            .map_while(|k| edit(&f, k))
            .map(|g| print(&g))
            .collect();
        // The statement, then `min` replaced by `a`, then by `b`.
        assert_eq!(all.len(), 3, "{all:?}");
        assert!(all[1].contains("let y = a;"), "{all:?}");
        assert!(all[2].contains("let y = b;"), "{all:?}");
    }
}
