//! Tensor descriptors (Triton's `tl.make_tensor_descriptor`): `make_tensor_descriptor(base,
//! shape, strides, block_shape)` and its methods `d.load([c0, c1])` and `d.store([c0, c1], t)`.
//!
//! A descriptor is not an IR value. Each `make_tensor_descriptor` the walker lowers takes the
//! kernel's next slot (`Function::desc_slots`) and is a [`Val::Desc`] of that slot, which names
//! may bind (`let`), tuples and tile functions pass (as a `Tile` parameter or result) and
//! methods read; everything else (arithmetic, `load`, a loop carrying it) is an error. Each
//! access is one `desc_load`/`desc_store` op carrying the array itself as operands (pointer,
//! extents and strides, cast to `i64`), so the IR needs no descriptor type; the slot ties the
//! accesses of one descriptor together for the Hopper path, whose launch builds one tensor map
//! per slot.

use quote::ToTokens;
use syn::Expr;
use tile_core::ir::{DType, Elem, OpKind, Type, ValueId};

use super::memory::conversion;
use crate::frontend::walker::{err, Lowering, Val};

/// What one `make_tensor_descriptor` describes.
#[derive(Clone, Debug)]
pub struct Descriptor {
    /// The array's first element (a scalar pointer).
    ptr: ValueId,
    /// Its element type.
    dtype: DType,
    /// Extents, outermost first (`i64` scalars).
    dims: Vec<ValueId>,
    /// Strides in elements, outermost first (`i64` scalars).
    strides: Vec<ValueId>,
    /// The tile one access reads or writes.
    block: Vec<u32>,
}

/// The entries of an array argument (`[a, b]`) of `make_tensor_descriptor` or of a method;
/// `what` names it in the error for anything else.
fn entries<'a>(e: &'a Expr, what: &str) -> syn::Result<Vec<&'a Expr>> {
    match e {
        Expr::Array(a) => Ok(a.elems.iter().collect()),
        Expr::Paren(p) => entries(&p.expr, what),
        Expr::Group(g) => entries(&g.expr, what),
        other => Err(err(
            other,
            format!("{what} is written as an array, one entry per dimension: `[d0, d1]` or `[d0]`"),
        )),
    }
}

impl Lowering {
    /// The error for a tensor descriptor written where a number or tile is needed.
    pub(in crate::frontend) fn not_a_value(&self, at: &dyn ToTokens) -> syn::Error {
        let tokens = at.to_token_stream();
        let flat: Vec<proc_macro2::TokenTree> = tokens.clone().into_iter().collect();
        match &flat[..] {
            [proc_macro2::TokenTree::Ident(name)] => err(
                at,
                format!(
                    "`{name}` is a tensor descriptor, not a number or tile: read its tiles with \
                     `{name}.load([..])` and write them with `{name}.store([..], tile)`"
                ),
            ),
            _ => err(
                at,
                "this is a tensor descriptor, not a number or tile: bind it with \
                 `let d = make_tensor_descriptor(..);` and read its tiles with `d.load([..])`",
            ),
        }
    }

