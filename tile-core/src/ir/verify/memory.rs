//! Rules of the ops that read and write global memory: `load`, `store` (rule 11), `atomic_rmw`
//! and `atomic_cas` (rule 26), with their masks and vector widths, and the tensor-descriptor
//! accesses `desc_load` and `desc_store` (rule 33).

use super::{Op, Verifier};
use crate::ir::ops::AtomicOp;
use crate::ir::types::{DType, Elem, Type};
use crate::ir::{OpId, ValueId};

impl Verifier<'_> {
    /// Rule 11: `load`.
    pub(super) fn load(&mut self, o: &Op<'_>, vec: &u32) {
        let ops = o.ops;
        if !self.takes(o, &[1, 3]) {
            return;
        }
        let Some(ty) = o.res.clone() else { return };
        let p = self.ty(ops[0]).clone();
        let Some(pointee) = p.elem.pointee() else {
            return self.err(o.id, "operand #0 of `load` must be a pointer".into());
        };
        let want_ty = p.with_elem(Elem::Scalar(pointee));
        if ty != want_ty {
            self.err(o.id, format!("the result must be `{want_ty}`"));
        }
        if ops.len() == 3 {
            self.mask(o.id, ops[1], &p);
            if *self.ty(ops[2]) != want_ty {
                self.err(o.id, format!("`other` must be `{want_ty}`"));
            }
        }
        self.vec(o.id, *vec, &p);
    }

    /// Rule 11: `store`.
    pub(super) fn store(&mut self, o: &Op<'_>, vec: &u32) {
        let ops = o.ops;
        if !self.takes(o, &[2, 3]) {
            return;
        }
        let p = self.ty(ops[0]).clone();
        let Some(pointee) = p.elem.pointee() else {
            return self.err(o.id, "operand #0 of `store` must be a pointer".into());
        };
        let want_ty = p.with_elem(Elem::Scalar(pointee));
        if *self.ty(ops[1]) != want_ty {
            self.err(
                o.id,
                format!(
                    "the stored value must be `{want_ty}`, found `{}`",
                    self.ty(ops[1])
                ),
            );
        }
        if ops.len() == 3 {
            self.mask(o.id, ops[2], &p);
        }
        self.vec(o.id, *vec, &p);
    }

    /// Rule 26: `atomic_rmw`.
    pub(super) fn atomic_rmw(&mut self, o: &Op<'_>, a: &AtomicOp) {
        let ops = o.ops;
        if !self.takes(o, &[2, 3]) {
            return;
        }
        self.atomic(o.id, ops, 1, o.res.as_ref(), |d| a.takes(d), a.name());
    }

    /// Rule 26: `atomic_cas`.
    pub(super) fn atomic_cas(&mut self, o: &Op<'_>) {
        let ops = o.ops;
        if !self.takes(o, &[3, 4]) {
            return;
        }
        self.atomic(
            o.id,
            ops,
            2,
            o.res.as_ref(),
            crate::ir::atomic_cas_takes,
            "cas",
        );
    }

    /// An atomic's operands: a pointer, `values` operands of its pointee's type and shape (the
    /// value; `cmp` first for `cas`), an optional mask; the result is the old values.
    pub(super) fn atomic(
        &mut self,
        op: OpId,
        ops: &[ValueId],
        values: usize,
        res: Option<&Type>,
        takes: impl Fn(DType) -> bool,
        what: &str,
    ) {
        let p = self.ty(ops[0]).clone();
        let Some(pointee) = p.elem.pointee() else {
            return self.err(op, "operand #0 of an atomic must be a pointer".into());
        };
        if !takes(pointee) {
            self.err(op, format!("atomic `{what}` does not take `{pointee}`"));
        }
        let want_ty = p.with_elem(Elem::Scalar(pointee));
        for &v in &ops[1..=values] {
            if *self.ty(v) != want_ty {
                let found = self.ty(v).clone();
                self.err(
                    op,
                    format!("the atomic's value must be `{want_ty}`, found `{found}`"),
                );
            }
        }
        if let Some(&m) = ops.get(values + 1) {
            self.mask(op, m, &p);
        }
        match res {
            Some(ty) if *ty != want_ty => {
                self.err(op, format!("the result must be `{want_ty}`"));
            }
            _ => {}
        }
    }

    pub(super) fn mask(&mut self, op: OpId, m: ValueId, ptr: &Type) {
        let want = ptr.with_elem(Elem::Scalar(DType::I1));
        if *self.ty(m) != want {
            let found = self.ty(m).clone();
            self.err(op, format!("the mask must be `{want}`, found `{found}`"));
        }
    }

    pub(super) fn vec(&mut self, op: OpId, vec: u32, ptr: &Type) {
        if vec == 0 || !vec.is_power_of_two() {
            return self.err(op, format!("vec = {vec} is not a power of two"));
        }
        if vec == 1 {
            return;
        }
        match ptr.layout.as_ref().map(|l| l.linear(&ptr.shape)) {
            Some(Ok(ll)) => {
                // A run that covers its whole dimension may be narrower than `vec`: the access
                // narrows to the extent.
                let (dim, run) = ll.contiguous_run();
                let whole = run == u64::from(ll.shape[dim]);
                if run % u64::from(vec) != 0 && !whole {
                    self.err(
                        op,
                        format!(
                            "vec = {vec} does not divide the elements a thread holds contiguously"
                        ),
                    );
                }
            }
            Some(Err(_)) => {}
            None => self.err(op, format!("vec = {vec} needs a layout")),
        }
    }
}

