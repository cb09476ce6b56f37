//! `assign-layouts`: the step from the tile level to the GPU level. Every tensor type gets a
//! layout.
//!
//! **Kernels of 1-D tiles.** All tensors of one shape share one blocked layout, chosen for
//! coalesced, wide memory accesses: each thread holds `spt` consecutive elements, where `spt` is the
//! widest access any load or store of the kernel may make (see [`super::vectorize::access_width`]),
//! capped so that the `32 × num_warps` threads do not outnumber the tile's elements when that can
//! be avoided. Consecutive lanes hold consecutive chunks, so a warp's access covers `32 × spt`
//! contiguous elements.
//!
//! **Kernels with 2-D tiles.** Every 2-D tensor shares one blocked layout (row-major order), chosen
//! from the largest 2-D tile: `spt` elements along the rows as above, then lanes, then warps along
//! the rows as far as a row reaches, the rest down the columns. A 1-D tensor takes the 2-D layout
//! sliced at the dimension it is expanded along (`expand_dims`) or reduced from (`reduce`), so
//! neither moves data; 1-D tensors that are neither keep the 1-D layout of their shape.
//!
//! Operands and results of element-wise ops (and of loads, stores, `broadcast`) must share a layout,
//! as must a `gather`'s index and result (its source keeps whatever layout its own class takes),
//! so the pass works on classes of values joined by those ops. Before joining, an `arange` or a
//! `splat` used by several ops is copied for each further user, so that `arange(0, B)` can be both a
//! row index and a column index without a conversion. A class that still needs two layouts takes
//! the first it meets in program order; at each other site a `convert_layout` is inserted (before an
//! `expand_dims`, after a `reduce`).
//!
//! A tile loaded for a tensor-core `dot` is staged through shared memory, so for those loads the
//! width that counts is the run of consecutive addresses ([`super::vectorize::run_width`]), not
//! the aligned access: with unknown alignment a thread then still holds 8-element runs, each
//! addressed from one pointer, instead of 8 scattered elements with a pointer each.

use tile_core::ir::{BlockedLayout, DType, Function, Layout, OpId, OpKind, Type, ValueId};

use super::vectorize::{access_width, run_width};
use crate::analysis::axis_info::analyze;

/// Runs the pass on a tile-level kernel.
pub fn run(f: &mut Function) {
    let widest = widest_access(f);
    let threads = 32 * f.num_warps;
    // A kernel of 1-D tiles has one layout per class of values, for its largest tile (which is
    // every tile's but where a 1-element tile is broadcast); no index op needs two layouts.
    if f.values.iter().any(|v| v.ty.shape.len() == 2) {
        split_shared_leaves(f);
    }
    let (mut classes, stores) = join_classes(f);
    coalesced_stores(f, &mut classes, &stores);
    let tensor_core_dots = choose_layouts(f, &mut classes, widest, threads);
    // Sites whose class took another layout get a conversion.
    insert_conversions(f, widest, threads);
    // Tensor-core dots read their operands in the mma operand layouts.
    for op in tensor_core_dots {
        super::accelerate_dot::convert_operands(f, op);
    }
}

/// The widest access in elements that any load or store of `f` may make (for a tensor-core
/// `dot`'s operand loads, the run of consecutive addresses), at least 1.
fn widest_access(f: &Function) -> u32 {
    let info = analyze(f);
    let operand_loads = tensor_core_operand_loads(f);
    f.walk()
        .into_iter()
        .map(|op| {
            if operand_loads.contains(&op) {
                run_width(f, &info, op)
            } else {
                access_width(f, &info, op)
            }
        })
        .max()
        .unwrap_or(1)
        .max(1)
}

