//! `hoist-loads`: moves every load, with the pure ops that compute its address and mask, as early in
//! its block as its operands and the memory order allow, so that a program's loads are in flight
//! together instead of one after another.
//!
//! Why: a reduction across warps is a barrier on the GPU, and no load moves across a barrier. A
//! LayerNorm that reads its weight and bias after the row's two reductions, or a rotary embedding
//! that reads a token's position and then its cos/sin after the norm, otherwise waits for memory
//! again after each reduction; hoisted, those latencies overlap with the first load's.
//!
//! What may not move: an op never moves above a value it uses (also inside its regions); no load
//! moves above a store, and stores keep their order (so no aliasing question arises: moving loads
//! past stores to other buffers would also be sound, since a buffer the kernel writes is a `&mut`
//! borrow at launch, but in practice it only stretched live ranges, and one test kernel then
//! spilled on sm_80); `for`/`if` ops keep their order with every memory op and with each other;
//! the terminator stays last.
//!
//! Register budget: a hoisted load's value lives longer. A load is hoisted only if the estimated
//! float words per thread live anywhere along the way, plus its own, stay within
//! [`HOIST_BUDGET_WORDS`]; the estimate spreads each float tensor over the program's threads.
//! Measured on an H100 (docs/DECISIONS.md, the pass on and off in two interleaved runs):
//! qk_norm_rope (then on its unvectorized variant) +1.3 and +4.8 points of the copy rate, an
//! 8-warp f16 LayerNorm +1.5 and +1.9, a 4-warp one −2.4 and −1.7, and a 4-rows-per-program one
//! −25 and −28 (registers 125 → 142, 2 → 1 program per SM); the budget keeps the first two and
//! drops the rest.
//!
//! The new order is a list schedule of the block's dependence graph: among ready ops, those that
//! feed a hoisted load (and those loads) first, then the rest, each group in the original order.
//! A block already in that order is left as it was.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use tile_core::ir::{BlockId, Function, OpId, OpKind, RegionId, ValueDef};

/// Each op of a block and its position in the block's order.
type Positions = HashMap<OpId, usize>;

/// Runs the pass over every block of the kernel.
pub fn run(f: &mut Function) {
    let mut blocks = Vec::new();
    collect_blocks(f, f.body, &mut blocks);
    for b in blocks {
        schedule(f, b);
    }
}

fn collect_blocks(f: &Function, r: RegionId, out: &mut Vec<BlockId>) {
    for &b in &f.regions[r.index()].blocks {
        out.push(b);
        for &op in &f.blocks[b.index()].ops {
            for &inner in &f.op(op).regions {
                collect_blocks(f, inner, out);
            }
        }
    }
}

/// What an op does to memory, for ordering: the op's own [`tile_core::ir::Effect`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// Pure arithmetic.
    None,
    /// A `load`: free to move among loads and pure ops.
    Read,
    /// A `store`, a `for`/`if` (which may hold either), or a shared-memory or synchronizing op:
    /// ordered with every memory op.
    Write,
    /// `yield`/`return`: after everything.
    End,
}

fn effect(k: &OpKind) -> Effect {
    match k.effect() {
        tile_core::ir::Effect::Pure => Effect::None,
        tile_core::ir::Effect::Read => Effect::Read,
        tile_core::ir::Effect::Write
        | tile_core::ir::Effect::Atomic
        | tile_core::ir::Effect::Sync => Effect::Write,
        tile_core::ir::Effect::Terminator => Effect::End,
    }
}

/// The values an op uses: its operands and, for an op with regions, every operand inside them.
fn uses(f: &Function, op: OpId) -> Vec<tile_core::ir::ValueId> {
    let d = f.op(op);
    let mut out = d.operands.clone();
    for &r in &d.regions {
        let mut inner = Vec::new();
        collect_blocks(f, r, &mut inner);
        for b in inner {
            for &o in &f.blocks[b.index()].ops {
                out.extend(f.op(o).operands.iter().copied());
            }
        }
    }
    out
}

/// The most 32-bit words per thread that live values may hold, by this pass's estimate,
/// anywhere a load is hoisted across. A hoisted load's value lives longer; past this, the extra
/// registers cost occupancy (a 4-row LayerNorm tile went from 125 to 142 registers and from 2 to
/// 1 program per SM) more than the overlap gains.
pub const HOIST_BUDGET_WORDS: u64 = 64;

/// Estimated 32-bit words per thread that an op's float results occupy: a tensor's bytes spread
/// over the program's threads (at least one word), a scalar one word. Pointer, index and mask
/// tensors count nothing: they are recomputed from the thread index or folded into addresses.
fn result_words(f: &Function, op: OpId) -> u64 {
    let threads = 32 * u64::from(f.num_warps.max(1));
    f.op(op)
        .results
        .iter()
        .map(|&r| {
            let t = f.ty(r);
            match t.dtype() {
                Some(d) if d.is_float() && t.is_tensor() => (t.numel() * u64::from(d.size_bytes()))
                    .div_ceil(4 * threads)
                    .max(1),
                Some(d) if d.is_float() => d.size_bytes().div_ceil(4).into(),
                _ => 0,
            }
        })
        .sum()
}

