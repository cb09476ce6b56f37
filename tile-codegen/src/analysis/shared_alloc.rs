//! Shared-memory allocation: where in the kernel's one shared array each user of shared memory
//! gets its bytes. An analysis of GPU-level IR (it changes nothing), asked by `insert-barriers`
//! and computed again for the LLVM lowering, which both see the same IR and so the same answer.
//!
//! **Users.** Every `local_alloc` buffer (`S · R · C` elements), and every op whose lowering
//! needs scratch memory for its own use ([`OpKind::uses_scratch`]: `convert_layout`, `reduce`
//! across warps, `roll` through memory, the FMA `dot`). How many bytes is the back end's answer,
//! handed in as a [`ScratchBytes`] function (`llvm::scratch_bytes`), so that this analysis does
//! not depend on the lowering.
//!
//! **Liveness.** Ops are numbered in program order ([`Function::walk`]: a loop's body right after
//! the loop op). A scratch op is live at its own position only. A buffer is live from its
//! `local_alloc` to its last use, where a use inside a loop that does not hold the `local_alloc`
//! counts at the end of the loop (the next iteration uses it again); a buffer filled by
//! `async_copy` stays live up to the next `async_wait {pending = 0}` (until then a copy may still
//! be writing it), or to the end of the kernel without one.
//!
//! **Placement.** Users whose live ranges meet get disjoint bytes; the others may share. Largest
//! first (ties in program order), each at the lowest offset that clears every placed user it
//! meets: 1024-byte aligned for buffers (the period of the widest swizzle, which `wgmma` reads
//! from aligned blocks), 16 for scratch. Sharing bytes is safe
//! only with a barrier between the last access of one user and the first of the next; placing
//! those is `insert-barriers`'s work.

use std::collections::HashMap;

use tile_core::ir::{Function, OpId, OpKind, SharedMemoryUse};

/// Bytes of scratch shared memory the lowering of an op (of the kernel given) takes, 0 for most ops, or
/// why its types are not what the lowering takes: the back end's answer, which the allocation
/// asks for every op that [`OpKind::uses_scratch`].
pub type ScratchBytes = fn(&Function, OpId) -> Result<u64, String>;

/// What a placed user is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A `local_alloc` buffer.
    Buffer,
    /// An op's scratch memory.
    Scratch,
}

/// One user's bytes: `offset .. offset + bytes` of the kernel's shared array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// First byte.
    pub offset: u64,
    /// Length in bytes.
    pub bytes: u64,
    /// Buffer or scratch.
    pub kind: Kind,
    /// Live range: first and last position in program order, inclusive.
    pub live: (usize, usize),
}

/// Where every user of shared memory lives.
#[derive(Clone, Debug, Default)]
pub struct Allocation {
    places: HashMap<OpId, Place>,
    /// Bytes of the kernel's shared array (0 when nothing uses shared memory).
    pub size: u64,
    /// Whether a `local_alloc` buffer is placed: its memory is the launch's dynamic shared
    /// memory.
    pub dynamic: bool,
}