/// The classes of values that must share a layout (operands and results of the ops that keep
/// one, a loop's carried values, an `if`'s results and what its branches yield, a store's
/// pointer and mask), and the stores, whose values join in [`coalesced_stores`].
fn join_classes(f: &Function) -> (Classes, Vec<OpId>) {
    let mut classes = Classes::new(f.values.len());
    let mut stores = Vec::new();
    for op in f.walk() {
        let d = f.op(op);
        let joined = match d.kind {
            // Scans compute in a layout of their own (see `scan_layout`).
            OpKind::Scan { .. } | OpKind::AssociativeScan { .. } => false,
            // The result has the index's layout; the source keeps its class's, whatever it is
            // (the lowering reads it through shared memory).
            OpKind::Gather { .. } => {
                classes.join(d.operands[1], d.results[0]);
                false
            }
            // The two halves of an `interleave` or `deinterleave` share a layout; the other side
            // takes theirs derived (see `derived`).
            OpKind::Interleave => {
                classes.join(d.operands[0], d.operands[1]);
                false
            }
            OpKind::Deinterleave => {
                classes.join(d.results[0], d.results[1]);
                false
            }
            OpKind::For | OpKind::While => {
                // Each carried value: its initial value, the regions' arguments, the yielded
                // value and the result share a layout.
                for vs in f.loop_carried(op) {
                    if f.ty(vs[0]).is_tensor() {
                        for &other in &vs[1..] {
                            classes.join(vs[0], other);
                        }
                    }
                }
                false
            }
            // The pointer and mask share a layout; the value joins them in `coalesced_stores`
            // unless it is a tensor-core `dot`'s result.
            OpKind::Store { .. } => {
                let ptr = d.operands[0];
                if let Some(&m) = d.operands.get(2) {
                    if f.ty(ptr).is_tensor() && f.ty(m).is_tensor() {
                        classes.join(ptr, m);
                    }
                }
                stores.push(op);
                false
            }
            OpKind::If => {
                // Each result and what both branches yield for it share a layout.
                for &r in &d.regions {
                    for &b in &f.regions[r.index()].blocks {
                        if let Some(&y) = f.blocks[b.index()].ops.last() {
                            for (&res, &v) in d.results.iter().zip(&f.op(y).operands) {
                                if f.ty(res).is_tensor() {
                                    classes.join(res, v);
                                }
                            }
                        }
                    }
                }
                false
            }
            // The one layout of an op's tensors (`OpKind::keeps_layout`); a `dot`'s operands and
            // result are 2-D, so they have the one 2-D layout anyway, and shared memory comes
            // after layout assignment.
            ref kind => kind.keeps_layout(),
        };
        if joined {
            let tensors: Vec<ValueId> = d
                .operands
                .iter()
                .chain(&d.results)
                .copied()
                .filter(|&v| f.ty(v).is_tensor())
                .collect();
            for w in tensors.windows(2) {
                classes.join(w[0], w[1]);
            }
        }
    }
    (classes, stores)
}

