//! Rules of control flow: `for` (rule 20), `while` (rule 38), `if` (rule 23) and `return`
//! (rule 12). Where `yield`
//! and `return` sit, and the regions an op owns, are checked with the block
//! (`Verifier::check_block`).

use super::{Op, Verifier};
use crate::ir::ops::OpKind;
use crate::ir::types::{DType, Type};

impl Verifier<'_> {
    /// Rule 20: `for` (where its `yield` sits is rule 21, checked with the block).
    pub(super) fn for_loop(&mut self, o: &Op<'_>) {
        let f = self.f;
        let ops = o.ops;
        let data = o.data;
        if ops.len() < 3 {
            return self.err(
                o.id,
                format!("`for` takes 3 or more operand(s), found {}", ops.len()),
            );
        }
        for (i, what) in ["lower bound", "upper bound", "step"].iter().enumerate() {
            if *self.ty(ops[i]) != Type::scalar(DType::I32) {
                self.err(o.id, format!("the {what} of `for` must be `i32`"));
            }
        }
        let carried: Vec<Type> = ops[3..].iter().map(|&v| self.ty(v).clone()).collect();
        let results: Vec<Type> = data.results.iter().map(|&r| f.ty(r).clone()).collect();
        if results != carried {
            self.err(
                o.id,
                "the results of `for` must have the types of its carried values".into(),
            );
        }
        let Some(&region) = data.regions.first() else {
            return;
        };
        let Some(&body) = f.regions[region.index()].blocks.first() else {
            return;
        };
        let args: Vec<Type> = f.blocks[body.index()]
            .args
            .iter()
            .map(|&a| f.ty(a).clone())
            .collect();
        let mut want_args = vec![Type::scalar(DType::I32)];
        want_args.extend(carried.iter().cloned());
        if args != want_args {
            self.err(
                o.id,
                "the body's arguments must be the `i32` induction variable and the carried values"
                    .into(),
            );
        }
        let last = f.blocks[body.index()].ops.last().map(|&x| f.op(x));
        match last {
            Some(y) if matches!(y.kind, OpKind::Yield) => {
                let yielded: Vec<Type> = y.operands.iter().map(|&v| f.ty(v).clone()).collect();
                if yielded != carried {
                    self.err(
                        o.id,
                        "`yield` must give one value of each carried value's type".into(),
                    );
                }
            }
            _ => self.err(o.id, "the body of `for` must end with `yield`".into()),
        }
    }

    /// Rule 38: `while`.
    pub(super) fn while_loop(&mut self, o: &Op<'_>) {
        let f = self.f;
        let data = o.data;
        let carried: Vec<Type> = o.ops.iter().map(|&v| self.ty(v).clone()).collect();
        let results: Vec<Type> = data.results.iter().map(|&r| f.ty(r).clone()).collect();
        if results != carried {
            self.err(
                o.id,
                "the results of `while` must have the types of its carried values".into(),
            );
        }
        for (i, &region) in data.regions.iter().enumerate() {
            let Some(&block) = f.regions[region.index()].blocks.first() else {
                continue;
            };
            let what = if i == 0 { "condition" } else { "body" };
            let args: Vec<Type> = f.blocks[block.index()]
                .args
                .iter()
                .map(|&a| f.ty(a).clone())
                .collect();
            if args != carried {
                self.err(
                    o.id,
                    format!("the arguments of the {what} of `while` must be the carried values"),
                );
            }
            let want = if i == 0 {
                vec![Type::scalar(DType::I1)]
            } else {
                carried.clone()
            };
            match f.blocks[block.index()].ops.last().map(|&x| f.op(x)) {
                Some(y) if matches!(y.kind, OpKind::Yield) => {
                    let yielded: Vec<Type> = y.operands.iter().map(|&v| f.ty(v).clone()).collect();
                    if yielded != want {
                        self.err(
                            o.id,
                            if i == 0 {
                                "the condition of `while` must yield one `i1` scalar".into()
                            } else {
                                "the body of `while` must yield one value of each carried value's type"
                                    .into()
                            },
                        );
                    }
                }
                _ => self.err(o.id, format!("the {what} of `while` must end with `yield`")),
            }
        }
    }

    /// Rule 23: `if`.
    pub(super) fn if_else(&mut self, o: &Op<'_>) {
        let f = self.f;
        let ops = o.ops;
        let data = o.data;
        if !self.takes(o, &[1]) {
            return;
        }
        if *self.ty(ops[0]) != Type::scalar(DType::I1) {
            self.err(o.id, "the condition of `if` must be an `i1` scalar".into());
        }
        let results: Vec<Type> = data.results.iter().map(|&r| f.ty(r).clone()).collect();
        for (i, &region) in data.regions.iter().enumerate() {
            let Some(&block) = f.regions[region.index()].blocks.first() else {
                continue;
            };
            if !f.blocks[block.index()].args.is_empty() {
                self.err(o.id, "the branches of `if` take no arguments".into());
            }
            let branch = if i == 0 { "then" } else { "else" };
            match f.blocks[block.index()].ops.last().map(|&x| f.op(x)) {
                Some(y) if matches!(y.kind, OpKind::Yield) => {
                    let yielded: Vec<Type> = y.operands.iter().map(|&v| f.ty(v).clone()).collect();
                    if yielded != results {
                        self.err(
                            o.id,
                            format!(
                                "the {branch} branch must yield one value of each result's type"
                            ),
                        );
                    }
                }
                _ => self.err(
                    o.id,
                    format!("the {branch} branch of `if` must end with `yield`"),
                ),
            }
        }
    }

    /// Rule 12: `return` takes no operands (where it sits is checked with the block).
    pub(super) fn kernel_return(&mut self, o: &Op<'_>) {
        self.takes(o, &[0]);
    }
}
