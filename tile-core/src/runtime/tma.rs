//! Tensor maps, the descriptors Hopper's tensor memory accelerator (TMA) copies through, as a
//! launch builds them from a kernel's [`DescSpec`]s and a module's [`TmaSpec`]s.
//!
//! A kernel with tensor descriptors takes one hidden parameter per descriptor slot after its own
//! parameters: a 128-byte, 64-byte-aligned [`TensorMap`] passed by value (a `__grid_constant__`
//! parameter). The launch fills the slots the chosen module copies with TMA with a map encoded by
//! the driver (`cuTensorMapEncodeTiled`), and every other slot with zeros.
//!
//! The work is split so that everything but the driver call is plain, unit-tested code:
//!
//! - [`check_bounds`]: every descriptor the launch can describe must lie inside its buffer
//!   (`Σ (dim − 1) · stride < length` when every extent is positive), and its strides must not
//!   be negative. The GPU does not check a descriptor's accesses the way the interpreter checks
//!   every access, so a descriptor that reaches past its buffer is refused here.
//! - [`encoding`]: the arguments of `cuTensorMapEncodeTiled` for one slot ([`Encoding`]), with
//!   every requirement the driver documents checked first, so that a refusal names the kernel
//!   and the argument instead of surfacing as `CUDA_ERROR_INVALID_VALUE`.
//! - [`tensor_maps`]: the hidden parameters of one launch, exactly one per slot;
//!   [`check_encodings`], the same checks for a launch over an empty grid, which encodes nothing.
//! - [`encode`]: the driver call itself, a thin wrapper.
//! - [`MapCache`]: the last map encoded per slot, reused while the encoding's arguments are the
//!   same (a map is a function of those arguments alone), so that a loop of launches with the
//!   same buffers encodes each map once.
//!
//! A descriptor with an extent of 0 (or less) describes nothing, and nothing is accessed through
//! it: the bounds check accepts it whatever the buffer. TMA cannot encode such an extent, so a
//! module that copies through that slot is refused with an `Err`; a module that does not gets
//! zeros there, as for any slot it does not copy.
//!
//! Uses only `spec` and `error` (see the layering in `runtime/mod.rs`): the launch hands the
//! argument values in through [`LaunchValues`].

use std::sync::Mutex;

use cudarc::driver::sys::{
    self, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
    CUtensorMapL2promotion, CUtensorMapSwizzle,
};
use cudarc::driver::{DeviceRepr, DriverError};

use super::error::Error;
use super::spec::{DescScalar, DescSpec, KernelSpec, TmaSpec};
use crate::ir::DType;

/// One descriptor's hidden kernel parameter: the driver's opaque 128-byte `CUtensorMap`, aligned
/// as the PTX declares the parameter (`.param .align 64 .b8 [128]`). All zeros for a slot the
/// module does not copy with TMA.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TensorMap(pub(crate) [u64; 16]);

impl TensorMap {
    /// The map of a slot the module does not copy with TMA.
    pub(crate) const ZERO: TensorMap = TensorMap([0; 16]);
}

// SAFETY: `TensorMap` is `repr(C)` plain data (16 `u64`s, 128 bytes, no padding, no pointers the
// host owns), which is exactly the bytes the kernel's 128-byte parameter holds; the launch
// passes a reference to it, and the driver copies the 128 bytes into the parameter buffer.
unsafe impl DeviceRepr for TensorMap {}

/// The most dimensions a tiled tensor map has.
pub(crate) const MAX_RANK: usize = 5;

/// The largest extent a tensor map takes (2^32).
const MAX_DIM: i64 = 1 << 32;

/// Strides in bytes must stay below this (2^40).
const STRIDE_BYTES_LIMIT: i128 = 1 << 40;

/// The largest box extent along any dimension.
const MAX_BOX: u32 = 256;

/// Global addresses, strides in bytes and inner box rows in bytes are multiples of this.
const ALIGN: u64 = 16;

/// The integer and buffer arguments of a launch, as descriptors read them (the launch implements
/// this for its argument list; tests for plain values).
pub(crate) trait LaunchValues {
    /// The integer argument at index `param` of the kernel's parameters (an `i32` widened), or
    /// `None` where that argument is not an integer.
    fn int(&self, param: u32) -> Option<i64>;
    /// The device buffer at index `param`: its address and its length in elements, or `None`
    /// where that argument is not a device buffer.
    fn buffer(&self, param: u32) -> Option<(u64, usize)>;
}

/// The arguments of one `cuTensorMapEncodeTiled` call, every array innermost dimension first;
/// entries past the rank (past `rank - 1` for the strides) are zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Encoding {
    /// Element type.
    pub(crate) dtype: CUtensorMapDataType,
    /// Number of dimensions, 1 to [`MAX_RANK`].
    pub(crate) rank: u32,
    /// Device address of element 0.
    pub(crate) address: u64,
    /// Extents.
    pub(crate) global_dim: [u64; MAX_RANK],
    /// Strides in bytes of every dimension but the innermost (which is contiguous).
    pub(crate) global_strides: [u64; MAX_RANK - 1],
    /// The box one copy moves, in elements.
    pub(crate) box_dim: [u32; MAX_RANK],
    /// Steps between the elements a copy takes: all 1.
    pub(crate) element_strides: [u32; MAX_RANK],
    /// No interleaving.
    pub(crate) interleave: CUtensorMapInterleave,
    /// The shared-memory swizzle of the module's buffer.
    pub(crate) swizzle: CUtensorMapSwizzle,
    /// L2 promotion: 128 bytes.
    pub(crate) l2_promotion: CUtensorMapL2promotion,
    /// Out-of-bounds elements read as zero.
    pub(crate) oob_fill: CUtensorMapFloatOOBfill,
}

/// The tensor-map element type of `dtype` (a bool is one byte in memory).
fn map_dtype(dtype: DType) -> CUtensorMapDataType {
    match dtype {
        // The copy moves bits and fills with zero bits: the signedness does not matter.
        DType::I1 | DType::I8 | DType::U8 | DType::F8E4M3 | DType::F8E5M2 => {
            CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8
        }
        DType::I16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        DType::U32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        DType::U64 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        DType::I32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_INT32,
        DType::I64 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_INT64,
        DType::F16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        DType::BF16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        DType::F64 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
    }
}

