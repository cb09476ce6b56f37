//! Types of the tile IR: element types, pointers, tensors with static shapes and, at the GPU level, a
//! layout on every tensor type.
//!
//! Invariants kept here: a tensor type's shape has rank ≥ 1 and every dimension is a power of two
//! (the tile sizes a program declares); a scalar type has rank 0 and never a layout.

use std::fmt;

use super::linear::LinearLayout;

/// A scalar element type. Closed: adding one is a checklist the compiler walks you through.
///
/// Integers are signed (`i*`) or unsigned (`u*`): the type says how division, remainder,
/// comparisons, `min`/`max`, `>>`, widening casts and conversions to floats read the bits.
/// Arithmetic takes 32- and 64-bit integers and `f32`; the 8- and 16-bit types, like `f16` and
/// `bf16`, are for storage: cast to a 32-bit type to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// Boolean, the type of masks and comparisons.
    I1,
    /// 8-bit signed integer (storage).
    I8,
    /// 16-bit signed integer (storage).
    I16,
    /// 32-bit signed integer.
    I32,
    /// 64-bit signed integer.
    I64,
    /// 8-bit unsigned integer (storage).
    U8,
    /// 32-bit unsigned integer.
    U32,
    /// 64-bit unsigned integer.
    U64,
    /// IEEE half precision (storage; arithmetic is done after a cast to `f32`).
    F16,
    /// bfloat16 (storage; arithmetic is done after a cast to `f32`).
    BF16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision: arithmetic, comparisons, reductions, `sqrt`, `abs`, `fma`,
    /// `floor`/`ceil`, `min`/`max` (the transcendental functions take `f32`).
    F64,
    /// 8-bit float E4M3 (4 exponent bits, bias 7; no infinities, one NaN pattern per sign;
    /// largest finite 448) — storage: cast to `f32` to compute.
    F8E4M3,
    /// 8-bit float E5M2 (5 exponent bits, bias 15; infinities and NaNs as IEEE; largest finite
    /// 57344) — storage: cast to `f32` to compute.
    F8E5M2,
}

impl DType {
    /// Every element type, in a fixed order.
    pub const ALL: [DType; 14] = [
        DType::I1,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::F8E4M3,
        DType::F8E5M2,
    ];

    /// The spelling used in IR text and in kernel signatures.
    pub fn name(self) -> &'static str {
        match self {
            DType::I1 => "i1",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
        }
    }

    /// Parses the IR spelling.
    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }

    /// Size of one element in device memory, in bytes (a bool is stored as one byte).
    pub fn size_bytes(self) -> u32 {
        match self {
            DType::I1 | DType::I8 | DType::U8 | DType::F8E4M3 | DType::F8E5M2 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// Integer types, booleans included.
    pub fn is_int(self) -> bool {
        self.int_bits().is_some()
    }

    /// The width of an integer type in bits (1 for `i1`); `None` for floats.
    pub fn int_bits(self) -> Option<u32> {
        match self {
            DType::I1 => Some(1),
            DType::I8 | DType::U8 => Some(8),
            DType::I16 => Some(16),
            DType::I32 | DType::U32 => Some(32),
            DType::I64 | DType::U64 => Some(64),
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 | DType::F8E4M3 | DType::F8E5M2 => {
                None
            }
        }
    }

    /// Unsigned integer types: division, comparisons, `>>` and widening read the bits as a
    /// non-negative number. `i1` counts as unsigned (`true` widens to 1).
    pub fn is_unsigned(self) -> bool {
        matches!(self, DType::I1 | DType::U8 | DType::U32 | DType::U64)
    }

    /// Signed integer types (two's complement).
    pub fn is_signed_int(self) -> bool {
        self.is_int() && !self.is_unsigned()
    }

    /// The values of an integer type (`0..=1` for `i1`); `None` for floats.
    pub fn int_range(self) -> Option<std::ops::RangeInclusive<i128>> {
        let w = self.int_bits()?;
        Some(if self.is_unsigned() {
            0..=(1i128 << w) - 1
        } else {
            -(1i128 << (w - 1))..=(1i128 << (w - 1)) - 1
        })
    }

    /// Floating-point types.
    pub fn is_float(self) -> bool {
        self.int_bits().is_none()
    }

    /// The 8-bit float types.
    pub fn is_f8(self) -> bool {
        matches!(self, DType::F8E4M3 | DType::F8E5M2)
    }

    /// The 8-bit types the tensor cores multiply (`i8`, `f8e4m3`, `f8e5m2`): 32 of them per
    /// instruction step of `K`, read K-major only (both operands with `K` contiguous).
    pub fn is_byte_operand(self) -> bool {
        matches!(self, DType::I8) || self.is_f8()
    }

    /// Float types held for storage only (`f16`, `bf16`, the 8-bit floats): arithmetic casts
    /// them to `f32` first.
    pub fn is_storage_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16) || self.is_f8()
    }

    /// Types that arithmetic, math and reductions take (`f16`/`bf16` are cast to `f32` first,
    /// 8- and 16-bit integers to a 32-bit one).
    pub fn is_arith(self) -> bool {
        matches!(
            self,
            DType::I32 | DType::I64 | DType::U32 | DType::U64 | DType::F32 | DType::F64
        )
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one element of a value is: a number or a pointer to numbers in global memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    /// A number of this type.
    Scalar(DType),
    /// A pointer (64-bit, global memory) to elements of this type.
    Ptr(DType),
}

