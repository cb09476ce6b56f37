//! `cse`: merges pure ops with the same kind, operands and result types; later copies are replaced
//! by the first and removed.

use std::collections::HashMap;

use tile_core::ir::{BlockId, Function, OpId, ValueId};

/// Runs common-subexpression elimination over the kernel. An op in a loop body may be replaced
/// by an identical op before it in the body or in an enclosing block, never the other way round:
/// what a body defines is not visible after it.
pub fn run(f: &mut Function) {
    let entry = f.entry();
    block(f, entry, &mut HashMap::new());
}

fn block(f: &mut Function, b: BlockId, seen: &mut HashMap<String, OpId>) {
    let ops = f.blocks[b.index()].ops.clone();
    for op in ops {
        let d = f.op(op).clone();
        for &r in &d.regions {
            for inner in f.regions[r.index()].blocks.clone() {
                block(f, inner, &mut seen.clone());
            }
        }
        if !d.kind.is_pure() || !d.regions.is_empty() {
            continue;
        }
        // The key spells the kind with its attributes (floats by their bits), operands and types.
        let types: Vec<String> = d.results.iter().map(|&r| f.ty(r).to_string()).collect();
        let key = format!(
            "{:?}|{:?}|{}",
            kind_key(&d.kind),
            d.operands,
            types.join(",")
        );
        match seen.get(&key) {
            Some(&first) => {
                let replace: Vec<(ValueId, ValueId)> = d
                    .results
                    .iter()
                    .copied()
                    .zip(f.op(first).results.iter().copied())
                    .collect();
                for (from, to) in replace {
                    f.replace_all_uses(from, to);
                }
                f.detach(op);
            }
            None => {
                seen.insert(key, op);
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
