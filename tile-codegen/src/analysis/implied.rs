//! Implied descriptors: plain pointer loads that read exactly the box of a 2-D array, found on
//! tile-level IR so that the Hopper copy path can take them as if the kernel had written
//! `make_tensor_descriptor` (`lower-descriptors`' [`imply`](crate::passes::lower_descriptors::imply)
//! rewrites them where the copy engine will fill a ring; everywhere else they stay the loads
//! they are).
//!
//! A load is implied when, in a `for` body, its 2-D tile of 16-bit or 8-bit floats is used only
//! as `dot` operands (directly, or as `B` through a `trans` used once) and it reads
//!
//! ```text
//! load(base + R[:, None] * s0 + C[None, :] * s1, (R < d0)[:, None] & (C < d1)[None, :], 0)
//! R = r0 + arange(0, B0)        C = c0 + arange(0, B1)
//! ```
//!
//! in any association, order and spelling of broadcasts (`expand_dims`, `broadcast`, `splat`),
//! the strides written on either side of their index (`(R * s0)[:, None]` too, and `s1` left
//! out for 1), where `base` is a pointer parameter, `s0`, `s1`, `d0` and `d1` are parameters,
//! constants or products of them (what the launch can compute: [`scalar_source`]), and the
//! coordinates `r0` and `c0` are provably 0 or more (program ids, loop counters from 0 or more
//! by non-negative steps, constants, and sums, products, quotients, minima of them; remainders
//! of them by anything: a grouped launch order's `first_m + (pid % width) % group_m`). Then the load is the
//! descriptor access `desc_load(base, [d0, d1], [s0, s1], [r0, c0])`: the elements the mask
//! keeps are the array's elements inside its extents, at the addresses the kernel computes, and
//! the others are 0 in both. Non-negative coordinates matter: a column of -1 is, through the
//! pointer, the previous row's last element, and outside the array for a descriptor.
//!
//! The slots of implied descriptors follow the kernel's own (`desc_slots ..`), in walk order.

use std::collections::{HashMap, HashSet};

use tile_core::ir::{BinOp, CmpPred, ConstValue, DType, Function, OpId, OpKind, ValueDef, ValueId};

use super::descriptors::{scalar_source, HostDesc};

/// A load that reads the box of a 2-D array (see the module documentation), with what the
/// equivalent `desc_load` takes.
#[derive(Clone, Debug, PartialEq)]
pub struct ImpliedLoad {
    /// The `load`.
    pub load: OpId,
    /// The array as the launch describes it (`slot` is the implied descriptor's).
    pub host: HostDesc,
    /// The base pointer (a scalar parameter).
    pub ptr: ValueId,
    /// The extents `d0`, `d1` (integer scalars).
    pub dims: [ValueId; 2],
    /// The strides `s0`, `s1`; `None` for a stride the kernel left out (1).
    pub strides: [Option<ValueId>; 2],
    /// The coordinates `r0`, `c0` (`i32` scalars); `None` for 0.
    pub coords: [Option<ValueId>; 2],
}

/// The implied descriptor loads of `f` (tile level), in walk order, numbered from
/// `f.desc_slots`.
pub fn implied_loads(f: &Function) -> Vec<ImpliedLoad> {
    let uses = crate::passes::edit::use_counts(f);
    let bodies = loop_bodies(f);
    let mut out: Vec<ImpliedLoad> = Vec::new();
    for op in f.walk() {
        if !matches!(f.op(op).kind, OpKind::Load { .. })
            || !bodies.contains_key(&f.op(op).block)
            || !dot_operand_only(f, op, &uses)
        {
            continue;
        }
        if let Some(mut l) = match_load(f, op, &bodies) {
            l.host.slot = f.desc_slots + out.len() as u32;
            out.push(l);
        }
    }
    out
}