/// The swizzle mode of a swizzle width in bytes (0: none).
fn map_swizzle(bytes: u32) -> Option<CUtensorMapSwizzle> {
    Some(match bytes {
        0 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
        32 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
        64 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
        128 => CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        _ => return None,
    })
}

/// A refusal of the descriptor over parameter `desc.ptr`.
fn refuse(spec: &KernelSpec, desc: &DescSpec, msg: String) -> Error {
    Error::Descriptor {
        kernel: spec.label(),
        param: param_name(spec, desc.ptr),
        msg,
    }
}

/// Metadata that contradicts itself: a bug in tile, not in the launch.
fn inconsistent(spec: &KernelSpec, msg: impl std::fmt::Display) -> Error {
    Error::BadIr(format!(
        "kernel {}: tensor descriptor metadata: {msg}",
        spec.label()
    ))
}

fn param_name(spec: &KernelSpec, param: u32) -> &'static str {
    spec.params.get(param as usize).map_or("?", |p| p.name)
}

/// The value of an extent or stride.
fn scalar(
    spec: &KernelSpec,
    values: &(impl LaunchValues + ?Sized),
    s: DescScalar,
) -> Result<i64, Error> {
    let int = |i: u32| {
        values.int(i).ok_or_else(|| {
            inconsistent(
                spec,
                format_args!(
                    "parameter {i} (`{}`) is not an integer",
                    param_name(spec, i)
                ),
            )
        })
    };
    match s {
        DescScalar::Const(v) => Ok(v),
        DescScalar::Param(i) => int(i),
        DescScalar::Product {
            params,
            count,
            factor,
            bits,
        } => params[..usize::from(count)]
            .iter()
            .try_fold(factor, |acc, &i| {
                Ok(DescScalar::wrapping_mul(acc, int(i)?, bits))
            }),
    }
}

/// An extent or stride as messages show it: `` `K` = 4096 `` for an argument, `4096` for a
/// constant.
fn show(spec: &KernelSpec, s: DescScalar, v: i64) -> String {
    match s {
        DescScalar::Param(i) => format!("`{}` = {v}", param_name(spec, i)),
        DescScalar::Const(_) => v.to_string(),
        DescScalar::Product {
            params,
            count,
            factor,
            ..
        } => {
            let mut names: Vec<String> = params[..usize::from(count)]
                .iter()
                .map(|&i| format!("`{}`", param_name(spec, i)))
                .collect();
            if factor != 1 {
                names.push(factor.to_string());
            }
            format!("{} = {v}", names.join(" · "))
        }
    }
}

/// The descriptor's extents and strides (outermost first), and its buffer's address and length.
struct Array {
    dims: Vec<i64>,
    strides: Vec<i64>,
    address: u64,
    len: usize,
}

fn resolve(
    spec: &KernelSpec,
    desc: &DescSpec,
    values: &(impl LaunchValues + ?Sized),
) -> Result<Array, Error> {
    if desc.dims.len() != desc.strides.len() || desc.dims.is_empty() {
        return Err(inconsistent(
            spec,
            format_args!(
                "slot {} has {} extents and {} strides",
                desc.slot,
                desc.dims.len(),
                desc.strides.len()
            ),
        ));
    }
    let (address, len) = values.buffer(desc.ptr).ok_or_else(|| {
        inconsistent(
            spec,
            format_args!(
                "parameter {} (`{}`) of slot {} is not a device buffer",
                desc.ptr,
                param_name(spec, desc.ptr),
                desc.slot
            ),
        )
    })?;
    let dims = desc
        .dims
        .iter()
        .map(|&d| scalar(spec, values, d))
        .collect::<Result<_, _>>()?;
    let strides = desc
        .strides
        .iter()
        .map(|&s| scalar(spec, values, s))
        .collect::<Result<_, _>>()?;
    Ok(Array {
        dims,
        strides,
        address,
        len,
    })
}

/// Checks one descriptor's array against its buffer (see [`check_bounds`]).
fn check_array(spec: &KernelSpec, desc: &DescSpec, a: &Array) -> Result<(), Error> {
    for (axis, (&s, &sv)) in desc.strides.iter().zip(&a.strides).enumerate() {
        if sv < 0 {
            return Err(refuse(
                spec,
                desc,
                format!(
                    "stride {axis} ({}) is negative; a tensor descriptor takes strides of 0 \
                     or more",
                    show(spec, s, sv)
                ),
            ));
        }
    }
    if a.dims.iter().any(|&d| d <= 0) {
        // An empty array: nothing is accessed.
        return Ok(());
    }
    let last: i128 = a
        .dims
        .iter()
        .zip(&a.strides)
        .map(|(&d, &s)| i128::from(d - 1) * i128::from(s))
        .sum();
    if last < a.len as i128 {
        return Ok(());
    }
    let list = |scalars: &[DescScalar], vals: &[i64]| {
        let shown: Vec<String> = scalars
            .iter()
            .zip(vals)
            .map(|(&s, &v)| show(spec, s, v))
            .collect();
        format!("[{}]", shown.join(", "))
    };
    Err(refuse(
        spec,
        desc,
        format!(
            "extents {} with strides {} reach element {last}, and the buffer has {} elements",
            list(desc.dims, &a.dims),
            list(desc.strides, &a.strides),
            a.len
        ),
    ))
}

/// Checks that every descriptor of `spec` the launch can describe lies inside its buffer: its
/// strides are 0 or more and, when every extent is positive, its last element
/// `Σ (dim − 1) · stride` is below the buffer's length. A descriptor with an extent of 0 or less
/// describes nothing and passes.
pub(crate) fn check_bounds(
    spec: &KernelSpec,
    values: &(impl LaunchValues + ?Sized),
) -> Result<(), Error> {
    for desc in spec.descriptors.iter().filter(|d| !d.implied) {
        check_array(spec, desc, &resolve(spec, desc, values)?)?;
    }
    Ok(())
}

