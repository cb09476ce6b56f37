//! `pipeline-dot`: a loop whose tensor-core `dot` reads tiles loaded in the same iteration gets a
//! ring of `S` shared-memory stages filled by `cp.async`, `S − 1` iterations ahead of use.
//!
//! It runs on GPU-level IR after `vectorize`. A `dot` operand qualifies when it is
//! `convert_layout(load(ptr, mask[, 0]))` in the loop body, every use of the load is such a
//! conversion (directly or through a `trans`), its elements are f16 or bf16 (or f32 for a tf32 `dot`), and its address and mask depend only on the
//! induction variable and on values from outside the loop (the body stores nothing and holds no
//! nested loop or branch), possibly through other loads of the body that do too: a paged cache's
//! block table, whose page numbers each copy ahead loads for its own iteration first (masked off
//! in a prologue stage past the loop's end), as Triton's pipeliner loads an index one stage
//! before the tile it addresses. One ring holds each loaded tile: a tile that feeds several `dot`s
//! (attention's backward reads `Q` as `Qᵀ` in `K Qᵀ` and as loaded in `dSᵀ Q`) is copied once
//! and each reads the same stage its own way. For the qualifying tiles (`R × C` each):
//!
//! ```text
//! %buf = local_alloc : smem<S x R x C x T, #shared…>        before the loop, one per operand
//! for s in 0 .. S−1:  async_copy %buf, s, ptr(lb + s·step), mask ∧ (lb + s·step < ub); async_commit
//! for iv … carrying (…, %read = 0, %write = S − 1) {
//!   async_wait {pending = S − 2}     this thread's copies for iteration iv are done …
//!   barrier                          … everyone's are visible, and everyone has finished reading
//!                                    the stage read last iteration, which is written next
//!   %j = select(iv + (S−1)·step < ub, iv + (S−1)·step, iv)
//!   async_copy %buf, %write, ptr(%j), mask(%j); async_commit
//!   %a = local_load %buf, %read      (ldmatrix into the operand layout, where the conversion was)
//!   … dot …
//!   yield …, (%read + 1) mod S, (%write + 1) mod S
//! }
//! async_wait {pending = 0}           no copy outlives the loop
//! ```
//!
//! Every iteration commits exactly one group, so the wait count is the same in every iteration.
//! In the last iterations (as many as the copies run ahead: `S − 1`, or `S − 2` with a `wgmma`
//! group in flight) there is nothing left to fetch: their copies fetch iteration `iv`'s tiles
//! again (addresses the loop reads anyway) into a stage that is never read. The prologue's copies
//! past the upper bound (a loop shorter than the prologue) are masked off instead. The bound test is done in 64 bits, so `iv + (S−1)·step` cannot wrap into range. Not
//! masking the loop's copies by it matters: a mask that is the conjunction of the load's mask and
//! the bound test cost each 16-byte copy a compare (predicate registers are few, so ptxas
//! recomputed the 64-bit test per copy) and a select or two of the source size, about 30 of the
//! 180 instructions of a `128 × 256 × 64` `wgmma` iteration, which issue-bound the loop. One barrier per
//! iteration replaces the two that each operand's `convert_layout` placed around its shared array.
//!
//! **Side rings.** A load of the body that no `dot` reads but whose tile joins a product's
//! result (loaded in the accumulator's layout: an attention bias added to the scores) gets a
//! ring of its own when its address and mask qualify as an operand's do and it copies at least 4
//! bytes per instruction: the same groups fill it, the same stages, and a `local_load` into the
//! accumulator's layout reads the current stage where the load was. Its copies run in the
//! blocked layout `assign-layouts` gives a tile of its shape where that copies more bytes at once
//! (16 where the accumulator's layout gives a thread two columns, 4): the cloned address slice
//! computes in that layout, the values from before the loop it needs converted once before the
//! loop, and the head's barrier makes every thread's copies visible to the readers. Within 192
//! KiB of rings on sm_90a (96 KiB on sm_80), and not in a loop of several `dot`s on `mma.sync`
//! (attention's bias kernel spilled there). Loads transformed into an operand (int4 weights
//! before they are unpacked, in a blocked layout) keep their place: with a ring they ran 10–19%
//! slower. Where the copy engine fills the operands' rings, each thread waits for its own
//! `cp.async` group before the head's barrier.
//!
//! `S` is the kernel's `num_stages` (1: no ring, the pass leaves the kernel alone; a `wgmma`
//! loop that keeps a group in flight gets one stage more where it fits, as Triton's pipeliner
//! gives it, so that `num_stages` means the same distance ahead in both), or else 3, lowered (to 2 at least) while the stages of one
//! loop would take more than [`auto_stage_budget`] for the kernel's target (96 KiB on sm_90a, 48
//! KiB on sm_80).
//!
//! **Hopper.** When every `dot` of the loop has a version-3 (`wgmma`) accumulator and its `B`
//! qualifies, and each `A` either qualifies or is not loaded in the loop (a tile computed in the
//! loop, such as flash attention's probabilities `P`, or one from before it, such as its `Q`),
//! the rings take the [`SharedLayout::wgmma`] layout and each `dot` becomes `warp_group_dot` on
//! the current stages (with `A` from registers where it has no ring, or, where it is a tile loaded
//! before the loop such as attention's `Q`, from a one-stage buffer that a `cp.async` fills
//! once before the prologue: `staged_a`; an operand that is a
//! loaded tile transposed, `dot(a.trans(), b)` or `dot(a, b.trans())`, keeps the tile as loaded
//! in its ring and is read M-major or K-major: `trans_a`, `trans_b`), followed by
//! `warp_group_wait`: with several `dot`s, where each result is first used (`place_waits`: a
//! result only carried to the next iteration stays in flight into it, and the copies then run
//! one stage less ahead, as below). When a loop's only `dot` has an accumulator that
//! only flows to the next iteration, the wait leaves that group in flight (`pending = 1`) so the
//! tensor cores always have the next group queued; the copies then run `S − 2` iterations ahead
//! (the stage of the group in flight is not overwritten: every thread has waited for the group
//! before it by the barrier that precedes the copy), and a `warp_group_wait {pending = 0}` follows
//! the loop. Not where a `dot`'s `A` comes from registers the loop computes anew (a cast or
//! scaled operand, attention's `P`): a group reads them while it runs, and PTX forbids writing
//! them before its wait, which the next iteration does; such a `dot` is retired before the loop
//! computes its next `A` (right after it, unless a wait for every group comes between). A `fence_async_shared` before the barrier orders each thread's `cp.async` writes
//! before the tensor cores' reads. `S` defaults to 4 within [`WGMMA_STAGE_BUDGET`].

use std::collections::HashMap;

use tile_core::ir::{
    BinOp, BlockId, CmpPred, DType, Elem, Function, Layout, OpId, OpKind, Precision, SharedLayout,
    SliceLayout, Type, ValueId,
};
use tile_core::Target;

use super::edit::{clone_into, masked_load, renamed, use_counts, Builder};
use super::pipeline_loads::{backward_slice, backward_slice_with, for_loops};

/// Stages when the kernel does not say.
pub const DEFAULT_STAGES: u32 = 3;

/// Stages of a `wgmma` loop when the kernel does not say: one is read by the group in flight,
/// so the copies run two iterations ahead.
pub const WGMMA_DEFAULT_STAGES: u32 = 4;

/// The automatic stage budget of a `wgmma` loop: its large tiles run one program per SM, and a
/// group in flight holds a stage of its own, so three stages of a `128 × 256 × 64` tile (144 KiB)
/// should fit within Hopper's 227 KiB.
pub const WGMMA_STAGE_BUDGET: u64 = 192 * 1024;

/// The most bytes the automatic choice gives the stages of one loop on `target` (the kernel's
/// `target` attribute) for `mma.sync`: two programs per SM should fit. Hopper has 228 KiB of
/// shared memory per SM: 96 KiB. The sm_80 PTX also runs on Ada and the smaller Ampere parts
/// (RTX 30/40, A10, L4, L40: 100 KiB per SM): 48 KiB. Without a target, 96 KiB. A `wgmma` loop
/// (sm_90a) gets [`WGMMA_STAGE_BUDGET`] instead.
pub fn auto_stage_budget(target: Option<Target>) -> u64 {
    match target {
        Some(Target::Sm80) => 48 * 1024,
        Some(Target::Sm90a) | None => 96 * 1024,
    }
}

/// Runs the pass. `num_stages = 1` asks for no pipelining (as in Triton): the loop is left as
/// written.
pub fn run(f: &mut Function) {
    if f.num_stages == 1 {
        return;
    }
    for l in for_loops(f) {
        if let Some((body, operands)) = candidates(f, l) {
            pipeline(f, l, body, &operands);
        }
    }
}

/// Why an operand is not in a ring: the loop does not load it.
const NOT_LOADED: &str = "is not loaded in the loop";

/// Why an operand is not in a ring: the loop computes it from a loaded tile.
const COMPUTED: &str = "is computed from its load, not the loaded tile itself";

/// One `dot` operand to pipeline.
#[derive(Clone)]
struct Operand {
    /// The load of its tile.
    load: OpId,
    /// The conversion into the operand layout.
    conv: OpId,
    /// The `trans` between the load and the conversion, where the operand is the loaded tile
    /// transposed (flash attention's `k.trans()`): the ring holds the tile as loaded, and
    /// `wgmma` reads it K-major.
    trans: Option<OpId>,
    /// The body ops the load depends on (itself last), in body order.
    slice: Vec<OpId>,
    /// The descriptor slot, where the load is a `desc_load` that [`tma_loads`] chose: its ring
    /// is filled by the tensor memory accelerator.
    tma: Option<u32>,
}

/// A load to copy ahead and the body ops its address and mask depend on (itself last).
#[derive(Clone, Copy)]
struct Fetch<'a> {
    load: OpId,
    slice: &'a [OpId],
    /// Where the copies run in another layout than the load: see [`Relayout`].
    relayout: Option<&'a Relayout>,
}

impl Operand {
    fn fetch(&self) -> Fetch<'_> {
        Fetch {
            load: self.load,
            slice: &self.slice,
            relayout: None,
        }
    }
}

