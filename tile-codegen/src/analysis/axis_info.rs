//! Axis analysis: for every value, facts about its innermost dimension that decide how wide a
//! memory access may be.
//!
//! - **contiguity** `c`: in each aligned group of `c` consecutive elements the values increase by
//!   one (for pointers: by one element).
//! - **divisibility** `d`: the first value of each contiguity group is a multiple of `d` (for
//!   pointers: the address, in bytes).
//! - **constancy** `k`: each aligned group of `k` consecutive elements holds one value.
//!
//! All three are powers of two; [`UNKNOWN_MAX`] stands for "as large as you like". A scalar is
//! constant (`k` = max) and contiguous only trivially (`c` = 1). The facts start from the
//! parameters' `divisibility` attributes, which a specialization promises at launch.

use tile_core::ir::{BinOp, CmpPred, ConstValue, DType, Elem, Function, OpKind};

/// The cap standing for "unbounded".
pub const UNKNOWN_MAX: u64 = 1 << 30;

/// Facts about one value's innermost dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AxisInfo {
    /// Run length of +1 steps.
    pub contiguity: u64,
    /// Power of two dividing each run's first value.
    pub divisibility: u64,
    /// Run length of equal values.
    pub constancy: u64,
}

impl AxisInfo {
    const UNKNOWN: AxisInfo = AxisInfo {
        contiguity: 1,
        divisibility: 1,
        constancy: 1,
    };