impl Elem {
    /// The number type, if this is not a pointer.
    pub fn dtype(self) -> Option<DType> {
        match self {
            Elem::Scalar(d) => Some(d),
            Elem::Ptr(_) => None,
        }
    }

    /// The pointee type, if this is a pointer.
    pub fn pointee(self) -> Option<DType> {
        match self {
            Elem::Ptr(d) => Some(d),
            Elem::Scalar(_) => None,
        }
    }
}

impl fmt::Display for Elem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Elem::Scalar(d) => write!(f, "{d}"),
            Elem::Ptr(d) => write!(f, "ptr<{d}>"),
        }
    }
}

/// A blocked layout: which thread of the program owns which element of a tensor.
///
/// Along each dimension `d`, element index `i` is owned by a thread whose position in the program is
/// `((i / size_per_thread[d]) % (threads_per_warp[d] * warps_per_cta[d]))`, split into lane and warp
/// in that order; the pattern repeats when the tensor is larger than one "layout tile"
/// (`size_per_thread * threads_per_warp * warps_per_cta`), so a thread owns several chunks of
/// `size_per_thread` consecutive elements. When the tensor is smaller, threads hold copies.
/// `order` lists dimensions from fastest to slowest varying across lanes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockedLayout {
    /// Consecutive elements one thread holds along each dimension.
    pub size_per_thread: Vec<u32>,
    /// Lanes of a warp along each dimension; the product is 32.
    pub threads_per_warp: Vec<u32>,
    /// Warps of the program along each dimension; the product is the program's `num_warps`.
    pub warps_per_cta: Vec<u32>,
    /// Dimensions from fastest to slowest varying.
    pub order: Vec<u32>,
}

impl BlockedLayout {
    /// Rank of the tensors this layout applies to.
    pub fn rank(&self) -> usize {
        self.size_per_thread.len()
    }

    /// Elements covered by one repetition of the layout along dimension `d`.
    pub fn tile_extent(&self, d: usize) -> u64 {
        self.size_per_thread[d] as u64
            * self.threads_per_warp[d] as u64
            * self.warps_per_cta[d] as u64
    }

    /// Warps this layout spreads over.
    pub fn num_warps(&self) -> u32 {
        self.warps_per_cta.iter().product()
    }
}

impl fmt::Display for BlockedLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#blocked<spt = {:?}, tpw = {:?}, wpc = {:?}, order = {:?}>",
            self.size_per_thread, self.threads_per_warp, self.warps_per_cta, self.order
        )
    }
}

/// The layout of a tensor of rank `r` that is a slice of a rank-`r + 1` layout (of any kind): the
/// elements sit where the parent puts the elements of the rank-`r + 1` tensor with a dimension of
/// extent 1 inserted at `dim`. Threads that differ only in their position along `dim` hold copies.
///
/// This is the layout of a reduction's result along `dim` (every thread that took part holds the
/// combined value) and of the operand of `expand_dims` at `dim`, which therefore costs nothing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SliceLayout {
    /// The parent's dimension that is removed.
    pub dim: u32,
    /// The layout of the rank-`r + 1` tensor.
    pub parent: Box<Layout>,
}