/// A side load's copies made in a coalesced blocked layout rather than the one it is used in
/// (the accumulator's holds a thread's elements two columns at a time, eight rows apart: 4-byte
/// copies): the slice's values in the load's layout (or a slice of it) take `to` (or that slice
/// of it) in the clones, values from before the loop in that layout enter through conversions
/// made once before the loop (`seed`), and each copy moves `vec` elements.
struct Relayout {
    from: Layout,
    to: Layout,
    vec: u32,
    seed: HashMap<ValueId, ValueId>,
}

impl Relayout {
    /// `l` in the copies' layout, where it is the load's layout or a slice of it.
    fn map(&self, l: &Layout) -> Option<Layout> {
        if *l == self.from {
            return Some(self.to.clone());
        }
        match l {
            Layout::Slice(s) if *s.parent == self.from => Some(Layout::Slice(SliceLayout {
                dim: s.dim,
                parent: Box::new(self.to.clone()),
            })),
            _ => None,
        }
    }
}

/// A load of a pipelined loop that no `dot` reads (an attention bias added to the scores), copied
/// through a ring of its own beside the operands' and read back from it in its own layout.
struct Side {
    /// The load.
    load: OpId,
    /// The body ops the load depends on (itself last), in body order.
    slice: Vec<OpId>,
    /// The copies' own layout, where a blocked one copies more bytes at once.
    relayout: Option<Relayout>,
}

impl Side {
    fn fetch(&self) -> Fetch<'_> {
        Fetch {
            load: self.load,
            slice: &self.slice,
            relayout: self.relayout.as_ref(),
        }
    }
}

/// The coalesced layout for the copies of side load `side` (`R × C`, in an mma layout), where
/// it copies more bytes per instruction than the load's own layout would (the widest access axis
/// analysis proves for its addresses, at most 16 bytes): the blocked layout `assign-layouts`
/// gives a tile of its shape, the conversions of the values from before the loop that its slice
/// reads in the load's layout made by `pre`.
fn side_relayout(
    f: &mut Function,
    side: &Side,
    info: &[crate::analysis::axis_info::AxisInfo],
    pre: &mut Builder,
) -> Option<Relayout> {
    let ld = f.op(side.load);
    let OpKind::Load { vec, .. } = ld.kind else {
        return None;
    };
    // Only a slice of element-wise and shape ops is retyped (whose meaning does not depend on
    // the layout); loads in it (a table's entries) keep their own layouts and widths.
    let before = &side.slice[..side.slice.len().saturating_sub(1)];
    let retypable = |k: &OpKind| {
        matches!(
            k,
            OpKind::Constant(_)
                | OpKind::Arange { .. }
                | OpKind::Splat
                | OpKind::ExpandDims { .. }
                | OpKind::Broadcast
                | OpKind::Binary(_)
                | OpKind::Cmp(_)
                | OpKind::Unary(_)
                | OpKind::Select
                | OpKind::AddPtr
                | OpKind::Cast
        )
    };
    if !before.iter().all(|&o| retypable(&f.op(o).kind)) {
        return None;
    }
    let ty = f.ty(ld.results[0]).clone();
    let from = ty.layout.clone()?;
    let widest = super::vectorize::access_width(f, info, side.load);
    let blocked = super::assign_layouts::default_layout(&ty.shape, widest, 32, f.num_warps);
    let to = Layout::Blocked(blocked.clone());
    let wide = widest.min(blocked.size_per_thread[1]);
    if wide <= vec {
        return None;
    }
    let mut r = Relayout {
        from,
        to,
        vec: wide,
        seed: HashMap::new(),
    };
    let made: std::collections::HashSet<ValueId> = side
        .slice
        .iter()
        .flat_map(|&o| f.op(o).results.clone())
        .collect();
    // The load's `other` is not copied (masked elements are zero-filled).
    let outside: Vec<ValueId> = side
        .slice
        .iter()
        .flat_map(|&o| {
            let d = f.op(o);
            let n = if o == side.load { 2 } else { d.operands.len() };
            d.operands[..n.min(d.operands.len())].to_vec()
        })
        .filter(|v| !made.contains(v))
        .collect();
    for v in outside {
        if r.seed.contains_key(&v) {
            continue;
        }
        let vt = f.ty(v).clone();
        let Some(l) = vt.layout.as_ref().and_then(|l| r.map(l)) else {
            continue;
        };
        let to = Type {
            layout: Some(l),
            ..vt
        };
        let c = pre.val(f, OpKind::ConvertLayout, vec![v], to);
        r.seed.insert(v, c);
    }
    Some(r)
}

/// The loads of the loop body `body` that go through rings of their own beside `operands`'
/// (which take `operand_bytes` of shared memory per stage, `s` stages), within `budget` bytes
/// for all the rings: 2-D tiles in the accumulator's (mma) layout whose address and mask
/// qualify as an operand's do, copied at least 4 bytes per instruction
/// (`cp.async`'s smallest) along the columns, masked elements 0 (or no mask); not the operands'
/// own loads, loads their addresses go through, or a tile converted into a `dot` operand (one
/// refused a ring). In body order, as many as fit.
fn side_loads(
    f: &Function,
    body: BlockId,
    operands: &[Operand],
    s: u32,
    operand_bytes: u64,
    budget: u64,
) -> Vec<Side> {
    let ops = &f.blocks[body.index()].ops;
    let in_body: std::collections::HashSet<OpId> = ops.iter().copied().collect();
    let iv = f.blocks[body.index()].args[0];
    let mut total = u64::from(s) * operand_bytes;
    let mut out = Vec::new();
    for &op in ops {
        let OpKind::Load { vec, .. } = f.op(op).kind else {
            continue;
        };
        if operands
            .iter()
            .any(|o| o.load == op || o.slice.contains(&op))
        {
            continue;
        }
        let ld = f.op(op);
        let x = ld.results[0];
        let ty = f.ty(x);
        // A tile that joins a product's result (in the accumulator's layout); one transformed
        // into an operand (int4 GEMM's packed weights, in a blocked layout) ran 10–19% slower
        // with a ring (the copies ahead delay the short split loops' first products).
        let distributed = matches!(ty.layout, Some(Layout::Mma(_)));
        let Some(d) = ty.dtype() else { continue };
        if !distributed || ty.shape.len() != 2 || vec * d.size_bytes() < 4 {
            continue;
        }
        // The copies fill masked elements with 0; runs of `vec` go along the columns.
        let zero_other = zero_filled(f, ld);
        let along_columns = runs_along_columns(f, ld, vec);
        // A tile converted into a `dot` operand was refused a ring of its own for a reason.
        let feeds_dot = ops.iter().any(|&u| {
            f.op(u).operands.contains(&x)
                && matches!(f.op(u).kind, OpKind::ConvertLayout)
                && matches!(f.ty(f.op(u).results[0]).layout, Some(Layout::DotOperand(_)))
        });
        if !zero_other || !along_columns || feeds_dot {
            continue;
        }
        let bytes = ty.numel() * u64::from(d.size_bytes());
        if total + u64::from(s) * bytes > budget {
            continue;
        }
        let Some(slice) = backward_slice_with(f, op, &in_body, iv, body, true) else {
            continue;
        };
        total += u64::from(s) * bytes;
        out.push(Side {
            load: op,
            slice,
            relayout: None,
        });
    }
    out
}

/// The most bytes a loop's rings may take with the side loads' rings added ([`side_loads`]):
/// what the automatic stage choice allows a `wgmma` loop on sm_90a; on sm_80, 96 KiB, which
/// Ada's and the smaller Ampere parts' 100 KiB per SM still hold.
fn side_budget(target: Option<Target>) -> u64 {
    match target {
        Some(Target::Sm80) => 96 * 1024,
        Some(Target::Sm90a) | None => WGMMA_STAGE_BUDGET,
    }
}

/// Whether the load `ld`'s masked-off elements read as 0 (no `other`, or a zero one), as the
/// ring's copies fill them.
fn zero_filled(f: &Function, ld: &tile_core::ir::OpData) -> bool {
    ld.operands.len() != 3 || f.constant_of(ld.operands[2]).is_some_and(|c| c.is_zero())
}

/// Whether the load `ld`, `vec` elements per access, takes its runs along the columns, as the
/// copies of a stage's rows do (one element at a time always does).
fn runs_along_columns(f: &Function, ld: &tile_core::ir::OpData, vec: u32) -> bool {
    let shape = &f.ty(ld.results[0]).shape;
    vec == 1
        || f.ty(ld.operands[0])
            .layout
            .as_ref()
            .and_then(|l| l.linear(shape).ok())
            .is_some_and(|ll| ll.contiguous_run().0 == 1)
}

/// The bytes one stage of `operands`' rings takes.
fn ring_stage_bytes(f: &Function, operands: &[Operand]) -> u64 {
    operands
        .iter()
        .map(|o| crate::staging::operand_bytes(f.ty(f.op(o.load).results[0]), true))
        .sum()
}

/// The first of `ops` that writes memory (a store, an atomic, a nested loop or branch that may)
/// or synchronizes: a loop body holding one cannot have its tiles copied ahead.
fn first_writer(f: &Function, ops: &[OpId]) -> Option<OpId> {
    ops.iter().copied().find(|&o| {
        use tile_core::ir::Effect;
        !matches!(
            f.op(o).kind.effect(),
            Effect::Pure | Effect::Read | Effect::Terminator
        )
    })
}

/// Whether every use of the loaded tile `x` (a result of the loop body `ops`) is a conversion
/// into a `dot` operand layout, directly or through a `trans` used once: then one ring holds the
/// tile for all of them, each reading it as it needs (attention's backward reads `Q` and `dO`
/// both as loaded and transposed). Any other use (arithmetic, a `yield`) needs the tile in
/// registers.
fn feeds_only_operands(
    f: &Function,
    x: ValueId,
    ops: &[OpId],
    uses: &HashMap<ValueId, usize>,
) -> bool {
    let is_operand_conv = |o: OpId, _: ValueId, _: bool| {
        matches!(f.op(o).kind, OpKind::ConvertLayout)
            && matches!(f.ty(f.op(o).results[0]).layout, Some(Layout::DotOperand(_)))
    };
    used_only_by(f, x, ops, uses, is_operand_conv)
}