impl Allocation {
    /// The allocation of `f`, with the scratch bytes of each op from `scratch`, or the op whose
    /// need could not be known and why.
    pub fn of(f: &Function, scratch: ScratchBytes) -> Result<Allocation, (OpId, String)> {
        let order = f.walk();
        let pos: HashMap<OpId, usize> = order.iter().enumerate().map(|(i, &o)| (o, i)).collect();
        let end = subtree_ends(f, &order, &pos);
        let parent = parents(f, &order);

        let mut users: Vec<(OpId, Place)> = Vec::new();
        for (p, &op) in order.iter().enumerate() {
            let d = f.op(op);
            let usage = d.kind.shared_memory_use();
            if usage == SharedMemoryUse::Allocates {
                let ty = f.ty(d.results[0]);
                let d = ty
                    .dtype()
                    .ok_or((op, "a shared buffer holds numbers".to_string()))?;
                let bytes = ty
                    .numel()
                    .checked_mul(u64::from(d.size_bytes()))
                    .ok_or((op, "a shared buffer is too large".to_string()))?;
                let live = (p, buffer_end(f, &order, &pos, &end, &parent, op));
                users.push((
                    op,
                    Place {
                        offset: 0,
                        bytes,
                        kind: Kind::Buffer,
                        live,
                    },
                ));
            } else if usage == SharedMemoryUse::Scratch {
                let bytes = scratch(f, op).map_err(|e| (op, e))?;
                if bytes > 0 {
                    users.push((
                        op,
                        Place {
                            offset: 0,
                            bytes,
                            kind: Kind::Scratch,
                            live: (p, p),
                        },
                    ));
                }
            }
        }

        // Largest first, ties in program order.
        users.sort_by_key(|(_, u)| (std::cmp::Reverse(u.bytes), u.live.0));
        let mut placed: Vec<Place> = Vec::with_capacity(users.len());
        let mut places = HashMap::with_capacity(users.len());
        let mut size = 0u64;
        for (op, mut u) in users {
            let align = match u.kind {
                Kind::Buffer => 1024,
                Kind::Scratch => 16,
            };
            let mut taken: Vec<(u64, u64)> = placed
                .iter()
                .filter(|q| q.live.0 <= u.live.1 && u.live.0 <= q.live.1)
                .map(|q| (q.offset, q.offset + q.bytes))
                .collect();
            taken.sort_unstable();
            let mut at = 0u64;
            for (lo, hi) in taken {
                if at + u.bytes <= lo {
                    break;
                }
                at = at.max(hi.next_multiple_of(align));
            }
            u.offset = at;
            size = size.max(at + u.bytes);
            placed.push(u);
            places.insert(op, u);
        }
        let dynamic = placed.iter().any(|u| u.kind == Kind::Buffer);
        Ok(Allocation {
            places,
            size: size.next_multiple_of(16),
            dynamic,
        })
    }

    /// Where `op` (a `local_alloc`, or an op with scratch memory) has its bytes.
    pub fn place(&self, op: OpId) -> Option<Place> {
        self.places.get(&op).copied()
    }
}

/// Per op, the last position in program order of the op or anything nested in it.
fn subtree_ends(f: &Function, order: &[OpId], pos: &HashMap<OpId, usize>) -> HashMap<OpId, usize> {
    let mut end: HashMap<OpId, usize> = HashMap::with_capacity(order.len());
    // Nested ops follow their parent in `order`, so a reverse sweep sees children first.
    for &op in order.iter().rev() {
        let mut e = pos[&op];
        for &r in &f.op(op).regions {
            for &b in &f.regions[r.index()].blocks {
                if let Some(&last) = f.blocks[b.index()].ops.last() {
                    e = e.max(end[&last]);
                }
            }
        }
        end.insert(op, e);
    }
    end
}

/// Per block nested in an op's region, that op (`order`: the ops in program order).
fn parents(f: &Function, order: &[OpId]) -> HashMap<tile_core::ir::BlockId, OpId> {
    let mut parent = HashMap::new();
    for &op in order {
        for &r in &f.op(op).regions {
            for &b in &f.regions[r.index()].blocks {
                parent.insert(b, op);
            }
        }
    }
    parent
}

/// The last position at which the buffer `alloc` is live (see the module documentation).
fn buffer_end(
    f: &Function,
    order: &[OpId],
    pos: &HashMap<OpId, usize>,
    end: &HashMap<OpId, usize>,
    parent: &HashMap<tile_core::ir::BlockId, OpId>,
    alloc: OpId,
) -> usize {
    let buf = f.op(alloc).results[0];
    let at = pos[&alloc];
    let holds_alloc = |o: OpId| pos[&o] < at && at <= end[&o];
    let mut last = at;
    let mut copied = false;
    for &op in order {
        let d = f.op(op);
        if !d.operands.contains(&buf) {
            continue;
        }
        copied |= matches!(d.kind, OpKind::AsyncCopy { .. });
        let mut e = pos[&op];
        let mut block = d.block;
        while let Some(&up) = parent.get(&block) {
            if holds_alloc(up) {
                break;
            }
            if f.op(up).kind.is_loop() {
                e = e.max(end[&up]);
            }
            block = f.op(up).block;
        }
        last = last.max(e);
    }
    if copied {
        last = order[last + 1..]
            .iter()
            .position(|&o| matches!(f.op(o).kind, OpKind::AsyncWait { pending: 0 }))
            .map_or(order.len() - 1, |i| last + 1 + i);
    }
    last
}
