//! Barrier placement, an analysis of GPU-level IR: the ops before which a `barrier` is missing
//! because their shared-memory accesses may race an earlier op's. `insert-barriers` inserts
//! them; the LLVM lowering asks again and refuses a kernel that still lacks one.
//!
//! It reads the final order of ops and the bytes the allocation ([`super::shared_alloc`]) gives
//! each user of shared memory. What each op does to shared memory is its declared
//! [`SharedMemoryUse`]:
//!
//! - an op with scratch memory (`convert_layout`, `reduce` across warps, `roll` through memory,
//!   the FMA `dot`) writes its region, waits at a barrier of its own lowering, then reads it;
//! - `async_copy` writes its buffer, asynchronously: the write may land at any time up to the
//!   thread's `async_wait {pending = 0}`;
//! - `local_load` reads its buffer, `warp_group_dot` its two stages;
//! - `barrier` (and a kernel's `debug_barrier`) orders everything before it against everything
//!   after it.
//!
//! Walking the kernel in order, the analysis keeps the byte ranges read and written since the
//! last barrier, and the copies not yet waited for. An op that writes bytes read or written since
//! the last barrier, or reads bytes written since then, needs a barrier before it. Loops iterate
//! to a fixed point (what the end of the body leaves reaches the next iteration's start; a
//! `while` iterates its condition and body, and is left after its condition), and an `if` joins
//! its two branches; barriers inside them are safe because conditions and trip counts are
//! uniform across the program.
//!
//! **Rings.** The accesses of one `local_alloc` buffer by `async_copy` and `local_load` are not
//! checked against each other: the pass that builds a ring (`pipeline-dot`) orders its stages
//! with its own `async_wait` and `barrier` (a copy writes a stage no one reads until then), which
//! a byte-range analysis, blind to the stage index, could not prove. Between different users the
//! rule above holds: a scratch op placed over a ring's bytes after the ring's last use waits for
//! every thread's last read of it.
//!
//! A conflict with a copy still in flight cannot be fixed by a barrier; the allocation keeps such
//! ranges apart (a buffer filled by copies is live until the wait), so meeting one is an internal
//! error ([`missing`] returns it).

use std::collections::BTreeSet;

use tile_core::ir::{BlockId, Function, Layout, OpId, OpKind, SharedMemoryUse};

use super::shared_alloc::{Allocation, Kind};

/// The ops of `f` that need a barrier right before them (none once the pass has run), in
/// program order; `Err` names an op that conflicts with a copy still in flight.
pub fn missing(f: &Function, alloc: &Allocation) -> Result<Vec<OpId>, (OpId, String)> {
    let mut need = BTreeSet::new();
    let body = f.regions[f.body.index()].blocks[0];
    // Barriers found inside loops change what reaches earlier ops; repeat until none is new.
    loop {
        let before = need.len();
        let mut s = State::default();
        block(f, alloc, body, &mut s, &mut need)?;
        if need.len() == before {
            break;
        }
    }
    let order = f.walk();
    Ok(order.into_iter().filter(|o| need.contains(o)).collect())
}

/// A range of bytes an op touched; `ring` is the buffer for `async_copy` and `local_load`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Range {
    lo: u64,
    hi: u64,
    ring: Option<OpId>,
}

impl Range {
    fn meets(&self, other: &Range) -> bool {
        let same_ring = self.ring.is_some() && self.ring == other.ring;
        self.lo < other.hi && other.lo < self.hi && !same_ring
    }
}

/// What has happened to shared memory since the last barrier.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    /// Read since the last barrier.
    read: BTreeSet<Range>,
    /// Written (and complete in the writing thread) since the last barrier.
    written: BTreeSet<Range>,
    /// Written by copies not yet waited for.
    in_flight: BTreeSet<Range>,
}

impl State {
    fn barrier(&mut self) {
        self.read.clear();
        self.written.clear();
    }

    fn join(&mut self, other: &State) {
        self.read.extend(other.read.iter().copied());
        self.written.extend(other.written.iter().copied());
        self.in_flight.extend(other.in_flight.iter().copied());
    }

    /// Whether writing `r` now races: with a read or write since the last barrier, or with a
    /// copy in flight (`Err`: no barrier helps).
    fn write_races(&self, r: &Range) -> Result<bool, String> {
        if self.in_flight.iter().any(|x| x.meets(r)) {
            return Err("writes shared memory a copy may still be writing".into());
        }
        Ok(self.read.iter().chain(&self.written).any(|x| x.meets(r)))
    }

