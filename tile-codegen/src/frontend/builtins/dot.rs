//! `dot`: the matrix product of two 2-D tiles plus an accumulator, with its `precision` named
//! argument and the check that its operands fit the shared memory they are staged through.

use syn::Expr;
use tile_core::ir::{DType, Elem, OpKind, Precision, Type};

use crate::frontend::walker::{err, Lowering, Val};
use crate::staging;

impl Lowering {
    /// `dot(a, b[, acc][, precision = …])`.
    pub(super) fn dot(&mut self, args: &[&Expr], c: &syn::ExprCall) -> syn::Result<Val> {
        // A trailing `precision = …` is the one named argument.
        let (args, precision) = match args.split_last() {
            Some((Expr::Assign(named), rest)) => (rest.to_vec(), Some(precision_arg(named)?)),
            _ => (args.to_vec(), None),
        };
        if let Some(named) = args.iter().find(|a| matches!(a, Expr::Assign(_))) {
            return Err(err(
                *named,
                "`precision = …` comes after the tiles and the accumulator",
            ));
        }
        if !(2..=3).contains(&args.len()) {
            return Err(err(
                c,
                format!(
                    "`dot` takes 2 or 3 arguments (a, b[, accumulator]) and optionally `precision = ieee | tf32`, found {} argument(s)",
                    args.len()
                ),
            ));
        }
        let mut tiles = Vec::with_capacity(2);
        for a in &args[..2] {
            let v = self.expr(a)?;
            match (v, self.ty(v)) {
                (Val::V(id), Some(t)) if t.shape.len() == 2 => tiles.push((id, t)),
                (_, t) => {
                    let found = t.map_or("a literal".to_string(), |t| format!("`{t}`"));
                    return Err(err(
                        *a,
                        format!("`dot` multiplies 2-D tiles; this is {found}"),
                    ));
                }
            }
        }
        let ((a, at), (b, bt)) = (tiles[0].clone(), tiles[1].clone());
        if at.shape[1] != bt.shape[0] {
            return Err(err(
                c,
                format!(
                    "`dot` of tiles {}×{} and {}×{}: the inner dimensions ({} and {}) differ",
                    at.shape[0], at.shape[1], bt.shape[0], bt.shape[1], at.shape[1], bt.shape[0]
                ),
            ));
        }
        // 8-bit floats multiply in any pairing (`f8e4m3 × f8e5m2` is FP8 training's gradient
        // product), as the tensor cores take them.
        let f8 = at.dtype().is_some_and(DType::is_f8) && bt.dtype().is_some_and(DType::is_f8);
        if !(f8
            || at.elem == bt.elem
                && matches!(
                    at.dtype(),
                    Some(DType::F32 | DType::F16 | DType::BF16 | DType::I8)
                ))
        {
            return Err(err(
                c,
                format!(
                    "`dot` takes two tiles of one float type (f32, f16 or bf16), two 8-bit float tiles (f8e4m3, f8e5m2) or two `i8` tiles, found `{}` and `{}`{}",
                    at.elem,
                    bt.elem,
                    match [at.dtype(), bt.dtype()].into_iter().flatten().find(|d| d.is_f8()) {
                        Some(d) if !f8 => format!(": cast the other operand (`as {d}`), or both to f16"),
                        _ => String::new(),
                    }
                ),
            ));
        }
        // `i8` products accumulate in `i32`; every float product (8-bit ones too) in `f32`.
        let acc_ty = if at.dtype() == Some(DType::I8) {
            DType::I32
        } else {
            DType::F32
        };
        // `precision = tf32` changes only f32 operands; 16-bit ones are exact in tf32.
        let precision = match precision {
            Some(Precision::Tf32) if at.dtype() == Some(DType::F32) => Precision::Tf32,
            _ => Precision::Ieee,
        };
        // Both operands may pass through shared memory: as f32 for the FMA chain (see
        // `llvm::dot`), as themselves on tensor cores (`llvm::ldmatrix`), in dynamic shared
        // memory past the static 48 KiB. Refused here: more than any target holds. Each
        // target's module checks its whole allocation (a pipelined `dot` reads its ring and
        // stages nothing; an autotuning config that does not fit one target is left out there).
        let tensor_cores = staging::on_tensor_cores(&at, &bt, precision);
        let staged = staging::dot_bytes(&at, &bt, tensor_cores);
        let limit = tile_core::Target::ALL
            .iter()
            .map(|t| t.max_shared_bytes())
            .max()
            .unwrap_or(tile_core::Target::STATIC_SHARED_BYTES);
        if staged > limit {
            return Err(err(
                c,
                format!(
                    "`dot` of tiles {}×{} and {}×{} stages {staged} bytes through shared memory; a program may declare {limit}: use smaller tiles (loop over K)",
                    at.shape[0], at.shape[1], bt.shape[0], bt.shape[1]
                ),
            ));
        }
        let shape = vec![at.shape[0], bt.shape[1]];
        self.check_elements(&shape, c)?;
        let acc = match args.get(2) {
            Some(e) => {
                let v = self.expr(e)?;
                if let Some(t) = self.ty(v) {
                    if t.elem != Elem::Scalar(acc_ty) {
                        return Err(err(
                            *e,
                            format!(
                                "the accumulator of a `dot` of `{}` tiles is `{acc_ty}`, found `{}`",
                                at.elem, t.elem
                            ),
                        ));
                    }
                }
                self.materialize(v, acc_ty, &shape, *e)?
            }
            None => self.materialize(Val::Int(0), acc_ty, &shape, c)?,
        };
        Ok(Val::V(self.push(
            OpKind::Dot { precision },
            vec![a, b, acc],
            Type::tensor(Elem::Scalar(acc_ty), shape),
        )))
    }
}

/// The value of `dot`'s named argument `precision = ieee | tf32`.
fn precision_arg(named: &syn::ExprAssign) -> syn::Result<Precision> {
    let is = |e: &Expr, want: &str| matches!(e, Expr::Path(p) if p.path.is_ident(want));
    if !is(&named.left, "precision") {
        return Err(err(
            &named.left,
            "`dot`'s one named argument is `precision` (`precision = tf32`)",
        ));
    }
    Precision::ALL
        .into_iter()
        .find(|p| is(&named.right, p.name()))
        .ok_or_else(|| {
            err(
                &named.right,
                "the precision is `ieee` (the default) or `tf32`",
            )
        })
}
