//! The tile IR: types, the closed op set, kernels as arenas, the text form and the verifier.
//!
//! Two levels share these data structures: the *tile level* that the front end produces (tensor
//! types without layouts) and the *GPU level* after layout assignment (every tensor type carries a
//! [`Layout`]). The interpreter runs the tile level; the LLVM lowering takes the GPU level.

mod attr;
mod function;
mod linear;
mod ops;
mod parse;
mod print;
mod types;
mod verify;

pub use function::{
    BlockData, BlockId, Function, LocsMismatch, OpData, OpId, ParamAttrs, RegionData, RegionId,
    ValueData, ValueDef, ValueId,
};
pub use linear::{InDim, LinearLayout};
pub use ops::{
    atomic_cas_takes, atomic_float_max, atomic_float_min, atomic_half_max, atomic_half_min,
    round_tf32, AtomicOp, BinOp, CmpPred, ConstValue, Effect, Evict, Level, MathFn, MemScope,
    MemSem, OpKind, Precision, ReduceKind, ScanKind, SharedMemoryUse, UnOp,
};
pub use parse::{parse, ParseError};
pub use print::print;
pub use types::{
    BlockedLayout, DType, DotOperandLayout, Elem, Layout, MmaLayout, SharedLayout, SliceLayout,
    Type,
};
pub use verify::{verify, VerifyError, VerifyErrors};