    fn scalar(divisibility: u64) -> AxisInfo {
        AxisInfo {
            contiguity: 1,
            divisibility,
            constancy: UNKNOWN_MAX,
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    // All facts are powers of two: the gcd is the smaller.
    a.min(b)
}

fn pow2_dividing(x: i64) -> u64 {
    if x == 0 {
        UNKNOWN_MAX
    } else {
        (1u64 << x.unsigned_abs().trailing_zeros()).min(UNKNOWN_MAX)
    }
}

/// Computes the facts of every value of `f` (indexed by value id).
pub fn analyze(f: &Function) -> Vec<AxisInfo> {
    let mut info = vec![AxisInfo::UNKNOWN; f.values.len()];
    for (i, &p) in f.params().iter().enumerate() {
        let d = f
            .param_attrs
            .get(i)
            .map_or(1, |a| a.divisibility.max(1) as u64);
        info[p.index()] = AxisInfo::scalar(d);
    }
    for op in f.walk() {
        let d = f.op(op);
        if matches!(d.kind, OpKind::If) {
            for &r in &d.results {
                info[r.index()] = if f.ty(r).is_tensor() {
                    AxisInfo::UNKNOWN
                } else {
                    AxisInfo::scalar(1)
                };
            }
            continue;
        }
        if matches!(d.kind, OpKind::While) {
            // Carried values may be anything, in both regions and after the loop.
            let args = d.regions.iter().flat_map(|&region| {
                f.regions[region.index()]
                    .blocks
                    .iter()
                    .flat_map(|&b| f.blocks[b.index()].args.iter().copied())
            });
            for v in args.chain(d.results.iter().copied()).collect::<Vec<_>>() {
                info[v.index()] = if f.ty(v).is_tensor() {
                    AxisInfo::UNKNOWN
                } else {
                    AxisInfo::scalar(1)
                };
            }
            continue;
        }
        if matches!(d.kind, OpKind::For) {
            // The induction variable `lb + k · step` is a multiple of what divides both; carried
            // values may be anything.
            let iv = gcd(
                info[d.operands[0].index()].divisibility,
                info[d.operands[2].index()].divisibility,
            );
            let unknown = |v: tile_core::ir::ValueId| {
                if f.ty(v).is_tensor() {
                    AxisInfo::UNKNOWN
                } else {
                    AxisInfo::scalar(1)
                }
            };
            for &region in &d.regions {
                for &b in &f.regions[region.index()].blocks {
                    for (i, &a) in f.blocks[b.index()].args.iter().enumerate() {
                        info[a.index()] = if i == 0 {
                            AxisInfo::scalar(iv)
                        } else {
                            unknown(a)
                        };
                    }
                }
            }
            for &r in &d.results {
                info[r.index()] = unknown(r);
            }
            continue;
        }
        let Some(&r) = d.results.first() else {
            continue;
        };
        let a = |i: usize| info[d.operands[i].index()];
        let ty = f.ty(r);
        let mut out = match &d.kind {
            OpKind::Constant(ConstValue::Int(c)) => AxisInfo::scalar(pow2_dividing(*c)),
            OpKind::Constant(ConstValue::Float(_)) => AxisInfo::scalar(1),
            OpKind::ProgramId { .. } | OpKind::NumPrograms { .. } => AxisInfo::scalar(1),
            OpKind::Arange { start, end } => AxisInfo {
                contiguity: (end - start) as u64,
                divisibility: pow2_dividing(*start),
                constancy: 1,
            },
            // Conservative: a rotated run is no longer known to be a run, nor a gathered one.
            OpKind::Roll { .. } | OpKind::Gather { .. } => AxisInfo {
                contiguity: 1,
                divisibility: 1,
                constancy: 1,
            },
            OpKind::Splat => AxisInfo {
                contiguity: 1,
                divisibility: a(0).divisibility,
                constancy: UNKNOWN_MAX,
            },
            // A new innermost dimension of extent 1: each element starts its own run, so it keeps
            // the operand's divisibility only where every element had it (contiguity 1).
            OpKind::ExpandDims { axis } if *axis as usize + 1 == ty.shape.len() => AxisInfo {
                contiguity: 1,
                divisibility: if a(0).contiguity == 1 {
                    a(0).divisibility
                } else {
                    1
                },
                constancy: 1,
            },
            // The innermost dimension is the operand's.
            OpKind::ExpandDims { .. } | OpKind::ConvertLayout => a(0),
            // The innermost dimension is the operand's first, of which nothing is known: every
            // element starts its own run, a multiple of what each of the operand's elements is.
            OpKind::Trans => AxisInfo {
                contiguity: 1,
                divisibility: if a(0).contiguity == 1 {
                    a(0).divisibility
                } else {
                    1
                },
                constancy: 1,
            },
            // Pairs of two operands' elements: no run is known, and an element is a multiple of
            // what every element of both was.
            OpKind::Interleave => {
                let each = |x: AxisInfo| if x.contiguity == 1 { x.divisibility } else { 1 };
                AxisInfo {
                    contiguity: 1,
                    divisibility: gcd(each(a(0)), each(a(1))),
                    constancy: 1,
                }
            }
            // Row-major order does not change: the operand's aligned runs, cut to the result's
            // innermost extent `n`, are runs of the result. A run cut shorter than the operand's
            // starts `n` elements (values, or `n` elements' bytes for pointers) into one.
            OpKind::Reshape => {
                let x = a(0);
                let n = ty.shape.last().map_or(1, |&n| u64::from(n));
                let unit = match ty.elem {
                    Elem::Ptr(dt) => u64::from(dt.size_bytes()),
                    Elem::Scalar(_) => 1,
                };
                AxisInfo {
                    contiguity: x.contiguity.min(n),
                    divisibility: if x.contiguity <= n {
                        x.divisibility
                    } else {
                        gcd(x.divisibility, n * unit)
                    },
                    constancy: x.constancy.min(n),
                }
            }
            OpKind::Broadcast => {
                let from = f.ty(d.operands[0]).shape.last().copied().unwrap_or(1);
                if from == 1 && ty.shape.last().is_some_and(|&n| n > 1) {
                    // One element repeated along the innermost dimension.
                    AxisInfo {
                        contiguity: 1,
                        divisibility: a(0).divisibility,
                        constancy: UNKNOWN_MAX,
                    }
                } else {
                    a(0)
                }
            }
            OpKind::Binary(b) => {
                let (x, y) = (a(0), a(1));
                let constancy = gcd(x.constancy, y.constancy);
                match b {
                    BinOp::Add => AxisInfo {
                        contiguity: gcd(x.contiguity, y.constancy)
                            .max(gcd(y.contiguity, x.constancy)),
                        divisibility: gcd(x.divisibility, y.divisibility),
                        constancy,
                    },
                    BinOp::Sub => AxisInfo {
                        contiguity: gcd(x.contiguity, y.constancy),
                        divisibility: gcd(x.divisibility, y.divisibility),
                        constancy,
                    },
                    // Every product is its own run, so each factor counts with what divides
                    // each of its elements: the divisibility of a run's first value only where
                    // runs have length 1 (`(p + i) · s` over a run `p + i` is a multiple of `s`,
                    // not of `p`'s divisibility times `s`).
                    BinOp::Mul => {
                        let each = |v: AxisInfo| if v.contiguity > 1 { 1 } else { v.divisibility };
                        AxisInfo {
                            contiguity: 1,
                            divisibility: each(x).saturating_mul(each(y)).min(UNKNOWN_MAX),
                            constancy,
                        }
                    }
                    // `x % m` with `m` constant over a run: runs of `x` stay runs as long as they
                    // do not wrap at a multiple of `m`. A run starting at a multiple of `d` wraps
                    // after a multiple of gcd(d, m) elements, so runs of that length are safe
                    // (`(j + 64) % 128` over `j` in 0..128 is two runs of 64, not one of 128).
                    BinOp::Rem if y.constancy > 1 || ty.shape.is_empty() => AxisInfo {
                        contiguity: gcd(x.contiguity, gcd(x.divisibility, y.divisibility)),
                        divisibility: gcd(x.divisibility, y.divisibility),
                        constancy,
                    },
                    // Each element is one of its operands' elements: what divides every
                    // element of both divides it (a run's first value says nothing of the
                    // rest), and the runs break where the other operand wins.
                    BinOp::Min | BinOp::Max => {
                        let each = |v: AxisInfo| if v.contiguity > 1 { 1 } else { v.divisibility };
                        AxisInfo {
                            contiguity: 1,
                            divisibility: gcd(each(x), each(y)),
                            constancy,
                        }
                    }
                    BinOp::Div
                    | BinOp::Rem
                    | BinOp::And
                    | BinOp::Or
                    | BinOp::Xor
                    | BinOp::UMulHi
                    | BinOp::Shl
                    | BinOp::Shr => AxisInfo {
                        contiguity: 1,
                        divisibility: 1,
                        constancy,
                    },
                }
            }
            OpKind::Cmp(p) => {
                let (x, y) = (a(0), a(1));
                let mut constancy = gcd(x.constancy, y.constancy);
                if matches!(p, CmpPred::Lt | CmpPred::Le | CmpPred::Gt | CmpPred::Ge) {
                    // A contiguous run starting at a multiple of h, compared with a value that is a
                    // multiple of h and constant over the run, cannot change its answer inside it.
                    for (run, bound) in [(x, y), (y, x)] {
                        let h = gcd(
                            gcd(run.contiguity, run.divisibility),
                            gcd(bound.divisibility, bound.constancy),
                        );
                        constancy = constancy.max(h);
                    }
                }
                AxisInfo {
                    contiguity: 1,
                    divisibility: 1,
                    constancy,
                }
            }
            OpKind::Unary(_) => AxisInfo {
                contiguity: 1,
                divisibility: 1,
                constancy: a(0).constancy,
            },
            OpKind::Select => AxisInfo {
                contiguity: 1,
                divisibility: gcd(a(1).divisibility, a(2).divisibility),
                constancy: gcd(a(0).constancy, gcd(a(1).constancy, a(2).constancy)),
            },
            OpKind::AddPtr => {
                let (p, o) = (a(0), a(1));
                let size = match ty.elem {
                    Elem::Ptr(dt) => dt.size_bytes() as u64,
                    Elem::Scalar(_) => 1,
                };
                AxisInfo {
                    contiguity: gcd(p.contiguity, o.constancy).max(gcd(o.contiguity, p.constancy)),
                    divisibility: gcd(
                        p.divisibility,
                        o.divisibility.saturating_mul(size).min(UNKNOWN_MAX),
                    ),
                    constancy: gcd(p.constancy, o.constancy),
                }
            }
            // The user's promise (`multiple_of`, `max_contiguous`), on top of what is known.
            OpKind::Hint {
                multiple_of,
                contiguous,
            } => {
                let x = a(0);
                let last = ty.shape.last().map_or(1, |&n| u64::from(n));
                AxisInfo {
                    contiguity: x.contiguity.max(u64::from(*contiguous).min(last)),
                    divisibility: x.divisibility.max(u64::from(*multiple_of)),
                    constancy: x.constancy,
                }
            }
            // Widening an integer (sign extension) keeps every fact.
            OpKind::Cast
                if matches!(
                    (f.ty(d.operands[0]).dtype(), ty.dtype()),
                    (Some(DType::I32), Some(DType::I64))
                ) =>
            {
                a(0)
            }
            // An address's divisibility is the pointer's alignment in bytes; its runs of +1 are
            // runs of one byte, contiguous elements only for 1-byte ones.
            OpKind::IntToPtr => {
                let x = a(0);
                let one_byte = matches!(ty.elem, Elem::Ptr(dt) if dt.size_bytes() == 1);
                AxisInfo {
                    contiguity: if one_byte { x.contiguity } else { 1 },
                    divisibility: x.divisibility,
                    constancy: x.constancy,
                }
            }
            // Math and other casts keep runs of equal values equal, nothing more.
            OpKind::Math(_) | OpKind::Cast | OpKind::Bitcast => AxisInfo {
                contiguity: 1,
                divisibility: 1,
                constancy: d
                    .operands
                    .iter()
                    .map(|o| info[o.index()].constancy)
                    .min()
                    .unwrap_or(1),
            },
            OpKind::Reduce { .. } => {
                if ty.is_tensor() {
                    AxisInfo::UNKNOWN
                } else {
                    AxisInfo::scalar(1)
                }
            }
            OpKind::Dot { .. }
            | OpKind::Deinterleave
            | OpKind::Load { .. }
            | OpKind::AtomicRmw { .. }
            | OpKind::AtomicCas { .. }
            | OpKind::Scan { .. }
            | OpKind::AssociativeScan { .. }
            | OpKind::LocalAlloc
            | OpKind::LocalLoad { .. }
            | OpKind::WarpGroupDot { .. }
            | OpKind::WarpGroupWait { .. }
            | OpKind::FenceAsyncShared
            | OpKind::DescLoad { .. }
            | OpKind::DescStore { .. }
            | OpKind::MbarrierInit
            | OpKind::MbarrierExpect { .. }
            | OpKind::TmaLoad { .. }
            | OpKind::MbarrierWait
            | OpKind::MbarrierInval
            | OpKind::AsyncCopy { .. }
            | OpKind::AsyncCommit
            | OpKind::AsyncWait { .. }
            | OpKind::Barrier
            | OpKind::DebugBarrier => {
                if ty.is_tensor() {
                    AxisInfo::UNKNOWN
                } else {
                    AxisInfo::scalar(1)
                }
            }
            OpKind::Store { .. }
            | OpKind::For
            | OpKind::While
            | OpKind::If
            | OpKind::Yield
            | OpKind::Return => continue,
        };
        if let Some(&n) = ty.shape.last() {
            out.contiguity = out.contiguity.min(n as u64);
            out.constancy = out.constancy.min(n as u64);
        } else {
            out.contiguity = 1;
            out.constancy = UNKNOWN_MAX;
        }
        info[r.index()] = out;
    }
    info
}
