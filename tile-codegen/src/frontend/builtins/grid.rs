//! `program_id` and `num_programs`: where this program sits in the launch grid.

use syn::Expr;
use tile_core::ir::{DType, OpKind, Type};

use super::Builtin;
use crate::frontend::walker::{err, Lowering, Val};

impl Lowering {
    /// `program_id(axis)` or `num_programs(axis)` (`b`): an `i32` scalar of grid axis 0, 1 or 2.
    pub(super) fn grid_index(&mut self, b: Builtin, args: &[&Expr]) -> syn::Result<Val> {
        let v = self.expr(args[0])?;
        let axis = self.const_arg(v, args[0], "the grid axis")?;
        if !(0..=2).contains(&axis) {
            return Err(err(args[0], "the grid axis is 0, 1 or 2"));
        }
        let kind = if b == Builtin::ProgramId {
            OpKind::ProgramId { axis: axis as u32 }
        } else {
            OpKind::NumPrograms { axis: axis as u32 }
        };
        Ok(Val::V(self.push(kind, vec![], Type::scalar(DType::I32))))
    }
}
