//! `cse`: merges pure ops with the same kind, operands and result types; later copies are replaced
//! by the first and removed.

use std::collections::HashMap;

use tile_core::ir::{Function, OpId, ValueId};

/// Runs common-subexpression elimination over the kernel (one block today).
pub fn run(f: &mut Function) {
    let mut seen: HashMap<String, OpId> = HashMap::new();
    for op in f.walk() {
        let d = f.op(op);
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