/// Gives every tensor of `f` its class's layout: a tensor-core `dot`'s result (with its
/// accumulator) an mma layout, a 1-D class the slice of the 2-D layout it is first expanded to or
/// reduced from, every other class the blocked layout of its largest tile. Returns the
/// tensor-core `dot`s.
fn choose_layouts(f: &mut Function, classes: &mut Classes, widest: u32, threads: u32) -> Vec<OpId> {
    // 2-D classes: a tensor-core `dot`'s result (with its accumulator, joined to it) takes an mma
    // layout; every other 2-D class the one blocked layout.
    let mut wanted: Vec<Option<Layout>> = vec![None; f.values.len()];
    let mut tensor_core_dots = Vec::new();
    for op in f.walk() {
        let d = f.op(op);
        if !matches!(d.kind, OpKind::Dot { .. }) {
            continue;
        }
        let (acc, r) = (d.operands[2], d.results[0]);
        classes.join(acc, r);
        let Some(mma) = super::accelerate_dot::mma_layout_of(f, op) else {
            continue;
        };
        let root = classes.root(r);
        wanted[root].get_or_insert(Layout::Mma(mma));
        tensor_core_dots.push(op);
    }
    // Every other class: the blocked layout for its largest tile (a 1-element tile broadcast to
    // 256 elements takes the 256-element layout, as `broadcast` keeps the layout).
    let mut largest: Vec<Option<Vec<u32>>> = vec![None; f.values.len()];
    for i in 0..f.values.len() {
        let shape = &f.values[i].ty.shape;
        if f.values[i].ty.is_tensor() {
            let root = classes.root(ValueId(i as u32));
            let numel = |s: &[u32]| s.iter().map(|&d| u64::from(d)).product::<u64>();
            if largest[root]
                .as_ref()
                .is_none_or(|l| numel(shape) > numel(l))
            {
                largest[root] = Some(shape.clone());
            }
        }
    }
    // A 2-D class that a scan reads or writes, at the scan's shape, computes in the scan's own
    // layout: the scan then needs no conversion in or out (a recurrence scanned in a loop would
    // otherwise cross shared memory four times an iteration). First scan first.
    for op in f.walk() {
        let d = f.op(op);
        let axis = match d.kind {
            OpKind::Scan { axis, .. } | OpKind::AssociativeScan { axis, .. } => axis,
            _ => continue,
        };
        let shape = &f.ty(d.operands[0]).shape;
        if shape.len() != 2 {
            continue;
        }
        let own = Layout::Blocked(scan_layout(shape, axis, f.num_warps));
        for &v in d.operands.iter().chain(&d.results) {
            let root = classes.root(v);
            if largest[root].as_ref() == Some(shape) {
                wanted[root].get_or_insert(own.clone());
            }
        }
    }
    // A smaller 2-D class reduced into a vector that is expanded back into a scan's class (a
    // per-row state kept beside the scanned tiles: `select(col, h, 0).sum(1).expand_dims(1)`)
    // takes the scan's thread arrangement with fewer registers, so that both vectors are the same
    // slice and move between them without shared memory.
    for op in f.walk() {
        let d = f.op(op);
        let (axis, v) = match d.kind {
            OpKind::Reduce { axis, .. } if f.ty(d.operands[0]).shape.len() == 2 => {
                (axis, d.operands[0])
            }
            _ => continue,
        };
        let vector = classes.root(d.results[0]);
        let target = f.walk().into_iter().find_map(|e| {
            let ed = f.op(e);
            match ed.kind {
                OpKind::ExpandDims { axis: a }
                    if a == axis && classes.root(ed.operands[0]) == vector =>
                {
                    match &wanted[classes.root(ed.results[0])] {
                        Some(Layout::Blocked(b)) => Some(b.clone()),
                        _ => None,
                    }
                }
                _ => None,
            }
        });
        let root = classes.root(v);
        let (Some(b), Some(shape)) = (target, largest[root].clone()) else {
            continue;
        };
        if wanted[root].is_some() {
            continue;
        }
        if let Some(fit) = resized(&b, &shape) {
            wanted[root] = Some(Layout::Blocked(fit));
        }
    }
    // A 2-D class computed from indices alone (`computed_only`: counters, random bits) whose
    // values reach a class with a layout through `trans`, `reshape` or `interleave` takes the
    // layout that makes those ops move nothing: the consumer's, derived backward (`underived`),
    // last op first, so that a chain of them is derived from its end. (Attention's dropout
    // places the words of each Philox call where an mma accumulator holds its scores.)
    let computed = computed_only(f, classes);
    for op in f.walk().into_iter().rev() {
        let d = f.op(op);
        if !matches!(d.kind, OpKind::Trans | OpKind::Reshape | OpKind::Interleave) {
            continue;
        }
        let (v, r) = (d.operands[0], d.results[0]);
        let (from, to) = (&f.ty(v).shape, &f.ty(r).shape);
        if from.len() != 2 || to.len() != 2 {
            continue;
        }
        let (root, operand_root) = (classes.root(r), classes.root(v));
        if wanted[operand_root].is_some()
            || !computed[operand_root]
            || largest[operand_root].as_ref() != Some(from)
        {
            continue;
        }
        let Some(result) = wanted[root].clone() else {
            continue;
        };
        if let Some(want) = underived(&d.kind, &result, from, to).filter(|w| w.linear(from).is_ok())
        {
            wanted[operand_root] = Some(want);
        }
    }
    let layout_2d = |classes: &mut Classes, wanted: &[Option<Layout>], v: ValueId| {
        let root = classes.root(v);
        wanted[root].clone().unwrap_or_else(|| {
            let shape = largest[root].clone().unwrap_or_else(|| vec![1, 1]);
            Layout::Blocked(default_layout(&shape, widest, threads, f.num_warps))
        })
    };
    // What each class of 1-D values is asked for, first request first: the slice of the 2-D
    // layout it is expanded to or reduced from. A `trans` or `reshape` asks for its operand's
    // layout transposed or relabeled, an `interleave` or `deinterleave` for its operands'
    // interleaved or its operand's split (`derived`): of a 2-D operand in a first walk, so that
    // a 1-D class expanded into the result's class takes the slice of the derived layout, not
    // of the default one, wherever it comes in program order; of a 1-D operand in the walk of
    // the slices, whose requests its operand's layout may depend on.
    let numel = |s: &[u32]| s.iter().map(|&d| u64::from(d)).product::<u64>();
    for early in [true, false] {
        for op in f.walk() {
            let d = f.op(op);
            let derives = matches!(
                d.kind,
                OpKind::Trans | OpKind::Reshape | OpKind::Interleave | OpKind::Deinterleave
            );
            if early && !(derives && f.ty(d.operands[0]).shape.len() == 2) {
                continue;
            }
            if derives {
                let (v, r) = (d.operands[0], d.results[0]);
                let (root, operand_root) = (classes.root(r), classes.root(v));
                let operand = if f.ty(v).shape.len() == 2 {
                    layout_2d(classes, &wanted, v)
                } else {
                    wanted[operand_root].clone().unwrap_or_else(|| {
                        let shape = largest[operand_root].as_deref().unwrap_or(&f.ty(v).shape);
                        Layout::Blocked(default_layout(shape, widest, threads, f.num_warps))
                    })
                };
                let want = derived(&d.kind, &operand, &f.ty(v).shape, &f.ty(r).shape);
                // Only a layout that covers every tile of the class (a derived linear layout is
                // written for the result's shape; a larger tile broadcast from it converts).
                let class_shape = largest[root]
                    .clone()
                    .unwrap_or_else(|| f.ty(r).shape.clone());
                if let Some(want) = want.filter(|w| w.linear(&class_shape).is_ok()) {
                    wanted[root].get_or_insert(want);
                }
                continue;
            }
            let (v, full, axis) = match d.kind {
                OpKind::ExpandDims { axis } if f.ty(d.results[0]).shape.len() == 2 => {
                    (d.operands[0], d.results[0], axis)
                }
                OpKind::Reduce { axis, .. } if f.ty(d.operands[0]).shape.len() == 2 => {
                    (d.results[0], d.operands[0], axis)
                }
                _ => continue,
            };
            let root = classes.root(v);
            // A class whose tiles are longer than the 2-D tile's kept dimension (a `[1]` reduced
            // from `[1, 1]` and broadcast to `[1024]`) would be replicated in every thread by the
            // slice: it keeps its own layout, and the site converts.
            let kept = f.ty(full).shape[1 - axis as usize];
            if largest[root]
                .as_deref()
                .is_some_and(|l| numel(l) > u64::from(kept))
            {
                continue;
            }
            let want = layout_2d(classes, &wanted, full).sliced(axis);
            wanted[root].get_or_insert(want);
        }
    }
    for i in 0..f.values.len() {
        let ty = &f.values[i].ty;
        if !ty.is_tensor() {
            continue;
        }
        let v = ValueId(i as u32);
        let layout = if ty.shape.len() == 2 {
            layout_2d(classes, &wanted, v)
        } else {
            let root = classes.root(v);
            wanted[root].clone().unwrap_or_else(|| {
                let shape = largest[root].as_deref().unwrap_or(&ty.shape);
                Layout::Blocked(default_layout(shape, widest, threads, f.num_warps))
            })
        };
        f.values[i].ty.layout = Some(layout);
    }
    tensor_core_dots
}