/// Whether op `o` is a `dot` that reads `v` as an operand (`B` only where `transposed`: a
/// transposed tile serves as a K-major `B`), not as its accumulator.
pub(crate) fn dot_operand(f: &Function, o: OpId, v: ValueId, transposed: bool) -> bool {
    let d = f.op(o);
    matches!(d.kind, OpKind::Dot { .. })
        && !d.operands[2..].contains(&v)
        && if transposed {
            d.operands[1] == v
        } else {
            d.operands[..2].contains(&v)
        }
}

/// Whether every use of `x` is among `ops` and is one that `sink(op, value, transposed)`
/// accepts, either of `x` itself or of a `trans` of it used once (`transposed` then true).
pub(crate) fn used_only_by(
    f: &Function,
    x: ValueId,
    ops: &[OpId],
    uses: &HashMap<ValueId, usize>,
    sink: impl Fn(OpId, ValueId, bool) -> bool,
) -> bool {
    let users: Vec<OpId> = ops
        .iter()
        .copied()
        .filter(|&o| f.op(o).operands.contains(&x))
        .collect();
    let counted: usize = users
        .iter()
        .map(|&o| f.op(o).operands.iter().filter(|&&v| v == x).count())
        .sum();
    counted == uses.get(&x).copied().unwrap_or(0)
        && users.iter().all(|&o| {
            if sink(o, x, false) {
                return true;
            }
            if !matches!(f.op(o).kind, OpKind::Trans) {
                return false;
            }
            let t = f.op(o).results[0];
            uses.get(&t).copied() == Some(1)
                && ops
                    .iter()
                    .any(|&c| f.op(c).operands.contains(&t) && sink(c, t, true))
        })
}

/// The operands of `found` whose load's every use is among them (by its conversion, or its
/// `trans`): a tile shared by several `dot`s goes through a ring only if all of them read it
/// there, since the pass removes the load.
fn complete(f: &Function, ops: &[OpId], found: Vec<Operand>) -> Vec<Operand> {
    let covered = |o: &Operand| {
        let x = f.op(o.load).results[0];
        ops.iter()
            .filter(|&&u| f.op(u).operands.contains(&x))
            .all(|&u| {
                found
                    .iter()
                    .any(|p| p.load == o.load && (p.conv == u || p.trans == Some(u)))
            })
    };
    let keep: Vec<bool> = found.iter().map(covered).collect();
    found
        .into_iter()
        .zip(keep)
        .filter_map(|(o, k)| k.then_some(o))
        .collect()
}

/// The body and the operands of `l` to pipeline, if there are any.
fn candidates(f: &Function, l: OpId) -> Option<(BlockId, Vec<Operand>)> {
    let (body, found) = survey(f, l)?;
    let mut out: Vec<Operand> = Vec::new();
    for (_, o) in found {
        if let Ok(o) = o {
            if !out.iter().any(|x| x.conv == o.conv) {
                out.push(o);
            }
        }
    }
    let out = complete(f, &f.blocks[body.index()].ops, out);
    (!out.is_empty()).then_some((body, out))
}

/// Each tensor-core `dot` operand of the loop `l`'s body, with the `dot`, and either the
/// operand to pipeline or why it cannot be; `None` when `l` has no body.
#[allow(clippy::type_complexity)]
fn survey(f: &Function, l: OpId) -> Option<(BlockId, Vec<(OpId, Result<Operand, String>)>)> {
    let region = *f.op(l).regions.first()?;
    let body = f.regions[region.index()].blocks[0];
    let ops = &f.blocks[body.index()].ops;
    // Nothing in the body writes memory (a store, an atomic, a nested loop or branch that may)
    // or synchronizes.
    let writer = first_writer(f, ops);
    let iv = f.blocks[body.index()].args[0];
    let in_body: std::collections::HashSet<OpId> = ops.iter().copied().collect();
    let uses = use_counts(f);
    let mut out = Vec::new();
    for &dot in ops {
        let d = f.op(dot);
        if !matches!(d.kind, OpKind::Dot { .. }) {
            continue;
        }
        if !matches!(f.ty(d.results[0]).layout, Some(Layout::Mma(_))) {
            continue;
        }
        if let Some(w) = writer {
            let what = match f.op(w).kind {
                OpKind::For | OpKind::While => "a nested loop",
                OpKind::If => "an `if`",
                OpKind::Store { .. } => "a store",
                OpKind::AtomicRmw { .. } | OpKind::AtomicCas { .. } => "an atomic",
                _ => "a barrier",
            };
            out.push((
                dot,
                Err(format!(
                    "the loop's body holds {what}, and its tiles would be copied ahead of it"
                )),
            ));
            continue;
        }
        for (i, &v) in d.operands[..2].iter().enumerate() {
            let side = ["A", "B"][i];
            let why = |r: &str| Err(format!("operand {side} {r}"));
            let Some(conv) = f.def_op(v).filter(|o| in_body.contains(o)) else {
                out.push((dot, why(NOT_LOADED)));
                continue;
            };
            if !matches!(f.op(conv).kind, OpKind::ConvertLayout) {
                out.push((dot, why(COMPUTED)));
                continue;
            }
            let mut x = f.op(conv).operands[0];
            let Some(mut load) = f.def_op(x).filter(|o| in_body.contains(o)) else {
                out.push((dot, why(NOT_LOADED)));
                continue;
            };
            // `trans(load(…))`: the tile as loaded goes through the ring, and `wgmma` reads it
            // transposed (`B` K-major, `A` M-major), or `mma.sync`'s `ldmatrix` reads a 16-bit
            // one (`local_load {trans}`, in a loop with one or two `dot`s: `B` without
            // `.trans`, `A` with it). A transposed `A` comes from a pointer load (`tma_loads`
            // leaves it to `cp.async`).
            let mut trans = None;
            if matches!(f.op(load).kind, OpKind::Trans) {
                let wgmma =
                    matches!(f.ty(d.results[0]).layout, Some(Layout::Mma(ref m)) if m.version == 3);
                let sixteen = f.ty(x).dtype().is_some_and(|t| t.size_bytes() == 2);
                // An 8-bit `B` loaded `N × K` is K-major as `mma.sync` reads it.
                let byte_b = i == 1 && f.ty(x).dtype().is_some_and(DType::is_byte_operand);
                let inner = f.op(load).operands[0];
                let loaded = f.def_op(inner).filter(|o| {
                    in_body.contains(o)
                        && matches!(f.op(*o).kind, OpKind::Load { .. } | OpKind::DescLoad { .. })
                });
                // On `wgmma` a tile may also feed other operands: they share its ring.
                let single = uses.get(&x).copied() == Some(1)
                    || (wgmma && feeds_only_operands(f, x, ops, &uses));
                match loaded {
                    Some(l)
                        if (wgmma || sixteen || byte_b)
                            && (i == 1 || matches!(f.op(l).kind, OpKind::Load { .. }))
                            && single =>
                    {
                        trans = Some(load);
                        load = l;
                        x = inner;
                    }
                    Some(_) => {
                        let r = if !single {
                            "is a transposed load used twice"
                        } else if f.ty(x).dtype().is_some_and(DType::is_byte_operand) {
                            "is a transposed 8-bit `A`: 8-bit operands reach the tensor cores K-major only (load `A` as `M × K`)"
                        } else {
                            "is a transposed tf32 tile, which only `wgmma` reads from a ring"
                        };
                        out.push((dot, why(r)));
                        continue;
                    }
                    None => {}
                }
            }
            let ld = f.op(load);
            if let OpKind::DescLoad { slot } = ld.kind {
                // `lower-descriptors` kept it for the tensor memory accelerator: `tma_loads`
                // checked the rest.
                let Some(slice) = backward_slice(f, load, &in_body, iv, body) else {
                    out.push((dot, why("has coordinates the loop carries")));
                    continue;
                };
                out.push((
                    dot,
                    Ok(Operand {
                        load,
                        conv,
                        trans,
                        slice,
                        tma: Some(slot),
                    }),
                ));
                continue;
            }
            let reason = copy_refusal(f, dot, load, i == 1 && trans.is_none()).or_else(|| {
                (!feeds_only_operands(f, x, ops, &uses))
                    .then_some("is loaded once and used other than as `dot` operands")
            });
            if let Some(r) = reason {
                out.push((dot, why(r)));
                continue;
            }
            let Some(slice) = backward_slice_with(f, load, &in_body, iv, body, true) else {
                out.push((
                    dot,
                    why("has an address or mask that depends on a value the loop carries (not advanced by a loop-invariant step)"),
                ));
                continue;
            };
            out.push((
                dot,
                Ok(Operand {
                    load,
                    conv,
                    trans,
                    slice,
                    tma: None,
                }),
            ));
        }
    }
    Some((body, out))
}

