//! Rules of types (rule 3), layouts (rule 4) and `smem` buffer types (rule 25), checked for every
//! value where it is defined (op results and block arguments, located at the op that defines or
//! owns them).

use super::Verifier;
use crate::ir::types::{Elem, Layout, SharedLayout, Type};
use crate::ir::OpId;

impl Verifier<'_> {
    /// Rules 3 and 4 for one type (and 25 for an `smem` type).
    pub(super) fn check_type(&mut self, op: OpId, ty: &Type) {
        if let Some(Layout::Shared(s)) = &ty.layout {
            return self.check_shared_type(op, ty, s);
        }
        if !ty.is_tensor() {
            if ty.layout.is_some() {
                self.err(op, format!("scalar type `{ty}` has a layout"));
            }
            return;
        }
        if ty.shape.len() > 4 {
            self.err(
                op,
                format!("`{ty}` has rank {}; at most 4 is supported", ty.shape.len()),
            );
        }
        if ty.shape.iter().any(|&d| d == 0 || !d.is_power_of_two()) {
            self.err(
                op,
                format!("`{ty}` has a dimension that is not a power of two"),
            );
        }
        let Some(layout) = &ty.layout else { return };
        if let Err(e) = self.layout_structure(layout, ty.shape.len()) {
            return self.err(op, format!("layout of `{ty}`: {e}"));
        }
        if let Err(e) = layout.linear(&ty.shape).and_then(|ll| ll.check()) {
            self.err(op, format!("layout of `{ty}`: {e}"));
        }
    }

    /// Rule 25 for an `smem` type.
    pub(super) fn check_shared_type(&mut self, op: OpId, ty: &Type, s: &SharedLayout) {
        let Elem::Scalar(d) = ty.elem else {
            return self.err(
                op,
                format!("`{ty}` holds pointers; shared buffers hold numbers"),
            );
        };
        let [stages, rows, cols] = ty.shape[..] else {
            return self.err(op, format!("`{ty}` is not stages × rows × columns"));
        };
        if stages == 0 || !rows.is_power_of_two() || !cols.is_power_of_two() {
            return self.err(
                op,
                format!("`{ty}` needs at least one stage and power-of-two rows and columns"),
            );
        }
        let block_ok = s.block == 0 || (s.block.is_power_of_two() && s.block < cols);
        let width = if s.block == 0 {
            cols
        } else {
            s.block.min(cols)
        };
        let fields_ok = s.per_phase.is_power_of_two()
            && s.max_phase.is_power_of_two()
            && matches!(s.vec.checked_mul(d.size_bytes()), Some(16 | 32))
            && s.vec.checked_mul(s.max_phase).is_some_and(|w| w <= width);
        if !block_ok {
            return self.err(
                op,
                format!("`{ty}`: a column block is a power of two below the columns"),
            );
        }
        if !fields_ok {
            self.err(op,
                format!("`{ty}`: the swizzle needs 16- or 32-byte chunks, power-of-two phases and max_phase · vec ≤ columns (of a block)"),
            );
        }
    }

    /// The rules of rule 4 that concern a layout's own fields, for a tensor of rank `rank`.
    pub(super) fn layout_structure(&self, layout: &Layout, rank: usize) -> Result<(), String> {
        self.layout_fields(layout, rank)?;
        if layout.rank() != rank {
            return Err(format!("it does not have the tensor's rank {rank}"));
        }
        if layout.num_warps() != self.f.num_warps {
            return Err(format!(
                "it spreads over {} warps, the kernel has {}",
                layout.num_warps(),
                self.f.num_warps
            ));
        }
        Ok(())
    }

    /// The fields of each kind of layout, for a tensor of rank `rank`.
    pub(super) fn layout_fields(&self, layout: &Layout, rank: usize) -> Result<(), String> {
        match layout {
            Layout::Shared(_) => Err("a `#shared` layout belongs only to an `smem` buffer".into()),
            Layout::Linear(l) => {
                if l.rank() != rank {
                    return Err(format!("it does not have the tensor's rank {rank}"));
                }
                if l.shape.iter().any(|&d| d == 0 || !d.is_power_of_two()) {
                    return Err("its shape has an extent that is not a power of two".into());
                }
                l.check()
            }
            Layout::Blocked(b) => {
                if b.size_per_thread.len() != rank
                    || b.threads_per_warp.len() != rank
                    || b.warps_per_cta.len() != rank
                    || b.order.len() != rank
                {
                    return Err(format!("it does not have the tensor's rank {rank}"));
                }
                if b.threads_per_warp.iter().product::<u32>() != 32 {
                    return Err("it does not have 32 threads per warp".into());
                }
                if b.size_per_thread.contains(&0) {
                    return Err("it gives a thread no elements".into());
                }
                if b.size_per_thread
                    .iter()
                    .chain(&b.warps_per_cta)
                    .chain(&b.threads_per_warp)
                    .any(|x| !x.is_power_of_two())
                {
                    return Err("a factor is not a power of two".into());
                }
                let mut sorted = b.order.clone();
                sorted.sort_unstable();
                if sorted != (0..rank as u32).collect::<Vec<_>>() {
                    return Err("its order is not a permutation".into());
                }
                Ok(())
            }
            Layout::Slice(s) => {
                if s.dim as usize > rank {
                    return Err("it slices a dimension past its rank".into());
                }
                self.layout_structure(&s.parent, rank + 1)
            }
            Layout::Mma(m) => {
                if !matches!(m.version, 2 | 3) || m.warps_per_cta.len() != 2 {
                    return Err("an mma layout is version 2 or 3 over 2-D tensors".into());
                }
                if m.version == 3
                    && (!m.warps_per_cta[0].is_multiple_of(4) || m.warps_per_cta[1] != 1)
                {
                    return Err(
                        "an mma layout of version 3 has whole warpgroups along the rows: wpc = [4·g, 1]"
                            .into(),
                    );
                }
                Ok(())
            }
            Layout::DotOperand(d) => {
                if !matches!(*d.parent, Layout::Mma(_)) {
                    return Err("an operand layout's parent must be an mma layout".into());
                }
                if d.op_idx > 1 || !matches!(d.k_width, 1 | 2 | 4) {
                    return Err("an operand layout has index 0 or 1 and k_width 1, 2 or 4".into());
                }
                self.layout_structure(&d.parent, rank)
            }
        }
    }
}