/// The implied descriptor access `load` is in `f`, if it is one (the slot left 0): the shape
/// of its address and mask only, not where it is or how its result is used. `bodies`: the
/// kernel's loop bodies ([`loop_bodies`]), for its loop counters.
fn match_load(f: &Function, load: OpId, bodies: &Bodies) -> Option<ImpliedLoad> {
    let d = f.op(load);
    if !matches!(d.kind, OpKind::Load { .. }) || d.operands.len() != 3 {
        return None;
    }
    let ty = f.ty(d.results[0]);
    let dtype = ty.dtype()?;
    if ty.shape.len() != 2 || !(matches!(dtype, DType::F16 | DType::BF16) || dtype.is_f8()) {
        return None;
    }
    // `other` 0, as the copies fill masked elements (`pipeline-dot`'s own test).
    if !f.constant_of(d.operands[2]).is_some_and(|c| c.is_zero()) {
        return None;
    }
    let (ptr, terms) = pointer_terms(f, d.operands[0])?;
    let ValueDef::BlockArg(b, p) = f.values[ptr.index()].def else {
        return None;
    };
    if b != f.entry() || f.ty(ptr).is_tensor() {
        return None;
    }
    let mut bounds = Vec::new();
    mask_terms(f, d.operands[1], &mut bounds)?;
    let mut dims = [None; 2];
    let mut strides = [None; 2];
    let mut coords = [None; 2];
    for dim in 0..2 {
        // One address term and one bound along each dimension, over the same indices.
        let mut along = terms.iter().filter(|t| t.dim == dim);
        let (Some(t), None) = (along.next(), along.next()) else {
            return None;
        };
        let mut bound = bounds.iter().filter(|b| b.0 == dim);
        let (Some(&(_, index, extent)), None) = (bound.next(), bound.next()) else {
            return None;
        };
        if index != t.index || f.ty(index).shape != [ty.shape[dim]] {
            return None;
        }
        coords[dim] = start_of(f, index, ty.shape[dim])?;
        dims[dim] = Some(extent);
        strides[dim] = t.scale;
    }
    if !coords.iter().flatten().all(|&c| nonneg(f, bodies, c, 0)) {
        return None;
    }
    let dims = [dims[0]?, dims[1]?];
    let source = |v: Option<ValueId>| match v {
        None => Some(tile_core::runtime::DescScalar::Const(1)),
        Some(v) => scalar_source(f, v),
    };
    let host = HostDesc {
        slot: 0,
        ptr: p,
        dtype,
        dims: vec![scalar_source(f, dims[0])?, scalar_source(f, dims[1])?],
        strides: vec![source(strides[0])?, source(strides[1])?],
        implied: true,
    };
    Some(ImpliedLoad {
        load,
        host,
        ptr,
        dims,
        strides,
        coords,
    })
}

/// Every `for` body block of a kernel, with its loop.
type Bodies = HashMap<tile_core::ir::BlockId, OpId>;

/// The `for` body blocks of `f`, each with its loop.
fn loop_bodies(f: &Function) -> Bodies {
    crate::passes::pipeline_loads::for_loops(f)
        .into_iter()
        .filter_map(|l| {
            let r = *f.op(l).regions.first()?;
            Some((*f.regions[r.index()].blocks.first()?, l))
        })
        .collect()
}

/// Whether every use of `load`'s result is in its block and a `dot` operand (`A` or `B`), or
/// the operand of a `trans` used once as `B`.
fn dot_operand_only(f: &Function, load: OpId, uses: &HashMap<ValueId, usize>) -> bool {
    let x = f.op(load).results[0];
    let ops = &f.blocks[f.op(load).block.index()].ops;
    use crate::passes::pipeline_dot::{dot_operand, used_only_by};
    uses.get(&x).copied().unwrap_or(0) > 0
        && used_only_by(f, x, ops, uses, |o, v, t| dot_operand(f, o, v, t))
}

/// One term of an address: the 1-D indices `index` placed along `dim`, times `scale` (a
/// scalar; `None` for 1).
struct Term {
    dim: usize,
    index: ValueId,
    scale: Option<ValueId>,
}

/// The base pointer of the 2-D pointer tile `v` and the terms of its offset.
fn pointer_terms(f: &Function, v: ValueId) -> Option<(ValueId, Vec<Term>)> {
    let d = f.op(f.def_op(v)?);
    match d.kind {
        OpKind::Splat if !f.ty(d.operands[0]).is_tensor() => Some((d.operands[0], Vec::new())),
        OpKind::Broadcast => pointer_terms(f, d.operands[0]),
        OpKind::AddPtr => {
            let (base, mut terms) = pointer_terms(f, d.operands[0])?;
            offset_terms(f, d.operands[1], &mut terms)?;
            Some((base, terms))
        }
        _ => None,
    }
}