/// The `desc_load`s of `f` (GPU level, before layouts are assigned: what `lower-descriptors`
/// keeps) whose tiles this pass will copy with the tensor memory accelerator on sm_90a: those of
/// a loop whose every `dot` fits `wgmma` ([`wgmma_layout`]) and reads `B` from a `desc_load`
/// (transposed or not) and `A` from a `desc_load` or from registers (a tile not loaded in the
/// loop), where every such `desc_load` can be copied ([`tma_copyable`]), is used only as `dot`
/// operands (directly, or as a K-major `B` through a `trans`: one ring serves them all), and
/// takes coordinates that depend on the induction variable and on values from before the loop
/// only. A loop that mixes descriptor and pointer loads copies them all with `cp.async`, its
/// descriptors expanded into pointer loads.
///
/// [`wgmma_layout`]: super::accelerate_dot::wgmma_layout
pub fn tma_loads(f: &Function) -> std::collections::HashSet<OpId> {
    let mut out = std::collections::HashSet::new();
    if f.target != Some(Target::Sm90a) || f.num_stages == 1 {
        return out;
    }
    let hosts = crate::analysis::descriptors::host_descriptors(f);
    let uses = use_counts(f);
    for l in for_loops(f) {
        let Some(&region) = f.op(l).regions.first() else {
            continue;
        };
        let body = f.regions[region.index()].blocks[0];
        let ops = &f.blocks[body.index()].ops;
        let in_body: std::collections::HashSet<OpId> = ops.iter().copied().collect();
        let iv = f.blocks[body.index()].args[0];
        let writes = first_writer(f, ops).is_some();
        let dots: Vec<OpId> = ops
            .iter()
            .copied()
            .filter(|&o| matches!(f.op(o).kind, OpKind::Dot { .. }))
            .collect();
        if writes || dots.is_empty() {
            continue;
        }
        // Whether every use of `x` is as a `dot` operand in the body, directly or (as `B`)
        // through a `trans` used once: one ring then serves them all (a tile read as `A` and,
        // transposed, as a K-major `B` has the same `wgmma` layout).
        let as_operand = |o: OpId, v: ValueId, transposed: bool| dot_operand(f, o, v, transposed);
        let dot_operands_only = |x: ValueId| used_only_by(f, x, ops, &uses, as_operand);
        // The `desc_load` behind `v` (through a `trans` where `trans_ok`), if `v` is one's
        // result in the body, used only as `dot` operands.
        let source = |v: ValueId, trans_ok: bool| -> Option<OpId> {
            let mut op = f.def_op(v).filter(|o| in_body.contains(o))?;
            let mut x = v;
            if trans_ok && matches!(f.op(op).kind, OpKind::Trans) {
                if uses.get(&x).copied() != Some(1) {
                    return None;
                }
                x = f.op(op).operands[0];
                op = f.def_op(x).filter(|o| in_body.contains(o))?;
            }
            (matches!(f.op(op).kind, OpKind::DescLoad { .. }) && dot_operands_only(x)).then_some(op)
        };
        let loaded_here = |v: ValueId| {
            f.def_op(v).is_some_and(|o| {
                in_body.contains(&o)
                    && matches!(
                        f.op(o).kind,
                        OpKind::Load { .. } | OpKind::DescLoad { .. } | OpKind::Trans
                    )
            })
        };
        let mut loads = Vec::new();
        let fits = dots.iter().all(|&dot| {
            let d = f.op(dot);
            let (a, b) = (d.operands[0], d.operands[1]);
            if super::accelerate_dot::wgmma_layout(f.ty(a), f.ty(b), f.num_warps).is_none() {
                return false;
            }
            let Some(bl) = source(b, true) else {
                return false;
            };
            loads.push(bl);
            match source(a, false) {
                Some(al) => loads.push(al),
                None if loaded_here(a) => return false,
                None => {}
            }
            true
        });
        let copyable = loads.iter().all(|&op| {
            tma_copyable(f, op, &hosts).is_ok()
                && backward_slice(f, op, &in_body, iv, body).is_some()
        });
        if fits && copyable {
            out.extend(loads);
        }
    }
    out
}

/// Whether the tensor memory accelerator can copy the tiles of `desc_load` `op` into a `wgmma`
/// ring, on what this specialization assumes of the arguments: a 2-D tile of 16-bit elements
/// (or 8-bit floats) with rows of at most 256, whose `wgmma` column blocks are 32, 64 or 128 bytes wide (one copy
/// each, in the swizzle of that width); the descriptor's array known from the arguments
/// ([`host_descriptors`]), its base 16-byte aligned, its last stride 1 and its other stride a
/// multiple of 16 bytes (as the tensor map requires).
///
/// [`host_descriptors`]: crate::analysis::descriptors::host_descriptors
pub fn tma_copyable(
    f: &Function,
    op: OpId,
    hosts: &[crate::analysis::descriptors::HostDesc],
) -> Result<(), &'static str> {
    use tile_core::runtime::DescScalar;
    let d = f.op(op);
    let OpKind::DescLoad { slot } = d.kind else {
        return Err("not a descriptor load");
    };
    let ty = f.ty(d.results[0]);
    if ty.shape.len() != 2 {
        return Err("not a 2-D tile");
    }
    let Some(elem) = ty
        .dtype()
        .filter(|d| matches!(d, DType::F16 | DType::BF16) || d.is_f8())
    else {
        return Err("not 16-bit or 8-bit float elements");
    };
    let bytes = elem.size_bytes();
    let (rows, cols) = (ty.shape[0], ty.shape[1]);
    let width = SharedLayout::wgmma(cols, bytes).block_cols(u64::from(cols)) as u32;
    if rows > 256 || !matches!(width * bytes, 32 | 64 | 128) {
        return Err("a tile the copy engine's boxes do not fit");
    }
    let Some(h) = hosts.iter().find(|h| h.slot == slot) else {
        return Err("an array not known from the arguments");
    };
    let divisibility = |i: u32| f.param_attrs.get(i as usize).map_or(1, |a| a.divisibility);
    if divisibility(h.ptr) < 16 {
        return Err("a base not known to be 16-byte aligned");
    }
    if h.strides.last() != Some(&DescScalar::Const(1)) {
        return Err("a last stride not known to be 1");
    }
    let aligned = h.strides[..h.strides.len() - 1].iter().all(|s| match *s {
        DescScalar::Const(c) => c > 0 && (c * i64::from(bytes)) % 16 == 0,
        DescScalar::Param(i) => (divisibility(i) * bytes) % 16 == 0,
        DescScalar::Product {
            params,
            count,
            factor,
            ..
        } => {
            let d = params[..usize::from(count)]
                .iter()
                .fold(factor.unsigned_abs(), |d, &i| {
                    d.saturating_mul(u64::from(divisibility(i)))
                });
            factor > 0 && d.saturating_mul(u64::from(bytes)) % 16 == 0
        }
    });
    if !aligned {
        return Err("a row stride not known to be a multiple of 16 bytes");
    }
    Ok(())
}

/// Why each tensor-core `dot` in a loop of `f` (the IR this pass receives) would not read its
/// operands from a pipelined ring: the `dot` and the reasons, one per operand left out. Empty
/// when every such `dot` is pipelined, or when `num_stages = 1` asks for none.
pub fn explain(f: &Function) -> Vec<(OpId, Vec<String>)> {
    if f.num_stages == 1 {
        return Vec::new();
    }
    let mut out: Vec<(OpId, Vec<String>)> = Vec::new();
    for l in for_loops(f) {
        let Some((_, found)) = survey(f, l) else {
            continue;
        };
        // A `dot` with an operand in a ring is pipelined; an operand of it the loop does not
        // load (attention's `P`, a `Q` from before the loop) was never the ring's to take.
        let ringed: Vec<OpId> = found
            .iter()
            .filter(|(_, r)| r.is_ok())
            .map(|&(d, _)| d)
            .collect();
        for (dot, r) in found {
            if let Err(why) = r {
                if ringed.contains(&dot) && (why.ends_with(NOT_LOADED) || why.ends_with(COMPUTED)) {
                    continue;
                }
                match out.iter_mut().find(|(d, _)| *d == dot) {
                    Some((_, v)) => v.push(why),
                    None => out.push((dot, vec![why])),
                }
            }
        }
    }
    // A `while` loop's tensor-core `dot`s, which no ring is built for.
    for l in f.walk() {
        let d = f.op(l);
        if !matches!(d.kind, OpKind::While) {
            continue;
        }
        let Some(&region) = d.regions.get(1) else {
            continue;
        };
        for &block in &f.regions[region.index()].blocks {
            for &op in &f.blocks[block.index()].ops {
                let dot = f.op(op);
                let tensor_cores = matches!(dot.kind, OpKind::Dot { .. })
                    && matches!(f.ty(dot.results[0]).layout, Some(Layout::Mma(_)));
                if tensor_cores {
                    out.push((
                        op,
                        vec![
                            "it is in a `while` loop, and only `for` loops read a `dot`'s \
                             operands through a ring of shared buffers; compute the trip count \
                             and write `for k in 0..count`"
                                .to_string(),
                        ],
                    ));
                }
            }
        }
    }
    out
}

/// The stages for `operands` (see the module documentation). `in_flight`: a `wgmma` loop that
/// keeps a group in flight, whose ring holds one stage more than `num_stages` says where it
/// fits, so that the copies run `num_stages − 1` iterations ahead as Triton's do (Triton's
/// pipeliner gives such a loop `num_stages + 1` buffers too).
fn stages(f: &Function, operands: &[Operand], wgmma: bool, in_flight: bool) -> u32 {
    let per_stage = ring_stage_bytes(f, operands);
    if f.num_stages > 0 {
        let s = f.num_stages;
        let more = in_flight && u64::from(s + 1) * per_stage <= WGMMA_STAGE_BUDGET;
        return s + u32::from(more);
    }
    let mut s = if wgmma {
        WGMMA_DEFAULT_STAGES
    } else {
        DEFAULT_STAGES
    };
    let budget = if wgmma {
        WGMMA_STAGE_BUDGET
    } else {
        auto_stage_budget(f.target)
    };
    while s > 2 && u64::from(s) * per_stage > budget {
        s -= 1;
    }
    s
}

impl Builder {
    fn i32_op(&mut self, f: &mut Function, b: BinOp, x: ValueId, y: ValueId) -> ValueId {
        self.val(f, OpKind::Binary(b), vec![x, y], Type::scalar(DType::I32))
    }

    /// `x + 1`, wrapped to 0 at `s`.
    fn next_stage(&mut self, f: &mut Function, x: ValueId, one: ValueId, s: ValueId) -> ValueId {
        let n = self.i32_op(f, BinOp::Add, x, one);
        let lt = self.val(
            f,
            OpKind::Cmp(CmpPred::Lt),
            vec![n, s],
            Type::scalar(DType::I1),
        );
        let zero = self.int(f, 0, DType::I32);
        self.val(
            f,
            OpKind::Select,
            vec![lt, n, zero],
            Type::scalar(DType::I32),
        )
    }