/// A `convert_layout` at each site whose class took another layout than the op needs: before an
/// `expand_dims` or a store, after a 2-D `reduce`, into and out of a scan's own layout, and
/// around an FMA `dot` whose result joined a tensor-core `dot`'s class.
fn insert_conversions(f: &mut Function, widest: u32, threads: u32) {
    for op in f.walk() {
        let d = f.op(op).clone();
        let block = d.block;
        let pos = || f.blocks[block.index()].ops.iter().position(|&o| o == op);
        match d.kind {
            OpKind::ExpandDims { axis } => {
                let v = d.operands[0];
                let Some(want) = f.ty(d.results[0]).layout.as_ref().map(|l| l.sliced(axis)) else {
                    continue;
                };
                if f.ty(v).layout.as_ref() != Some(&want) {
                    let at = pos().unwrap_or(0);
                    convert_operand(f, block, at, op, 0, want);
                }
            }
            OpKind::Reduce { axis, .. } if f.ty(d.operands[0]).shape.len() == 2 => {
                let r = d.results[0];
                let Some(natural) = f.ty(d.operands[0]).layout.as_ref().map(|l| l.sliced(axis))
                else {
                    continue;
                };
                if f.ty(r).layout.as_ref() != Some(&natural) {
                    let at = pos().map_or(0, |p| p + 1);
                    convert_result(f, block, at, r, natural);
                }
            }
            // The operands convert to the halves of the result's layout where it holds each pair
            // in registers; else the result is interleaved where the operands are and converts.
            OpKind::Interleave => {
                let r = d.results[0];
                let (Some(have), Some(res)) =
                    (f.ty(d.operands[0]).layout.clone(), f.ty(r).layout.clone())
                else {
                    continue;
                };
                let (from, to) = (f.ty(d.operands[0]).shape.clone(), f.ty(r).shape.clone());
                let Ok(natural) = have.interleaved(&from) else {
                    continue;
                };
                if same_placement(&natural, &res, &to) {
                    continue;
                }
                if let Ok(want) = res.deinterleaved(&to) {
                    let at = pos().unwrap_or(0);
                    for i in 0..2 {
                        convert_operand(f, block, at + i, op, i, want.clone());
                    }
                } else {
                    let at = pos().map_or(0, |p| p + 1);
                    convert_result(f, block, at, r, natural);
                }
            }
            // The operand converts where its layout is not the one the result's layout derives
            // from (a class that took another layout first), so that no data moves in the op.
            OpKind::Trans | OpKind::Reshape | OpKind::Deinterleave => {
                let (v, r) = (d.operands[0], d.results[0]);
                let (Some(have), Some(res)) = (f.ty(v).layout.clone(), f.ty(r).layout.clone())
                else {
                    continue;
                };
                let (from, to) = (f.ty(v).shape.clone(), f.ty(r).shape.clone());
                // The inverse: a transpose's is a transpose, a reshape's the reshape back, and
                // a deinterleave's the interleave (which holds each pair in registers).
                let inverse = match d.kind {
                    OpKind::Deinterleave => res.interleaved(&to).ok(),
                    ref kind => derived(kind, &res, &to, &from),
                };
                let Some(want) = inverse else {
                    continue;
                };
                if !same_placement(&want, &have, &from) {
                    let at = pos().unwrap_or(0);
                    convert_operand(f, block, at, op, 0, want);
                }
            }
            // A tensor-core result stored through a blocked pointer tile converts to it.
            OpKind::Store { .. } => {
                let (ptr, v) = (d.operands[0], d.operands[1]);
                let Some(want) = f.ty(ptr).layout.clone() else {
                    continue;
                };
                if f.ty(v).is_tensor() && f.ty(v).layout.as_ref() != Some(&want) {
                    let at = pos().unwrap_or(0);
                    convert_operand(f, block, at, op, 1, want);
                }
            }
            // A scan computes in its own layout: the operands convert in, the results out.
            OpKind::Scan { axis, .. } | OpKind::AssociativeScan { axis, .. } => {
                let shape = f.ty(d.operands[0]).shape.clone();
                let own = Layout::Blocked(scan_layout(&shape, axis, f.num_warps));
                let mut at = pos().unwrap_or(0);
                for (i, &v) in d.operands.iter().enumerate() {
                    if f.ty(v).layout.as_ref() != Some(&own) {
                        convert_operand(f, block, at, op, i, own.clone());
                        at += 1;
                    }
                }
                let mut after = at + 1;
                for &r in &d.results {
                    let class_ty = f.ty(r).clone();
                    if class_ty.layout.as_ref() != Some(&own) {
                        f.values[r.index()].ty = with_layout(&class_ty, own.clone());
                        let conv = f.insert_op(
                            block,
                            after,
                            OpKind::ConvertLayout,
                            vec![r],
                            vec![class_ty],
                        );
                        let c = f.op(conv).results[0];
                        f.replace_all_uses(r, c);
                        f.ops[conv.index()].operands[0] = r;
                        after += 1;
                    }
                }
            }
            // An FMA `dot` whose result joined a tensor-core `dot`'s class (`max(dot_f16, dot_f32)`)
            // computes in a blocked layout: its accumulator converts in, its result out.
            OpKind::Dot { .. }
                if matches!(f.ty(d.results[0]).layout, Some(Layout::Mma(_)))
                    && super::accelerate_dot::mma_layout_of(f, op).is_none() =>
            {
                let (acc, r) = (d.operands[2], d.results[0]);
                let class_ty = f.ty(r).clone();
                let own = Layout::Blocked(default_layout(
                    &class_ty.shape,
                    widest,
                    threads,
                    f.num_warps,
                ));
                let at = f.blocks[block.index()]
                    .ops
                    .iter()
                    .position(|&o| o == op)
                    .unwrap_or(0);
                let acc_ty = with_layout(f.ty(acc), own.clone());
                let conv_in =
                    f.insert_op(block, at, OpKind::ConvertLayout, vec![acc], vec![acc_ty]);
                let c_in = f.op(conv_in).results[0];
                f.ops[op.index()].operands[2] = c_in;
                f.values[r.index()].ty = with_layout(&class_ty, own);
                let at = at + 2;
                let conv_out =
                    f.insert_op(block, at, OpKind::ConvertLayout, vec![r], vec![class_ty]);
                let c_out = f.op(conv_out).results[0];
                f.replace_all_uses(r, c_out);
                f.ops[conv_out.index()].operands[0] = r;
            }
            _ => {}
        }
    }
}

