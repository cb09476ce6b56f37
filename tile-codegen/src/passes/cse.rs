//! `cse`: merges pure ops with the same kind, operands and result types; later copies are replaced
//! by the first and removed.
//!
//! One walk in program order: each op's operands are first renamed through the replacements
//! found so far, so a chain of duplicates (a whole repeated Philox evaluation, say) collapses in
//! the same walk. Uses are renamed and removed ops dropped once at the end, so the cost is linear
//! in the ops rather than one scan of the function per duplicate.

use std::collections::{HashMap, HashSet};

use tile_core::ir::{BlockId, Function, OpId, ValueId};

/// Runs common-subexpression elimination over the kernel. An op in a loop body may be replaced
/// by an identical op before it in the body or in an enclosing block, never the other way round:
/// what a body defines is not visible after it.
pub fn run(f: &mut Function) {
    let entry = f.entry();
    let mut walk = Walk::default();
    walk.block(f, entry, &mut HashMap::new());
    if walk.removed.is_empty() {
        return;
    }
    // Uses anywhere (also in ops the walk saw before a replacement was known) take the survivor.
    for op in &mut f.ops {
        for o in &mut op.operands {
            *o = walk.resolve(*o);
        }
    }
    for b in &mut f.blocks {
        b.ops.retain(|o| !walk.removed.contains(o));
    }
}

/// What one walk has found: each removed result's survivor, and the removed ops.
#[derive(Default)]
struct Walk {
    renamed: HashMap<ValueId, ValueId>,
    removed: HashSet<OpId>,
}

impl Walk {
    /// The value that stands for `v` after the replacements so far. Survivors are never removed,
    /// so one lookup suffices.
    fn resolve(&self, v: ValueId) -> ValueId {
        self.renamed.get(&v).copied().unwrap_or(v)
    }

    fn block(&mut self, f: &mut Function, b: BlockId, seen: &mut HashMap<String, OpId>) {
        let ops = f.blocks[b.index()].ops.clone();
        for op in ops {
            let operands: Vec<ValueId> =
                f.op(op).operands.iter().map(|&v| self.resolve(v)).collect();
            f.ops[op.index()].operands.clone_from(&operands);
            let regions = f.op(op).regions.clone();
            for &r in &regions {
                for inner in f.regions[r.index()].blocks.clone() {
                    self.block(f, inner, &mut seen.clone());
                }
            }
            let d = f.op(op);
            if !d.kind.is_pure() || !d.regions.is_empty() {
                continue;
            }
            // The key spells the kind with its attributes (floats by their bits), operands and types.
            let types: Vec<String> = d.results.iter().map(|&r| f.ty(r).to_string()).collect();
            let key = format!("{}|{:?}|{}", kind_key(&d.kind), operands, types.join(","));
            match seen.get(&key) {
                Some(&first) => {
                    for (&from, &to) in d.results.iter().zip(&f.op(first).results) {
                        self.renamed.insert(from, to);
                    }
                    self.removed.insert(op);
                }
                None => {
                    seen.insert(key, op);
                }
            }
        }
    }
}

fn kind_key(k: &tile_core::ir::OpKind) -> String {
    match k {
        tile_core::ir::OpKind::Constant(tile_core::ir::ConstValue::Float(x)) => {
            format!("constf{:x}", x.to_bits())
        }
        other => format!("{other:?}"),
    }
}