    /// Whether reading `r` now races: with a write since the last barrier, or a copy in flight.
    fn read_races(&self, r: &Range) -> Result<bool, String> {
        if self.in_flight.iter().any(|x| x.meets(r)) {
            return Err("reads shared memory a copy may still be writing".into());
        }
        Ok(self.written.iter().any(|x| x.meets(r)))
    }
}

/// The analysis over one block from state `s`, recording in `need` the ops that need a barrier.
fn block(
    f: &Function,
    alloc: &Allocation,
    b: BlockId,
    s: &mut State,
    need: &mut BTreeSet<OpId>,
) -> Result<(), (OpId, String)> {
    for &op in &f.blocks[b.index()].ops {
        if need.contains(&op) {
            s.barrier();
        }
        let d = f.op(op);
        let buffer = |i: usize| -> Result<Range, (OpId, String)> {
            let buf = d.operands.get(i).and_then(|&v| f.def_op(v)).ok_or((
                op,
                "a buffer operand that no `local_alloc` defines".to_string(),
            ))?;
            let p = alloc
                .place(buf)
                .ok_or((op, "a buffer the allocation did not place".to_string()))?;
            Ok(Range {
                lo: p.offset,
                hi: p.offset + p.bytes,
                ring: Some(buf),
            })
        };
        let mut conflict = |races: Result<bool, String>, s: &mut State| match races {
            Err(e) => Err((op, e)),
            Ok(true) => {
                need.insert(op);
                s.barrier();
                Ok(())
            }
            Ok(false) => Ok(()),
        };
        match &d.kind {
            OpKind::For => {
                let body = f.regions[d.regions[0].index()].blocks[0];
                for_loop(f, alloc, &[body], s, need)?;
            }
            // The condition, then (body, condition) any number of times: a loop over both
            // regions, and what leaves it has run the condition once more.
            OpKind::While => {
                let [cond, body] = [0, 1].map(|i| f.regions[d.regions[i].index()].blocks[0]);
                for_loop(f, alloc, &[cond, body], s, need)?;
                block(f, alloc, cond, s, need)?;
            }
            OpKind::If => {
                let mut out = State::default();
                for &r in &d.regions {
                    let mut branch = s.clone();
                    for &b in &f.regions[r.index()].blocks {
                        block(f, alloc, b, &mut branch, need)?;
                    }
                    out.join(&branch);
                }
                *s = out;
            }
            // Every other op by what it declares it does to shared memory.
            kind => match kind.shared_memory_use() {
                SharedMemoryUse::Barrier => s.barrier(),
                SharedMemoryUse::CompletesCopies => {
                    let done = std::mem::take(&mut s.in_flight);
                    s.written.extend(done);
                }
                SharedMemoryUse::WritesAsync(i) => {
                    let r = buffer(i)?;
                    conflict(s.write_races(&r), s)?;
                    s.in_flight.insert(r);
                }
                SharedMemoryUse::ReadsBuffers => {
                    let bufs = d
                        .operands
                        .iter()
                        .enumerate()
                        .filter(|(_, &v)| matches!(f.ty(v).layout, Some(Layout::Shared(_))));
                    for (i, _) in bufs {
                        let r = buffer(i)?;
                        conflict(s.read_races(&r), s)?;
                        s.read.insert(r);
                    }
                }
                SharedMemoryUse::Scratch => {
                    // Ops whose scratch need is some bytes have a place.
                    if let Some(p) = alloc.place(op).filter(|p| p.kind == Kind::Scratch) {
                        // Writes its region, a barrier of its own, then reads it.
                        let r = Range {
                            lo: p.offset,
                            hi: p.offset + p.bytes,
                            ring: None,
                        };
                        conflict(s.write_races(&r), s)?;
                        s.barrier();
                        s.read.insert(r);
                    }
                }
                SharedMemoryUse::Allocates | SharedMemoryUse::None => {}
            },
        }
    }
    Ok(())
}

/// A loop whose body is the blocks `body` run in order, entered in state `s`: the body iterated
/// to a fixed point (what the end of an iteration leaves reaches the next one's start); `s`
/// becomes what leaves the loop after no iteration or any number of them.
fn for_loop(
    f: &Function,
    alloc: &Allocation,
    body: &[BlockId],
    s: &mut State,
    need: &mut BTreeSet<OpId>,
) -> Result<(), (OpId, String)> {
    let entry = s.clone();
    let mut end = s.clone();
    loop {
        let mut start = entry.clone();
        start.join(&end);
        let mut next = start;
        let known = need.len();
        for &b in body {
            block(f, alloc, b, &mut next, need)?;
        }
        if next == end && need.len() == known {
            break;
        }
        end = next;
    }
    s.join(&end);
    Ok(())
}