/// Joins each store's value to its pointer's class, except a 2-D value in the class of a
/// tensor-core `dot`'s result: that store keeps the blocked layout of its pointer tile, and the
/// value converts to it before the store (through a swizzled scratch tile, `llvm::shared`). The
/// mma layouts give a thread two consecutive columns per row, so a store straight from them is
/// one 4-byte (16-bit results) or 8-byte (f32) access per pair, each warp instruction touching
/// eight rows; in the blocked layout the accesses are 16 bytes wide along whole rows, as
/// Triton's epilogues make them (for 16-bit results only, see below). Where the pointer tile is
/// itself in the result's class (built from values joined to it), nothing changes.
fn coalesced_stores(f: &Function, classes: &mut Classes, stores: &[OpId]) {
    let mut roots = Vec::new();
    for op in f.walk() {
        let d = f.op(op);
        // Hopper's `wgmma` results only: elsewhere the scratch tile could cost programs per SM
        // (the sm_80 PTX also runs on GPUs with 100 KiB per SM), not measured.
        if matches!(d.kind, OpKind::Dot { .. })
            && super::accelerate_dot::mma_layout_of(f, op).is_some_and(|l| l.version == 3)
        {
            classes.join(d.operands[2], d.results[0]);
            roots.push(d.results[0]);
        }
    }
    let roots: Vec<usize> = roots.into_iter().map(|r| classes.root(r)).collect();
    for &op in stores {
        let d = f.op(op);
        let (ptr, v) = (d.operands[0], d.operands[1]);
        if !f.ty(ptr).is_tensor() || !f.ty(v).is_tensor() {
            continue;
        }
        // 16-bit results: their pairs are 4-byte stores. An f32 pair is already 8 bytes, and its
        // conversion's registers spilled a 4-warp `128 × 128` softmax regression tile.
        let sixteen = matches!(f.ty(v).dtype(), Some(DType::F16 | DType::BF16));
        let separate = sixteen && f.ty(v).shape.len() == 2 && roots.contains(&classes.root(v));
        if !separate {
            classes.join(ptr, v);
        }
    }
}

/// The loads whose tile is an operand of a `dot` that runs on tensor cores.
fn tensor_core_operand_loads(f: &Function) -> Vec<OpId> {
    let mut loads = Vec::new();
    for op in f.walk() {
        let d = f.op(op);
        if !matches!(d.kind, OpKind::Dot { .. }) {
            continue;
        }
        let (a, b) = (d.operands[0], d.operands[1]);
        if super::accelerate_dot::mma_layout_of(f, op).is_none() {
            continue;
        }
        for v in [a, b] {
            if let Some(l) = f.def_op(v) {
                if matches!(f.op(l).kind, OpKind::Load { .. }) {
                    loads.push(l);
                }
            }
        }
    }
    loads
}

