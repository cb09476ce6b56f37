//! Rules of the ops that move elements or change only the layout: `expand_dims`, `broadcast`,
//! `convert_layout`, `roll`, `trans`, `reshape`, `interleave` and `deinterleave` (rules 17, 18,
//! 19, 24, 30, 31 and 37), and the slice relation between a tensor's layout and that of its lower-rank partner.

use super::{Op, Verifier};
use crate::ir::types::{Layout, Type};
use crate::ir::OpId;

impl Verifier<'_> {
    /// Rule 17: `expand_dims`.
    pub(super) fn expand_dims(&mut self, o: &Op<'_>, axis: &u32) {
        let ops = o.ops;
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(ops[0]).clone();
        if !a.is_tensor() || (*axis as usize) > a.shape.len() {
            return self.err(o.id, format!("axis {axis} is out of range for `{a}`"));
        }
        let mut shape = a.shape.clone();
        shape.insert(*axis as usize, 1);
        if shape.len() > 2 {
            self.err(o.id, "tiles of rank > 2 are not supported".into());
        }
        if ty.elem != a.elem || ty.shape != shape {
            let want = Type::tensor(a.elem, shape);
            self.err(o.id, format!("the result must be `{want}` (layout aside)"));
        }
        self.sliced(o.id, &ty, *axis, &a, "the operand");
    }

    /// Rule 18: `broadcast`.
    pub(super) fn broadcast(&mut self, o: &Op<'_>) {
        let ops = o.ops;
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(ops[0]).clone();
        let fits = a.is_tensor()
            && a.shape.len() == ty.shape.len()
            && a.shape
                .iter()
                .zip(&ty.shape)
                .all(|(&x, &y)| x == y || x == 1);
        if !fits || a.elem != ty.elem {
            self.err(o.id, format!("`{a}` does not broadcast to `{ty}`"));
        }
        if a.layout != ty.layout {
            self.err(o.id, "`broadcast` keeps the layout".into());
        }
    }

    /// Rule 19: `convert_layout`.
    pub(super) fn convert_layout(&mut self, o: &Op<'_>) {
        let ops = o.ops;
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(ops[0]).clone();
        if a.elem != ty.elem || a.shape != ty.shape || !a.is_tensor() {
            self.err(
                o.id,
                format!("`convert_layout` changes only the layout: `{a}` to `{ty}`"),
            );
        }
        if ty.layout.is_none() {
            self.err(o.id, "`convert_layout` exists only at the GPU level".into());
        }
    }

    /// Rule 24: `roll`.
    pub(super) fn roll(&mut self, o: &Op<'_>, axis: &u32, shift: &u32) {
        let ops = o.ops;
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(ops[0]).clone();
        if !a.is_tensor() || (*axis as usize) >= a.shape.len() {
            return self.err(o.id, format!("axis {axis} is out of range for `{a}`"));
        }
        if *shift >= a.shape[*axis as usize] {
            self.err(
                o.id,
                format!("shift {shift} is not below the extent of axis {axis}"),
            );
        }
        if ty != a {
            self.err(o.id, format!("the result must be `{a}`"));
        }
    }

    /// Rule 30: `trans`.
    pub(super) fn trans(&mut self, o: &Op<'_>) {
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(o.ops[0]).clone();
        let [m, n] = a.shape[..] else {
            return self.err(o.id, format!("`trans` takes a 2-D tensor, not `{a}`"));
        };
        if ty.elem != a.elem || ty.shape != [n, m] {
            let want = Type::tensor(a.elem, vec![n, m]);
            return self.err(o.id, format!("the result must be `{want}` (layout aside)"));
        }
        self.derived_layout(o.id, &a, &ty, "the operand's transposed", |l| {
            l.transposed(&a.shape)
        });
    }

    /// Rule 31: `reshape`.
    pub(super) fn reshape(&mut self, o: &Op<'_>) {
        if !self.takes(o, &[1]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let a = self.ty(o.ops[0]).clone();
        if !a.is_tensor() || !ty.is_tensor() {
            return self.err(
                o.id,
                format!("`reshape` of `{a}` to `{ty}`: both must be tensors"),
            );
        }
        if ty.shape.len() > 2 {
            self.err(o.id, "tiles of rank > 2 are not supported".into());
        }
        if ty.elem != a.elem || ty.numel() != a.numel() {
            return self.err(
                o.id,
                format!(
                    "`reshape` keeps the element type and count: `{a}` ({} elements) to `{ty}` ({} elements)",
                    a.numel(),
                    ty.numel()
                ),
            );
        }
        self.derived_layout(o.id, &a, &ty, "the operand's reshaped", |l| {
            l.reshaped(&a.shape, &ty.shape)
        });
    }

    /// Rule 37: `interleave`.
    pub(super) fn interleave(&mut self, o: &Op<'_>) {
        if !self.takes(o, &[2]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let (a, b) = (self.ty(o.ops[0]).clone(), self.ty(o.ops[1]).clone());
        if !a.is_tensor() || a != b {
            return self.err(
                o.id,
                format!("`interleave` takes two tensors of one type, not `{a}` and `{b}`"),
            );
        }
        let shape = with_last(&a.shape, |n| n * 2);
        if shape.len() > 2 {
            self.err(o.id, "tiles of rank > 2 are not supported".into());
        }
        if ty.elem != a.elem || ty.shape != shape {
            let want = Type::tensor(a.elem, shape);
            return self.err(o.id, format!("the result must be `{want}` (layout aside)"));
        }
        self.derived_layout(o.id, &a, &ty, "the operands' interleaved", |l| {
            l.interleaved(&a.shape)
        });
    }

    /// Rule 37: `deinterleave`.
    pub(super) fn deinterleave(&mut self, o: &Op<'_>) {
        if !self.takes(o, &[1]) {
            return;
        }
        let x = self.ty(o.ops[0]).clone();
        if !x.is_tensor() || x.shape.last().is_none_or(|&n| n % 2 != 0) {
            return self.err(
                o.id,
                format!("`deinterleave` takes a tensor whose last extent is even, not `{x}`"),
            );
        }
        let f = self.f;
        let results: Vec<Type> = o.data.results.iter().map(|&r| f.ty(r).clone()).collect();
        let [lo, hi] = &results[..] else { return };
        let shape = with_last(&x.shape, |n| n / 2);
        if lo != hi || lo.elem != x.elem || lo.shape != shape {
            let want = Type::tensor(x.elem, shape);
            return self.err(
                o.id,
                format!("both results must be `{want}` (layout aside), of one layout"),
            );
        }
        // The operand's layout is the results' interleaved.
        self.derived_layout(o.id, lo, &x, "the results' interleaved", |l| {
            l.interleaved(&lo.shape)
        });
    }

    /// At the GPU level, `result`'s layout must place every element where `derive` of the
    /// operand's layout does, up to the order of a thread's registers (so the op moves no data).
    fn derived_layout(
        &mut self,
        op: OpId,
        a: &Type,
        result: &Type,
        what: &str,
        derive: impl Fn(&Layout) -> Result<Layout, String>,
    ) {
        let (Some(al), Some(rl)) = (&a.layout, &result.layout) else {
            return;
        };
        let ok = derive(al)
            .and_then(|want| want.linear(&result.shape))
            .and_then(|want| Ok(want.same_up_to_register_order(&rl.linear(&result.shape)?)));
        if ok != Ok(true) {
            self.err(
                op,
                format!("the result's layout must be {what} layout (no data moves)"),
            );
        }
    }

    /// At the GPU level, `part`'s layout (the lower-rank tensor `low`) must be `full`'s layout
    /// sliced at `axis`.
    pub(super) fn sliced(&mut self, op: OpId, full: &Type, axis: u32, low: &Type, part: &str) {
        let (Some(fl), Some(ll)) = (&full.layout, &low.layout) else {
            return;
        };
        let ok = match (fl, ll) {
            (parent, Layout::Slice(s)) => s.dim == axis && *s.parent == *parent,
            (
                _,
                Layout::Blocked(_)
                | Layout::Mma(_)
                | Layout::DotOperand(_)
                | Layout::Shared(_)
                | Layout::Linear(_),
            ) => false,
        };
        if !ok {
            self.err(
                op,
                format!(
                    "{part}'s layout must be the layout of `{full}` sliced at dimension {axis}"
                ),
            );
        }
    }
}

/// `shape` with `f` of its last extent.
fn with_last(shape: &[u32], f: impl Fn(u32) -> u32) -> Vec<u32> {
    let mut s = shape.to_vec();
    if let Some(last) = s.last_mut() {
        *last = f(*last);
    }
    s
}
