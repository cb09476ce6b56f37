//! A kernel's IR: arenas of values, operations, blocks and regions addressed by typed `u32` ids.
//!
//! Data is kept apart from order: `ops` holds what each operation is, a block's `ops` list says in
//! which order they run. A kernel's parameters are the arguments of the entry block of its body
//! region; regions nest through ops (a `for` owns a body region whose block arguments are the
//! induction variable and the carried values; an `if` owns two).

use super::ops::{ConstValue, OpKind};
use super::types::Type;
use crate::Target;

macro_rules! entity {
    ($(#[$m:meta])* $name:ident, $prefix:literal) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            /// The index into the arena.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

entity!(
    /// An SSA value.
    ValueId,
    "v"
);
entity!(
    /// An operation.
    OpId,
    "op"
);
entity!(
    /// A basic block.
    BlockId,
    "bb"
);
entity!(
    /// A region (a list of blocks owned by an op or by the kernel).
    RegionId,
    "region"
);

/// Where a value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueDef {
    /// The `index`th argument of a block (the kernel's parameters are the entry block's).
    BlockArg(BlockId, u32),
    /// The `index`th result of an op.
    OpResult(OpId, u32),
}

/// One SSA value.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueData {
    /// Its type.
    pub ty: Type,
    /// Its definition.
    pub def: ValueDef,
}

/// One operation.
#[derive(Clone, Debug, PartialEq)]
pub struct OpData {
    /// What it does, with its attributes.
    pub kind: OpKind,
    /// Values it reads.
    pub operands: Vec<ValueId>,
    /// Values it defines.
    pub results: Vec<ValueId>,
    /// Regions it owns (`for` one, `if` two, other ops none).
    pub regions: Vec<RegionId>,
    /// The block it sits in.
    pub block: BlockId,
    /// Where in the kernel's source it came from: an index into the front end's table of source
    /// spans (the IR does not interpret it, and its text does not carry it). Ops a pass inserts
    /// take the location of the op they are inserted next to.
    pub loc: Option<u32>,
}

/// A basic block: arguments, then operations in order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct BlockData {
    /// Block arguments.
    pub args: Vec<ValueId>,
    /// Operations, in execution order.
    pub ops: Vec<OpId>,
}

/// A region: an ordered list of blocks.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RegionData {
    /// Blocks; the first is the entry.
    pub blocks: Vec<BlockId>,
}

/// [`Function::set_locs`] was given the locations of a function with another number of ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocsMismatch {
    /// Ops of the function.
    pub ops: usize,
    /// Locations given.
    pub locs: usize,
}

impl std::fmt::Display for LocsMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} source locations for {} ops: they belong to another function",
            self.locs, self.ops
        )
    }
}

impl std::error::Error for LocsMismatch {}

/// A kernel parameter's static facts, known because the kernel was specialized for them.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ParamAttrs {
    /// For an integer: the value is a multiple of this. For a pointer: the address is a multiple of
    /// this many bytes. 1 when nothing is known.
    pub divisibility: u32,
}

/// A kernel: a name, named parameters, a body region, and launch facts.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Kernel name (also the PTX entry's name).
    pub name: String,
    /// Parameter names, in order; the values are the entry block's arguments.
    pub param_names: Vec<String>,
    /// Facts about each parameter.
    pub param_attrs: Vec<ParamAttrs>,
    /// Warps per program.
    pub num_warps: u32,
    /// Shared-memory stages of a pipelined `dot` loop (`cp.async` ring buffers); 0 lets the
    /// compiler choose.
    pub num_stages: u32,
    /// `math = fast`: `f32` division, `exp` and `sqrt` take the hardware's approximate forms, as
    /// Triton's `/`, `tl.exp` and `tl.sqrt` and CUDA's `--use_fast_math` do (see
    /// [`MathFn`](crate::ir::MathFn) and the `div` op for the bounds); `false` keeps them exact or
    /// within the bounds the IR promises.
    pub fast_math: bool,
    /// The GPU architecture this GPU-level IR is for: the GPU-level passes run once per target
    /// and may choose differently for each. `None` at the tile level.
    pub target: Option<Target>,
    /// Tensor descriptors (`make_tensor_descriptor` calls): `desc_load`/`desc_store` slots run
    /// `0 .. desc_slots`, and the kernel takes one hidden 128-byte parameter per slot after its
    /// own (the slot's tensor map on Hopper).
    pub desc_slots: u32,
    /// Every value.
    pub values: Vec<ValueData>,
    /// Every op.
    pub ops: Vec<OpData>,
    /// Every block.
    pub blocks: Vec<BlockData>,
    /// Every region.
    pub regions: Vec<RegionData>,
    /// The kernel's body.
    pub body: RegionId,
}