/// The layout of the result (of shape `to`) of `trans`, `reshape`, `interleave` or
/// `deinterleave` (`kind`) of an operand of shape `from` in `layout`: the operand's elements stay
/// in their threads and registers (`Layout::transposed`, `Layout::reshaped`,
/// `Layout::interleaved`, `Layout::deinterleaved`). `None` for other ops or a layout that does
/// not fit `from` (or, for `deinterleave`, holds a pair in two threads).
fn derived(kind: &OpKind, layout: &Layout, from: &[u32], to: &[u32]) -> Option<Layout> {
    match kind {
        OpKind::Trans => layout.transposed(from).ok(),
        OpKind::Reshape => layout.reshaped(from, to).ok(),
        OpKind::Interleave => layout.interleaved(from).ok(),
        OpKind::Deinterleave => layout.deinterleaved(from).ok(),
        _ => None,
    }
}

/// The layout of the operand (of shape `from`) of `trans`, `reshape` or `interleave` (`kind`)
/// whose result (of shape `to`) is in `layout`, such that [`derived`] gives `layout` back: the
/// inverse transpose or relabeling, or the pair split off (`None` where the result does not hold
/// each pair in one thread's registers).
fn underived(kind: &OpKind, layout: &Layout, from: &[u32], to: &[u32]) -> Option<Layout> {
    match kind {
        OpKind::Trans | OpKind::Reshape => derived(kind, layout, to, from),
        OpKind::Interleave => derived(&OpKind::Deinterleave, layout, to, from),
        _ => None,
    }
}

/// Per class root: whether every op that reads or writes a tensor of the class computes it from
/// indices and constants element by element (or moves it without data movement: `trans`,
/// `reshape`, `interleave`, `broadcast`, `expand_dims`): no memory access, reduction, scan,
/// product, loop or branch, so that any layout serves it as well as another.
fn computed_only(f: &Function, classes: &mut Classes) -> Vec<bool> {
    let mut free = vec![true; f.values.len()];
    for op in f.walk() {
        let d = f.op(op);
        let element_wise = matches!(
            d.kind,
            OpKind::Arange { .. }
                | OpKind::Splat
                | OpKind::Constant(_)
                | OpKind::Binary(_)
                | OpKind::Cmp(_)
                | OpKind::Unary(_)
                | OpKind::Select
                | OpKind::Cast
                | OpKind::Bitcast
                | OpKind::Math(_)
                | OpKind::Hint { .. }
                | OpKind::Broadcast
                | OpKind::ExpandDims { .. }
                | OpKind::Trans
                | OpKind::Reshape
                | OpKind::Interleave
        );
        if element_wise {
            continue;
        }
        for &v in d.operands.iter().chain(&d.results) {
            if f.ty(v).is_tensor() {
                let root = classes.root(v);
                free[root] = false;
            }
        }
    }
    free
}

/// The layout for a tensor of `shape` (row-major order): `spt` consecutive elements along the last
/// dimension (the widest access, no more than the tile's share per thread), then lanes and warps
/// along the last dimension as far as it reaches, the rest along the one before.
pub(crate) fn default_layout(
    shape: &[u32],
    widest: u32,
    threads: u32,
    num_warps: u32,
) -> BlockedLayout {
    let rank = shape.len();
    let n: u32 = shape.iter().product();
    let last = rank - 1;
    let inner = shape[last];
    let spt = widest.min((n / threads).max(1)).min(inner).max(1);
    let mut size_per_thread = vec![1; rank];
    let mut threads_per_warp = vec![1; rank];
    let mut warps_per_cta = vec![1; rank];
    size_per_thread[last] = spt;
    if rank == 1 {
        threads_per_warp[0] = 32;
        warps_per_cta[0] = num_warps;
    } else {
        let lanes = (inner / spt).clamp(1, 32);
        threads_per_warp[last] = lanes;
        threads_per_warp[last - 1] = 32 / lanes;
        let warps = (inner / (spt * lanes)).clamp(1, num_warps);
        warps_per_cta[last] = warps;
        warps_per_cta[last - 1] = num_warps / warps;
    }
    BlockedLayout {
        size_per_thread,
        threads_per_warp,
        warps_per_cta,
        order: (0..rank as u32).rev().collect(),
    }
}