/// For each position `k` of the block's order, the words of the values defined before `k` and
/// used at or after it (a use inside an op's regions counts at that op).
fn live_words(f: &Function, ops: &[OpId], pos: &Positions, words: &[u64]) -> Vec<u64> {
    let n = ops.len();
    let mut last_use = vec![None; n];
    for (k, &op) in ops.iter().enumerate() {
        for v in uses(f, op) {
            if let Some(j) = f.def_op(v).and_then(|d| pos.get(&d).copied()) {
                last_use[j] = Some(k);
            }
        }
    }
    // Each value adds its words over (j, end]: a difference array, then its prefix sums.
    let mut delta = vec![0i64; n + 1];
    for j in 0..n {
        if let Some(end) = last_use[j] {
            if end > j {
                delta[j + 1] += words[j] as i64;
                delta[end + 1] -= words[j] as i64;
            }
        }
    }
    let mut live = vec![0; n];
    let mut running = 0i64;
    for (k, w) in live.iter_mut().enumerate() {
        running += delta[k];
        *w = running.max(0) as u64;
    }
    live
}

/// Load `l` and the ops of the block that feed it through pure ops and other loads.
fn feeding_slice(f: &Function, ops: &[OpId], pos: &Positions, l: usize) -> Vec<usize> {
    let mut slice = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![l];
    while let Some(i) = stack.pop() {
        if !seen.insert(i) {
            continue;
        }
        slice.push(i);
        for &o in &f.op(ops[i]).operands {
            if let Some(j) = f.def_op(o).and_then(|d| pos.get(&d).copied()) {
                let k = &f.op(ops[j]).kind;
                if k.is_pure() || matches!(k, OpKind::Load { .. }) {
                    stack.push(j);
                }
            }
        }
    }
    slice
}

fn schedule(f: &mut Function, b: BlockId) {
    let ops = f.blocks[b.index()].ops.clone();
    let n = ops.len();
    let pos: Positions = ops.iter().enumerate().map(|(i, &op)| (op, i)).collect();
    let index_of = |op: OpId| pos.get(&op).copied();
    let eff: Vec<Effect> = ops.iter().map(|&op| effect(&f.op(op).kind)).collect();

    // preds[i]: the ops of this block that op i must follow. Memory order is kept through its
    // transitive reduction, so the graph stays linear in size: a load follows the last write
    // before it; a write follows the last write and every load since; the terminator follows
    // everything (it stays last).
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut last_write: Option<usize> = None;
    let mut reads_since: Vec<usize> = Vec::new();
    for (i, &op) in ops.iter().enumerate() {
        let add = |preds: &mut Vec<Vec<usize>>, j: usize| {
            if j < i && !preds[i].contains(&j) {
                preds[i].push(j);
            }
        };
        for v in uses(f, op) {
            if let ValueDef::OpResult(def, _) = f.values[v.index()].def {
                if let Some(j) = index_of(def) {
                    add(&mut preds, j);
                }
            }
        }
        match eff[i] {
            Effect::None => {}
            Effect::Read => {
                if let Some(w) = last_write {
                    add(&mut preds, w);
                }
                reads_since.push(i);
            }
            Effect::Write => {
                if let Some(w) = last_write {
                    add(&mut preds, w);
                }
                for r in std::mem::take(&mut reads_since) {
                    add(&mut preds, r);
                }
                last_write = Some(i);
            }
            Effect::End => {
                for j in 0..i {
                    add(&mut preds, j);
                }
            }
        }
    }

    // Ops that feed a load through pure ops, and the loads themselves, go first, for each load
    // whose hoisting keeps the estimated registers per thread within budget.
    let words: Vec<u64> = ops.iter().map(|&op| result_words(f, op)).collect();
    let mut live = live_words(f, &ops, &pos, &words);
    let mut early = vec![false; n];
    for l in 0..n {
        if !matches!(f.op(ops[l]).kind, OpKind::Load { .. }) {
            continue;
        }
        let slice = feeding_slice(f, &ops, &pos, l);
        // Where the slice could start: after every op it needs that is not in it, and after the
        // last op before the load that no load may cross.
        let mut from = 0;
        for &i in &slice {
            for &j in &preds[i] {
                if !slice.contains(&j) {
                    from = from.max(j + 1);
                }
            }
        }
        if from >= l {
            continue;
        }
        let peak = live[from..l].iter().copied().max().unwrap_or(0);
        if peak + words[l] > HOIST_BUDGET_WORDS {
            continue;
        }
        for w in &mut live[from..l] {
            *w += words[l];
        }
        for i in slice {
            early[i] = true;
        }
    }

    // A list schedule: the earliest ready op that goes first if there is one, else the earliest
    // ready op. Every dependence points to an earlier op, so the earliest op not yet placed is
    // always ready, and the schedule keeps the original order where nothing is hoisted.
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut waiting: Vec<usize> = preds.iter().map(Vec::len).collect();
    for (i, ps) in preds.iter().enumerate() {
        for &j in ps {
            succs[j].push(i);
        }
    }
    let mut ready_early = BinaryHeap::new();
    let mut ready = BinaryHeap::new();
    for i in (0..n).filter(|&i| waiting[i] == 0) {
        ready.push(Reverse(i));
        if early[i] {
            ready_early.push(Reverse(i));
        }
    }
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let Some(Reverse(next)) = ready_early.pop().or_else(|| ready.pop()) else {
            break;
        };
        if done[next] {
            continue;
        }
        done[next] = true;
        order.push(next);
        for &s in &succs[next] {
            waiting[s] -= 1;
            if waiting[s] == 0 {
                ready.push(Reverse(s));
                if early[s] {
                    ready_early.push(Reverse(s));
                }
            }
        }
    }
    f.blocks[b.index()].ops = order.into_iter().map(|i| ops[i]).collect();
}
