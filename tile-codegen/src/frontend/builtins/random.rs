//! The random numbers: `rand`, `randint`, `rand4x`, `randint4x` and `randn`, Triton's streams bit
//! for bit. They are not ops: each is Philox-4x32-10 written out in integer ops (which the passes
//! see like any other arithmetic), then Triton's conversions to uniform or normal floats.

use syn::Expr;
use tile_core::ir::{BinOp, CmpPred, ConstValue, DType, Elem, MathFn, OpKind, Type, ValueId};

use super::Builtin;
use crate::frontend::walker::{err, Lowering, Val};

impl Lowering {
    /// `rand(seed, offsets)`, `randint(…)`, `randn(…)`, `rand4x(seed, offsets, k)` or
    /// `randint4x(…)` (`b`), its count of arguments checked.
    pub(super) fn random(&mut self, b: Builtin, args: &[&Expr]) -> syn::Result<Val> {
        let word = match b {
            Builtin::Rand4x | Builtin::Randint4x => {
                let kv = self.expr(args[2])?;
                let k = self.const_arg(kv, args[2], "the word")?;
                let Some(k) = usize::try_from(k).ok().filter(|&k| k < 4) else {
                    return Err(err(args[2], format!("the word is 0, 1, 2 or 3, found {k}")));
                };
                k
            }
            _ => 0,
        };
        let words = self.philox(args[0], args[1])?;
        Ok(Val::V(match b {
            Builtin::Randint | Builtin::Randint4x => words[word],
            Builtin::Randn => {
                let (u1, u2) = (self.uniform(words[0]), self.uniform(words[1]));
                self.box_muller(u1, u2)
            }
            _ => self.uniform(words[word]),
        }))
    }