    /// `iv + ahead < ub`, in 64 bits.
    fn in_range(&mut self, f: &mut Function, iv: ValueId, ahead: ValueId, ub: ValueId) -> ValueId {
        let i64t = Type::scalar(DType::I64);
        let iv = self.val(f, OpKind::Cast, vec![iv], i64t.clone());
        let ahead = self.val(f, OpKind::Cast, vec![ahead], i64t.clone());
        let ub = self.val(f, OpKind::Cast, vec![ub], i64t.clone());
        let next = self.val(f, OpKind::Binary(BinOp::Add), vec![iv, ahead], i64t);
        self.val(
            f,
            OpKind::Cmp(CmpPred::Lt),
            vec![next, ub],
            Type::scalar(DType::I1),
        )
    }

    /// The slice of `o` before its load cloned with `iv` replaced by `new_iv`: the load's kind
    /// and its operands as the clone computes them. Loads in the slice (the page numbers of a
    /// block table that address the tile) are cloned too, masked off where `inside` is false (a
    /// prologue stage past the loop's end).
    fn clone_slice(
        &mut self,
        f: &mut Function,
        o: Fetch<'_>,
        iv: ValueId,
        new_iv: ValueId,
        inside: Option<ValueId>,
    ) -> (OpKind, Vec<ValueId>) {
        let mut map: HashMap<ValueId, ValueId> =
            o.relayout.map(|r| r.seed.clone()).unwrap_or_default();
        map.insert(iv, new_iv);
        // The slice ends with the load.
        let before = &o.slice[..o.slice.len().saturating_sub(1)];
        for &op in before {
            match inside {
                Some(c) if matches!(f.op(op).kind, OpKind::Load { .. }) => {
                    let old = f.op(op).results[0];
                    let new =
                        masked_load(f, &[op], op, &mut map, |_, _| c, self.block, &mut self.at);
                    map.insert(old, new);
                }
                _ => clone_into(f, &[op], &mut map, self.block, &mut self.at),
            }
        }
        let d = f.op(o.load);
        (d.kind.clone(), renamed(&map, &d.operands))
    }

    /// The slice of `o` cloned with `iv` replaced by `new_iv`, and an `async_copy` of its tile
    /// into stage `stage` of `buf`, masked by `inside` as well where given.
    #[allow(clippy::too_many_arguments)]
    fn copy(
        &mut self,
        f: &mut Function,
        o: Fetch<'_>,
        iv: ValueId,
        new_iv: ValueId,
        inside: Option<ValueId>,
        buf: ValueId,
        stage: ValueId,
    ) {
        let start = self.at;
        let (kind, operands) = self.clone_slice(f, o, iv, new_iv, inside);
        let OpKind::Load { vec, .. } = kind else {
            return;
        };
        let ptr = operands[0];
        let mask_ty = f.ty(ptr).with_elem(Elem::Scalar(DType::I1));
        let inside = inside.map(|c| self.val(f, OpKind::Splat, vec![c], mask_ty.clone()));
        let mask = match (operands.get(1), inside) {
            (Some(&m), Some(c)) => {
                Some(self.val(f, OpKind::Binary(BinOp::And), vec![m, c], mask_ty))
            }
            (Some(&m), None) => Some(m),
            (None, c) => c,
        };
        let vec = match o.relayout {
            // The clones compute in the copies' layout: the same values, other threads.
            Some(r) => {
                let made: Vec<OpId> = f.blocks[self.block.index()].ops[start..self.at].to_vec();
                for op in made {
                    for res in f.op(op).results.clone() {
                        let t = &mut f.values[res.index()].ty;
                        if let Some(l) = t.layout.as_ref().and_then(|l| r.map(l)) {
                            t.layout = Some(l);
                        }
                    }
                }
                r.vec
            }
            None => vec,
        };
        self.async_copy(f, vec, ptr, mask, buf, stage);
    }

    /// `async_copy` of the tile `ptr` points to (where `mask` holds) into stage `stage` of
    /// `buf`, `vec` elements per instruction as the load had them.
    fn async_copy(
        &mut self,
        f: &mut Function,
        vec: u32,
        ptr: ValueId,
        mask: Option<ValueId>,
        buf: ValueId,
        stage: ValueId,
    ) {
        let mut args = vec![buf, stage, ptr];
        args.extend(mask);
        // `cp.async` moves 4, 8 or 16 bytes: narrower runs (two `i8`) are copied one element at
        // a time.
        let bytes = f.ty(ptr).elem.pointee().map_or(4, |d| d.size_bytes());
        let vec = if vec * bytes < 4 { 1 } else { vec };
        self.op(f, OpKind::AsyncCopy { vec }, args, vec![]);
    }

    /// One stage filled by the copy engine: `fill.bytes` announced on its barrier, then, for each
    /// operand (a `desc_load` kept for the copy engine), its slice cloned with `iv` replaced by
    /// `new_iv` and a `tma_load` of its tile into the stage of its buffer, issued where
    /// `fill.pred` holds.
    fn tma_fill(
        &mut self,
        f: &mut Function,
        operands: &[Operand],
        bufs: &[ValueId],
        iv: ValueId,
        new_iv: ValueId,
        fill: TmaFill,
    ) {
        let TmaFill {
            bars,
            stage,
            pred,
            bytes,
        } = fill;
        self.op(
            f,
            OpKind::MbarrierExpect { bytes },
            vec![bars, stage, pred],
            vec![],
        );
        for (o, &buf) in operands.iter().zip(bufs) {
            let (kind, ops) = self.clone_slice(f, o.fetch(), iv, new_iv, None);
            let OpKind::DescLoad { slot } = kind else {
                continue;
            };
            let mut args = vec![buf, stage, bars, pred];
            args.extend_from_slice(&ops[ops.len() - 2..]);
            self.op(f, OpKind::TmaLoad { slot }, args, vec![]);
        }
    }
}

/// A stage for [`Builder::tma_fill`]: the barrier buffer, the stage, the `i1` predicate of the
/// copies, and the stage's bytes.
#[derive(Clone, Copy)]
struct TmaFill {
    bars: ValueId,
    stage: ValueId,
    pred: ValueId,
    bytes: u32,
}

/// One `dot` of a loop that runs on `wgmma`: the `dot`, the operand (index into the pipelined
/// operands) whose ring holds `A`, or `None` where `A` is a value in registers, and the one whose
/// ring holds `B`.
type WgmmaDot = (OpId, Option<usize>, usize);

/// The `dot`s of the loop that run on `wgmma`: every `dot` of the body, each with a version-3
/// mma result and its `B` pipelined, and its `A` pipelined or not a tile loaded in the loop (a
/// value in registers: a tile computed in the loop, such as flash attention's probabilities, or
/// one from before it); every pipelined operand is one of theirs. `None` when some `dot` does not
/// qualify: the loop then runs on `mma.sync`.
fn wgmma_dots(f: &Function, body: BlockId, operands: &[Operand]) -> Option<Vec<WgmmaDot>> {
    let dots: Vec<OpId> = f.blocks[body.index()]
        .ops
        .iter()
        .copied()
        .filter(|&o| matches!(f.op(o).kind, OpKind::Dot { .. }))
        .collect();
    let mut out = Vec::new();
    for dot in dots {
        let d = f.op(dot);
        if !matches!(f.ty(d.results[0]).layout, Some(Layout::Mma(ref m)) if m.version == 3) {
            return None;
        }
        // 16-bit operands, or 8-bit ones (which `accelerate_dot` gives a version-3 layout only
        // when both are read K-major).
        let a_elem = f.ty(d.operands[0]).dtype();
        if !(matches!(a_elem, Some(DType::F16 | DType::BF16))
            || a_elem.is_some_and(DType::is_byte_operand))
        {
            return None;
        }
        let find = |i: usize| {
            operands
                .iter()
                .position(|o| f.op(o.conv).results[0] == d.operands[i])
        };
        let (a, b) = (find(0), find(1)?);
        // A tile loaded in the loop that could not have a ring (an address the loop carries,
        // say) stays on `mma.sync`, where `explain` tells the user why: read from registers it
        // would be loaded synchronously every iteration, the slowdown the warning is for.
        let loaded_here = f
            .def_op(d.operands[0])
            .filter(|&c| matches!(f.op(c).kind, OpKind::ConvertLayout))
            .and_then(|c| f.def_op(f.op(c).operands[0]))
            .is_some_and(|l| f.op(l).block == body && matches!(f.op(l).kind, OpKind::Load { .. }));
        if a.is_none() && loaded_here {
            return None;
        }
        out.push((dot, a, b));
    }
    let used = out
        .iter()
        .map(|&(_, a, _)| usize::from(a.is_some()) + 1)
        .sum::<usize>();
    (!out.is_empty() && used == operands.len()).then_some(out)
}

/// Why the tile of `load` (a `Load`) cannot be copied by `cp.async` into a shared-memory stage
/// that the tensor cores read for `dot`, or `None` when it can. `kn_b`: the tile is a `B` stored
/// `K × N` (not transposed), which 8-bit elements cannot be.
fn copy_refusal(f: &Function, dot: OpId, load: OpId, kn_b: bool) -> Option<&'static str> {
    let ld = f.op(load);
    let OpKind::Load { vec, .. } = ld.kind else {
        return Some("is computed from its load, not the loaded tile itself");
    };
    let ty = f.ty(ld.results[0]);
    // 16-bit operands, `i8` ones, or f32 ones of a tf32 `dot` (the only f32 `dot` with an mma
    // result).
    let tf32 = f.op(dot).kind
        == OpKind::Dot {
            precision: Precision::Tf32,
        };
    let tensor_elem = matches!(ty.dtype(), Some(DType::F16 | DType::BF16))
        || ty.dtype().is_some_and(DType::is_byte_operand)
        || (ty.dtype() == Some(DType::F32) && tf32);
    if !tensor_elem {
        Some("has elements the tensor cores do not read from shared memory")
    } else if !zero_filled(f, ld) {
        Some("is loaded with a non-zero `other` (the copies fill masked elements with 0)")
    } else if ty.dtype().is_some_and(DType::is_byte_operand) && kn_b {
        Some("is an 8-bit tile stored `K × N`: 8-bit operands reach the tensor cores K-major only (load `B` as `N × K` and use `.trans()`)")
    } else if !(ty.shape.len() == 2 && ty.shape[1] >= 8) {
        Some("has fewer than 8 columns")
    } else if !runs_along_columns(f, ld, vec) {
        Some("is contiguous along its rows, not its columns")
    } else {
        None
    }
}