/// The arguments of `cuTensorMapEncodeTiled` for slot `desc.slot`, copied as `tma` says, with
/// every requirement of the driver checked: an `Err` naming the kernel and the argument for a
/// launch whose arguments TMA cannot describe (an inner stride other than 1, a base address
/// not 16-byte aligned, a stride in bytes not a multiple of 16 or of 2^40 or more, an extent
/// of 0 or less or above 2^32), and an internal `Err` for metadata no launch could satisfy (a
/// box of more than 256 along a dimension, an inner box row not a multiple of 16 bytes or wider
/// than the swizzle, a rank the box does not share or above 5).
pub(crate) fn encoding(
    spec: &KernelSpec,
    desc: &DescSpec,
    tma: &TmaSpec,
    values: &(impl LaunchValues + ?Sized),
) -> Result<Encoding, Error> {
    let a = resolve(spec, desc, values)?;
    check_array(spec, desc, &a)?;
    let rank = a.dims.len();
    if rank > MAX_RANK || tma.box_dims.len() != rank {
        return Err(inconsistent(
            spec,
            format_args!(
                "slot {} has rank {rank} and a box of rank {} (a tensor map has 1 to {MAX_RANK})",
                desc.slot,
                tma.box_dims.len()
            ),
        ));
    }
    let elem = u64::from(desc.dtype.size_bytes());
    let inner = rank - 1;
    if a.strides[inner] != 1 {
        return Err(refuse(
            spec,
            desc,
            format!(
                "the innermost stride ({}) must be 1 for the tensor memory accelerator",
                show(spec, desc.strides[inner], a.strides[inner])
            ),
        ));
    }
    if a.address % ALIGN != 0 {
        return Err(refuse(
            spec,
            desc,
            format!(
                "the buffer's address {:#x} is not {ALIGN}-byte aligned, as the tensor memory \
                 accelerator needs",
                a.address
            ),
        ));
    }
    let mut e = Encoding {
        dtype: map_dtype(desc.dtype),
        rank: rank as u32,
        address: a.address,
        global_dim: [0; MAX_RANK],
        global_strides: [0; MAX_RANK - 1],
        box_dim: [0; MAX_RANK],
        element_strides: [0; MAX_RANK],
        interleave: CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
        swizzle: map_swizzle(tma.swizzle).ok_or_else(|| {
            inconsistent(
                spec,
                format_args!(
                    "slot {} has a swizzle of {} bytes (0, 32, 64 or 128)",
                    desc.slot, tma.swizzle
                ),
            )
        })?,
        l2_promotion: CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        oob_fill: CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    };
    // `axis` counts outermost first, as the kernel wrote it; `i` innermost first, as the driver
    // takes it.
    for axis in 0..rank {
        let i = inner - axis;
        let d = a.dims[axis];
        if d <= 0 || d > MAX_DIM {
            return Err(refuse(
                spec,
                desc,
                format!(
                    "extent {axis} ({}) must be between 1 and 2^32 for the tensor memory \
                     accelerator",
                    show(spec, desc.dims[axis], d)
                ),
            ));
        }
        e.global_dim[i] = d as u64;
        if axis != inner {
            let bytes = i128::from(a.strides[axis]) * i128::from(elem);
            if bytes % i128::from(ALIGN) != 0 || bytes >= STRIDE_BYTES_LIMIT {
                return Err(refuse(
                    spec,
                    desc,
                    format!(
                        "stride {axis} ({}) is {bytes} bytes; the tensor memory accelerator \
                         needs a multiple of {ALIGN} below 2^40",
                        show(spec, desc.strides[axis], a.strides[axis])
                    ),
                ));
            }
            e.global_strides[i - 1] = bytes as u64;
        }
        let b = tma.box_dims[axis];
        if b == 0 || b > MAX_BOX {
            return Err(inconsistent(
                spec,
                format_args!(
                    "slot {} has a box of {b} along dimension {axis} (1 to {MAX_BOX})",
                    desc.slot
                ),
            ));
        }
        e.box_dim[i] = b;
        e.element_strides[i] = 1;
    }
    let row = u64::from(tma.box_dims[inner]) * elem;
    if row % ALIGN != 0 || (tma.swizzle != 0 && row > u64::from(tma.swizzle)) {
        return Err(inconsistent(
            spec,
            format_args!(
                "slot {}: the box's inner row is {row} bytes, which must be a multiple of \
                 {ALIGN} and at most the swizzle of {} bytes",
                desc.slot, tma.swizzle
            ),
        ));
    }
    Ok(e)
}

/// The last map encoded per slot, with the encoding it came from. A tensor map is a function of
/// the encoding's arguments alone (the driver reads no device state to build it, and every
/// argument is part of [`Encoding`], the address included), so a map whose encoding compares
/// equal is the map the driver would return again.
#[derive(Debug, Default)]
pub(crate) struct MapCache(Mutex<Vec<(u32, Encoding, TensorMap)>>);

impl MapCache {
    /// An empty cache (usable in a `static`).
    pub(crate) const fn new() -> MapCache {
        MapCache(Mutex::new(Vec::new()))
    }

    /// The map of `e` for `slot`: the one kept for the slot if its encoding is `e`, else
    /// `encode(e)`, then kept for the slot.
    fn get_or_encode(
        &self,
        slot: u32,
        e: &Encoding,
        encode: impl FnOnce(&Encoding) -> Result<TensorMap, DriverError>,
    ) -> Result<TensorMap, DriverError> {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let entry = kept.iter_mut().find(|(s, ..)| *s == slot);
        if let Some((_, old, map)) = &entry {
            if old == e {
                return Ok(*map);
            }
        }
        let map = encode(e)?;
        match entry {
            Some(entry) => *entry = (slot, *e, map),
            None => kept.push((slot, *e, map)),
        }
        Ok(map)
    }
}