/// The layout a scan along `axis` of a tensor of `shape` computes in (`llvm::scan` needs its
/// axis held in registers, then lanes, then warps). Warps, then lanes, go to the other dimension
/// first, as far as it reaches, and the rest to the axis, whose remaining extent is in consecutive
/// registers: the more of the scan a thread does sequentially in its registers, the fewer
/// shuffles and shared-memory steps it takes (a 32 × 256 tile scanned along its 32 rows is 32
/// registers per thread and nothing else), and warps first because a warp along the axis costs
/// a pass through shared memory and a barrier where a lane costs one shuffle step (16 × 128 on 4
/// warps: 4 rows per warp, 8 lanes and 16 registers along the axis, no barrier). A 1-D tile
/// spreads over lanes, then warps. The classes a scan reads and writes take this layout too
/// (`choose_layouts`), so a scan converts only where its tiles meet another layout's.
pub(crate) fn scan_layout(shape: &[u32], axis: u32, num_warps: u32) -> BlockedLayout {
    let a = axis as usize;
    let n = shape[a];
    if shape.len() == 1 {
        return BlockedLayout {
            size_per_thread: vec![(n / (32 * num_warps)).max(1)],
            threads_per_warp: vec![32],
            warps_per_cta: vec![num_warps],
            order: vec![0],
        };
    }
    let o = 1 - a;
    let other = shape[o];
    let mut size_per_thread = vec![1; 2];
    let mut threads_per_warp = vec![1; 2];
    let mut warps_per_cta = vec![1; 2];
    // Warps along the other dimension first (a warp along the axis costs a pass through shared
    // memory and a barrier), then lanes (a lane along the axis costs a shuffle step).
    warps_per_cta[o] = other.clamp(1, num_warps);
    warps_per_cta[a] = num_warps / warps_per_cta[o];
    threads_per_warp[o] = (other / warps_per_cta[o]).clamp(1, 32);
    threads_per_warp[a] = 32 / threads_per_warp[o];
    size_per_thread[a] = (n / (threads_per_warp[a] * warps_per_cta[a])).max(1);
    BlockedLayout {
        size_per_thread,
        threads_per_warp,
        warps_per_cta,
        order: vec![o as u32, axis],
    }
}

/// `b` with each dimension's registers cut to cover `shape` exactly, lanes and warps kept: `None`
/// where the lanes and warps along a dimension do not divide its extent.
fn resized(b: &BlockedLayout, shape: &[u32]) -> Option<BlockedLayout> {
    if shape.len() != b.rank() {
        return None;
    }
    let mut out = b.clone();
    for (i, &n) in shape.iter().enumerate() {
        let threads = b.threads_per_warp[i] * b.warps_per_cta[i];
        if n % threads != 0 {
            return None;
        }
        out.size_per_thread[i] = n / threads;
    }
    Some(out)
}

fn with_layout(ty: &Type, layout: Layout) -> Type {
    Type {
        elem: ty.elem,
        shape: ty.shape.clone(),
        layout: Some(layout),
    }
}

/// Gives each further user of a multiply-used *cheap* tensor op its own copy, placed right after
/// the original (so nothing moves into a loop), walking backwards so that a copied user's
/// operands are split in turn. Cheap: index and mask arithmetic (`arange`, `splat`, and integer,
/// boolean or pointer results of element-wise ops, `expand_dims`, `broadcast`, `addptr`). The
/// pointers and masks of one load then join only that load's class, so a row mask shared by an
/// operand's load and the result's store does not force one layout on both (the operand's loads
/// stay coalesced while the result is an mma accumulator). Copies that end up with one layout are
/// merged again by `cse`.
///
/// Copying a user copies the cheap values it reads, so a chain of integer ops that reuse their
/// results (Philox's rounds, `x = x * 3 + x` repeated) would grow exponentially. Only a value
/// whose cone of cheap ops, counted as a tree, has at most [`SPLIT_CONE`] ops is copied: index
/// arithmetic is well under it, a random-number generator's rounds are far over it (and gain
/// nothing from copies: all their users share one layout). Every copy is then of a value whose
/// whole expansion is small, so the pass adds at most `SPLIT_CONE` ops per operand of the
/// original kernel.
fn split_shared_leaves(f: &mut Function) {
    let order = f.walk();
    // Each cheap value's cone size, saturating at SPLIT_CONE + 1.
    let mut cone = vec![0u32; f.values.len()];
    for &op in &order {
        let d = f.op(op);
        let Some(&r) = d.results.first() else {
            continue;
        };
        if cheap(f, &d.kind, r) {
            let below: u32 = d
                .operands
                .iter()
                .map(|o| cone[o.index()])
                .fold(1, u32::saturating_add);
            cone[r.index()] = below.min(SPLIT_CONE + 1);
        }
    }
    for &op in order.iter().rev() {
        let d = f.op(op).clone();
        let Some(&r) = d.results.first() else {
            continue;
        };
        if !cheap(f, &d.kind, r) || cone[r.index()] > SPLIT_CONE {
            continue;
        }
        let mut users: Vec<_> = f
            .walk()
            .into_iter()
            .filter(|&u| f.op(u).operands.contains(&r))
            .collect();
        users.dedup();
        let Some(at) = f.blocks[d.block.index()].ops.iter().position(|&o| o == op) else {
            continue;
        };
        for &u in users.iter().skip(1) {
            let copy = f.insert_op(
                d.block,
                at + 1,
                d.kind.clone(),
                d.operands.clone(),
                vec![f.ty(r).clone()],
            );
            let c = f.op(copy).results[0];
            for o in &mut f.ops[u.index()].operands {
                if *o == r {
                    *o = c;
                }
            }
        }
    }
}

