//! `version-alignment`: a `dot` loop whose operand addresses depend on values loaded from
//! memory (a grouped GEMM's matrix addresses and leading dimensions, read from tables) runs in
//! two versions, chosen by a run-time test of those values' alignment.
//!
//! Nothing is known of a loaded value's alignment, so without this pass the operand tiles of such
//! a loop are copied two bytes at a time. The pass finds the loop's *leaves*: scalar integers
//! loaded in the loop's block before it that its operand addresses use either as an address
//! (through `int_to_ptr`) or as a factor of a product (a stride). It then puts the loop under an
//! `if` on "every address leaf is a multiple of 16 and every stride leaf a multiple of 16 bytes
//! in elements": the `then` branch recomputes what the loop needs from the leaves through
//! `hint`s that promise exactly that (so the loop's copies are 16-byte vectors, `cp.async` ones
//! in the ring), the `else` branch is the loop as it was. One test per entry into the loop;
//! the results are the same either way.
//!
//! The ops after the loop in its block go into both versions too, up to the last that loads or
//! stores through a loaded value (a grouped GEMM's epilogue, storing through `c`'s loaded
//! address and leading dimension): their leaves join the test, and their stores are 16-byte
//! vectors in the aligned version. What those ops define and the block uses later becomes the
//! `if`'s results.
//!
//! Only ops of the loop's own block are recomputed, and only pure ones: a loop whose leaves feed
//! a load, store or nested op before it is left alone, and so is a leaf defined in an outer
//! block.

use std::collections::{HashMap, HashSet};

use tile_core::ir::{
    BinOp, BlockId, CmpPred, DType, Effect, Function, OpId, OpKind, Type, ValueDef, ValueId,
};

use super::edit::{renamed, Builder};
use super::pipeline_dot::holds;
use super::pipeline_loads::for_loops;

/// Runs the pass on every `for` loop holding a `dot` in its body.
pub fn run(f: &mut Function) {
    let loops = for_loops(f).into_iter().filter(|&l| holds_dot(f, l));
    for l in loops.collect::<Vec<_>>() {
        if let Some(plan) = plan(f, l) {
            version(f, l, &plan);
        }
    }
}

/// Whether `l`'s body (not nested loops') holds a `dot`.
fn holds_dot(f: &Function, l: OpId) -> bool {
    f.op(l).regions.iter().any(|&r| {
        f.regions[r.index()].blocks.iter().any(|&b| {
            f.blocks[b.index()]
                .ops
                .iter()
                .any(|&o| matches!(f.op(o).kind, OpKind::Dot { .. }))
        })
    })
}

/// What to version a loop on: each leaf with the power of two it must be a multiple of, the
/// ops of the loop's block (before it) to recompute from the hinted leaves, in order, and the
/// ops that run in two versions: the loop, then the ops after it up to the last that reaches
/// memory through a leaf (an epilogue's stores through a loaded address), so that they too copy
/// 16 bytes at a time.
struct Plan {
    leaves: Vec<(ValueId, u32)>,
    recompute: Vec<OpId>,
    span: Vec<OpId>,
}

fn plan(f: &Function, l: OpId) -> Option<Plan> {
    plan_with(f, l, true).or_else(|| plan_with(f, l, false))
}

