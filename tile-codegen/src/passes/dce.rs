//! `dce`: removes pure ops none of whose results is used, until nothing changes.

use tile_core::ir::Function;

/// Runs dead-code elimination.
pub fn run(f: &mut Function) {
    loop {
        let order = f.walk();
        let mut used = vec![false; f.values.len()];
        for &op in &order {
            for &o in &f.op(op).operands {
                used[o.index()] = true;
            }
        }
        let dead: Vec<_> = order
            .into_iter()
            .filter(|&op| {
                let d = f.op(op);
                d.kind.is_pure()
                    && d.regions.is_empty()
                    && d.results.iter().all(|r| !used[r.index()])
            })
            .collect();
        if dead.is_empty() {
            return;
        }
        for op in dead {
            f.detach(op);
        }
    }
}