impl Function {
    /// A kernel with an empty entry block holding one argument per parameter.
    pub fn new(name: impl Into<String>, params: Vec<(String, Type)>, num_warps: u32) -> Function {
        let mut f = Function {
            name: name.into(),
            param_names: Vec::new(),
            param_attrs: Vec::new(),
            num_warps,
            num_stages: 0,
            fast_math: false,
            target: None,
            desc_slots: 0,
            values: Vec::new(),
            ops: Vec::new(),
            blocks: Vec::new(),
            regions: Vec::new(),
            body: RegionId(0),
        };
        let body = f.new_region();
        let entry = f.new_block(body);
        f.body = body;
        for (name, ty) in params {
            f.param_names.push(name);
            f.param_attrs.push(ParamAttrs { divisibility: 1 });
            f.add_block_arg(entry, ty);
        }
        f
    }

    /// Creates an empty region.
    pub fn new_region(&mut self) -> RegionId {
        self.regions.push(RegionData::default());
        RegionId(self.regions.len() as u32 - 1)
    }

    /// Appends an empty block to `region`.
    pub fn new_block(&mut self, region: RegionId) -> BlockId {
        self.blocks.push(BlockData::default());
        let b = BlockId(self.blocks.len() as u32 - 1);
        self.regions[region.index()].blocks.push(b);
        b
    }

    /// Adds an argument of type `ty` to `block`.
    pub fn add_block_arg(&mut self, block: BlockId, ty: Type) -> ValueId {
        let idx = self.blocks[block.index()].args.len() as u32;
        let v = self.new_value(ty, ValueDef::BlockArg(block, idx));
        self.blocks[block.index()].args.push(v);
        v
    }

    /// Adds a result of type `ty` to `op` (a loop gaining a carried value).
    pub fn add_result(&mut self, op: OpId, ty: Type) -> ValueId {
        let idx = self.ops[op.index()].results.len() as u32;
        let v = self.new_value(ty, ValueDef::OpResult(op, idx));
        self.ops[op.index()].results.push(v);
        v
    }

    fn new_value(&mut self, ty: Type, def: ValueDef) -> ValueId {
        self.values.push(ValueData { ty, def });
        ValueId(self.values.len() as u32 - 1)
    }

    /// The kernel's entry block.
    pub fn entry(&self) -> BlockId {
        self.regions[self.body.index()].blocks[0]
    }

    /// The kernel's parameters as values.
    pub fn params(&self) -> &[ValueId] {
        &self.blocks[self.entry().index()].args
    }

    /// Appends an op to the end of `block`, creating one result per type in `result_types`.
    pub fn push_op(
        &mut self,
        block: BlockId,
        kind: OpKind,
        operands: Vec<ValueId>,
        result_types: Vec<Type>,
    ) -> OpId {
        let op = OpId(self.ops.len() as u32);
        let results = result_types
            .into_iter()
            .enumerate()
            .map(|(i, ty)| self.new_value(ty, ValueDef::OpResult(op, i as u32)))
            .collect();
        self.ops.push(OpData {
            kind,
            operands,
            results,
            regions: Vec::new(),
            block,
            loc: None,
        });
        self.blocks[block.index()].ops.push(op);
        op
    }

    /// Inserts an op into `block` at position `pos` of its order (appends when `pos` is past the
    /// end), creating one result per type in `result_types`.
    pub fn insert_op(
        &mut self,
        block: BlockId,
        pos: usize,
        kind: OpKind,
        operands: Vec<ValueId>,
        result_types: Vec<Type>,
    ) -> OpId {
        let op = self.push_op(block, kind, operands, result_types);
        let order = &mut self.blocks[block.index()].ops;
        order.pop();
        let pos = pos.min(order.len());
        order.insert(pos, op);
        // The location of the op it goes before (else the one it follows).
        let near = order
            .get(pos + 1)
            .or_else(|| pos.checked_sub(1).and_then(|p| order.get(p)))
            .copied();
        self.ops[op.index()].loc = near.and_then(|n| self.ops[n.index()].loc);
        op
    }

    /// Each op's source location, in program order ([`Function::walk`]).
    pub fn locs(&self) -> Vec<Option<u32>> {
        self.walk()
            .iter()
            .map(|&o| self.ops[o.index()].loc)
            .collect()
    }

    /// Sets the source locations from [`Function::locs`] of a function with the same ops in the
    /// same order (this one printed and parsed again). A count that differs means the two are not
    /// the same ops: an error, and nothing is set.
    pub fn set_locs(&mut self, locs: &[Option<u32>]) -> Result<(), LocsMismatch> {
        let order = self.walk();
        if order.len() != locs.len() {
            return Err(LocsMismatch {
                ops: order.len(),
                locs: locs.len(),
            });
        }
        for (o, &l) in order.iter().zip(locs) {
            self.ops[o.index()].loc = l;
        }
        Ok(())
    }

    /// Appends a one-result op and returns the result.
    pub fn push1(
        &mut self,
        block: BlockId,
        kind: OpKind,
        operands: Vec<ValueId>,
        ty: Type,
    ) -> ValueId {
        let op = self.push_op(block, kind, operands, vec![ty]);
        self.ops[op.index()].results[0]
    }