/// The plan for `l`, the ops after it included when `epilogue` is set.
fn plan_with(f: &Function, l: OpId, epilogue: bool) -> Option<Plan> {
    let block = f.op(l).block;
    let order = &f.blocks[block.index()].ops;
    let at = order.iter().position(|&o| o == l)?;
    let before: HashSet<OpId> = order[..at].iter().copied().collect();
    let after: Vec<OpId> = order[at + 1..]
        .iter()
        .copied()
        .filter(|&o| f.op(o).kind.effect() != Effect::Terminator)
        .collect();
    let after_all: HashSet<OpId> = within(f, &after).into_iter().collect();
    // The loads of the loop's `dot` operands.
    let body = body_ops(f, l);
    let mut loads = Vec::new();
    for &o in &body {
        let d = f.op(o);
        if !matches!(d.kind, OpKind::Dot { .. }) {
            continue;
        }
        for &v in &d.operands[..2] {
            if let Some(ld) = f
                .def_op(v)
                .filter(|&x| matches!(f.op(x).kind, OpKind::Load { .. }))
            {
                loads.push(ld);
            }
        }
    }
    // The loaded scalar integers each access reaches, walking its address back.
    let body: HashSet<OpId> = body.into_iter().collect();
    let ctx = Walk {
        l,
        body: &body,
        before: &before,
        after: &after_all,
    };
    let mut accesses: Vec<(OpId, Vec<ValueId>)> = loads
        .iter()
        .map(|&ld| (ld, ctx.candidates(f, f.op(ld).operands[0])))
        .collect();
    if epilogue {
        for &o in &after_all {
            if matches!(f.op(o).kind, OpKind::Load { .. } | OpKind::Store { .. }) {
                accesses.push((o, ctx.candidates(f, f.op(o).operands[0])));
            }
        }
    }
    // The smallest element read or written, which sets the multiple a stride needs.
    let elem = accesses
        .iter()
        .filter(|(_, c)| !c.is_empty())
        .filter_map(|&(o, _)| access_type(f, o).dtype())
        .map(|d| d.size_bytes())
        .min()?;
    let stride_multiple = (16 / elem.max(1)).max(1);
    let users = user_map(f);
    let mut leaves: HashMap<ValueId, u32> = HashMap::new();
    let mut last = at;
    let mut dot_served = false;
    for (o, cands) in &accesses {
        let mut served = false;
        for &v in cands {
            if let Some(m) = leaf_multiple(&users, f, v, stride_multiple) {
                leaves.insert(v, m);
                served = true;
            }
        }
        dot_served |= served && !after_all.contains(o);
        if served && after_all.contains(o) {
            // The op after the loop that holds this access ends the versioned span.
            let top = order
                .iter()
                .position(|&x| x != l && holds(f, x, *o))
                .unwrap_or(at);
            last = last.max(top);
        }
    }
    if !dot_served {
        return None;
    }
    // The ops before the loop that depend on a leaf, in order: all pure and region-free.
    let mut tainted: HashSet<ValueId> = leaves.keys().copied().collect();
    let mut recompute = Vec::new();
    for &o in &order[..at] {
        let d = f.op(o);
        if d.operands.iter().any(|v| tainted.contains(v)) {
            if d.kind.effect() != Effect::Pure || !d.regions.is_empty() {
                return None;
            }
            tainted.extend(d.results.iter().copied());
            recompute.push(o);
        }
    }
    let mut leaves: Vec<(ValueId, u32)> = leaves.into_iter().collect();
    leaves.sort_by_key(|&(v, _)| v.index());
    Some(Plan {
        leaves,
        recompute,
        span: order[at..=last].to_vec(),
    })
}

/// The type an access reads or writes: a load's result, a store's value.
fn access_type(f: &Function, o: OpId) -> &Type {
    let d = f.op(o);
    match d.kind {
        OpKind::Store { .. } => f.ty(d.operands[1]),
        _ => f.ty(d.results[0]),
    }
}

/// Where an address may come from, for [`Walk::candidates`].
struct Walk<'a> {
    /// The loop.
    l: OpId,
    /// The ops of its body, nested ones included.
    body: &'a HashSet<OpId>,
    /// The ops of the loop's block before it.
    before: &'a HashSet<OpId>,
    /// The ops after it, nested ones included.
    after: &'a HashSet<OpId>,
}

impl Walk<'_> {
    /// The scalar integers loaded in the loop's block before it that address `v` is computed
    /// from: through the loop body, from a carried value to its initial value, through the ops
    /// of the block before and after the loop.
    fn candidates(&self, f: &Function, v: ValueId) -> Vec<ValueId> {
        let l = self.l;
        let mut seen: HashSet<ValueId> = HashSet::new();
        let mut stack = vec![v];
        let mut out = Vec::new();
        while let Some(v) = stack.pop() {
            if !seen.insert(v) {
                continue;
            }
            match f.values[v.index()].def {
                ValueDef::BlockArg(b, i) => {
                    // A carried value of this loop: its initial value (operand 3 + i - 1: the
                    // first block argument is the induction variable).
                    if f.op(l)
                        .regions
                        .first()
                        .is_some_and(|&r| f.regions[r.index()].blocks.first() == Some(&b))
                        && i > 0
                    {
                        if let Some(&init) = f.op(l).operands.get(3 + i as usize - 1) {
                            stack.push(init);
                        }
                    }
                }
                ValueDef::OpResult(o, _) => {
                    let d = f.op(o);
                    let in_body = self.body.contains(&o);
                    let before = self.before.contains(&o);
                    if !in_body && !before && !self.after.contains(&o) {
                        continue;
                    }
                    if before && matches!(d.kind, OpKind::Load { .. }) {
                        if f.ty(v).shape.is_empty()
                            && f.ty(v)
                                .dtype()
                                .is_some_and(|t| t.is_int() && t != DType::I1)
                        {
                            out.push(v);
                        }
                        continue;
                    }
                    stack.extend(d.operands.iter().copied());
                }
            }
        }
        out.sort_by_key(|v| v.index());
        out
    }
}