/// Where a `wgmma` `dot`'s `A` is a tile loaded before the loop (flash attention's `Q`):
/// the load, when its tile can be copied into shared memory once (`cp.async`, masked elements
/// 0) and read from there by every iteration's `wgmma` instead of being held in registers
/// (about 32 registers a thread for a `64 × 128` f16 tile a warpgroup), with its conversion into
/// the operand layout, which must feed only `dot`s of this loop (all of which the pass rewrites,
/// so both are left without a use).
fn staged_a(f: &Function, body: BlockId, dot: OpId) -> Option<(OpId, OpId)> {
    let a = f.op(dot).operands[0];
    if computed_in_loop(f, body, a) {
        return None;
    }
    let conv = f.def_op(a)?;
    if !matches!(f.op(conv).kind, OpKind::ConvertLayout) {
        return None;
    }
    let load = f.def_op(f.op(conv).operands[0])?;
    if copy_refusal(f, dot, load, false).is_some() {
        return None;
    }
    let uses = use_counts(f);
    if uses.get(&f.op(load).results[0]).copied() != Some(1) {
        return None;
    }
    // Every use of the converted tile is a `dot` of this body taking it as `A`.
    let users: Vec<OpId> = f
        .walk()
        .into_iter()
        .filter(|&o| f.op(o).operands.contains(&a))
        .collect();
    let only_dots = users.iter().all(|&o| {
        matches!(f.op(o).kind, OpKind::Dot { .. })
            && f.op(o).block == body
            && f.op(o).operands[0] == a
            && f.op(o).operands[1] != a
    });
    only_dots.then_some((load, conv))
}

/// Where the result of `dot` (in `body`) is used only by the `yield`, once, and the loop
/// argument it becomes is used in the body: the index of that carried value (its position among
/// the `yield`'s operands). Such a result may stay in flight into the next iteration.
fn carried_only(f: &Function, body: BlockId, dot: OpId) -> Option<usize> {
    let r = f.op(dot).results[0];
    let ops = &f.blocks[body.index()].ops;
    let y = *ops.last()?;
    if !matches!(f.op(y).kind, OpKind::Yield) {
        return None;
    }
    let users = ops
        .iter()
        .filter(|&&o| f.op(o).operands.contains(&r))
        .count();
    let j = f.op(y).operands.iter().position(|&v| v == r)?;
    let arg = f.blocks[body.index()].args[j + 1];
    let used = ops[..ops.len() - 1]
        .iter()
        .any(|&o| f.op(o).operands.contains(&arg));
    (users == 1 && f.op(y).operands.iter().filter(|&&v| v == r).count() == 1 && used).then_some(j)
}

/// Places the waits of a loop's several `warp_group_dot`s (`issued`, in body order): each result
/// is waited for just before its first use, with as many groups left pending as were issued
/// after it by then, so that the tensor cores work on one product while the threads go on
/// (written so that the next block's `Q Kᵀ` is issued before this block's softmax, it would run
/// under the softmax; flash attention as usually written leaves `P V` running into the next
/// iteration's head). A result only carried to the next iteration stays in flight
/// there until its first use (when `across`: the ring has a stage to spare for it), counting
/// the groups issued after it in its own iteration too; the indices of those carried values are
/// returned, for a wait after the loop. `wgmma` groups complete in the order they were
/// committed, which makes the counts exact.
fn place_waits(f: &mut Function, body: BlockId, issued: &[ValueId], across: bool) -> Vec<usize> {
    let mut deferred = Vec::new();
    let n = issued.len();
    for (i, &r) in issued.iter().enumerate() {
        let Some(dot) = f.def_op(r) else { continue };
        let carried = if across {
            carried_only(f, body, dot)
        } else {
            None
        };
        let ops = f.blocks[body.index()].ops.clone();
        let pos_of = |o: OpId| ops.iter().position(|&x| x == o);
        let issue_pos: Vec<Option<usize>> = issued
            .iter()
            .map(|&v| f.def_op(v).and_then(pos_of))
            .collect();
        let before = |p: usize, from: usize| {
            (from..n)
                .filter(|&k| issue_pos[k].is_some_and(|q| q < p))
                .count() as u32
        };
        let ty = f.ty(r).clone();
        let (value, at, pending) = match carried {
            Some(j) => {
                let arg = f.blocks[body.index()].args[j + 1];
                let Some(p) = ops.iter().position(|&o| f.op(o).operands.contains(&arg)) else {
                    continue;
                };
                deferred.push(j);
                (arg, p, (n - 1 - i) as u32 + before(p, 0))
            }
            None => {
                let Some(p) = ops.iter().position(|&o| f.op(o).operands.contains(&r)) else {
                    continue;
                };
                (r, p, before(p, i + 1))
            }
        };
        wait_in_body(f, body, at, pending, value, ty);
    }
    deferred
}

/// Makes sure the group `r` of a `wgmma` whose register `A` is `a`, computed in the loop, is
/// retired before the next iteration writes `a` again: by a wait for every group (`pending =
/// 0`) after the `dot` or, in the next iteration, before `a` is computed; else by one right after
/// the `dot`, which every use of its result then reads.
fn retire_fresh_a(f: &mut Function, body: BlockId, r: ValueId, a: ValueId) {
    let ops = f.blocks[body.index()].ops.clone();
    let Some(at_dot) = ops.iter().position(|&o| f.op(o).results.contains(&r)) else {
        return;
    };
    // Where `a` is computed: the body op that holds its definition (the loop's head for an
    // argument of the body).
    let at_def = f
        .def_op(a)
        .and_then(|d| ops.iter().position(|&o| holds(f, o, d)))
        .unwrap_or(0);
    let covered = ops.iter().enumerate().any(|(p, &o)| {
        matches!(f.op(o).kind, OpKind::WarpGroupWait { pending: 0 }) && (p > at_dot || p < at_def)
    });
    if covered {
        return;
    }
    let ty = f.ty(r).clone();
    wait_in_body(f, body, at_dot + 1, 0, r, ty);
}

/// Inserts `warp_group_wait {pending} value` at position `at` of the loop body, and makes every
/// other use of `value` in the body read the completed value.
fn wait_in_body(
    f: &mut Function,
    body: BlockId,
    at: usize,
    pending: u32,
    value: ValueId,
    ty: Type,
) {
    let mut b = Builder { block: body, at };
    let w = b.val(f, OpKind::WarpGroupWait { pending }, vec![value], ty);
    let wait_op = f.def_op(w);
    for o in f.blocks[body.index()].ops.clone() {
        if Some(o) == wait_op {
            continue;
        }
        for v in f.ops[o.index()].operands.iter_mut() {
            if *v == value {
                *v = w;
            }
        }
    }
}

/// Whether `v` is computed anew in each iteration of the loop whose body is `body`: one of the
/// body's arguments, or a result of one of its ops (nested ones included).
fn computed_in_loop(f: &Function, body: BlockId, v: ValueId) -> bool {
    if f.blocks[body.index()].args.contains(&v) {
        return true;
    }
    f.def_op(v)
        .is_some_and(|def| f.blocks[body.index()].ops.iter().any(|&o| holds(f, o, def)))
}

/// Whether `op` is `inner` or holds it in one of its regions, at any depth.
pub(crate) fn holds(f: &Function, op: OpId, inner: OpId) -> bool {
    let mut stack = vec![op];
    while let Some(x) = stack.pop() {
        if x == inner {
            return true;
        }
        for &r in &f.op(x).regions {
            for &b in &f.regions[r.index()].blocks {
                stack.extend(&f.blocks[b.index()].ops);
            }
        }
    }
    false
}