/// The terms of the 2-D `i32` offset tile `v`, appended to `out`.
fn offset_terms(f: &Function, v: ValueId, out: &mut Vec<Term>) -> Option<()> {
    if f.ty(v).shape.len() != 2 || f.ty(v).dtype() != Some(DType::I32) {
        return None;
    }
    let d = f.op(f.def_op(v)?);
    match d.kind {
        OpKind::Broadcast => offset_terms(f, d.operands[0], out),
        OpKind::Binary(BinOp::Add) => {
            offset_terms(f, d.operands[0], out)?;
            offset_terms(f, d.operands[1], out)
        }
        OpKind::ExpandDims { axis } if axis <= 1 => {
            let (index, scale) = scaled(f, d.operands[0]);
            out.push(Term {
                dim: 1 - axis as usize,
                index,
                scale,
            });
            Some(())
        }
        OpKind::Binary(BinOp::Mul) => {
            let (x, s) = split_scalar(f, d.operands[0], d.operands[1])?;
            let mut inner = Vec::new();
            offset_terms(f, x, &mut inner)?;
            match inner.as_mut_slice() {
                [t] if t.scale.is_none() => t.scale = Some(s),
                _ => return None,
            }
            out.extend(inner);
            Some(())
        }
        _ => None,
    }
}

/// `(x, s)` for a product of `x` and a splat (or broadcast splat) of the scalar `s`, in either
/// order.
fn split_scalar(f: &Function, a: ValueId, b: ValueId) -> Option<(ValueId, ValueId)> {
    let scalar = |v: ValueId| -> Option<ValueId> {
        let mut v = v;
        loop {
            let d = f.op(f.def_op(v)?);
            match d.kind {
                OpKind::Splat if !f.ty(d.operands[0]).is_tensor() => return Some(d.operands[0]),
                OpKind::Broadcast | OpKind::Splat => v = d.operands[0],
                _ => return None,
            }
        }
    };
    match (scalar(a), scalar(b)) {
        (_, Some(s)) => Some((a, s)),
        (Some(s), None) => Some((b, s)),
        (None, None) => None,
    }
}

/// The 1-D indices `v` with its scalar factor taken out (`R * s` is `(R, Some(s))`).
fn scaled(f: &Function, v: ValueId) -> (ValueId, Option<ValueId>) {
    f.def_op(v)
        .map(|o| f.op(o))
        .filter(|d| matches!(d.kind, OpKind::Binary(BinOp::Mul)))
        .and_then(|d| split_scalar(f, d.operands[0], d.operands[1]))
        .map_or((v, None), |(x, s)| (x, Some(s)))
}

/// The bounds the mask `v` (2-D `i1`) is the conjunction of: `(dim, indices, extent)` for each
/// `indices < extent` placed along `dim`.
fn mask_terms(f: &Function, v: ValueId, out: &mut Vec<(usize, ValueId, ValueId)>) -> Option<()> {
    let d = f.op(f.def_op(v)?);
    let rank = f.ty(v).shape.len();
    match d.kind {
        OpKind::Binary(BinOp::And) => {
            mask_terms(f, d.operands[0], out)?;
            mask_terms(f, d.operands[1], out)
        }
        OpKind::Broadcast if rank == 2 => mask_terms(f, d.operands[0], out),
        // `(R < d)[:, None]`.
        OpKind::ExpandDims { axis } if rank == 2 && axis <= 1 => {
            let (index, extent) = bound(f, d.operands[0])?;
            out.push((1 - axis as usize, index, extent));
            Some(())
        }
        // `R[:, None] < d`.
        OpKind::Cmp(_) if rank == 2 => {
            let (placed, extent) = bound(f, v)?;
            let p = f.op(f.def_op(placed)?);
            let OpKind::ExpandDims { axis } = p.kind else {
                return None;
            };
            if axis > 1 || f.ty(p.operands[0]).shape.len() != 1 {
                return None;
            }
            out.push((1 - axis as usize, p.operands[0], extent));
            Some(())
        }
        _ => None,
    }
}