/// What loaded integer `v` must be a multiple of for the loop's copies to be 16-byte vectors:
/// 16 where it becomes an address (`int_to_ptr`), `stride` (elements in 16 bytes) where it is a
/// factor of a product (after widening or splatting); `None` for other uses (a count, an
/// offset), which the versions leave alone.
fn leaf_multiple(
    users: &HashMap<ValueId, Vec<OpId>>,
    f: &Function,
    v: ValueId,
    stride: u32,
) -> Option<u32> {
    let mut frontier = vec![v];
    let mut seen = HashSet::new();
    let mut need = None;
    while let Some(x) = frontier.pop() {
        if !seen.insert(x) {
            continue;
        }
        for &o in users.get(&x).map_or(&[][..], Vec::as_slice) {
            match f.op(o).kind {
                OpKind::IntToPtr => need = need.max(Some(16)),
                OpKind::Binary(BinOp::Mul) => need = need.max(Some(stride)),
                OpKind::Cast | OpKind::Splat | OpKind::Broadcast => {
                    frontier.extend(f.op(o).results.iter().copied())
                }
                _ => {}
            }
        }
    }
    need
}

/// The ops (reachable from the body) using each value.
fn user_map(f: &Function) -> HashMap<ValueId, Vec<OpId>> {
    let mut out: HashMap<ValueId, Vec<OpId>> = HashMap::new();
    for o in f.walk() {
        for &v in &f.op(o).operands {
            out.entry(v).or_default().push(o);
        }
    }
    out
}

/// The ops of `l`'s body, nested ones included.
fn body_ops(f: &Function, l: OpId) -> Vec<OpId> {
    let mut out = within(f, &[l]);
    out.retain(|&o| o != l);
    out
}

/// `ops` and the ops nested in them, at any depth.
fn within(f: &Function, ops: &[OpId]) -> Vec<OpId> {
    let mut out = ops.to_vec();
    let mut blocks: Vec<BlockId> = ops
        .iter()
        .flat_map(|&o| f.op(o).regions.iter())
        .flat_map(|&r| f.regions[r.index()].blocks.clone())
        .collect();
    while let Some(b) = blocks.pop() {
        for &o in &f.blocks[b.index()].ops {
            out.push(o);
            for &r in &f.op(o).regions {
                blocks.extend(f.regions[r.index()].blocks.iter().copied());
            }
        }
    }
    out
}

/// Puts the plan's span (`l` and the ops after it that it names) under
/// `if aligned { hinted copy } else { span }`.
fn version(f: &mut Function, l: OpId, plan: &Plan) {
    let block = f.op(l).block;
    let loc = f.op(l).loc;
    let at = f.blocks[block.index()]
        .ops
        .iter()
        .position(|&o| o == l)
        .unwrap_or(0);
    // The span's values used after it: the `if`'s results.
    let order = f.blocks[block.index()].ops.clone();
    let last = plan.span.last().copied().unwrap_or(l);
    let rest = order
        .iter()
        .position(|&o| o == last)
        .map_or(&[][..], |i| &order[i + 1..]);
    let later = within(f, rest);
    let used_later: HashSet<ValueId> = later
        .iter()
        .flat_map(|&o| f.op(o).operands.iter().copied())
        .collect();
    let escaping: Vec<ValueId> = plan
        .span
        .iter()
        .flat_map(|&o| f.op(o).results.iter().copied())
        .filter(|v| used_later.contains(v))
        .collect();
    // The test: every leaf's low bits zero.
    let mut b = Builder { block, at };
    let mut cond: Option<ValueId> = None;
    for &(v, m) in &plan.leaves {
        let d = f.ty(v).dtype().unwrap_or(DType::I32);
        let mask = b.int(f, i64::from(m) - 1, d);
        let low = b.val(
            f,
            OpKind::Binary(BinOp::And),
            vec![v, mask],
            Type::scalar(d),
        );
        let zero = b.int(f, 0, d);
        let ok = b.val(
            f,
            OpKind::Cmp(CmpPred::Eq),
            vec![low, zero],
            Type::scalar(DType::I1),
        );
        cond = Some(match cond {
            None => ok,
            Some(c) => b.val(
                f,
                OpKind::Binary(BinOp::And),
                vec![c, ok],
                Type::scalar(DType::I1),
            ),
        });
    }
    let Some(cond) = cond else { return };
    let result_types: Vec<Type> = escaping.iter().map(|&r| f.ty(r).clone()).collect();
    let branch = b.op(f, OpKind::If, vec![cond], result_types);
    let (then_r, else_r) = (f.new_region(), f.new_region());
    let (then_b, else_b) = (f.new_block(then_r), f.new_block(else_r));
    f.ops[branch.index()].regions = vec![then_r, else_r];
    // Then: the hinted leaves, the recomputed ops, a copy of the span.
    let mut map: HashMap<ValueId, ValueId> = HashMap::new();
    for &(v, m) in &plan.leaves {
        let ty = f.ty(v).clone();
        let h = f.push_op(
            then_b,
            OpKind::Hint {
                multiple_of: m,
                contiguous: 1,
            },
            vec![v],
            vec![ty],
        );
        f.ops[h.index()].loc = loc;
        map.insert(v, f.op(h).results[0]);
    }
    for &o in &plan.recompute {
        clone_op(f, o, then_b, &mut map);
    }
    for &o in &plan.span {
        clone_op(f, o, then_b, &mut map);
    }
    let yielded = escaping.iter().map(|v| *map.get(v).unwrap_or(v)).collect();
    let y = f.push_op(then_b, OpKind::Yield, yielded, vec![]);
    f.ops[y.index()].loc = loc;
    // Else: the span itself; what it defines is the branch's after it.
    let outer = f.op(branch).results.clone();
    for &o in &later {
        for x in &mut f.ops[o.index()].operands {
            if let Some(i) = escaping.iter().position(|e| e == x) {
                *x = outer[i];
            }
        }
    }
    for &o in &plan.span {
        f.detach(o);
        f.blocks[else_b.index()].ops.push(o);
        f.ops[o.index()].block = else_b;
    }
    let y = f.push_op(else_b, OpKind::Yield, escaping, vec![]);
    f.ops[y.index()].loc = loc;
}