    /// `make_tensor_descriptor(base, shape, strides, block_shape)` (the count of arguments was
    /// checked): a descriptor of the next slot.
    pub(super) fn make_tensor_descriptor(
        &mut self,
        args: &[&Expr],
        c: &syn::ExprCall,
    ) -> syn::Result<Val> {
        let base = self.expr(args[0])?;
        let (ptr, dtype) = match (base, self.ty(base)) {
            (Val::V(id), Some(t)) if !t.is_tensor() && t.elem.pointee().is_some() => {
                (id, t.elem.pointee().unwrap_or(DType::F32))
            }
            (_, t) => {
                let found = t.map_or("a literal".to_string(), |t| format!("`{t}`"));
                return Err(err(
                    args[0],
                    format!(
                        "the base of a tensor descriptor is a pointer (such as a `Ptr<f16>` \
                         parameter, or one offset by a scalar), found {found}"
                    ),
                ));
            }
        };
        let shape = entries(args[1], "the shape of a tensor descriptor")?;
        let rank = shape.len();
        if !(1..=2).contains(&rank) {
            return Err(err(
                args[1],
                format!(
                    "a tensor descriptor has rank 1 or 2, found a shape of {rank} {}",
                    if rank == 1 { "entry" } else { "entries" }
                ),
            ));
        }
        let strides = entries(args[2], "the strides of a tensor descriptor")?;
        let block_shape = entries(args[3], "the block shape of a tensor descriptor")?;
        for (list, at, what) in [
            (&strides, args[2], "strides"),
            (&block_shape, args[3], "block shape"),
        ] {
            if list.len() != rank {
                return Err(err(
                    at,
                    format!(
                        "the {what} have {} {} and the shape {rank}: a descriptor of rank \
                         {rank} takes {rank} of each",
                        list.len(),
                        if list.len() == 1 { "entry" } else { "entries" }
                    ),
                ));
            }
        }
        let mut dims = Vec::with_capacity(rank);
        for d in &shape {
            dims.push(self.desc_i64(d, "an extent")?);
        }
        let mut stride_ids = Vec::with_capacity(rank);
        for s in &strides {
            stride_ids.push(self.desc_i64(s, "a stride")?);
        }
        let mut block = Vec::with_capacity(rank);
        for b in &block_shape {
            let v = self.expr(b)?;
            let n = self.const_arg(v, b, "a block dimension of a tensor descriptor")?;
            if n <= 0 || !(n as u64).is_power_of_two() || n > (1 << 20) {
                return Err(err(
                    *b,
                    format!("a block dimension is a power of two from 1 to 2^20, found {n}"),
                ));
            }
            block.push(n as u32);
        }
        self.check_elements(&block, args[3])?;
        let slot = self.f.desc_slots;
        if self.descs.len() != slot as usize {
            return Err(err(c, "internal error: descriptor slots out of step"));
        }
        self.f.desc_slots += 1;
        self.descs.push(Descriptor {
            ptr,
            dtype,
            dims,
            strides: stride_ids,
            block,
        });
        Ok(Val::Desc(slot))
    }

    /// An extent or stride of `make_tensor_descriptor`: an `i32` or `i64` scalar or an integer
    /// literal, as an `i64` value.
    fn desc_i64(&mut self, e: &Expr, what: &str) -> syn::Result<ValueId> {
        let v = self.expr(e)?;
        match (v, self.ty(v)) {
            (Val::Int(_), _) => self.materialize(v, DType::I64, &[], e),
            (Val::V(id), Some(t)) if t == Type::scalar(DType::I64) => Ok(id),
            (Val::V(id), Some(t)) if t == Type::scalar(DType::I32) => {
                Ok(self.push(OpKind::Cast, vec![id], Type::scalar(DType::I64)))
            }
            (_, t) => {
                let found = t.map_or("a float literal".to_string(), |t| format!("`{t}`"));
                Err(err(
                    e,
                    format!(
                        "{what} of a tensor descriptor is an `i32` or `i64` scalar, found {found}"
                    ),
                ))
            }
        }
    }

    /// The slot and descriptor a method's receiver names, or the error for a receiver that is
    /// none.
    fn receiver_desc(&mut self, mc: &syn::ExprMethodCall) -> syn::Result<(u32, Descriptor)> {
        let name = mc.method.to_string();
        match self.expr_any(&mc.receiver)? {
            Val::Desc(slot) => Ok((slot, self.descs[slot as usize].clone())),
            // Through pointers, `load` and `store` are functions.
            _ => {
                let f = if name == "load" {
                    super::Builtin::Load
                } else {
                    super::Builtin::Store
                };
                Err(err(
                    &mc.method,
                    format!("`{name}` is a function: `{}`", f.signature()),
                ))
            }
        }
    }