/// `(x, e)` for the compare `x < splat(e)` (or `splat(e) > x`).
fn bound(f: &Function, v: ValueId) -> Option<(ValueId, ValueId)> {
    let d = f.op(f.def_op(v)?);
    let OpKind::Cmp(pred) = d.kind else {
        return None;
    };
    let (x, e) = match pred {
        CmpPred::Lt => (d.operands[0], d.operands[1]),
        CmpPred::Gt => (d.operands[1], d.operands[0]),
        _ => return None,
    };
    let (_, s) = split_scalar(f, x, e).filter(|&(y, _)| y == x)?;
    Some((x, s))
}

/// The first of the 1-D indices `v` of extent `n`: `arange(0, n)` starts at 0 (`Some(None)`),
/// `splat(c) + arange(0, n)` (either order) at `c` (an `i32` scalar).
fn start_of(f: &Function, v: ValueId, n: u32) -> Option<Option<ValueId>> {
    let is_range = |v: ValueId| {
        f.def_op(v).is_some_and(
            |o| matches!(f.op(o).kind, OpKind::Arange { start: 0, end } if end == i64::from(n)),
        )
    };
    if is_range(v) {
        return Some(None);
    }
    let d = f.op(f.def_op(v)?);
    if !matches!(d.kind, OpKind::Binary(BinOp::Add)) {
        return None;
    }
    let splatted = |v: ValueId| {
        let d = f.op(f.def_op(v)?);
        let c = *d.operands.first()?;
        (matches!(d.kind, OpKind::Splat) && f.ty(c) == &tile_core::ir::Type::scalar(DType::I32))
            .then_some(c)
    };
    let (a, b) = (d.operands[0], d.operands[1]);
    match (splatted(a), splatted(b)) {
        (Some(c), _) if is_range(b) => Some(Some(c)),
        (_, Some(c)) if is_range(a) => Some(Some(c)),
        _ => None,
    }
}

/// Whether the integer scalar `v` is provably 0 or more (depth-limited).
fn nonneg(f: &Function, bodies: &Bodies, v: ValueId, depth: u32) -> bool {
    if depth > 16 {
        return false;
    }
    match f.values[v.index()].def {
        ValueDef::BlockArg(b, 0) => {
            // A loop counter from a non-negative start by a non-negative step.
            let l = bodies.get(&b).copied();
            l.is_some_and(|l| {
                let d = f.op(l);
                nonneg(f, bodies, d.operands[0], depth + 1)
                    && nonneg(f, bodies, d.operands[2], depth + 1)
            })
        }
        ValueDef::BlockArg(..) => false,
        ValueDef::OpResult(op, _) => {
            let d = f.op(op);
            match &d.kind {
                OpKind::Constant(ConstValue::Int(c)) => *c >= 0,
                OpKind::ProgramId { .. } | OpKind::NumPrograms { .. } => true,
                OpKind::Binary(BinOp::Add | BinOp::Mul | BinOp::Div | BinOp::Min) => {
                    d.operands.iter().all(|&x| nonneg(f, bodies, x, depth + 1))
                }
                // The remainder has the dividend's sign; the larger of two is at least either.
                OpKind::Binary(BinOp::Rem) => nonneg(f, bodies, d.operands[0], depth + 1),
                OpKind::Binary(BinOp::Max) => {
                    d.operands.iter().any(|&x| nonneg(f, bodies, x, depth + 1))
                }
                OpKind::Cast => {
                    f.ty(d.operands[0]).dtype().is_some_and(DType::is_int)
                        && nonneg(f, bodies, d.operands[0], depth + 1)
                }
                _ => false,
            }
        }
    }
}

/// The loads of `implied` that are still implied descriptor accesses in `f` (a clone of the
/// IR they were found on, perhaps specialized since), with the slots found there.
pub fn still_implied(f: &Function, implied: &[ImpliedLoad]) -> Vec<ImpliedLoad> {
    let live: HashSet<OpId> = f.walk().into_iter().collect();
    let bodies = loop_bodies(f);
    implied
        .iter()
        .filter(|l| live.contains(&l.load))
        .filter_map(|l| {
            let mut m = match_load(f, l.load, &bodies)?;
            m.host.slot = l.host.slot;
            Some(m)
        })
        .collect()
}