/// The descriptor of a slot the module copies with TMA: an internal `Err` where `spec` has no
/// [`DescSpec`] for it, or fewer slots.
fn described<'s>(spec: &'s KernelSpec, t: &TmaSpec) -> Result<&'s DescSpec, Error> {
    let desc = spec.descriptors.iter().find(|d| d.slot == t.slot);
    desc.filter(|_| t.slot < spec.desc_slots).ok_or_else(|| {
        inconsistent(
            spec,
            format_args!(
                "the module copies slot {} with the tensor memory accelerator, and the kernel \
                 has {} slots, with a host description for {:?}",
                t.slot,
                spec.desc_slots,
                spec.descriptors.iter().map(|d| d.slot).collect::<Vec<_>>()
            ),
        )
    })
}

/// Whether a variant whose module copies the slots of `tma` gives way to the next for these
/// arguments, which read the slots with loads instead: some slot describes an empty array (an
/// extent of 0 or less: no tensor map can be encoded for it, and a `K = 0` product reads nothing
/// and writes zeros), or is an implied descriptor ([`DescSpec::implied`]) whose tensor map they
/// cannot encode or whose array leaves its buffer (the kernel promised nothing about them).
/// Declared slots that cannot be resolved or encoded answer `false`: the encoding reports them.
pub(crate) fn gives_way(
    spec: &KernelSpec,
    tma: &[TmaSpec],
    values: &(impl LaunchValues + ?Sized),
) -> bool {
    tma.iter().any(|t| {
        described(spec, t).is_ok_and(|desc| match resolve(spec, desc, values) {
            Ok(a) if a.dims.iter().any(|&d| d <= 0) => true,
            _ => desc.implied && encoding(spec, desc, t, values).is_err(),
        })
    })
}

/// Checks, for a launch over an empty grid (which encodes nothing), what [`tensor_maps`] would
/// check: that each slot of `tma` is described and its arguments can be encoded, skipping the
/// slots whose array is empty (an extent of 0, which empties most grids, has no tensor map).
pub(crate) fn check_encodings(
    spec: &KernelSpec,
    tma: &[TmaSpec],
    values: &(impl LaunchValues + ?Sized),
) -> Result<(), Error> {
    for t in tma {
        let desc = described(spec, t)?;
        if resolve(spec, desc, values)?.dims.iter().all(|&d| d > 0) {
            encoding(spec, desc, t, values)?;
        }
    }
    Ok(())
}

/// The hidden parameters of a launch of `spec` with a module that copies the slots of `tma`:
/// exactly `spec.desc_slots` maps, in slot order, each slot of `tma` encoded (through `cache`,
/// with `encode` on a miss) and every other slot zeros. A slot of `tma` that `spec` has no
/// [`DescSpec`] for, or beyond `desc_slots`, is an internal `Err`. Allocates nothing for a kernel
/// without descriptors.
pub(crate) fn tensor_maps(
    spec: &KernelSpec,
    tma: &[TmaSpec],
    values: &(impl LaunchValues + ?Sized),
    cache: &MapCache,
    mut encode: impl FnMut(&Encoding) -> Result<TensorMap, DriverError>,
) -> Result<Vec<TensorMap>, Error> {
    let mut maps = vec![TensorMap::ZERO; spec.desc_slots as usize];
    for t in tma {
        let desc = described(spec, t)?;
        let e = encoding(spec, desc, t, values)?;
        maps[t.slot as usize] = cache
            .get_or_encode(t.slot, &e, &mut encode)
            .map_err(|source| Error::Driver {
                during: format!(
                    "encoding the tensor map of `{}` (slot {}) for kernel {}",
                    param_name(spec, desc.ptr),
                    t.slot,
                    spec.label()
                ),
                source,
            })?;
    }
    Ok(maps)
}