/// Rewrites the loop `l` (see the module documentation).
fn pipeline(f: &mut Function, l: OpId, body: BlockId, operands: &[Operand]) {
    let mut wgmma = wgmma_dots(f, body, operands);
    // Without `wgmma`, a transposed operand of a loop with more than two `dot`s is left to its
    // conversion: attention's backward loop (four products) spilled on sm_80 with the extra
    // rings. Its forward (two) takes them: with the operands read a `K` step at a time (the
    // lowering's `plan_sliced_reads`), 128 × 64 blocks at head dimension 128 fit in 252
    // registers where the conversion's 32 scalar stores and their addresses spilled.
    let dots = f.blocks[body.index()]
        .ops
        .iter()
        .filter(|&&o| matches!(f.op(o).kind, OpKind::Dot { .. }))
        .count();
    // A tile that also feeds a transposed operand left out keeps its load for that one, and
    // its ring for the others.
    let left = |o: &Operand| o.trans.is_some() && dots > 2;
    let kept: Vec<Operand>;
    let operands = if wgmma.is_none() && operands.iter().any(left) {
        kept = operands.iter().filter(|o| !left(o)).cloned().collect();
        wgmma = wgmma_dots(f, body, &kept);
        if kept.is_empty() {
            return;
        }
        &kept[..]
    } else {
        operands
    };
    // With `wgmma`, the group of the last iteration may still read its stage while this one's
    // runs (when a loop's only `dot` has an accumulator that only flows to the next iteration):
    // the copies then run one stage less ahead, so that they never write a stage a group in
    // flight reads.
    let keeps_group = match wgmma.as_deref() {
        Some(&[(dot, _, _)]) => {
            let r = f.op(dot).results[0];
            let uses = use_counts(f);
            let yield_op = f.blocks[body.index()].ops.last().copied();
            let yielded = yield_op.is_some_and(|y| {
                matches!(f.op(y).kind, OpKind::Yield)
                    && f.op(y).operands.iter().filter(|&&v| v == r).count() == 1
            });
            yielded && uses.get(&r).copied() == Some(1)
        }
        Some(dots) => dots
            .iter()
            .any(|&(dot, _, _)| carried_only(f, body, dot).is_some()),
        None => false,
    };
    // One ring per loaded tile: `rings` holds the first operand of each, `ring_of` each
    // operand's ring (several operands share one where a tile feeds several `dot`s).
    let mut rings: Vec<usize> = Vec::new();
    let ring_of: Vec<usize> = operands
        .iter()
        .enumerate()
        .map(|(i, o)| {
            rings
                .iter()
                .position(|&r| operands[r].load == o.load)
                .unwrap_or_else(|| {
                    rings.push(i);
                    rings.len() - 1
                })
        })
        .collect();
    let ring_ops: Vec<Operand> = rings.iter().map(|&r| operands[r].clone()).collect();
    let s = stages(f, &ring_ops, wgmma.is_some(), keeps_group);
    // Rings filled by the tensor memory accelerator (`tma_loads` chose every operand of the
    // loop, and the loop runs on `wgmma`, or none).
    let tma = operands.iter().any(|o| o.tma.is_some());
    if tma && (wgmma.is_none() || operands.iter().any(|o| o.tma.is_none())) {
        panic!("pipeline-dot: a loop's descriptor loads were kept for the copy engine, but the loop does not run on `wgmma` with every operand from a descriptor");
    }
    // A `wgmma` reads `A` from registers while it runs, and PTX leaves it undefined to write
    // them before a wait retires the group: the loop's next iteration writes the same registers
    // when it computes its `A`. So a `dot` whose register `A` the loop computes anew must be
    // retired before that: a loop's only `dot` is waited for right after it is issued (found by
    // differential testing: `dot(a as f32 * 0.5 as f16, b)` summed the next iteration's operand
    // from the second iteration on), and one of several is where no wait for all groups
    // (attention's wait for `S`) comes between it and its next operand ([`retire_fresh_a`]).
    let fresh_a = |f: &Function, dot: OpId, a: Option<usize>| {
        a.is_none() && computed_in_loop(f, body, f.op(dot).operands[0])
    };
    let single_fresh = wgmma
        .as_ref()
        .is_some_and(|d| d.len() == 1 && fresh_a(f, d[0].0, d[0].1));
    let in_flight = u32::from(keeps_group && s >= 3 && !single_fresh);
    let ahead_by = s - 1 - in_flight;
    let (lb, ub, step) = {
        let d = f.op(l);
        (d.operands[0], d.operands[1], d.operands[2])
    };
    let outer = f.op(l).block;
    let Some(at) = f.blocks[outer.index()].ops.iter().position(|&o| o == l) else {
        return;
    };
    let mut pre = Builder { block: outer, at };

    // Buffers, one per ring, and the prologue's S − 1 stages.
    let bufs: Vec<ValueId> = ring_ops
        .iter()
        .map(|o| {
            let t = f.ty(f.op(o.load).results[0]).clone();
            let (r, c) = (t.shape[0], t.shape[1]);
            let elem = t.elem;
            let bytes = t.dtype().map_or(2, |d| d.size_bytes());
            // A tf32 `B` operand is read one 4-byte element per register, 8 columns from each of
            // 4 rows at once: 32-byte chunks keep those reads free of bank conflicts.
            let operand_b = matches!(
                &f.ty(f.op(o.conv).results[0]).layout,
                Some(Layout::DotOperand(d)) if d.op_idx == 1
            );
            let swizzle = if wgmma.is_some() {
                SharedLayout::wgmma(c, bytes)
            } else if bytes == 4 && operand_b {
                SharedLayout::swizzled_wide(c, bytes)
            } else {
                SharedLayout::swizzled(c, bytes)
            };
            let ty = Type {
                elem,
                shape: vec![s, r, c],
                layout: Some(Layout::Shared(swizzle)),
            };
            pre.val(f, OpKind::LocalAlloc, vec![], ty)
        })
        .collect();
    // Loads no `dot` reads, each through a ring of its own read back in the layout it was
    // loaded in, filled by `cp.async` (also where the copy engine fills the operands' rings).
    // Not in a loop of several `dot`s on `mma.sync`, which holds their accumulators and operand
    // fragments in registers: attention's bias kernel spilled 12–16 bytes on sm_80 with the
    // ring's addresses added, where on `wgmma` (operands read from shared memory) it fits.
    let operand_bytes = ring_stage_bytes(f, &ring_ops);
    let mut sides = if wgmma.is_some() || dots == 1 {
        side_loads(f, body, &ring_ops, s, operand_bytes, side_budget(f.target))
    } else {
        Vec::new()
    };
    // Copies in a coalesced layout where that moves more bytes per instruction (axis facts of
    // the kernel as it stands, before this loop's rewrite).
    if !sides.is_empty() {
        let info = crate::analysis::axis_info::analyze(f);
        for side in &mut sides {
            side.relayout = side_relayout(f, side, &info, &mut pre);
        }
    }
    let side_bufs: Vec<ValueId> = sides
        .iter()
        .map(|o| {
            let t = f.ty(f.op(o.load).results[0]).clone();
            let bytes = t.dtype().map_or(2, |d| d.size_bytes());
            let ty = Type {
                elem: t.elem,
                shape: vec![s, t.shape[0], t.shape[1]],
                layout: Some(Layout::Shared(SharedLayout::swizzled(t.shape[1], bytes))),
            };
            pre.val(f, OpKind::LocalAlloc, vec![], ty)
        })
        .collect();
    let iv = f.blocks[body.index()].args[0];
    // With the copy engine: one barrier object per stage, which the stage's copies complete.
    let stage_bytes: u64 = ring_ops
        .iter()
        .map(|o| {
            let t = f.ty(f.op(o.load).results[0]);
            t.numel() * u64::from(t.dtype().map_or(2, |d| d.size_bytes()))
        })
        .sum();
    let bars = tma.then(|| {
        let ty = Type {
            elem: Elem::Scalar(DType::I64),
            // 16 bytes a stage (the smallest swizzle chunk a buffer has), the first 8 the object.
            shape: vec![s, 1, 2],
            layout: Some(Layout::Shared(SharedLayout {
                vec: 2,
                per_phase: 1,
                max_phase: 1,
                block: 0,
            })),
        };
        let bars = pre.val(f, OpKind::LocalAlloc, vec![], ty);
        pre.op(f, OpKind::MbarrierInit, vec![bars], vec![]);
        pre.op(f, OpKind::Barrier, vec![], vec![]);
        bars
    });
    // `A` tiles from before the loop that `wgmma` reads from shared memory: one stage each,
    // copied before the ring's prologue (the oldest group, so the loop's first wait completes
    // it; with the copy engine, waited for after the prologue).
    let mut a_bufs: HashMap<OpId, ValueId> = HashMap::new();
    let mut staged_loads: HashMap<OpId, (ValueId, OpId)> = HashMap::new();
    for &(dot, a, _) in wgmma.iter().flatten() {
        if a.is_some() {
            continue;
        }
        let Some((load, conv)) = staged_a(f, body, dot) else {
            continue;
        };
        if let Some(&(buf, _)) = staged_loads.get(&load) {
            a_bufs.insert(dot, buf);
            continue;
        }
        let t = f.ty(f.op(load).results[0]).clone();
        let bytes = t.dtype().map_or(2, |d| d.size_bytes());
        let ty = Type {
            elem: t.elem,
            shape: vec![1, t.shape[0], t.shape[1]],
            layout: Some(Layout::Shared(SharedLayout::wgmma(t.shape[1], bytes))),
        };
        let buf = pre.val(f, OpKind::LocalAlloc, vec![], ty);
        let ld = f.op(load).clone();
        let OpKind::Load { vec, .. } = ld.kind else {
            continue;
        };
        let stage = pre.int(f, 0, DType::I32);
        let mask = ld.operands.get(1).copied();
        pre.async_copy(f, vec, ld.operands[0], mask, buf, stage);
        pre.op(f, OpKind::AsyncCommit, vec![], vec![]);
        staged_loads.insert(load, (buf, conv));
        a_bufs.insert(dot, buf);
    }
    for k in 0..ahead_by {
        let stage = pre.int(f, i64::from(k), DType::I32);
        let k_steps = pre.i32_op(f, BinOp::Mul, stage, step);
        let iv_k = pre.i32_op(f, BinOp::Add, lb, k_steps);
        let zero = pre.int(f, 0, DType::I32);
        let inside = pre.in_range(f, iv_k, zero, ub);
        if let Some(bars) = bars {
            let fill = TmaFill {
                bars,
                stage,
                pred: inside,
                bytes: stage_bytes as u32,
            };
            pre.tma_fill(f, &ring_ops, &bufs, iv, iv_k, fill);
            if !sides.is_empty() {
                for (o, &buf) in sides.iter().zip(&side_bufs) {
                    pre.copy(f, o.fetch(), iv, iv_k, Some(inside), buf, stage);
                }
                pre.op(f, OpKind::AsyncCommit, vec![], vec![]);
            }
            continue;
        }
        for (o, &buf) in ring_ops.iter().zip(&bufs) {
            pre.copy(f, o.fetch(), iv, iv_k, Some(inside), buf, stage);
        }
        for (o, &buf) in sides.iter().zip(&side_bufs) {
            pre.copy(f, o.fetch(), iv, iv_k, Some(inside), buf, stage);
        }
        pre.op(f, OpKind::AsyncCommit, vec![], vec![]);
    }
    if tma && !a_bufs.is_empty() {
        pre.op(f, OpKind::AsyncWait { pending: 0 }, vec![], vec![]);
        pre.op(f, OpKind::FenceAsyncShared, vec![], vec![]);
        pre.op(f, OpKind::Barrier, vec![], vec![]);
    }
    let ahead_stages = pre.int(f, i64::from(ahead_by), DType::I32);
    let ahead = pre.i32_op(f, BinOp::Mul, ahead_stages, step);
    let read0 = pre.int(f, 0, DType::I32);
    let s_val = pre.int(f, i64::from(s), DType::I32);
    let one = pre.int(f, 1, DType::I32);

    // The loop carries the stage to read and the stage to write.
    let i32t = Type::scalar(DType::I32);
    f.ops[l.index()].operands.push(read0);
    f.ops[l.index()].operands.push(ahead_stages);
    let read = f.add_block_arg(body, i32t.clone());
    let write = f.add_block_arg(body, i32t.clone());
    f.add_result(l, i32t.clone());
    f.add_result(l, i32t.clone());
    // With the copy engine, also the parity of the phase the stage read next completes.
    let phase = bars.map(|_| {
        f.ops[l.index()].operands.push(read0);
        f.add_result(l, i32t.clone());
        f.add_block_arg(body, i32t.clone())
    });

    // The body's head: wait, barrier, the copy S − 1 iterations ahead (S − 2 with a `wgmma`
    // group in flight). `wgmma` reads through the async proxy: each thread's copies are fenced
    // before the barrier. Past the loop's end the copy reads iteration `iv`'s tile again, into
    // a stage no one reads: no bound test in the copies' masks (it cost an instruction or two per
    // copy, as predicates are scarce), and nothing read that the loop does not read.
    let mut head = Builder { block: body, at: 0 };
    if let (Some(bars), Some(phase)) = (bars, phase) {
        // Everyone is done with the stage written next (read by the group waited for last
        // iteration); one thread issues its copies, predicated on there being an iteration to
        // fetch (a scalar test, unlike `cp.async`'s per-element masks); then every thread waits
        // for the stage it reads. The side rings' `cp.async` groups count as without the copy
        // engine: this iteration's is complete before the barrier that makes it visible.
        if !sides.is_empty() {
            let pending = ahead_by - 1;
            head.op(f, OpKind::AsyncWait { pending }, vec![], vec![]);
        }
        head.op(f, OpKind::Barrier, vec![], vec![]);
        let ahead_iv = head.i32_op(f, BinOp::Add, iv, ahead);
        let inside = head.in_range(f, iv, ahead, ub);
        let fill = TmaFill {
            bars,
            stage: write,
            pred: inside,
            bytes: stage_bytes as u32,
        };
        head.tma_fill(f, &ring_ops, &bufs, iv, ahead_iv, fill);
        if !sides.is_empty() {
            let next_iv = head.val(
                f,
                OpKind::Select,
                vec![inside, ahead_iv, iv],
                Type::scalar(DType::I32),
            );
            for (o, &buf) in sides.iter().zip(&side_bufs) {
                head.copy(f, o.fetch(), iv, next_iv, None, buf, write);
            }
            head.op(f, OpKind::AsyncCommit, vec![], vec![]);
        }
        head.op(f, OpKind::MbarrierWait, vec![bars, read, phase], vec![]);
    } else {
        head.op(
            f,
            OpKind::AsyncWait {
                pending: ahead_by - 1,
            },
            vec![],
            vec![],
        );
        if wgmma.is_some() {
            head.op(f, OpKind::FenceAsyncShared, vec![], vec![]);
        }
        head.op(f, OpKind::Barrier, vec![], vec![]);
        let ahead_iv = head.i32_op(f, BinOp::Add, iv, ahead);
        let inside = head.in_range(f, iv, ahead, ub);
        let next_iv = head.val(
            f,
            OpKind::Select,
            vec![inside, ahead_iv, iv],
            Type::scalar(DType::I32),
        );
        for (o, &buf) in ring_ops.iter().zip(&bufs) {
            head.copy(f, o.fetch(), iv, next_iv, None, buf, write);
        }
        for (o, &buf) in sides.iter().zip(&side_bufs) {
            head.copy(f, o.fetch(), iv, next_iv, None, buf, write);
        }
        head.op(f, OpKind::AsyncCommit, vec![], vec![]);
    }

    // A `wgmma` `dot` reads its stages (and `A` from registers, where it is not pipelined) where
    // it is; its result is waited for: right after it when the loop has one `dot`, else where it
    // is first used ([`place_waits`]).
    let several = wgmma.as_ref().is_some_and(|d| d.len() > 1);
    let mut issued = Vec::new();
    let mut fresh = Vec::new();
    let mut waited = None;
    for &(dot, a, b) in wgmma.iter().flatten() {
        let d = f.op(dot).clone();
        let acc_ty = f.ty(d.results[0]).clone();
        let Some(pos) = f.blocks[body.index()].ops.iter().position(|&x| x == dot) else {
            continue;
        };
        let mut at = Builder {
            block: body,
            at: pos,
        };
        let mut args = match (a, a_bufs.get(&dot)) {
            (Some(a), _) => vec![bufs[ring_of[a]], read],
            (None, Some(&buf)) => vec![buf, at.int(f, 0, DType::I32)],
            (None, None) => vec![d.operands[0]],
        };
        args.extend([bufs[ring_of[b]], read, d.operands[2]]);
        let trans_a = a.is_some_and(|a| operands[a].trans.is_some());
        let trans_b = operands[b].trans.is_some();
        let kind = OpKind::WarpGroupDot { trans_a, trans_b };
        let r = at.val(f, kind, args, acc_ty.clone());
        if several {
            if fresh_a(f, dot, a) {
                fresh.push((r, d.operands[0]));
            }
            f.replace_all_uses(d.results[0], r);
            f.detach(dot);
            issued.push(r);
            continue;
        }
        let w = at.val(
            f,
            OpKind::WarpGroupWait { pending: in_flight },
            vec![r],
            acc_ty,
        );
        f.replace_all_uses(d.results[0], w);
        f.detach(dot);
        waited = Some(w);
    }
    let deferred = place_waits(f, body, &issued, in_flight > 0);
    for (r, a) in fresh {
        retire_fresh_a(f, body, r, a);
    }
    // The staged `A` tiles' loads and conversions have no use left.
    for (&load, &(_, conv)) in &staged_loads {
        f.detach(conv);
        f.detach(load);
    }
    if wgmma.is_some() {
        for o in operands {
            f.detach(o.conv);
            if let Some(t) = o.trans {
                f.detach(t);
            }
            f.detach(o.load);
        }
    }

    // Each conversion becomes a read of the current stage.
    for (i, o) in operands.iter().enumerate() {
        if wgmma.is_some() {
            break;
        }
        let buf = bufs[ring_of[i]];
        let conv_ty = f.ty(f.op(o.conv).results[0]).clone();
        let Some(pos) = f.blocks[body.index()].ops.iter().position(|&x| x == o.conv) else {
            continue;
        };
        let mut b = Builder {
            block: body,
            at: pos,
        };
        let t = b.val(
            f,
            OpKind::LocalLoad {
                offset: [0, 0],
                trans: o.trans.is_some(),
            },
            vec![buf, read],
            conv_ty,
        );
        let old = f.op(o.conv).results[0];
        f.replace_all_uses(old, t);
        f.detach(o.conv);
        if let Some(tr) = o.trans {
            f.detach(tr);
        }
    }
    // The loads read through rings, unless a conversion left out still reads the tile.
    if wgmma.is_none() {
        for o in &ring_ops {
            let x = f.op(o.load).results[0];
            let read = f.blocks[body.index()]
                .ops
                .iter()
                .any(|&u| f.op(u).operands.contains(&x));
            if !read {
                f.detach(o.load);
            }
        }
    }

    // Each side load becomes a read of the current stage of its ring, in its own layout.
    for (o, &buf) in sides.iter().zip(&side_bufs) {
        let old = f.op(o.load).results[0];
        let ty = f.ty(old).clone();
        let Some(pos) = f.blocks[body.index()].ops.iter().position(|&x| x == o.load) else {
            continue;
        };
        let mut b = Builder {
            block: body,
            at: pos,
        };
        let kind = OpKind::LocalLoad {
            offset: [0, 0],
            trans: false,
        };
        let t = b.val(f, kind, vec![buf, read], ty);
        f.replace_all_uses(old, t);
        f.detach(o.load);
    }

    // The next stages, yielded.
    let Some(&y) = f.blocks[body.index()].ops.last() else {
        return;
    };
    let end = f.blocks[body.index()].ops.len() - 1;
    let mut tail = Builder {
        block: body,
        at: end,
    };
    let read_next = tail.next_stage(f, read, one, s_val);
    let write_next = tail.next_stage(f, write, one, s_val);
    // The parity flips each time the stage read wraps around to 0.
    let phase_next = phase.map(|p| {
        let zero = tail.int(f, 0, DType::I32);
        let wrapped = tail.val(
            f,
            OpKind::Cmp(CmpPred::Eq),
            vec![read_next, zero],
            Type::scalar(DType::I1),
        );
        let flipped = tail.i32_op(f, BinOp::Sub, one, p);
        tail.val(
            f,
            OpKind::Select,
            vec![wrapped, flipped, p],
            Type::scalar(DType::I32),
        )
    });
    if matches!(f.op(y).kind, OpKind::Yield) {
        f.ops[y.index()].operands.push(read_next);
        f.ops[y.index()].operands.push(write_next);
        f.ops[y.index()].operands.extend(phase_next);
    }

    // After the loop: no copy in flight.
    let Some(at) = f.blocks[outer.index()].ops.iter().position(|&o| o == l) else {
        return;
    };
    let mut post = Builder {
        block: outer,
        at: at + 1,
    };
    // The accumulator of a group left in flight, complete.
    let yielded = f.blocks[body.index()]
        .ops
        .last()
        .map(|&y| f.op(y).operands.clone())
        .unwrap_or_default();
    let mut finish: Vec<usize> = deferred;
    if let Some(j) = waited
        .filter(|_| in_flight > 0)
        .and_then(|w| yielded.iter().position(|&v| v == w))
    {
        finish.push(j);
    }
    for j in finish {
        let res = f.op(l).results[j];
        let ty = f.ty(res).clone();
        let done = post.op(f, OpKind::WarpGroupWait { pending: 0 }, vec![res], vec![ty]);
        let complete = f.op(done).results[0];
        f.replace_all_uses(res, complete);
        f.ops[done.index()].operands[0] = res;
    }
    match bars {
        // Every copy issued was waited for in the loop; once every thread is past its last
        // wait, the barrier objects end, and their bytes may serve other data after a barrier.
        Some(bars) => {
            if !sides.is_empty() {
                post.op(f, OpKind::AsyncWait { pending: 0 }, vec![], vec![]);
            }
            post.op(f, OpKind::Barrier, vec![], vec![]);
            post.op(f, OpKind::MbarrierInval, vec![bars], vec![]);
            post.op(f, OpKind::Barrier, vec![], vec![]);
        }
        None => {
            post.op(f, OpKind::AsyncWait { pending: 0 }, vec![], vec![]);
        }
    }
}