/// The accumulator layout of the tensor-core `mma` instructions for a 2-D tensor (see
/// [`super::LinearLayout::mma`]): `version` 2 is `mma.sync.m16n8` (16 × 8 fragments per warp),
/// warps tiling the tensor `warps_per_cta[0]` along the rows and `warps_per_cta[1]` along the
/// columns. `version` 3 is Hopper's `wgmma.m64nN`: warps only along the rows (`[W, 1]`, `W` a
/// multiple of 4), each warpgroup of 4 consecutive warps owning 64 rows, which places every
/// element exactly where version 2 with the same warps does (a warp's 16 rows, lane `l` at rows
/// `l / 4` and `l / 4 + 8`, two columns per 8), so a version-3 `dot` whose operands are in
/// registers can still run on `mma.sync`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MmaLayout {
    /// 2: `mma.sync` with m16n8 fragments; 3: `wgmma` (warpgroups along the rows).
    pub version: u32,
    /// Warps along M and along N; the product is the program's `num_warps`.
    pub warps_per_cta: Vec<u32>,
}

impl fmt::Display for MmaLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#mma<version = {}, wpc = {:?}>",
            self.version, self.warps_per_cta
        )
    }
}

/// The layout of operand `op_idx` (0: `A`, 1: `B`) of a `dot` whose result has the mma layout
/// `parent`, as the `mma` instruction reads it from registers, `k_width` consecutive `K` elements
/// per 32-bit register (2 for f16/bf16, 1 for tf32); see [`super::LinearLayout::dot_operand`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DotOperandLayout {
    /// 0 for `A` (`M × K`), 1 for `B` (`K × N`).
    pub op_idx: u32,
    /// The result's layout (mma).
    pub parent: Box<Layout>,
    /// Consecutive `K` elements in one 32-bit register.
    pub k_width: u32,
}

impl fmt::Display for DotOperandLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#dot_op<idx = {}, parent = {}, k_width = {}>",
            self.op_idx, self.parent, self.k_width
        )
    }
}

/// How a shared-memory buffer (`smem<S x R x C x T, #shared…>`: `S` stages of an `R × C` row-major
/// tile) places its elements: rows of `C` elements, cut into chunks of `vec` elements (16 bytes,
/// or 32), chunk `j` of row `r` stored at chunk position `j XOR ((r / per_phase) % max_phase)` of
/// the row. With 16-byte chunks, `per_phase = max(1, 128 / row bytes)` and `max_phase = min(8, C /
/// vec)` the 8 rows that one `ldmatrix` matrix reads fall on 8 different 16-byte bank groups (no
/// bank conflicts), and a thread's 16-byte run stays one access (one `cp.async`). 32-byte chunks
/// ([`SharedLayout::swizzled_wide`]) serve reads of 8 consecutive 4-byte elements from each of 4
/// rows (a tf32 `B` operand). Stage `s` starts at element `s · R · C`.
///
/// With `block` (`0 < block < C`), a stage is stored as `C / block` column blocks, each an
/// `R × block` tile of its own swizzled the same way: element `(r, c)` of the stage sits in
/// block `c / block`, which starts at element `(c / block) · R · block`. That is the arrangement
/// Hopper's `wgmma` reads through its matrix descriptors ([`SharedLayout::wgmma`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SharedLayout {
    /// Elements per swizzled chunk (16 or 32 bytes).
    pub vec: u32,
    /// Consecutive rows with one phase.
    pub per_phase: u32,
    /// Distinct phases (a power of two, at most the chunks per row).
    pub max_phase: u32,
    /// Columns per block (0: the rows are not cut into blocks).
    pub block: u32,
}