    /// The four words of Philox-4x32 with 10 rounds, as Triton's `randint4x` computes them (word
    /// 0 is the stream of `tl.rand` and `tl.randint`, bit for bit): the key is the seed's 64 bits (an `i32` seed
    /// sign-extended, as Triton's `seed.to(tl.uint64)`), the counter `(low 32 bits of the offset,
    /// its high 32 bits for an `i64` offset and 0 for an `i32` one, 0, 0)`. `i32` words carry the
    /// unsigned words' bits: wrapping `mul`, `xor` and `umulhi` are the same on both.
    fn philox(&mut self, seed_at: &Expr, offs_at: &Expr) -> syn::Result<[ValueId; 4]> {
        const ROUND_A: u32 = 0xD251_1F53;
        const ROUND_B: u32 = 0xCD9E_8D57;
        const KEY_A: u32 = 0x9E37_79B9;
        const KEY_B: u32 = 0xBB67_AE85;
        let seed = self.expr(seed_at)?;
        let offs = self.expr(offs_at)?;
        let i32c = |v: u32| Val::Int(i64::from(v as i32));
        // The key's two words, scalars.
        let (k0, k1) = match (seed, self.ty(seed)) {
            (Val::Int(s), _) => (i32c(s as u32), i32c((s >> 32) as u32)),
            (Val::V(id), Some(t)) if t.shape.is_empty() && t.elem == Elem::Scalar(DType::I32) => {
                let neg = self.cmp_scalar(id, CmpPred::Lt, 0, DType::I32);
                let minus1 = self.materialize(Val::Int(-1), DType::I32, &[], seed_at)?;
                let zero = self.materialize(Val::Int(0), DType::I32, &[], seed_at)?;
                let hi = self.push(
                    OpKind::Select,
                    vec![neg, minus1, zero],
                    Type::scalar(DType::I32),
                );
                (Val::V(id), Val::V(hi))
            }
            (Val::V(id), Some(t)) if t.shape.is_empty() && t.elem == Elem::Scalar(DType::I64) => {
                let (lo, hi) = self.split_words(id, &[], seed_at)?;
                (Val::V(lo), Val::V(hi))
            }
            (_, t) => {
                let found = t.map_or("a float literal".to_string(), |t| format!("`{t}`"));
                return Err(err(
                    seed_at,
                    format!("the seed is an i32 or i64 scalar, found {found}"),
                ));
            }
        };
        // The counter's first two words, of the offsets' shape.
        let (shape, c0, c1) = match (offs, self.ty(offs)) {
            (Val::Int(o), _) => {
                let lo = self.materialize(i32c(o as u32), DType::I32, &[], offs_at)?;
                let hi = self.materialize(i32c((o >> 32) as u32), DType::I32, &[], offs_at)?;
                (Vec::new(), lo, hi)
            }
            (Val::V(id), Some(t)) if t.elem == Elem::Scalar(DType::I32) => {
                let zero = self.materialize(Val::Int(0), DType::I32, &t.shape, offs_at)?;
                (t.shape.clone(), id, zero)
            }
            (Val::V(id), Some(t)) if t.elem == Elem::Scalar(DType::I64) => {
                let (lo, hi) = self.split_words(id, &t.shape, offs_at)?;
                (t.shape.clone(), lo, hi)
            }
            (_, t) => {
                let found = t.map_or("a float literal".to_string(), |t| format!("`{t}`"));
                return Err(err(
                    offs_at,
                    format!("the offsets are i32 or i64 (a scalar or a tile), found {found}"),
                ));
            }
        };
        let ty = Type::tensor(Elem::Scalar(DType::I32), shape.clone());
        let zero = self.materialize(Val::Int(0), DType::I32, &shape, offs_at)?;
        let (mut c0, mut c1, mut c2, mut c3) = (c0, c1, zero, zero);
        let a = self.materialize(i32c(ROUND_A), DType::I32, &shape, offs_at)?;
        let b = self.materialize(i32c(ROUND_B), DType::I32, &shape, offs_at)?;
        let (mut k0, mut k1) = (k0, k1);
        for round in 0..10 {
            let bin = |l: &mut Self, op: BinOp, x: ValueId, y: ValueId| {
                l.push(OpKind::Binary(op), vec![x, y], ty.clone())
            };
            let k0t = self.materialize(k0, DType::I32, &shape, seed_at)?;
            let k1t = self.materialize(k1, DType::I32, &shape, seed_at)?;
            // The key first: where a round's product is uniform (round 2's `a · k0` for an `i32`
            // offset), product and key make one loop-invariant value, and the remaining `xor`
            // takes a single uniform operand (ptxas moved the other one into a register per
            // turn). `xor` is associative: the words are unchanged.
            let hb = bin(self, BinOp::UMulHi, b, c2);
            let hb = bin(self, BinOp::Xor, hb, k0t);
            let n0 = bin(self, BinOp::Xor, hb, c1);
            let ha = bin(self, BinOp::UMulHi, a, c0);
            let ha = bin(self, BinOp::Xor, ha, k1t);
            let n2 = bin(self, BinOp::Xor, ha, c3);
            let n1 = bin(self, BinOp::Mul, b, c2);
            let n3 = bin(self, BinOp::Mul, a, c0);
            (c0, c1, c2, c3) = (n0, n1, n2, n3);
            if round < 9 {
                k0 = self.add_scalar(k0, KEY_A, seed_at)?;
                k1 = self.add_scalar(k1, KEY_B, seed_at)?;
            }
        }
        Ok([c0, c1, c2, c3])
    }

    /// `x < c` for a scalar `x` of type `d`.
    fn cmp_scalar(&mut self, x: ValueId, p: CmpPred, c: i64, d: DType) -> ValueId {
        let k = self.push(
            OpKind::Constant(ConstValue::Int(c)),
            vec![],
            Type::scalar(d),
        );
        self.push(OpKind::Cmp(p), vec![x, k], Type::scalar(DType::I1))
    }

    /// A key word plus a constant, wrapping (folded when the word is a literal).
    fn add_scalar(&mut self, k: Val, c: u32, at: &Expr) -> syn::Result<Val> {
        Ok(match k {
            Val::V(id) => {
                let cv = self.materialize(Val::Int(i64::from(c as i32)), DType::I32, &[], at)?;
                Val::V(self.push(
                    OpKind::Binary(BinOp::Add),
                    vec![id, cv],
                    Type::scalar(DType::I32),
                ))
            }
            Val::Int(i) => Val::Int(i64::from((i as u32).wrapping_add(c) as i32)),
            Val::Float(_) | Val::Desc(_) => k,
        })
    }