    /// The type of a value.
    pub fn ty(&self, v: ValueId) -> &Type {
        &self.values[v.index()].ty
    }

    /// The constant `v` holds, looking through `splat`s (a tensor of one constant), if it is one.
    pub fn constant_of(&self, v: ValueId) -> Option<ConstValue> {
        let op = self.def_op(v)?;
        match &self.op(op).kind {
            OpKind::Constant(c) => Some(*c),
            OpKind::Splat => self.constant_of(self.op(op).operands[0]),
            _ => None,
        }
    }

    /// For a loop (`for`, `while`), per carried value the values that stand for it: its initial
    /// value (operand), the argument of each region (after a `for`'s induction variable), the
    /// body's yielded value and the loop's result, in that order (what a well-formed loop has;
    /// missing pieces are left out). Empty for other ops.
    pub fn loop_carried(&self, op: OpId) -> Vec<Vec<ValueId>> {
        let d = self.op(op);
        let (first_init, first_arg) = match d.kind {
            OpKind::For => (3, 1),
            OpKind::While => (0, 0),
            _ => return Vec::new(),
        };
        let blocks: Vec<BlockId> = d
            .regions
            .iter()
            .filter_map(|&r| self.regions[r.index()].blocks.first().copied())
            .collect();
        let yielded = blocks
            .last()
            .and_then(|b| self.blocks[b.index()].ops.last())
            .map(|&y| self.op(y).operands.clone())
            .unwrap_or_default();
        d.operands
            .iter()
            .skip(first_init)
            .enumerate()
            .map(|(i, &init)| {
                let mut vs = vec![init];
                for &b in &blocks {
                    vs.extend(self.blocks[b.index()].args.get(first_arg + i).copied());
                }
                vs.extend(yielded.get(i).copied());
                vs.extend(d.results.get(i).copied());
                vs
            })
            .collect()
    }

    /// The op that defines `v`, if `v` is an op result.
    pub fn def_op(&self, v: ValueId) -> Option<OpId> {
        match self.values[v.index()].def {
            ValueDef::OpResult(op, _) => Some(op),
            ValueDef::BlockArg(..) => None,
        }
    }

    /// The op's data.
    pub fn op(&self, op: OpId) -> &OpData {
        &self.ops[op.index()]
    }

    /// Every op reachable from the body, in program order (nested regions after their parent op).
    pub fn walk(&self) -> Vec<OpId> {
        let mut out = Vec::new();
        self.walk_region(self.body, &mut out);
        out
    }

    fn walk_region(&self, r: RegionId, out: &mut Vec<OpId>) {
        for &b in &self.regions[r.index()].blocks {
            for &op in &self.blocks[b.index()].ops {
                out.push(op);
                for &inner in &self.ops[op.index()].regions {
                    self.walk_region(inner, out);
                }
            }
        }
    }

    /// Replaces every use of `from` with `to`.
    pub fn replace_all_uses(&mut self, from: ValueId, to: ValueId) {
        for op in &mut self.ops {
            for o in &mut op.operands {
                if *o == from {
                    *o = to;
                }
            }
        }
    }

    /// Stops the `for` op `l` carrying its `j`th carried value: its initial value, body argument,
    /// yielded value and result go. The caller has made the argument and the result unused; they
    /// stay in the arena, unreachable, like a detached op's values.
    pub fn remove_carried(&mut self, l: OpId, j: usize) {
        let Some(&region) = self.ops[l.index()].regions.first() else {
            return;
        };
        let body = self.regions[region.index()].blocks[0];
        if self.ops[l.index()].operands.len() > 3 + j {
            self.ops[l.index()].operands.remove(3 + j);
        }
        if self.blocks[body.index()].args.len() > 1 + j {
            self.blocks[body.index()].args.remove(1 + j);
        }
        for (i, &a) in self.blocks[body.index()].args.iter().enumerate() {
            self.values[a.index()].def = ValueDef::BlockArg(body, i as u32);
        }
        if let Some(&y) = self.blocks[body.index()].ops.last() {
            if matches!(self.ops[y.index()].kind, OpKind::Yield)
                && self.ops[y.index()].operands.len() > j
            {
                self.ops[y.index()].operands.remove(j);
            }
        }
        if self.ops[l.index()].results.len() > j {
            self.ops[l.index()].results.remove(j);
        }
        for (i, &r) in self.ops[l.index()].results.iter().enumerate() {
            self.values[r.index()].def = ValueDef::OpResult(l, i as u32);
        }
    }

    /// Removes `op` from its block's order. Its data stays in the arena, unreachable, so it is
    /// neither printed nor executed; printing and parsing again renumbers what is left.
    pub fn detach(&mut self, op: OpId) {
        let b = self.ops[op.index()].block;
        self.blocks[b.index()].ops.retain(|&o| o != op);
    }
}