impl Verifier<'_> {
    /// Rule 33: `desc_load` (`store` false) and `desc_store` (`store` true) of descriptor `slot`.
    pub(super) fn desc_access(&mut self, o: &Op<'_>, slot: u32, store: bool) {
        let name = o.data.kind.name();
        if slot >= self.f.desc_slots {
            self.err(
                o.id,
                format!(
                    "slot {slot} is not a descriptor of the kernel, which has {} (`descriptors = {}`)",
                    self.f.desc_slots, self.f.desc_slots
                ),
            );
        }
        // The tile: the result of a load, the last operand of a store.
        let tile = if store {
            match o.ops.last() {
                Some(&v) => self.ty(v).clone(),
                None => {
                    return self.err(o.id, format!("`{name}` takes a stored value"));
                }
            }
        } else {
            let Some(t) = o.res.clone() else { return };
            t
        };
        let rank = tile.shape.len();
        if !(1..=2).contains(&rank) {
            let what = if store { "stored value" } else { "result" };
            return self.err(
                o.id,
                format!("the {what} of `{name}` must be a tensor of rank 1 or 2, found `{tile}`"),
            );
        }
        if !self.takes(o, &[1 + 3 * rank + usize::from(store)]) {
            return;
        }
        let ptr = self.ty(o.ops[0]).clone();
        match ptr.elem.pointee() {
            Some(p) if !ptr.is_tensor() => {
                if tile.elem != Elem::Scalar(p) {
                    let what = if store { "stored value" } else { "result" };
                    self.err(
                        o.id,
                        format!(
                            "the {what}'s element type `{}` is not the pointee `{p}` of `{ptr}`",
                            tile.elem
                        ),
                    );
                }
            }
            _ => self.err(
                o.id,
                format!("operand #0 of `{name}` must be a scalar pointer, found `{ptr}`"),
            ),
        }
        let parts = [
            ("an extent", DType::I64),
            ("a stride", DType::I64),
            ("a coordinate", DType::I32),
        ];
        for (k, (what, d)) in parts.into_iter().enumerate() {
            for i in 0..rank {
                let index = 1 + k * rank + i;
                let t = self.ty(o.ops[index]).clone();
                if t != Type::scalar(d) {
                    self.err(
                        o.id,
                        format!(
                            "operand #{index} of `{name}` is {what}: an `{d}` scalar, found `{t}`"
                        ),
                    );
                }
            }
        }
    }
}