/// Appends a copy of `o` (with its regions, at any depth) to `block`, its operands renamed by
/// `map`, which gains its results and block arguments.
fn clone_op(
    f: &mut Function,
    o: OpId,
    block: BlockId,
    map: &mut HashMap<ValueId, ValueId>,
) -> OpId {
    let d = f.op(o).clone();
    let operands = renamed(map, &d.operands);
    let tys = d.results.iter().map(|&r| f.ty(r).clone()).collect();
    let c = f.push_op(block, d.kind.clone(), operands, tys);
    f.ops[c.index()].loc = d.loc;
    for (&r, &n) in d.results.iter().zip(&f.op(c).results.clone()) {
        map.insert(r, n);
    }
    let mut regions = Vec::new();
    for &r in &d.regions {
        let nr = f.new_region();
        for &b in &f.regions[r.index()].blocks.clone() {
            let nb = f.new_block(nr);
            for &a in &f.blocks[b.index()].args.clone() {
                let ty = f.ty(a).clone();
                let na = f.add_block_arg(nb, ty);
                map.insert(a, na);
            }
            for &inner in &f.blocks[b.index()].ops.clone() {
                clone_op(f, inner, nb, map);
            }
        }
        regions.push(nr);
    }
    f.ops[c.index()].regions = regions;
    c
}

/// The blocks (at any depth) of the fallback branches this pass made: the `else` of each `if`
/// whose `then` branch opens with scalar `hint`s. Their element-wise copies run only when the
/// test fails, so the choice of warps (made for the common, aligned case) leaves them out.
pub fn fallback_blocks(f: &Function) -> HashSet<BlockId> {
    let mut out = HashSet::new();
    for o in f.walk() {
        let d = f.op(o);
        if !matches!(d.kind, OpKind::If) || d.regions.len() != 2 {
            continue;
        }
        let then_first = f.regions[d.regions[0].index()]
            .blocks
            .first()
            .and_then(|&b| f.blocks[b.index()].ops.first().copied());
        let versioned = then_first.is_some_and(|h| {
            matches!(f.op(h).kind, OpKind::Hint { .. })
                && f.op(h)
                    .results
                    .first()
                    .is_some_and(|&r| f.ty(r).shape.is_empty())
        });
        if !versioned {
            continue;
        }
        let mut blocks: Vec<BlockId> = f.regions[d.regions[1].index()].blocks.clone();
        while let Some(b) = blocks.pop() {
            if !out.insert(b) {
                continue;
            }
            for &inner in &f.blocks[b.index()].ops {
                for &r in &f.op(inner).regions {
                    blocks.extend(f.regions[r.index()].blocks.iter().copied());
                }
            }
        }
    }
    out
}