/// Encodes `e` with the driver (`cuTensorMapEncodeTiled`).
pub(crate) fn encode(e: &Encoding) -> Result<TensorMap, DriverError> {
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: `map` is a valid, aligned place for the driver's map (its own type). The four
    // arrays live in `e` for the call and have `MAX_RANK` (strides `MAX_RANK - 1`) entries, of
    // which the driver reads `e.rank` (`e.rank - 1`), and `encoding` keeps `e.rank` within
    // 1..=MAX_RANK. The address is only recorded in the map, never dereferenced here. The call
    // reads no other memory and keeps no pointer.
    unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            e.dtype,
            e.rank,
            e.address as *mut std::ffi::c_void,
            e.global_dim.as_ptr(),
            e.global_strides.as_ptr(),
            e.box_dim.as_ptr(),
            e.element_strides.as_ptr(),
            e.interleave,
            e.swizzle,
            e.l2_promotion,
            e.oob_fill,
        )
    }
    .result()?;
    Ok(TensorMap(map.opaque))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::spec::{ParamKind, ParamSpec};
    use sys::CUtensorMapDataType as Ty;
    use sys::CUtensorMapSwizzle as Sw;
    use DescScalar::{Const, Param};

    const fn ptr(name: &'static str, dtype: DType) -> ParamSpec {
        ParamSpec {
            name,
            kind: ParamKind::Ptr {
                dtype,
                written: false,
                offsets32: false,
            },
        }
    }

    const fn int(name: &'static str) -> ParamSpec {
        ParamSpec {
            name,
            kind: ParamKind::Scalar(DType::I64),
        }
    }

    /// A GEMM's parameters: `a` (M × K), `b` (K × N), `bt` (N × K, K-major, rows `ldb` apart),
    /// `c` (M × N), and `x`, a view whose extents and strides are all arguments.
    const PARAMS: &[ParamSpec] = &[
        ptr("a", DType::F16),
        ptr("b", DType::F16),
        ptr("bt", DType::BF16),
        ptr("c", DType::F32),
        int("M"),
        int("N"),
        int("K"),
        int("ldb"),
        ptr("x", DType::F32),
        int("rows"),
        int("cols"),
        int("row_stride"),
        int("col_stride"),
    ];

    const A: DescSpec = DescSpec {
        slot: 0,
        ptr: 0,
        dtype: DType::F16,
        dims: &[Param(4), Param(6)],
        strides: &[Param(6), Const(1)],
        implied: false,
    };
    const B: DescSpec = DescSpec {
        slot: 1,
        ptr: 1,
        dtype: DType::F16,
        dims: &[Param(6), Param(5)],
        strides: &[Param(5), Const(1)],
        implied: false,
    };
    const BT: DescSpec = DescSpec {
        slot: 2,
        ptr: 2,
        dtype: DType::BF16,
        dims: &[Param(5), Param(6)],
        strides: &[Param(7), Const(1)],
        implied: false,
    };
    const C: DescSpec = DescSpec {
        slot: 3,
        ptr: 3,
        dtype: DType::F32,
        dims: &[Param(4), Param(5)],
        strides: &[Param(5), Const(1)],
        implied: false,
    };
    const X: DescSpec = DescSpec {
        slot: 4,
        ptr: 8,
        dtype: DType::F32,
        dims: &[Param(9), Param(10)],
        strides: &[Param(11), Param(12)],
        implied: false,
    };

    /// Six slots: five described, and slot 5, which the launch cannot describe.
    static GEMM: KernelSpec = KernelSpec {
        name: "gemm",
        rust_name: "gemm",
        instance: "",
        ir: "",
        params: PARAMS,
        desc_slots: 6,
        descriptors: &[A, B, BT, C, X],
        variants: &[],
    };

    /// One argument as [`LaunchValues`] sees it.
    #[derive(Clone, Copy)]
    enum V {
        Int(i64),
        Buf(u64, usize),
    }

    struct Values(Vec<V>);

    impl LaunchValues for Values {
        fn int(&self, param: u32) -> Option<i64> {
            match self.0.get(param as usize)? {
                V::Int(v) => Some(*v),
                V::Buf(..) => None,
            }
        }
        fn buffer(&self, param: u32) -> Option<(u64, usize)> {
            match self.0.get(param as usize)? {
                V::Buf(a, l) => Some((*a, *l)),
                V::Int(_) => None,
            }
        }
    }

    const M: i64 = 4096;
    const N: i64 = 2048;
    const K: i64 = 4096;
    const LDB: i64 = 4104;

    /// A launch of M = 4096, N = 2048, K = 4096 whose buffers fit exactly, `bt`'s rows padded to
    /// 4104 elements, and `x` a 256 × 128 view with rows 128 apart.
    fn values() -> Values {
        let fit = |dims: [i64; 2], strides: [i64; 2]| (dims[0] - 1) * strides[0] + dims[1];
        Values(vec![
            V::Buf(0x7f00_0000_0000, (M * K) as usize),
            V::Buf(0x7f10_0000_0000, (K * N) as usize),
            V::Buf(0x7f20_0000_0000, fit([N, K], [LDB, 1]) as usize),
            V::Buf(0x7f30_0000_0000, (M * N) as usize),
            V::Int(M),
            V::Int(N),
            V::Int(K),
            V::Int(LDB),
            V::Buf(0x7f40_0000_0000, 256 * 128),
            V::Int(256),
            V::Int(128),
            V::Int(128),
            V::Int(1),
        ])
    }

    /// `values()` with argument `i` replaced.
    fn with(changes: &[(usize, V)]) -> Values {
        let mut v = values();
        for &(i, x) in changes {
            v.0[i] = x;
        }
        v
    }

    const fn tma(slot: u32, box_dims: &'static [u32], swizzle: u32) -> TmaSpec {
        TmaSpec {
            slot,
            box_dims,
            swizzle,
        }
    }

    fn encoded(desc: &DescSpec, t: &TmaSpec) -> Encoding {
        encoding(&GEMM, desc, t, &values()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_4096_square_f16_box_128_by_64_swizzled_128() {
        let e = encoded(&A, &tma(0, &[128, 64], 128));
        assert_eq!(
            e,
            Encoding {
                dtype: Ty::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                rank: 2,
                address: 0x7f00_0000_0000,
                global_dim: [4096, 4096, 0, 0, 0],
                global_strides: [4096 * 2, 0, 0, 0],
                box_dim: [64, 128, 0, 0, 0],
                element_strides: [1, 1, 0, 0, 0],
                interleave: CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle: Sw::CU_TENSOR_MAP_SWIZZLE_128B,
                l2_promotion: CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                oob_fill: CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            }
        );
    }

    #[test]
    fn an_extent_that_is_a_product_of_arguments() {
        const fn product(params: [u32; 4], count: u8, factor: i64, bits: u8) -> DescScalar {
            DescScalar::Product {
                params,
                count,
                factor,
                bits,
            }
        }
        // `a`'s rows as `M · 1`: the same tensor map as `M`.
        let rows = DescScalar::Param(4).times(DescScalar::Const(1), 32);
        assert_eq!(rows, Some(product([4, 0, 0, 0], 1, 1, 32)));
        const ROWS: DescSpec = DescSpec {
            dims: &[product([4, 0, 0, 0], 1, 1, 32), Param(6)],
            ..A
        };
        let t = tma(0, &[128, 64], 128);
        assert_eq!(encoded(&ROWS, &t), encoded(&A, &t));
        // `2 · M` rows of `K` reach past `a`'s `M · K` elements: the launch refuses them.
        const TWICE: DescSpec = DescSpec {
            dims: &[product([4, 0, 0, 0], 1, 2, 32), Param(6)],
            ..A
        };
        assert!(encoding(&GEMM, &TWICE, &t, &values()).is_err());
        // A product the kernel computes in 32 bits wraps as the kernel's does.
        let narrow = DescScalar::Param(4)
            .times(DescScalar::Param(6), 32)
            .and_then(|p| p.times(DescScalar::Param(5), 32))
            .unwrap();
        assert_eq!(
            scalar(&GEMM, &values(), narrow).unwrap(),
            0,
            "2^35 wraps to 0"
        );
        let wide = DescScalar::Param(4)
            .times(DescScalar::Param(6), 64)
            .unwrap();
        assert_eq!(scalar(&GEMM, &values(), wide).unwrap(), M * K);
        assert_eq!(show(&GEMM, wide, M * K), format!("`M` · `K` = {}", M * K));
        // A product holds four arguments at most.
        let four = wide
            .times(DescScalar::Param(5), 64)
            .and_then(|p| p.times(DescScalar::Param(5), 64))
            .unwrap();
        assert!(four.times(DescScalar::Param(5), 64).is_none());
        let five = four.times(DescScalar::Const(3), 64).unwrap();
        assert_eq!(scalar(&GEMM, &values(), five).unwrap(), 3 * M * K * N * N);
    }

    #[test]
    fn b_k_by_n_box_64_by_64() {
        let e = encoded(&B, &tma(1, &[64, 64], 128));
        assert_eq!(
            e.global_dim,
            [N as u64, K as u64, 0, 0, 0],
            "innermost (N) first"
        );
        assert_eq!(e.global_strides, [N as u64 * 2, 0, 0, 0]);
        assert_eq!(e.box_dim, [64, 64, 0, 0, 0]);
        assert_eq!(e.swizzle, Sw::CU_TENSOR_MAP_SWIZZLE_128B);
    }

    #[test]
    fn k_major_b_with_padded_rows_in_bf16() {
        let e = encoded(&BT, &tma(2, &[128, 64], 128));
        assert_eq!(e.dtype, Ty::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
        assert_eq!(
            e.global_dim,
            [K as u64, N as u64, 0, 0, 0],
            "innermost (K) first"
        );
        assert_eq!(
            e.global_strides,
            [LDB as u64 * 2, 0, 0, 0],
            "the padded row, in bytes"
        );
        assert_eq!(e.box_dim, [64, 128, 0, 0, 0]);
    }

    #[test]
    fn swizzles_and_element_types() {
        for (bytes, mode) in [
            (0, Sw::CU_TENSOR_MAP_SWIZZLE_NONE),
            (32, Sw::CU_TENSOR_MAP_SWIZZLE_32B),
            (64, Sw::CU_TENSOR_MAP_SWIZZLE_64B),
            (128, Sw::CU_TENSOR_MAP_SWIZZLE_128B),
        ] {
            // An inner row of 8 f32 is 32 bytes: within every swizzle.
            assert_eq!(encoded(&X, &tma(4, &[64, 8], bytes)).swizzle, mode);
        }
        // Without a swizzle the inner row may be as wide as the box allows.
        let e = encoded(&X, &tma(4, &[16, 128], 0));
        assert_eq!(e.box_dim, [128, 16, 0, 0, 0]);
        assert_eq!(e.dtype, Ty::CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
        for (dtype, ty) in [
            (DType::I32, Ty::CU_TENSOR_MAP_DATA_TYPE_INT32),
            (DType::I64, Ty::CU_TENSOR_MAP_DATA_TYPE_INT64),
            (DType::F16, Ty::CU_TENSOR_MAP_DATA_TYPE_FLOAT16),
            (DType::BF16, Ty::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16),
            (DType::F32, Ty::CU_TENSOR_MAP_DATA_TYPE_FLOAT32),
            (DType::I1, Ty::CU_TENSOR_MAP_DATA_TYPE_UINT8),
        ] {
            assert_eq!(map_dtype(dtype), ty);
        }
    }

    #[test]
    fn rank_three_reverses_every_array() {
        const X3: DescSpec = DescSpec {
            slot: 4,
            ptr: 8,
            dtype: DType::F32,
            dims: &[Const(2), Param(9), Param(10)],
            strides: &[Const(256 * 128), Param(11), Param(12)],
            implied: false,
        };
        let v = with(&[(8, V::Buf(0x7f40_0000_0000, 2 * 256 * 128))]);
        let e = encoding(&GEMM, &X3, &tma(4, &[1, 64, 32], 128), &v).unwrap();
        assert_eq!(e.rank, 3);
        assert_eq!(e.global_dim, [128, 256, 2, 0, 0]);
        assert_eq!(e.global_strides, [128 * 4, 256 * 128 * 4, 0, 0]);
        assert_eq!(e.box_dim, [32, 64, 1, 0, 0]);
        assert_eq!(e.element_strides, [1, 1, 1, 0, 0]);
    }

    /// Encoding slot `X` as `t` with `changes` to the arguments is refused with a message
    /// containing `expected`: a [`Error::Descriptor`] naming the kernel and `x` when
    /// `user` is true, else an internal error.
    #[track_caller]
    fn refused(changes: &[(usize, V)], t: TmaSpec, user: bool, expected: &str) {
        let e = encoding(&GEMM, &X, &t, &with(changes)).unwrap_err();
        let text = e.to_string();
        match (&e, user) {
            (Error::Descriptor { kernel, param, .. }, true) => {
                assert_eq!((kernel.as_str(), *param), ("`gemm`", "x"), "{text}")
            }
            (Error::BadIr(_), false) => assert!(text.contains("kernel `gemm`"), "{text}"),
            _ => panic!("wrong kind of error: {e:?}"),
        }
        assert!(text.contains(expected), "{text}\nlacks: {expected}");
    }

    const T: TmaSpec = tma(4, &[64, 32], 128);

    #[test]
    fn refusals_of_the_arguments() {
        refused(
            &[(12, V::Int(2)), (8, V::Buf(0x7f40_0000_0000, 256 * 256))],
            T,
            true,
            "innermost stride (`col_stride` = 2) must be 1",
        );
        refused(
            &[(8, V::Buf(0x7f40_0000_0008, 256 * 128))],
            T,
            true,
            "address 0x7f4000000008 is not 16-byte aligned",
        );
        refused(
            &[(11, V::Int(130)), (8, V::Buf(0x7f40_0000_0000, 1 << 20))],
            T,
            true,
            "stride 0 (`row_stride` = 130) is 520 bytes; the tensor memory accelerator needs a \
             multiple of 16 below 2^40",
        );
        // 2^38 f32 elements is 2^40 bytes; one row, so the array still fits its buffer.
        refused(
            &[(9, V::Int(1)), (11, V::Int(1 << 38))],
            T,
            true,
            "is 1099511627776 bytes",
        );
        refused(
            &[(9, V::Int(0))],
            T,
            true,
            "extent 0 (`rows` = 0) must be between 1 and 2^32",
        );
        refused(&[(9, V::Int(-3))], T, true, "extent 0 (`rows` = -3)");
        refused(
            &[
                (8, V::Buf(0x7f40_0000_0000, (1 << 32) + 1)),
                (9, V::Int(1)),
                (10, V::Int((1 << 32) + 1)),
            ],
            T,
            true,
            "extent 1 (`cols` = 4294967297) must be between 1 and 2^32",
        );
        refused(
            &[(11, V::Int(-128))],
            T,
            true,
            "stride 0 (`row_stride` = -128) is negative",
        );
    }

    #[test]
    fn refusals_of_the_metadata() {
        refused(
            &[],
            tma(4, &[512, 32], 128),
            false,
            "a box of 512 along dimension 0",
        );
        refused(
            &[],
            tma(4, &[64, 0], 128),
            false,
            "a box of 0 along dimension 1",
        );
        refused(&[], tma(4, &[64, 2], 0), false, "inner row is 8 bytes");
        refused(&[], tma(4, &[64, 64], 128), false, "inner row is 256 bytes");
        refused(&[], tma(4, &[64, 16], 32), false, "inner row is 64 bytes");
        refused(&[], tma(4, &[64, 8], 48), false, "a swizzle of 48 bytes");
        refused(&[], tma(4, &[64], 128), false, "rank 2 and a box of rank 1");
        refused(
            &[],
            tma(4, &[1, 1, 1, 1, 1, 1], 0),
            false,
            "a box of rank 6",
        );
        // An integer parameter that the launch passed something else for.
        let bad = DescSpec {
            dims: &[Param(0), Param(10)],
            ..X
        };
        let e = encoding(&GEMM, &bad, &T, &values()).unwrap_err();
        assert!(matches!(e, Error::BadIr(_)), "{e}");
        assert!(
            e.to_string()
                .contains("parameter 0 (`a`) is not an integer"),
            "{e}"
        );
    }

    #[test]
    fn bounds() {
        let fits = |changes: &[(usize, V)]| check_bounds(&GEMM, &with(changes));
        assert!(fits(&[]).is_ok(), "every buffer fits exactly");
        let e = fits(&[(
            2,
            V::Buf(0x7f20_0000_0000, ((N - 1) * LDB + K - 1) as usize),
        )])
        .unwrap_err();
        assert!(matches!(e, Error::Descriptor { param: "bt", .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "kernel `gemm`: the tensor descriptor of `bt`: extents [`N` = 2048, `K` = 4096] \
             with strides [`ldb` = 4104, 1] reach element 8404983, and the buffer has 8404983 \
             elements"
        );
        // A transposed view: the largest element is (rows - 1) * 1 + (cols - 1) * rows.
        let t = [(11, V::Int(1)), (12, V::Int(256))];
        assert!(fits(&t).is_ok());
        let short = [t[0], t[1], (8, V::Buf(0x7f40_0000_0000, 256 * 128 - 1))];
        assert!(fits(&short).is_err());
        // Broadcast strides of 0 reach element 0 only.
        assert!(fits(&[(11, V::Int(0)), (12, V::Int(0)), (8, V::Buf(0, 1))]).is_ok());
        // An empty array accesses nothing, whatever its buffer.
        assert!(fits(&[(9, V::Int(0)), (8, V::Buf(0, 0))]).is_ok());
        assert!(fits(&[(9, V::Int(-1)), (8, V::Buf(0, 0))]).is_ok());
        // A negative stride is refused even for an empty array.
        let e = fits(&[(9, V::Int(0)), (12, V::Int(-1))]).unwrap_err();
        assert!(
            e.to_string()
                .contains("stride 1 (`col_stride` = -1) is negative"),
            "{e}"
        );
        // Extents and strides whose products overflow 64 bits are measured, not wrapped.
        let e = fits(&[(9, V::Int(i64::MAX)), (11, V::Int(i64::MAX))]).unwrap_err();
        assert!(e.to_string().contains("reach element"), "{e}");
    }

    /// An encoder that counts its calls and returns a map holding the address and call number.
    fn counting(
        calls: &std::cell::Cell<u64>,
    ) -> impl FnMut(&Encoding) -> Result<TensorMap, DriverError> + '_ {
        move |e| {
            calls.set(calls.get() + 1);
            let mut m = [0; 16];
            m[0] = e.address;
            m[1] = calls.get();
            Ok(TensorMap(m))
        }
    }

    #[test]
    fn one_map_per_slot_zeros_where_the_module_copies_nothing() {
        let calls = std::cell::Cell::new(0);
        let copies = [tma(1, &[64, 64], 128), tma(0, &[128, 64], 128)];
        let maps = tensor_maps(
            &GEMM,
            &copies,
            &values(),
            &MapCache::new(),
            counting(&calls),
        )
        .unwrap();
        assert_eq!(maps.len(), GEMM.desc_slots as usize);
        assert_eq!(maps[0].0[..2], [0x7f00_0000_0000, 2]);
        assert_eq!(maps[1].0[..2], [0x7f10_0000_0000, 1]);
        assert!(maps[2..].iter().all(|m| *m == TensorMap::ZERO));
        assert_eq!(calls.get(), 2);
        // A module that copies nothing gets zeros; a kernel without slots, no maps at all.
        let maps = tensor_maps(&GEMM, &[], &values(), &MapCache::new(), counting(&calls)).unwrap();
        assert_eq!(maps, vec![TensorMap::ZERO; 6]);
        let none = KernelSpec {
            desc_slots: 0,
            descriptors: &[],
            ..GEMM
        };
        assert!(
            tensor_maps(&none, &[], &values(), &MapCache::new(), counting(&calls))
                .unwrap()
                .is_empty()
        );
        assert_eq!(calls.get(), 2);
    }

    /// An implied descriptor (found by the compiler in a pointer load) is never a reason to
    /// refuse a launch: its bounds are not checked, and where its map cannot be encoded the
    /// variant that copies it gives way.
    #[test]
    fn empty_arrays_and_unencodable_implied_descriptors_give_way() {
        const IMPLIED: KernelSpec = KernelSpec {
            desc_slots: 2,
            descriptors: &[
                DescSpec { implied: true, ..A },
                DescSpec { implied: true, ..B },
            ],
            ..GEMM
        };
        let copies = [tma(0, &[128, 64], 128), tma(1, &[64, 64], 128)];
        let fine = values();
        assert!(check_bounds(&IMPLIED, &fine).is_ok());
        assert!(!gives_way(&IMPLIED, &copies, &fine));
        // `b` one element short: declared, the launch refuses it; implied, the variant gives way.
        let short = with(&[(1, V::Buf(0x7f10_0000_0000, (K * N - 1) as usize))]);
        assert!(check_bounds(&GEMM, &short).is_err());
        assert!(check_bounds(&IMPLIED, &short).is_ok());
        assert!(gives_way(&IMPLIED, &copies, &short));
        // Misaligned, or rows not a multiple of 16 bytes: the same.
        let misaligned = with(&[(1, V::Buf(0x7f10_0000_0004, (K * N) as usize))]);
        assert!(gives_way(&IMPLIED, &copies, &misaligned));
        let odd_rows = with(&[(5, V::Int(N - 1))]);
        assert!(gives_way(&IMPLIED, &copies, &odd_rows));
        // A module that copies neither slot never gives way for them.
        assert!(!gives_way(&IMPLIED, &[], &short));
        // Declared descriptors are refused by the encoding instead (the launch's `Err`), except
        // an empty array, which has no tensor map whoever declared it.
        assert!(!gives_way(&GEMM, &copies, &misaligned));
        assert!(gives_way(&GEMM, &copies, &with(&[(6, V::Int(0))])));
    }

    #[test]
    fn the_size_and_alignment_of_a_map() {
        assert_eq!(std::mem::size_of::<TensorMap>(), 128);
        assert_eq!(std::mem::align_of::<TensorMap>(), 64);
        assert_eq!(std::mem::size_of::<sys::CUtensorMap>(), 128);
    }

    #[test]
    fn an_empty_extent_only_matters_where_the_module_copies() {
        let calls = std::cell::Cell::new(0);
        let empty_k = with(&[(6, V::Int(0))]);
        // `c` does not depend on K; `a` and `b` are empty, and nothing copies them.
        let maps = tensor_maps(&GEMM, &[], &empty_k, &MapCache::new(), counting(&calls));
        assert!(maps.is_ok());
        let e = tensor_maps(
            &GEMM,
            &[tma(0, &[128, 64], 128)],
            &empty_k,
            &MapCache::new(),
            counting(&calls),
        )
        .unwrap_err();
        assert!(matches!(e, Error::Descriptor { param: "a", .. }), "{e}");
        assert!(e.to_string().contains("extent 1 (`K` = 0)"), "{e}");
        assert_eq!(calls.get(), 0);
        // Over an empty grid nothing is encoded: an empty array passes, any other array is
        // checked as if it were encoded.
        let copies = [tma(0, &[128, 64], 128), tma(1, &[64, 64], 128)];
        assert!(check_encodings(&GEMM, &copies, &empty_k).is_ok());
        let misaligned = with(&[(1, V::Buf(0x7f10_0000_0004, (K * N) as usize))]);
        let e = check_encodings(&GEMM, &copies, &misaligned).unwrap_err();
        assert!(matches!(e, Error::Descriptor { param: "b", .. }), "{e}");
        let e = check_encodings(&GEMM, &[tma(5, &[64, 64], 128)], &values()).unwrap_err();
        assert!(matches!(e, Error::BadIr(_)), "{e}");
    }

    #[test]
    fn copies_the_kernel_cannot_describe_are_internal_errors() {
        let calls = std::cell::Cell::new(0);
        for slot in [5, 6] {
            let e = tensor_maps(
                &GEMM,
                &[tma(slot, &[64, 64], 128)],
                &values(),
                &MapCache::new(),
                counting(&calls),
            )
            .unwrap_err();
            assert!(matches!(e, Error::BadIr(_)), "{e}");
            assert!(
                e.to_string().contains(&format!("copies slot {slot}")),
                "{e}"
            );
        }
    }

    #[test]
    fn the_cache_encodes_again_only_when_an_argument_changes() {
        let calls = std::cell::Cell::new(0);
        let cache = MapCache::new();
        let copies = [tma(0, &[128, 64], 128), tma(1, &[64, 64], 128)];
        let run = |v: &Values| tensor_maps(&GEMM, &copies, v, &cache, counting(&calls)).unwrap();
        let first = run(&values());
        assert_eq!(calls.get(), 2);
        assert_eq!(run(&values()), first, "the same maps, from the cache");
        assert_eq!(calls.get(), 2);
        // Another address for `a`: slot 0 is encoded again, slot 1 still comes from the cache.
        let moved = with(&[(0, V::Buf(0x7f50_0000_0000, (M * K) as usize))]);
        let maps = run(&moved);
        assert_eq!(calls.get(), 3);
        assert_eq!(maps[0].0[..2], [0x7f50_0000_0000, 3]);
        assert_eq!(maps[1], first[1]);
        // Another box is another encoding too.
        tensor_maps(
            &GEMM,
            &[tma(0, &[64, 64], 128)],
            &moved,
            &cache,
            counting(&calls),
        )
        .unwrap();
        assert_eq!(calls.get(), 4);
    }

    #[test]
    fn driver_errors_name_the_argument() {
        let fail = |_: &Encoding| Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE));
        let e = tensor_maps(
            &GEMM,
            &[tma(1, &[64, 64], 128)],
            &values(),
            &MapCache::new(),
            fail,
        )
        .unwrap_err();
        // (The driver error's own text needs the driver: only `during` is compared.)
        let Error::Driver { during, .. } = e else {
            panic!("{e:?}")
        };
        assert_eq!(
            during,
            "encoding the tensor map of `b` (slot 1) for kernel `gemm`"
        );
    }
}