impl SharedLayout {
    /// The conflict-free swizzle for rows of `cols` elements of `elem_bytes` bytes each.
    pub fn swizzled(cols: u32, elem_bytes: u32) -> SharedLayout {
        let vec = (16 / elem_bytes.max(1)).max(1);
        let row_bytes = cols.saturating_mul(elem_bytes).max(1);
        SharedLayout {
            vec,
            per_phase: (128 / row_bytes).max(1),
            max_phase: (cols / vec).clamp(1, 8),
            block: 0,
        }
    }

    /// The swizzle for rows of `cols` elements of `elem_bytes` bytes read 8 consecutive elements
    /// from each of 4 consecutive rows at once (a tf32 `mma` `B` fragment: lanes `4·g + t` read
    /// row `t`, column `g`): 32-byte chunks, so that the 4 rows' chunks fall on 4 different
    /// 32-byte bank groups.
    pub fn swizzled_wide(cols: u32, elem_bytes: u32) -> SharedLayout {
        let vec = (32 / elem_bytes.max(1)).max(1);
        let row_bytes = cols.saturating_mul(elem_bytes).max(1);
        SharedLayout {
            vec,
            per_phase: (128 / row_bytes).max(1),
            max_phase: (cols / vec).clamp(1, 8),
            block: 0,
        }
    }

    /// The layout `wgmma` reads for an operand tile with rows of `cols` elements of `elem_bytes`
    /// bytes (its contiguous dimension: `K` for `A`, `N` for `B`): blocks of at most 128 bytes
    /// per row, each swizzled like [`SharedLayout::swizzled`] rows of that width, which is
    /// exactly the hardware's 128-, 64- or 32-byte swizzle mode once a block starts at a
    /// multiple of 1024 bytes.
    pub fn wgmma(cols: u32, elem_bytes: u32) -> SharedLayout {
        let width = cols.min(128 / elem_bytes.max(1)).max(1);
        SharedLayout {
            block: if width < cols { width } else { 0 },
            ..SharedLayout::swizzled(width, elem_bytes)
        }
    }

    /// The width of a block for a stage of `cols` columns (`cols` itself when not blocked).
    pub fn block_cols(&self, cols: u64) -> u64 {
        match u64::from(self.block) {
            0 => cols,
            b => b.min(cols),
        }
    }

    /// The element index (within one stage of `rows × cols`) where element `(row, col)` is
    /// stored.
    pub fn index(&self, rows: u64, cols: u64, row: u64, col: u64) -> u64 {
        let vec = u64::from(self.vec);
        let width = self.block_cols(cols);
        let block_start = (col / width) * rows * width;
        let col = col % width;
        let phase = (row / u64::from(self.per_phase)) % u64::from(self.max_phase);
        block_start + row * width + ((col / vec) ^ phase) * vec + col % vec
    }
}

impl fmt::Display for SharedLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#shared<vec = {}, per_phase = {}, max_phase = {}",
            self.vec, self.per_phase, self.max_phase
        )?;
        if self.block != 0 {
            write!(f, ", block = {}", self.block)?;
        }
        f.write_str(">")
    }
}

/// The layout of a tensor at the GPU level. Every register layout is a constructor of one
/// representation, the [`super::LinearLayout`] ([`Layout::linear`]), which is all the back end
/// reads; [`Layout::Shared`] is the encoding of a shared-memory buffer, not of registers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Elements spread over threads in blocks of `size_per_thread`.
    Blocked(BlockedLayout),
    /// Another layout with one dimension removed.
    Slice(SliceLayout),
    /// A tensor-core accumulator.
    Mma(MmaLayout),
    /// A tensor-core operand.
    DotOperand(DotOperandLayout),
    /// A shared-memory buffer's swizzle (the type is then `smem<…>`, not a register tensor).
    Shared(SharedLayout),
    /// A general linear layout, for the layouts no other kind describes: the result of `trans`
    /// or `reshape` of a tensor whose layout has no transposed or reshaped counterpart of its
    /// own kind (an mma accumulator transposed, a blocked tile reshaped). It is written for the
    /// shape it was derived for; a tensor of the same rank and smaller extents (an operand of
    /// `broadcast`, a slice's parent of extent 1) takes it with each coordinate cut to its
    /// extent, as a blocked layout wraps, its threads past the extent holding copies.
    Linear(LinearLayout),
}