    /// The coordinates of an access to `d` (`[c0, c1]`): one `i32` scalar (or integer literal)
    /// per dimension. An `i64` coordinate is refused rather than narrowed: the copy engine takes
    /// 32-bit coordinates, and a silent truncation would read the wrong tile.
    fn desc_coords(&mut self, d: &Descriptor, e: &Expr) -> syn::Result<Vec<ValueId>> {
        let coords = entries(e, "the coordinates of a descriptor access")?;
        let rank = d.block.len();
        if coords.len() != rank {
            return Err(err(
                e,
                format!(
                    "this descriptor has rank {rank}: an access takes {rank} coordinate(s), found {}",
                    coords.len()
                ),
            ));
        }
        let mut out = Vec::with_capacity(rank);
        for c in coords {
            let v = self.expr(c)?;
            match (v, self.ty(v)) {
                (Val::Int(_), _) => out.push(self.materialize(v, DType::I32, &[], c)?),
                (Val::V(id), Some(t)) if t == Type::scalar(DType::I32) => out.push(id),
                (_, t) => {
                    let hint = if t == Some(Type::scalar(DType::I64)) {
                        format!("; write {}", conversion(c, DType::I32))
                    } else {
                        String::new()
                    };
                    let found = t.map_or("a float literal".to_string(), |t| format!("`{t}`"));
                    return Err(err(
                        c,
                        format!("a coordinate of a descriptor access is an `i32` scalar, found {found}{hint}"),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// The operands every access to `d` at `coords` starts with: pointer, extents, strides,
    /// coordinates.
    fn desc_operands(d: &Descriptor, coords: Vec<ValueId>) -> Vec<ValueId> {
        let mut ops = vec![d.ptr];
        ops.extend(&d.dims);
        ops.extend(&d.strides);
        ops.extend(coords);
        ops
    }

    /// `d.load([c0, c1])`: the block of `d` at those coordinates, 0 outside the array.
    pub(super) fn desc_load(&mut self, mc: &syn::ExprMethodCall, e: &Expr) -> syn::Result<Val> {
        let (slot, d) = self.receiver_desc(mc)?;
        if mc.args.len() != 1 {
            return Err(err(
                e,
                format!(
                    "`.load(coords)` takes 1 argument (the coordinates, `[c0, c1]`), found {}",
                    mc.args.len()
                ),
            ));
        }
        let coords = self.desc_coords(&d, &mc.args[0])?;
        let ty = Type::tensor(Elem::Scalar(d.dtype), d.block.clone());
        Ok(Val::V(self.push(
            OpKind::DescLoad { slot },
            Self::desc_operands(&d, coords),
            ty,
        )))
    }

    /// `d.store([c0, c1], tile)`: writes a tile of `d`'s block shape and element type there,
    /// leaving out elements outside the array.
    pub(super) fn desc_store(&mut self, mc: &syn::ExprMethodCall, e: &Expr) -> syn::Result<Val> {
        let (slot, d) = self.receiver_desc(mc)?;
        if mc.args.len() != 2 {
            return Err(err(
                e,
                format!(
                    "`.store(coords, tile)` takes 2 arguments (the coordinates `[c0, c1]`, the tile), found {}",
                    mc.args.len()
                ),
            ));
        }
        let coords = self.desc_coords(&d, &mc.args[0])?;
        let at = &mc.args[1];
        let v = self.expr(at)?;
        let dt = d.dtype;
        let value = match (v, self.ty(v)) {
            (Val::V(id), Some(t)) if t.is_tensor() => {
                if t.elem != Elem::Scalar(dt) {
                    return Err(err(
                        at,
                        format!(
                            "cannot store `{}` values through a descriptor of `{dt}`; write {} \
                             (tile converts explicitly, where Triton converts on store)",
                            t.elem,
                            conversion(at, dt)
                        ),
                    ));
                }
                if t.shape != d.block {
                    return Err(err(
                        at,
                        format!(
                            "the tile has shape {:?}, the descriptor's block {:?}; a descriptor \
                             stores whole blocks",
                            t.shape, d.block
                        ),
                    ));
                }
                id
            }
            (_, t) => {
                let found = t.map_or("a literal".to_string(), |t| format!("`{t}`"));
                return Err(err(
                    at,
                    format!(
                        "a descriptor stores a tile of its block shape {:?}, found {found} (make \
                         one with `full({:?}, v)`)",
                        d.block, d.block
                    ),
                ));
            }
        };
        let mut operands = Self::desc_operands(&d, coords);
        operands.push(value);
        self.f
            .push_op(self.block, OpKind::DescStore { slot }, operands, vec![]);
        Ok(Val::Int(0))
    }
}