/// The most ops a value's cone of cheap ops may hold for [`split_shared_leaves`] to copy it.
const SPLIT_CONE: u32 = 32;

/// Whether `kind` producing `r` is cheap enough to compute once per user (see
/// [`split_shared_leaves`]).
fn cheap(f: &Function, kind: &OpKind, r: ValueId) -> bool {
    let ty = f.ty(r);
    if !ty.is_tensor() {
        return false;
    }
    let index_like = match ty.elem {
        tile_core::ir::Elem::Ptr(_) => true,
        tile_core::ir::Elem::Scalar(d) => d.is_int(),
    };
    match kind {
        OpKind::Arange { .. } | OpKind::Splat => true,
        OpKind::Binary(_)
        | OpKind::Cmp(_)
        | OpKind::Unary(_)
        | OpKind::ExpandDims { .. }
        | OpKind::Trans
        | OpKind::Reshape
        | OpKind::Broadcast
        | OpKind::AddPtr
        | OpKind::Hint { .. }
        | OpKind::Select => index_like,
        OpKind::Constant(_)
        | OpKind::ProgramId { .. }
        | OpKind::NumPrograms { .. }
        | OpKind::Roll { .. }
        | OpKind::Gather { .. }
        | OpKind::Interleave
        | OpKind::Deinterleave
        | OpKind::Math(_)
        | OpKind::Cast
        | OpKind::Bitcast
        | OpKind::IntToPtr
        | OpKind::Load { .. }
        | OpKind::Store { .. }
        | OpKind::AtomicRmw { .. }
        | OpKind::AtomicCas { .. }
        | OpKind::Scan { .. }
        | OpKind::AssociativeScan { .. }
        | OpKind::Reduce { .. }
        | OpKind::ConvertLayout
        | OpKind::Dot { .. }
        | OpKind::LocalAlloc
        | OpKind::AsyncCopy { .. }
        | OpKind::AsyncCommit
        | OpKind::AsyncWait { .. }
        | OpKind::Barrier
        | OpKind::DebugBarrier
        | OpKind::LocalLoad { .. }
        | OpKind::WarpGroupDot { .. }
        | OpKind::WarpGroupWait { .. }
        | OpKind::FenceAsyncShared
        | OpKind::DescLoad { .. }
        | OpKind::DescStore { .. }
        | OpKind::MbarrierInit
        | OpKind::MbarrierExpect { .. }
        | OpKind::TmaLoad { .. }
        | OpKind::MbarrierWait
        | OpKind::MbarrierInval
        | OpKind::For
        | OpKind::While
        | OpKind::If
        | OpKind::Yield
        | OpKind::Return => false,
    }
}

/// Union-find over value ids.
struct Classes {
    parent: Vec<usize>,
}

impl Classes {
    fn new(n: usize) -> Classes {
        Classes {
            parent: (0..n).collect(),
        }
    }

    fn root(&mut self, v: ValueId) -> usize {
        let mut x = v.index();
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    fn join(&mut self, a: ValueId, b: ValueId) {
        let (ra, rb) = (self.root(a), self.root(b));
        if ra != rb {
            // The earlier value is the root, so a class's first request comes first.
            let (lo, hi) = (ra.min(rb), ra.max(rb));
            self.parent[hi] = lo;
        }
    }
}

/// True when layouts `a` and `b` place every element of a tensor of `shape` in the same thread,
/// a thread's registers at most renumbered.
fn same_placement(a: &Layout, b: &Layout, shape: &[u32]) -> bool {
    match (a.linear(shape), b.linear(shape)) {
        (Ok(x), Ok(y)) => x.same_up_to_register_order(&y),
        _ => false,
    }
}

/// Gives op `op`'s result `r` the layout `natural` (where the op computes it) and converts it,
/// right after the op (at `at` in `block`), to the layout its class took, for every other use.
fn convert_result(
    f: &mut Function,
    block: tile_core::ir::BlockId,
    at: usize,
    r: ValueId,
    natural: Layout,
) {
    let class_ty = f.ty(r).clone();
    f.values[r.index()].ty = with_layout(&class_ty, natural);
    let conv = f.insert_op(block, at, OpKind::ConvertLayout, vec![r], vec![class_ty]);
    let c = f.op(conv).results[0];
    f.replace_all_uses(r, c);
    f.ops[conv.index()].operands[0] = r;
}

/// Converts operand `i` of op `op` to `layout` just before the op (at `at` in `block`).
fn convert_operand(
    f: &mut Function,
    block: tile_core::ir::BlockId,
    at: usize,
    op: OpId,
    i: usize,
    layout: Layout,
) {
    let v = f.op(op).operands[i];
    let ty = with_layout(f.ty(v), layout);
    let conv = f.insert_op(block, at, OpKind::ConvertLayout, vec![v], vec![ty]);
    let c = f.op(conv).results[0];
    f.ops[op.index()].operands[i] = c;
}