impl Layout {
    /// Rank of the tensors this layout applies to.
    pub fn rank(&self) -> usize {
        match self {
            Layout::Blocked(b) => b.rank(),
            Layout::Slice(s) => s.parent.rank().saturating_sub(1),
            Layout::Mma(m) => m.warps_per_cta.len(),
            Layout::DotOperand(d) => d.parent.rank(),
            // Stages × rows × columns.
            Layout::Shared(_) => 3,
            Layout::Linear(l) => l.rank(),
        }
    }

    /// Warps the layout spreads over.
    pub fn num_warps(&self) -> u32 {
        match self {
            Layout::Blocked(b) => b.num_warps(),
            Layout::Slice(s) => s.parent.num_warps(),
            Layout::Mma(m) => m.warps_per_cta.iter().product(),
            Layout::DotOperand(d) => d.parent.num_warps(),
            // Shared memory belongs to the whole program, not to warps.
            Layout::Shared(_) => 0,
            Layout::Linear(l) => l.num_warps(),
        }
    }

    /// The layout sliced at `dim`.
    pub fn sliced(&self, dim: u32) -> Layout {
        Layout::Slice(SliceLayout {
            dim,
            parent: Box::new(self.clone()),
        })
    }

    /// The short name of the layout's kind, used for printed aliases (`#blocked0`, `#mma1`, …).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Layout::Blocked(_) => "blocked",
            Layout::Slice(_) => "slice",
            Layout::Mma(_) => "mma",
            Layout::DotOperand(_) => "dot_op",
            Layout::Shared(_) => "shared",
            Layout::Linear(_) => "linear",
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Layout::Blocked(b) => b.fmt(f),
            Layout::Slice(s) => write!(f, "#slice<dim = {}, parent = {}>", s.dim, s.parent),
            Layout::Mma(m) => m.fmt(f),
            Layout::DotOperand(d) => d.fmt(f),
            Layout::Shared(s) => s.fmt(f),
            Layout::Linear(l) => write!(f, "#{l}"),
        }
    }
}

/// The type of an SSA value: a scalar (`shape` empty) or a tensor with a static shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Type {
    /// Element type.
    pub elem: Elem,
    /// Static shape; empty for a scalar.
    pub shape: Vec<u32>,
    /// Layout of a tensor at the GPU level; `None` at the abstract tile level and for scalars.
    pub layout: Option<Layout>,
}

impl Type {
    /// A scalar number.
    pub fn scalar(d: DType) -> Type {
        Type {
            elem: Elem::Scalar(d),
            shape: Vec::new(),
            layout: None,
        }
    }

    /// A scalar pointer.
    pub fn ptr(d: DType) -> Type {
        Type {
            elem: Elem::Ptr(d),
            shape: Vec::new(),
            layout: None,
        }
    }

    /// A tensor without a layout.
    pub fn tensor(elem: Elem, shape: Vec<u32>) -> Type {
        Type {
            elem,
            shape,
            layout: None,
        }
    }

    /// True for a tensor (rank ≥ 1).
    pub fn is_tensor(&self) -> bool {
        !self.shape.is_empty()
    }

    /// True for a shared-memory buffer (`smem<…>`: its layout is [`Layout::Shared`]).
    pub fn is_shared(&self) -> bool {
        matches!(self.layout, Some(Layout::Shared(_)))
    }

    /// Number of elements (1 for a scalar).
    pub fn numel(&self) -> u64 {
        self.shape.iter().map(|&d| d as u64).product()
    }

    /// The same shape and layout with another element type.
    pub fn with_elem(&self, elem: Elem) -> Type {
        Type {
            elem,
            shape: self.shape.clone(),
            layout: self.layout.clone(),
        }
    }

    /// The number type of the elements, if they are not pointers.
    pub fn dtype(&self) -> Option<DType> {
        self.elem.dtype()
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.shape.is_empty() {
            return write!(f, "{}", self.elem);
        }
        f.write_str(if self.is_shared() { "smem<" } else { "tensor<" })?;
        for d in &self.shape {
            write!(f, "{d}x")?;
        }
        write!(f, "{}", self.elem)?;
        if let Some(l) = &self.layout {
            write!(f, ", {l}")?;
        }
        f.write_str(">")
    }
}