    /// The low and high 32-bit words of `i64` values `x` of `shape`, as `i32`: the low one by
    /// truncation, the high one as `(x - (x & 0xFFFFFFFF)) / 2^32`, a division that is exact.
    fn split_words(
        &mut self,
        x: ValueId,
        shape: &[u32],
        at: &Expr,
    ) -> syn::Result<(ValueId, ValueId)> {
        let t64 = Type::tensor(Elem::Scalar(DType::I64), shape.to_vec());
        let t32 = Type::tensor(Elem::Scalar(DType::I32), shape.to_vec());
        let mask = self.materialize(Val::Int(0xFFFF_FFFF), DType::I64, shape, at)?;
        let pow = self.materialize(Val::Int(1 << 32), DType::I64, shape, at)?;
        let low = self.push(OpKind::Binary(BinOp::And), vec![x, mask], t64.clone());
        let top = self.push(OpKind::Binary(BinOp::Sub), vec![x, low], t64.clone());
        let top = self.push(OpKind::Binary(BinOp::Div), vec![top, pow], t64);
        let lo = self.push(OpKind::Cast, vec![x], t32.clone());
        let hi = self.push(OpKind::Cast, vec![top], t32);
        Ok((lo, hi))
    }

    /// Triton's `uint_to_uniform_float` of 32 random bits: negative words `x` become `-x - 1`
    /// (`!x`), the result in `[0, 2^31)` converts to `f32` (to nearest) and is multiplied by the
    /// `f32` nearest `4.6566127342e-10` (`2^-31 · (1 - 2^-24)`): `[0, 1)`.
    fn uniform(&mut self, x: ValueId) -> ValueId {
        let shape = self.f.ty(x).shape.clone();
        let ti = Type::tensor(Elem::Scalar(DType::I32), shape.clone());
        let tf = Type::tensor(Elem::Scalar(DType::F32), shape.clone());
        let tb = Type::tensor(Elem::Scalar(DType::I1), shape.clone());
        let zero = self.splat_const(ConstValue::Int(0), DType::I32, &shape);
        let ones = self.splat_const(ConstValue::Int(-1), DType::I32, &shape);
        let neg = self.push(OpKind::Cmp(CmpPred::Lt), vec![x, zero], tb);
        let flipped = self.push(OpKind::Binary(BinOp::Xor), vec![x, ones], ti.clone());
        let y = self.push(OpKind::Select, vec![neg, flipped, x], ti);
        let f = self.push(OpKind::Cast, vec![y], tf.clone());
        let scale = f64::from(tile_core::random::UNIFORM_SCALE_32);
        let s = self.splat_const(ConstValue::Float(scale), DType::F32, &shape);
        self.push(OpKind::Binary(BinOp::Mul), vec![f, s], tf)
    }

    /// The constant `c` of type `d`: a scalar, or splat to `shape` when it has dimensions.
    fn splat_const(&mut self, c: ConstValue, d: DType, shape: &[u32]) -> ValueId {
        let k = self.push(OpKind::Constant(c), vec![], Type::scalar(d));
        if shape.is_empty() {
            k
        } else {
            let t = Type::tensor(Elem::Scalar(d), shape.to_vec());
            self.push(OpKind::Splat, vec![k], t)
        }
    }

    /// Triton's `pair_uniform_to_normal`, first half: `sqrt(−2 · log(max(1e-7, u1))) ·
    /// cos(6.283185307179586 · u2)`, in that order of `f32` operations.
    fn box_muller(&mut self, u1: ValueId, u2: ValueId) -> ValueId {
        let shape = self.f.ty(u1).shape.clone();
        let tf = Type::tensor(Elem::Scalar(DType::F32), shape.clone());
        let splat = |l: &mut Self, v: f64| l.splat_const(ConstValue::Float(v), DType::F32, &shape);
        let floor = splat(self, f64::from(1.0e-7f32));
        let u1 = self.push(OpKind::Binary(BinOp::Max), vec![floor, u1], tf.clone());
        let two_pi = splat(self, f64::from(std::f32::consts::TAU));
        let th = self.push(OpKind::Binary(BinOp::Mul), vec![two_pi, u2], tf.clone());
        let minus_two = splat(self, -2.0);
        let log = self.push(OpKind::Math(MathFn::Log), vec![u1], tf.clone());
        let r2 = self.push(OpKind::Binary(BinOp::Mul), vec![minus_two, log], tf.clone());
        let r = self.push(OpKind::Math(MathFn::Sqrt), vec![r2], tf.clone());
        let c = self.push(OpKind::Math(MathFn::Cos), vec![th], tf.clone());
        self.push(OpKind::Binary(BinOp::Mul), vec![r, c], tf)
    }
}
