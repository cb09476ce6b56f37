//! Tests of the LLVM back end: hand-written GPU-level kernels compiled for every target, with
//! assertions on the PTX (and on the optimized LLVM IR), and — where ptxas is available — the PTX
//! assembled for sm_90a and sm_80 with no spills.
//!
//! Every case goes through [`check`]: the IR text (with `#L` standing for the case's layout), and
//! the expected lines. An expectation is a substring of the PTX, unless it starts with
//! - `llvm:` — a substring of the optimized LLVM IR;
//! - `!` — a PTX substring that must not appear;
//! - `#N ` — a PTX substring that appears exactly `N` times.
//!
//! ptxas is found by [`tile_codegen::ptxas::find`] (`TILE_PTXAS`, the workspace's `.tools/`, `PATH`);
//! without it the assembly step is skipped, visibly. `TILE_TEST_DUMP=dir` writes each case's PTX and
//! optimized LLVM IR to `dir`.

use std::path::PathBuf;

use tile_codegen::llvm::compile;
use tile_codegen::passes::Pass;
use tile_core::Target;

/// 4 elements per thread, 4 warps: a 512-element layout tile.
const SPT4: &str = "#blocked<spt = [4], tpw = [32], wpc = [4], order = [0]>";
/// 1 element per thread, 4 warps: a 128-element layout tile.
const SPT1: &str = "#blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>";
/// 2 elements per thread, 4 warps.
const SPT2: &str = "#blocked<spt = [2], tpw = [32], wpc = [4], order = [0]>";

/// `out[i] = (x[i] + y[i]) * z[i]` for `i = pid * 1024 + arange(0, 1024)`, masked by `i < n`;
/// `vec` is the access width and `facts` the parameters' divisibility attribute (or nothing).
fn add_mul(name: &str, vec: u32, facts: &str) -> String {
    format!(
        "kernel @{name}(%x: ptr<f32>{facts}, %y: ptr<f32>{facts}, %z: ptr<f32>{facts}, %out: ptr<f32>{facts}, %n: i32{facts}) attributes {{num_warps = 4}} {{
  %pid = program_id {{axis = 0}} : i32
  %block = constant 1024 : i32
  %start = mul %pid, %block : i32
  %starts = splat %start : tensor<1024xi32, #L>
  %range = arange {{start = 0, end = 1024}} : tensor<1024xi32, #L>
  %offs = add %starts, %range : tensor<1024xi32, #L>
  %ns = splat %n : tensor<1024xi32, #L>
  %mask = cmp lt %offs, %ns : tensor<1024xi1, #L>
  %zero = constant 0.0 : f32
  %other = splat %zero : tensor<1024xf32, #L>
  %xs = splat %x : tensor<1024xptr<f32>, #L>
  %xp = addptr %xs, %offs : tensor<1024xptr<f32>, #L>
  %xv = load {{vec = {vec}}} %xp, %mask, %other : tensor<1024xf32, #L>
  %ys = splat %y : tensor<1024xptr<f32>, #L>
  %yp = addptr %ys, %offs : tensor<1024xptr<f32>, #L>
  %yv = load {{vec = {vec}}} %yp, %mask, %other : tensor<1024xf32, #L>
  %zs = splat %z : tensor<1024xptr<f32>, #L>
  %zp = addptr %zs, %offs : tensor<1024xptr<f32>, #L>
  %zv = load {{vec = {vec}}} %zp, %mask, %other : tensor<1024xf32, #L>
  %sum = add %xv, %yv : tensor<1024xf32, #L>
  %r = mul %sum, %zv : tensor<1024xf32, #L>
  %os = splat %out : tensor<1024xptr<f32>, #L>
  %op = addptr %os, %offs : tensor<1024xptr<f32>, #L>
  store {{vec = {vec}}} %op, %r, %mask
  return
}}"
    )
}

#[test]
fn add_mul_vec4() {
    check(
        &add_mul("add_mul", 4, " {divisibility = 16}").replace("#L", SPT4),
        &[
            // 1024 elements / 512 per layout tile: 2 runs of 4 per thread and access.
            "#6 ld.global.v4.b32",
            "#2 st.global.v4.b32",
            "!ld.global.b32",
            "llvm:ptx_kernel void @add_mul(ptr addrspace(1) align 16 %x",
            "llvm:@add_mul, !\"maxntidx\", i32 128}",
            "llvm:!noalias",
        ],
    );
}

#[test]
fn add_mul_vec1_no_facts() {
    check(
        &add_mul("add_mul_v1", 1, "").replace("#L", SPT1),
        &[
            // 1 element per thread, 8 repetitions of the 128-element tile.
            "#24 ld.global.b32",
            "#8 st.global.b32",
            "!.v4.",
            "@%p",
            "llvm:ptx_kernel void @add_mul_v1(ptr addrspace(1) %x",
        ],
    );
}

#[test]
fn copy_unmasked_vec4() {
    check(
        &"kernel @copy(%x: ptr<f32> {divisibility = 16}, %out: ptr<f32> {divisibility = 16}) attributes {num_warps = 4} {
  %pid = program_id {axis = 0} : i32
  %block = constant 2048 : i32
  %start = mul %pid, %block : i32
  %starts = splat %start : tensor<2048xi32, #L>
  %range = arange {start = 0, end = 2048} : tensor<2048xi32, #L>
  %offs = add %starts, %range : tensor<2048xi32, #L>
  %xs = splat %x : tensor<2048xptr<f32>, #L>
  %xp = addptr %xs, %offs : tensor<2048xptr<f32>, #L>
  %xv = load {vec = 4} %xp : tensor<2048xf32, #L>
  %os = splat %out : tensor<2048xptr<f32>, #L>
  %op = addptr %os, %offs : tensor<2048xptr<f32>, #L>
  store {vec = 4} %op, %xv
  return
}"
        .replace("#L", SPT4),
        &["#4 ld.global.v4.f32", "#4 st.global.v4.f32", "!@%p"],
    );
}

/// Eviction hints: each access carries the L1 priority and an L2 cache policy made just before
/// it, the unmasked ones too (in the asm form, predicated on `true`); accesses without a hint
/// stay plain.
#[test]
fn eviction_hints() {
    check(
        &"kernel @evict(%x: ptr<f32> {divisibility = 16}, %y: ptr<f32> {divisibility = 16}, %out: ptr<f32> {divisibility = 16}, %n: i32) attributes {num_warps = 4} {
  %pid = program_id {axis = 0} : i32
  %block = constant 2048 : i32
  %start = mul %pid, %block : i32
  %starts = splat %start : tensor<2048xi32, #L>
  %range = arange {start = 0, end = 2048} : tensor<2048xi32, #L>
  %offs = add %starts, %range : tensor<2048xi32, #L>
  %ns = splat %n : tensor<2048xi32, #L>
  %mask = cmp lt %offs, %ns : tensor<2048xi1, #L>
  %zero = constant 0.0 : f32
  %other = splat %zero : tensor<2048xf32, #L>
  %xs = splat %x : tensor<2048xptr<f32>, #L>
  %xp = addptr %xs, %offs : tensor<2048xptr<f32>, #L>
  %xv = load {vec = 4, evict = first} %xp, %mask, %other : tensor<2048xf32, #L>
  %ys = splat %y : tensor<2048xptr<f32>, #L>
  %yp = addptr %ys, %offs : tensor<2048xptr<f32>, #L>
  %yv = load {vec = 4, evict = last} %yp : tensor<2048xf32, #L>
  %r = add %xv, %yv : tensor<2048xf32, #L>
  %os = splat %out : tensor<2048xptr<f32>, #L>
  %op = addptr %os, %offs : tensor<2048xptr<f32>, #L>
  store {vec = 4, evict = first} %op, %r
  %q = addptr %op, %offs : tensor<2048xptr<f32>, #L>
  store {vec = 4} %q, %r, %mask
  return
}"
        .replace("#L", SPT4),
        &[
            "#8 createpolicy.fractional.L2::evict_first.b64",
            "#4 createpolicy.fractional.L2::evict_last.b64",
            "#4 ld.global.L1::evict_first.L2::cache_hint.v4.b32",
            "#4 ld.global.L1::evict_last.L2::cache_hint.v4.b32",
            "#4 st.global.L1::evict_first.L2::cache_hint.v4.b32",
            "#4 st.global.v4.b32",
        ],
    );
}

#[test]
fn i32_ops() {
    check(
        &"kernel @int_ops(%a: ptr<i32> {divisibility = 16}, %b: ptr<i32> {divisibility = 16}, %out: ptr<i32> {divisibility = 16}, %n: i32 {divisibility = 16}) attributes {num_warps = 4} {
  %pid = program_id {axis = 0} : i32
  %block = constant 512 : i32
  %start = mul %pid, %block : i32
  %starts = splat %start : tensor<512xi32, #L>
  %range = arange {start = 0, end = 512} : tensor<512xi32, #L>
  %offs = add %starts, %range : tensor<512xi32, #L>
  %ns = splat %n : tensor<512xi32, #L>
  %mask = cmp lt %offs, %ns : tensor<512xi1, #L>
  %c0 = constant 0 : i32
  %zeros = splat %c0 : tensor<512xi32, #L>
  %as = splat %a : tensor<512xptr<i32>, #L>
  %ap = addptr %as, %offs : tensor<512xptr<i32>, #L>
  %av = load {vec = 4} %ap, %mask, %zeros : tensor<512xi32, #L>
  %bs = splat %b : tensor<512xptr<i32>, #L>
  %bp = addptr %bs, %offs : tensor<512xptr<i32>, #L>
  %bv = load {vec = 4} %bp, %mask, %zeros : tensor<512xi32, #L>
  %q = div %av, %bv : tensor<512xi32, #L>
  %r = rem %av, %bv : tensor<512xi32, #L>
  %lo = min %q, %r : tensor<512xi32, #L>
  %hi = max %q, %r : tensor<512xi32, #L>
  %le = cmp le %av, %bv : tensor<512xi1, #L>
  %sel = select %le, %lo, %hi : tensor<512xi32, #L>
  %inv = not %sel : tensor<512xi32, #L>
  %neg = neg %inv : tensor<512xi32, #L>
  %x1 = xor %neg, %av : tensor<512xi32, #L>
  %x2 = and %x1, %bv : tensor<512xi32, #L>
  %x3 = or %x2, %q : tensor<512xi32, #L>
  %x4 = sub %x3, %r : tensor<512xi32, #L>
  %ne = cmp ne %x4, %zeros : tensor<512xi1, #L>
  %gt = cmp gt %x4, %av : tensor<512xi1, #L>
  %ge = cmp ge %x4, %bv : tensor<512xi1, #L>
  %eq = cmp eq %x4, %q : tensor<512xi1, #L>
  %m1 = and %ne, %gt : tensor<512xi1, #L>
  %m2 = or %ge, %eq : tensor<512xi1, #L>
  %m3 = xor %m1, %m2 : tensor<512xi1, #L>
  %m4 = not %m3 : tensor<512xi1, #L>
  %res = select %m4, %x4, %x3 : tensor<512xi32, #L>
  %os = splat %out : tensor<512xptr<i32>, #L>
  %op = addptr %os, %offs : tensor<512xptr<i32>, #L>
  store {vec = 4} %op, %res, %mask
  return
}"
        .replace("#L", SPT4),
        &["#2 ld.global.v4.b32", "#1 st.global.v4.b32", "div.s32", "min.s32", "max.s32"],
    );
}

#[test]
fn f32_ops_and_scalars() {
    check(
        &"kernel @float_ops(%a: ptr<f32>, %b: ptr<f32>, %out: ptr<f32>, %scale: f32) attributes {num_warps = 4} {
  %pid = program_id {axis = 1} : i32
  %gz = num_programs {axis = 2} : i32
  %s0 = load %a : f32
  %s1 = mul %s0, %scale : f32
  %block = constant 256 : i32
  %start = mul %pid, %block : i32
  %start2 = add %start, %gz : i32
  %starts = splat %start2 : tensor<256xi32, #L>
  %range = arange {start = 0, end = 256} : tensor<256xi32, #L>
  %offs = add %starts, %range : tensor<256xi32, #L>
  %as = splat %a : tensor<256xptr<f32>, #L>
  %ap = addptr %as, %offs : tensor<256xptr<f32>, #L>
  %av = load {vec = 2} %ap : tensor<256xf32, #L>
  %bs = splat %b : tensor<256xptr<f32>, #L>
  %bp = addptr %bs, %offs : tensor<256xptr<f32>, #L>
  %bv = load {vec = 2} %bp : tensor<256xf32, #L>
  %d = div %av, %bv : tensor<256xf32, #L>
  %r = rem %av, %bv : tensor<256xf32, #L>
  %lo = min %d, %r : tensor<256xf32, #L>
  %hi = max %d, %r : tensor<256xf32, #L>
  %diff = sub %hi, %lo : tensor<256xf32, #L>
  %neg = neg %diff : tensor<256xf32, #L>
  %ss = splat %s1 : tensor<256xf32, #L>
  %scaled = mul %neg, %ss : tensor<256xf32, #L>
  %c = cmp ne %scaled, %av : tensor<256xi1, #L>
  %c2 = cmp ge %scaled, %bv : tensor<256xi1, #L>
  %c3 = cmp eq %scaled, %bv : tensor<256xi1, #L>
  %c4 = cmp gt %scaled, %av : tensor<256xi1, #L>
  %c5 = cmp le %scaled, %av : tensor<256xi1, #L>
  %m = and %c, %c2 : tensor<256xi1, #L>
  %m2 = or %c3, %c4 : tensor<256xi1, #L>
  %m3 = xor %m, %m2 : tensor<256xi1, #L>
  %m4 = and %m3, %c5 : tensor<256xi1, #L>
  %fm = mul %av, %bv : tensor<256xf32, #L>
  %fa = add %fm, %d : tensor<256xf32, #L>
  %res = select %m4, %scaled, %fa : tensor<256xf32, #L>
  %os = splat %out : tensor<256xptr<f32>, #L>
  %op = addptr %os, %offs : tensor<256xptr<f32>, #L>
  store {vec = 2} %op, %res, %m4
  %last = constant 7 : i32
  %lp = addptr %out, %last : ptr<f32>
  %t = constant 1 : i1
  store %lp, %s1, %t
  return
}"
        .replace("#L", SPT2),
        &[
            "%ctaid.y",
            "%nctaid.z",
            // Unaligned pointers: the vec = 2 loads still use 8-byte accesses, as the IR promises.
            "#2 ld.global.v2.f32",
            "#1 st.global.v2.b32",
            "div.rn.f32",
            "min.f32",
            "max.f32",
            "neg.f32",
            "setp.neu.f32",
            // `contract` on fmul and fadd: a * b + d becomes one fma.
            "fma.rn.f32",
            // The scalar store's mask is the constant `true`: a plain store.
            "st.global.f32",
            "llvm:fdiv float",
            "llvm:!fdiv fast",
        ],
    );
}

/// `uint_to_uniform_float(w) > p` as the front end builds it from `rand` (fold, convert, scale by
/// `2^-31 · (1 − 2^-24)`), stored as a mask, against `p` twice: uniform (a splat of the scalar
/// parameter; the back end compares the word with an integer threshold, no conversion), and per
/// element (a loaded tensor; the float compare stays).
fn uniform_above(name: &str, uniform: bool) -> String {
    let (p_param, p_val) = if uniform {
        ("%p: f32", "%ps = splat %p : tensor<256xf32, #L>")
    } else {
        (
            "%p: ptr<f32> {divisibility = 16}",
            "%pp = splat %p : tensor<256xptr<f32>, #L>\n  %pa = addptr %pp, %range : tensor<256xptr<f32>, #L>\n  %ps = load %pa : tensor<256xf32, #L>",
        )
    };
    format!(
        "kernel @{name}(%w: ptr<i32> {{divisibility = 16}}, %out: ptr<i1> {{divisibility = 16}}, {p_param}) attributes {{num_warps = 4}} {{
  %range = arange {{start = 0, end = 256}} : tensor<256xi32, #L>
  %ws = splat %w : tensor<256xptr<i32>, #L>
  %wp = addptr %ws, %range : tensor<256xptr<i32>, #L>
  %x = load %wp : tensor<256xi32, #L>
  %zero = constant 0 : i32
  %zeros = splat %zero : tensor<256xi32, #L>
  %ones = constant -1 : i32
  %onesv = splat %ones : tensor<256xi32, #L>
  %neg = cmp lt %x, %zeros : tensor<256xi1, #L>
  %flip = xor %x, %onesv : tensor<256xi32, #L>
  %y = select %neg, %flip, %x : tensor<256xi32, #L>
  %f = cast %y : tensor<256xf32, #L>
  %c = constant 4.6566125955216364e-10 : f32
  %cs = splat %c : tensor<256xf32, #L>
  %u = mul %f, %cs : tensor<256xf32, #L>
  {p_val}
  %keep = cmp gt %u, %ps : tensor<256xi1, #L>
  %os = splat %out : tensor<256xptr<i1>, #L>
  %op = addptr %os, %range : tensor<256xptr<i1>, #L>
  store %op, %keep
  return
}}"
    )
    .replace("#L", SPT2)
}

#[test]
fn rand_above_uniform_p_is_an_integer_compare() {
    check(
        &uniform_above("above_uniform", true),
        &["!cvt.rn.f32.s32", "!setp.gt.f32", "setp.lt.u32"],
    );
    check(
        &uniform_above("above_per_element", false),
        &["cvt.rn.f32.s32", "setp.gt.f32", "!setp.lt.u32"],
    );
}

#[test]
fn i64_load_store() {
    check(
        &"kernel @i64_ops(%a: ptr<i64> {divisibility = 16}, %out: ptr<i64> {divisibility = 16}, %n: i64, %k: i64) attributes {num_warps = 4} {
  %pid = program_id {axis = 0} : i32
  %block = constant 1024 : i32
  %start = mul %pid, %block : i32
  %starts = splat %start : tensor<1024xi32, #L>
  %range = arange {start = 0, end = 1024} : tensor<1024xi32, #L>
  %offs32 = add %starts, %range : tensor<1024xi32, #L>
  %as = splat %a : tensor<1024xptr<i64>, #L>
  %ap = addptr %as, %offs32 : tensor<1024xptr<i64>, #L>
  %ns = splat %n : tensor<1024xi64, #L>
  %ks = splat %k : tensor<1024xi64, #L>
  %av0 = load {vec = 4} %ap : tensor<1024xi64, #L>
  %mask = cmp lt %av0, %ns : tensor<1024xi1, #L>
  %av = load {vec = 4} %ap, %mask, %ks : tensor<1024xi64, #L>
  %q = div %av, %ks : tensor<1024xi64, #L>
  %r = rem %av, %ks : tensor<1024xi64, #L>
  %s = mul %q, %r : tensor<1024xi64, #L>
  %t = max %s, %av0 : tensor<1024xi64, #L>
  %os = splat %out : tensor<1024xptr<i64>, #L>
  %op = addptr %os, %offs32 : tensor<1024xptr<i64>, #L>
  store {vec = 4} %op, %t, %mask
  return
}"
        .replace("#L", SPT4),
        &[
            // vec = 4 of 8-byte elements is split into 16-byte accesses.
            "#4 ld.global.v2.u64",
            "#4 ld.global.v2.b64",
            "#4 st.global.v2.b64",
            "div.s64",
            "max.s64",
        ],
    );
}

#[test]
fn i1_load_store() {
    check(
        &"kernel @bool_ops(%a: ptr<i1>, %b: ptr<i1>, %out: ptr<i1>, %n: i32, %flag: i1) attributes {num_warps = 2} {
  %pid = program_id {axis = 0} : i32
  %block = constant 256 : i32
  %start = mul %pid, %block : i32
  %starts = splat %start : tensor<256xi32, #L>
  %range = arange {start = 0, end = 256} : tensor<256xi32, #L>
  %offs = add %starts, %range : tensor<256xi32, #L>
  %ns = splat %n : tensor<256xi32, #L>
  %mask = cmp lt %offs, %ns : tensor<256xi1, #L>
  %f = constant 0 : i1
  %fs = splat %f : tensor<256xi1, #L>
  %as = splat %a : tensor<256xptr<i1>, #L>
  %ap = addptr %as, %offs : tensor<256xptr<i1>, #L>
  %av = load {vec = 2} %ap, %mask, %fs : tensor<256xi1, #L>
  %bs = splat %b : tensor<256xptr<i1>, #L>
  %bp = addptr %bs, %offs : tensor<256xptr<i1>, #L>
  %bv = load %bp : tensor<256xi1, #L>
  %flags = splat %flag : tensor<256xi1, #L>
  %x = xor %av, %bv : tensor<256xi1, #L>
  %y = or %x, %flags : tensor<256xi1, #L>
  %z = not %y : tensor<256xi1, #L>
  %lt = cmp lt %av, %z : tensor<256xi1, #L>
  %os = splat %out : tensor<256xptr<i1>, #L>
  %op = addptr %os, %offs : tensor<256xptr<i1>, #L>
  store {vec = 2} %op, %lt, %mask
  %op2 = addptr %op, %ns : tensor<256xptr<i1>, #L>
  store %op2, %z
  return
}"
        .replace("#L", "#blocked<spt = [2], tpw = [32], wpc = [2], order = [0]>"),
        &["#8 ld.global.u8", "#8 st.global.u8", "!.v2."],
    );
}

#[test]
fn tensor_smaller_than_layout_tile() {
    // 64 elements under a 512-element tile: threads hold wrapped copies; stores are duplicated.
    check(
        &"kernel @small(%x: ptr<f32> {divisibility = 16}, %out: ptr<f32> {divisibility = 16}) attributes {num_warps = 4} {
  %range = arange {start = 0, end = 64} : tensor<64xi32, #L>
  %xs = splat %x : tensor<64xptr<f32>, #L>
  %xp = addptr %xs, %range : tensor<64xptr<f32>, #L>
  %xv = load {vec = 4} %xp : tensor<64xf32, #L>
  %y = add %xv, %xv : tensor<64xf32, #L>
  %os = splat %out : tensor<64xptr<f32>, #L>
  %op = addptr %os, %range : tensor<64xptr<f32>, #L>
  store {vec = 4} %op, %y
  return
}"
        .replace("#L", SPT4),
        &["#1 ld.global.v4.f32", "#1 st.global.v4.f32", "and.b32"],
    );
    // Fewer elements than one thread's chunk: the access narrows to the tensor's extent.
    check(
        &"kernel @tiny(%x: ptr<f32> {divisibility = 16}) attributes {num_warps = 1} {
  %range = arange {start = 0, end = 2} : tensor<2xi32, #L>
  %xs = splat %x : tensor<2xptr<f32>, #L>
  %xp = addptr %xs, %range : tensor<2xptr<f32>, #L>
  %xv = load {vec = 4} %xp : tensor<2xf32, #L>
  store {vec = 4} %xp, %xv
  return
}"
        .replace(
            "#L",
            "#blocked<spt = [4], tpw = [32], wpc = [1], order = [0]>",
        ),
        &["!.v4.", ".maxntid 32, 1, 1"],
    );
}

#[test]
fn rank2_elementwise() {
    // Rank-2 tensors (from splat; there is no rank-2 `arange` yet): 16x64 under a 16x32 layout
    // tile, so each thread holds 2 repetitions of 4 elements; every slot stores to `p + 4`.
    check(
        &"kernel @fill2d(%p: ptr<f32> {divisibility = 16}, %v: f32, %n: i32) attributes {num_warps = 4} {
  %ps = splat %p : tensor<16x64xptr<f32>, #L>
  %c = constant 4 : i32
  %cs = splat %c : tensor<16x64xi32, #L>
  %q = addptr %ps, %cs : tensor<16x64xptr<f32>, #L>
  %vs = splat %v : tensor<16x64xf32, #L>
  %ns = splat %n : tensor<16x64xi32, #L>
  %m = cmp gt %ns, %cs : tensor<16x64xi1, #L>
  store %q, %vs, %m
  return
}"
        .replace("#L", "#blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>"),
        &["#8 st.global.b32"],
    );
}

/// 8 elements per thread, 4 warps: a 1024-element layout tile (16 bytes of f16 per chunk).
const SPT8: &str = "#blocked<spt = [8], tpw = [32], wpc = [4], order = [0]>";

/// `out[i] = T(f(f32(x[i])) + f32(y[i]))` over 1024 elements of `T` (`f16` or `bf16`): `x` masked,
/// `y` unmasked, both with `vec = 8`.
fn half_kernel(name: &str, t: &str, f: &str) -> String {
    format!(
        "kernel @{name}(%x: ptr<{t}> {{divisibility = 16}}, %y: ptr<{t}> {{divisibility = 16}}, %out: ptr<{t}> {{divisibility = 16}}, %n: i32) attributes {{num_warps = 4}} {{
  %pid = program_id {{axis = 0}} : i32
  %block = constant 1024 : i32
  %start = mul %pid, %block : i32
  %starts = splat %start : tensor<1024xi32, #L>
  %range = arange {{start = 0, end = 1024}} : tensor<1024xi32, #L>
  %offs = add %starts, %range : tensor<1024xi32, #L>
  %ns = splat %n : tensor<1024xi32, #L>
  %mask = cmp lt %offs, %ns : tensor<1024xi1, #L>
  %zero = constant 0.0 : {t}
  %other = splat %zero : tensor<1024x{t}, #L>
  %xs = splat %x : tensor<1024xptr<{t}>, #L>
  %xp = addptr %xs, %offs : tensor<1024xptr<{t}>, #L>
  %xv = load {{vec = 8}} %xp, %mask, %other : tensor<1024x{t}, #L>
  %ys = splat %y : tensor<1024xptr<{t}>, #L>
  %yp = addptr %ys, %offs : tensor<1024xptr<{t}>, #L>
  %yv = load {{vec = 8}} %yp : tensor<1024x{t}, #L>
  %xf = cast %xv : tensor<1024xf32, #L>
  %yf = cast %yv : tensor<1024xf32, #L>
  %e = {f} %xf : tensor<1024xf32, #L>
  %s = add %e, %yf : tensor<1024xf32, #L>
  %r = cast %s : tensor<1024x{t}, #L>
  %os = splat %out : tensor<1024xptr<{t}>, #L>
  %op = addptr %os, %offs : tensor<1024xptr<{t}>, #L>
  store {{vec = 8}} %op, %r, %mask
  %op2 = addptr %op, %ns : tensor<1024xptr<{t}>, #L>
  store {{vec = 8}} %op2, %r
  return
}}"
    )
    .replace("#L", SPT8)
}

#[test]
fn f16_load_math_store_vec8() {
    check(
        &half_kernel("f16_exp", "f16", "exp"),
        &[
            // 8 halves per thread: one 16-byte access per tensor, in 32-bit words.
            "#1 ld.global.v4.b32",
            "#1 st.global.v4.b32",
            "#1 ld.global.v4.u32",
            "#1 st.global.v4.u32",
            // Narrowing in pairs: one `cvt.rn.f16x2.f32` per two results.
            "#4 cvt.rn.f16x2.f32",
            "!cvt.rn.f16.f32",
            "#16 cvt.f32.f16",
            // `exp` flushes its subnormal results (which f16 cannot hold anyway).
            "#8 ex2.approx.ftz.f32",
            "!ld.global.b16",
            "!st.global.b16",
        ],
    );
}

#[test]
fn bf16_load_math_store_vec8() {
    check(
        &half_kernel("bf16_sigmoid", "bf16", "sigmoid"),
        &[
            "#1 ld.global.v4.b32",
            "#1 st.global.v4.b32",
            "#4 cvt.rn.bf16x2.f32",
            "!cvt.rn.bf16.f32",
            // Widening is a shift (the low element) or a mask (the high one), never a conversion.
            "!cvt.f32.bf16",
            "and.b32",
            // sigmoid's 1 / (1 + e^-x): the flushing approximations (one MUFU instruction each),
            // no IEEE reciprocal.
            "#8 ex2.approx.ftz.f32",
            "#8 rcp.approx.ftz.f32",
            "!rcp.rn",
            "!ld.global.b16",
            "!st.global.b16",
        ],
    );
}

#[test]
fn f16_narrow_accesses() {
    // vec = 2 (one b32 word) and vec = 1 (b16), masked and not; a scalar f16 load and store;
    // select, cmp and neg on halves; f16 and bf16 constants.
    check(
        &"kernel @f16_narrow(%x: ptr<f16> {divisibility = 16}, %b: ptr<bf16> {divisibility = 16}, %n: i32) attributes {num_warps = 4} {
  %range = arange {start = 0, end = 256} : tensor<256xi32, #L>
  %ns = splat %n : tensor<256xi32, #L>
  %mask = cmp lt %range, %ns : tensor<256xi1, #L>
  %c = constant 1.5 : f16
  %cs = splat %c : tensor<256xf16, #L>
  %xs = splat %x : tensor<256xptr<f16>, #L>
  %xp = addptr %xs, %range : tensor<256xptr<f16>, #L>
  %v2 = load {vec = 2} %xp, %mask, %cs : tensor<256xf16, #L>
  %v1 = load %xp, %mask, %cs : tensor<256xf16, #L>
  %u2 = load {vec = 2} %xp : tensor<256xf16, #L>
  %gt = cmp gt %v2, %v1 : tensor<256xi1, #L>
  %neg = neg %v1 : tensor<256xf16, #L>
  %sel = select %gt, %u2, %neg : tensor<256xf16, #L>
  store {vec = 2} %xp, %sel, %mask
  store %xp, %sel, %gt
  store {vec = 2} %xp, %v2
  %s = load %x : f16
  %last = constant 300 : i32
  %sp = addptr %x, %last : ptr<f16>
  store %sp, %s
  %bc = constant -2.25 : bf16
  %bcs = splat %bc : tensor<256xbf16, #L>
  %bs = splat %b : tensor<256xptr<bf16>, #L>
  %bp = addptr %bs, %range : tensor<256xptr<bf16>, #L>
  %bv = load %bp, %mask, %bcs : tensor<256xbf16, #L>
  %bn = neg %bv : tensor<256xbf16, #L>
  %bl = cmp le %bn, %bv : tensor<256xi1, #L>
  %bsel = select %bl, %bn, %bcs : tensor<256xbf16, #L>
  store %bp, %bsel, %mask
  return
}"
        .replace("#L", SPT2),
        &[
            // vec = 2: one 32-bit word; vec = 1: 16 bits.
            "@%p1 ld.global.b32",
            "@%p1 st.global.b32",
            "ld.global.b16",
            "st.global.b16",
            // The scalar load and store.
            "ld.global.u16",
            "st.global.u16",
            "!.v2.",
            "!.v4.",
        ],
    );
}

/// `out = gₙ(… g₁(x[, y, z]) …[, y, z])` over 512 `f32` elements for `fns` (name, arity).
fn math_kernel(name: &str, fns: &[(&str, usize)]) -> String {
    let mut body = String::new();
    for (i, (f, arity)) in fns.iter().enumerate() {
        // Each function takes the previous result, so that LLVM cannot share work between them.
        let prev = if i == 0 {
            "%xv".to_string()
        } else {
            format!("%r{}", i - 1)
        };
        let args = [prev.as_str(), "%yv", "%zv"][..*arity].join(", ");
        body.push_str(&format!("  %r{i} = {f} {args} : tensor<512xf32, #L>\n"));
    }
    let last = fns.len() - 1;
    format!(
        "kernel @{name}(%x: ptr<f32> {{divisibility = 16}}, %y: ptr<f32> {{divisibility = 16}}, %z: ptr<f32> {{divisibility = 16}}, %out: ptr<f32> {{divisibility = 16}}) attributes {{num_warps = 4}} {{
  %range = arange {{start = 0, end = 512}} : tensor<512xi32, #L>
  %xs = splat %x : tensor<512xptr<f32>, #L>
  %xp = addptr %xs, %range : tensor<512xptr<f32>, #L>
  %xv = load {{vec = 4}} %xp : tensor<512xf32, #L>
  %ys = splat %y : tensor<512xptr<f32>, #L>
  %yp = addptr %ys, %range : tensor<512xptr<f32>, #L>
  %yv = load {{vec = 4}} %yp : tensor<512xf32, #L>
  %zs = splat %z : tensor<512xptr<f32>, #L>
  %zp = addptr %zs, %range : tensor<512xptr<f32>, #L>
  %zv = load {{vec = 4}} %zp : tensor<512xf32, #L>
{body}  %os = splat %out : tensor<512xptr<f32>, #L>
  %op = addptr %os, %range : tensor<512xptr<f32>, #L>
  store {{vec = 4}} %op, %r{last}
  return
}}"
    )
    .replace("#L", SPT4)
}

#[test]
fn math_exp_log_pow() {
    check(
        &math_kernel(
            "math_exp_log",
            &[("exp", 1), ("exp2", 1), ("log", 1), ("log2", 1), ("pow", 2)],
        ),
        &[
            // exp, exp2 and pow: one ex2 each per element (4 per thread); log, log2 and pow: lg2.
            // exp and exp2 flush subnormal results, pow does not; log's series near 1 takes one
            // reciprocal of x + 1 (in [1.7, 2.3]: flushing subnormals cannot matter there).
            "#8 ex2.approx.ftz.f32",
            "#4 ex2.approx.f32",
            "#12 lg2.approx.f32",
            "#4 rcp.approx.ftz.f32",
            "!lg2.approx.ftz",
            "!ex2.approx.f32.f32",
        ],
    );
}

#[test]
fn math_fast_is_tritons() {
    // `math = fast`: `/` is `div.full.f32`, `exp` one multiply and `ex2.approx.ftz`, `sqrt`
    // `sqrt.approx.ftz`, as Triton emits them; the other functions keep their forms.
    let ir = math_kernel(
        "math_fast",
        &[("exp", 1), ("sqrt", 1), ("div", 2), ("log2", 1)],
    )
    .replace("{num_warps = 4}", "{num_warps = 4, math = fast}");
    check(
        &ir,
        &[
            "#4 ex2.approx.ftz.f32",
            "#4 sqrt.approx.ftz.f32",
            "#4 div.full.f32",
            "#4 lg2.approx.f32",
            "!div.rn",
            "!sqrt.rn",
            "!rcp",
            // The uncompensated exponential: no residual, no correction.
            "!fma.rn",
            "!min.f32",
        ],
    );
    // Printed and parsed back.
    let f = tile_core::ir::parse(&ir).unwrap();
    assert!(f.fast_math);
    assert!(tile_core::ir::print(&f).contains("math = fast"));
}

#[test]
fn math_roots_rounding_fma() {
    check(
        &math_kernel(
            "math_misc",
            &[
                // Not ceil(floor(x)): LLVM knows that is floor(x).
                ("floor", 1),
                ("rsqrt", 1),
                ("ceil", 1),
                ("sqrt", 1),
                ("abs", 1),
                ("fma", 3),
            ],
        ),
        &[
            "#4 sqrt.rn.f32",
            "#4 rsqrt.approx.f32",
            "#4 cvt.rmi.f32.f32",
            "#4 cvt.rpi.f32.f32",
            "#4 abs.f32",
            "#4 fma.rn.f32",
            "!\tsqrt.approx",
        ],
    );
}

#[test]
fn math_tanh_erf_sigmoid() {
    check(
        &math_kernel("math_special", &[("tanh", 1), ("erf", 1), ("sigmoid", 1)]),
        &[
            // 4 elements per thread: tanh and sigmoid take one ex2 and one rcp each, erf one ex2;
            // all of them the flushing approximations (subnormals cannot change these results).
            "#12 ex2.approx.ftz.f32",
            "#8 rcp.approx.ftz.f32",
            "!ex2.approx.f32",
            // No IEEE division or reciprocal.
            "!div.rn",
            "!rcp.rn",
            "fma.rn.f32",
            "!tanh.approx",
            // tanh and erf apply the sign of x with PTX's copysign (one LOP3 in SASS).
            "#8 copysign.f32",
            "llvm:!@llvm.copysign",
        ],
    );
}

#[test]
fn math_gelu() {
    check(
        &math_kernel("math_gelu", &[("gelu", 1)]),
        &[
            // 4 elements per thread: one flushing ex2 each, six FMAs of the polynomial and the
            // final one, the clamp of |x| and max(x, 0) propagating NaN.
            "#4 ex2.approx.ftz.f32",
            "#28 fma.rn.f32",
            "#4 max.NaN.f32",
            "#4 min.f32",
            "!div.rn",
            "!rcp",
        ],
    );
}

/// `out[i] = f(x[i])` over 128 `f32` elements, one per thread.
fn one_math_kernel(f: &str) -> String {
    format!(
        "kernel @one_{f}(%x: ptr<f32> {{divisibility = 16}}, %out: ptr<f32> {{divisibility = 16}}) attributes {{num_warps = 4}} {{
  %range = arange {{start = 0, end = 128}} : tensor<128xi32, #L>
  %xs = splat %x : tensor<128xptr<f32>, #L>
  %xp = addptr %xs, %range : tensor<128xptr<f32>, #L>
  %xv = load %xp : tensor<128xf32, #L>
  %r = {f} %xv : tensor<128xf32, #L>
  %os = splat %out : tensor<128xptr<f32>, #L>
  %op = addptr %os, %range : tensor<128xptr<f32>, #L>
  store %op, %r
  return
}}"
    )
    .replace("#L", SPT1)
}

/// The PTX instructions strictly between the (only) global load and the (only) global store:
/// lines ending in `;` that are not directives.
fn instructions_between_load_and_store(ptx: &str) -> Vec<String> {
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    let ld = lines
        .iter()
        .position(|l| l.starts_with("ld.global"))
        .expect("a global load");
    let st = lines
        .iter()
        .rposition(|l| l.starts_with("st.global"))
        .expect("a global store");
    lines[ld + 1..st]
        .iter()
        .filter(|l| l.ends_with(';') && !l.starts_with('.') && !l.starts_with("//"))
        .map(|l| l.to_string())
        .collect()
}

/// The cost of one element of each composite math function in PTX instructions between the load
/// and the store, less the store's address arithmetic (measured on `abs`, one `abs.f32`), with
/// upper bounds that keep them from growing back. Before the rewrite of tanh, erf and sigmoid
/// around the flushing approximations (`ex2.approx.ftz`, `rcp.approx.ftz`) these were exp 11,
/// tanh 31, erf 39, sigmoid 14. `gelu`'s 12 include an `abs.f32` and a `neg.f32` that become
/// operand modifiers in SASS.
#[test]
fn math_instruction_counts() {
    let count = |f: &str, target: Target| {
        let ir = one_math_kernel(f);
        let func = tile_core::ir::parse(&ir).unwrap_or_else(|e| panic!("parse error {e}\n{ir}"));
        let ptx = compile(&func, target).unwrap_or_else(|e| panic!("{e}")).ptx;
        dump(&func.name, target, &ptx, "");
        assemble(&format!("{f} on {target}"), target, &ptx);
        instructions_between_load_and_store(&ptx)
    };
    for target in Target::ALL {
        let abs = count("abs", target);
        assert_eq!(
            abs.iter().filter(|i| i.starts_with("abs.f32")).count(),
            1,
            "{abs:?}"
        );
        let overhead = abs.len() - 1;
        for (f, bound) in [
            ("exp", 9),
            ("tanh", 14),
            ("erf", 17),
            ("sigmoid", 9),
            ("gelu", 12),
        ] {
            let ins = count(f, target);
            let n = ins.len() - overhead;
            println!("{f} on {target}: {n} PTX instructions per element");
            for i in &ins {
                println!("    {i}");
            }
            assert!(
                n <= bound,
                "{f} on {target}: {n} instructions, expected at most {bound}:\n{}",
                ins.join("\n")
            );
        }
    }
}

#[test]
fn math_int_abs() {
    check(
        &"kernel @int_abs(%a: ptr<i32> {divisibility = 16}, %b: ptr<i64> {divisibility = 16}) attributes {num_warps = 4} {
  %range = arange {start = 0, end = 512} : tensor<512xi32, #L>
  %as = splat %a : tensor<512xptr<i32>, #L>
  %ap = addptr %as, %range : tensor<512xptr<i32>, #L>
  %av = load {vec = 4} %ap : tensor<512xi32, #L>
  %aa = abs %av : tensor<512xi32, #L>
  store {vec = 4} %ap, %aa
  %bs = splat %b : tensor<512xptr<i64>, #L>
  %bp = addptr %bs, %range : tensor<512xptr<i64>, #L>
  %bv = load {vec = 4} %bp : tensor<512xi64, #L>
  %ba = abs %bv : tensor<512xi64, #L>
  store {vec = 4} %bp, %ba
  return
}"
        .replace("#L", SPT4),
        &[
            "#4 abs.s32",
            "#4 abs.s64",
            // Wrapping: |MIN| = MIN, no poison flag.
            "llvm:@llvm.abs.i32(i32 %",
            "llvm:, i1 false)",
        ],
    );
}

#[test]
fn scalar_math_and_casts() {
    // Math and casts of scalars (one value per thread), as after a reduction.
    check(
        "kernel @scalar_ops(%v: f32, %h: ptr<f16>, %l: ptr<i64>, %i: i32) attributes {num_warps = 1} {
  %e = exp %v : f32
  %t = tanh %e : f32
  %hv = cast %t : f16
  store %h, %hv
  %c = cast %i : f32
  %p = pow %t, %c : f32
  %q = cast %p : i64
  store %l, %q
  return
}",
        &[
            "st.global.b16",
            "cvt.rn.f16.f32",
            "cvt.rn.f32.s32",
            "cvt.rzi.s64.f32",
            "lg2.approx.f32",
            "!tanh.approx",
        ],
    );
}

#[test]
fn casts() {
    check(
        &"kernel @casts(%f: ptr<f32> {divisibility = 16}, %i: ptr<i32> {divisibility = 16}, %l: ptr<i64> {divisibility = 16}, %h: ptr<f16> {divisibility = 16}, %b: ptr<bf16> {divisibility = 16}, %m: ptr<i1> {divisibility = 16}) attributes {num_warps = 4} {
  %range = arange {start = 0, end = 512} : tensor<512xi32, #L>
  %fs = splat %f : tensor<512xptr<f32>, #L>
  %fp = addptr %fs, %range : tensor<512xptr<f32>, #L>
  %fv = load {vec = 4} %fp : tensor<512xf32, #L>
  %is = splat %i : tensor<512xptr<i32>, #L>
  %ip = addptr %is, %range : tensor<512xptr<i32>, #L>
  %iv = load {vec = 4} %ip : tensor<512xi32, #L>
  %ls = splat %l : tensor<512xptr<i64>, #L>
  %lp = addptr %ls, %range : tensor<512xptr<i64>, #L>
  %lv = load {vec = 4} %lp : tensor<512xi64, #L>
  %hs = splat %h : tensor<512xptr<f16>, #L>
  %hp = addptr %hs, %range : tensor<512xptr<f16>, #L>
  %hv = load {vec = 4} %hp : tensor<512xf16, #L>
  %bs = splat %b : tensor<512xptr<bf16>, #L>
  %bp = addptr %bs, %range : tensor<512xptr<bf16>, #L>
  %bv = load {vec = 4} %bp : tensor<512xbf16, #L>
  %ms = splat %m : tensor<512xptr<i1>, #L>
  %mp = addptr %ms, %range : tensor<512xptr<i1>, #L>
  %mv = load %mp : tensor<512xi1, #L>
  %f2i = cast %fv : tensor<512xi32, #L>
  %f2l = cast %fv : tensor<512xi64, #L>
  %i2f = cast %iv : tensor<512xf32, #L>
  %l2f = cast %lv : tensor<512xf32, #L>
  %i2l = cast %iv : tensor<512xi64, #L>
  %l2i = cast %lv : tensor<512xi32, #L>
  %m2i = cast %mv : tensor<512xi32, #L>
  %m2f = cast %mv : tensor<512xf32, #L>
  %f2m = cast %fv : tensor<512xi1, #L>
  %i2m = cast %iv : tensor<512xi1, #L>
  %h2b = cast %hv : tensor<512xbf16, #L>
  %b2h = cast %bv : tensor<512xf16, #L>
  %i2h = cast %iv : tensor<512xf16, #L>
  %h2i = cast %hv : tensor<512xi32, #L>
  %b2l = cast %bv : tensor<512xi64, #L>
  %m2h = cast %mv : tensor<512xf16, #L>
  %h2m = cast %hv : tensor<512xi1, #L>
  %same = cast %fv : tensor<512xf32, #L>
  %a1 = add %f2i, %l2i : tensor<512xi32, #L>
  %a2 = add %a1, %m2i : tensor<512xi32, #L>
  %a3 = add %a2, %h2i : tensor<512xi32, #L>
  store {vec = 4} %ip, %a3
  %s1 = add %f2l, %i2l : tensor<512xi64, #L>
  %s2 = add %s1, %b2l : tensor<512xi64, #L>
  store {vec = 4} %lp, %s2
  %g1 = add %i2f, %l2f : tensor<512xf32, #L>
  %g2 = add %g1, %m2f : tensor<512xf32, #L>
  %g3 = add %g2, %same : tensor<512xf32, #L>
  store {vec = 4} %fp, %g3
  %x1 = xor %f2m, %i2m : tensor<512xi1, #L>
  %x2 = xor %x1, %h2m : tensor<512xi1, #L>
  store %mp, %x2
  %hz = select %x2, %b2h, %i2h : tensor<512xf16, #L>
  %hw = select %mv, %hz, %m2h : tensor<512xf16, #L>
  store {vec = 4} %hp, %hw
  store {vec = 4} %bp, %h2b
  return
}"
        .replace("#L", SPT4),
        &[
            // f32 → i32/i64: truncating, saturating, NaN → 0.
            "cvt.rzi.s32.f32",
            "cvt.rzi.s64.f32",
            "llvm:@llvm.fptosi.sat.i32.f32",
            "llvm:@llvm.fptosi.sat.i64.f32",
            "cvt.rn.f32.s32",
            "cvt.rn.f32.s64",
            "cvt.s64.s32",
            "setp.neu.f32",
            "cvt.rn.f16.f32",
            "cvt.rn.bf16.f32",
            "cvt.f32.f16",
            "llvm:fptrunc float %",
            "llvm:to bfloat",
        ],
    );
}

/// `out[k] = reduce {kind} x` for each of `kinds`, over `n` elements of `t` under `layout`.
fn reduce_kernel(name: &str, t: &str, n: u32, warps: u32, layout: &str, kinds: &[&str]) -> String {
    let mut body = String::new();
    for (k, kind) in kinds.iter().enumerate() {
        body.push_str(&format!(
            "  %r{k} = reduce {kind} {{axis = 0}} %xv : {t}\n  %c{k} = constant {k} : i32\n  %o{k} = addptr %out, %c{k} : ptr<{t}>\n  store %o{k}, %r{k}\n"
        ));
    }
    format!(
        "kernel @{name}(%x: ptr<{t}> {{divisibility = 16}}, %out: ptr<{t}>, %len: i32) attributes {{num_warps = {warps}}} {{
  %range = arange {{start = 0, end = {n}}} : tensor<{n}xi32, #L>
  %lens = splat %len : tensor<{n}xi32, #L>
  %mask = cmp lt %range, %lens : tensor<{n}xi1, #L>
  %zero = constant 0 : {t}
  %zeros = splat %zero : tensor<{n}x{t}, #L>
  %xs = splat %x : tensor<{n}xptr<{t}>, #L>
  %xp = addptr %xs, %range : tensor<{n}xptr<{t}>, #L>
  %xv = load {{vec = 4}} %xp, %mask, %zeros : tensor<{n}x{t}, #L>
{body}  return
}}"
    )
    .replace("#L", layout)
    .replace("constant 0 : f32", "constant 0.0 : f32")
}

#[test]
fn reduce_f32_1024_four_warps() {
    check(
        &reduce_kernel("reduce_f32", "f32", 1024, 4, SPT4, &["sum", "max", "min"]),
        &[
            // Three reductions: 5 butterfly steps each; their shared arrays are laid over one
            // another (one 16-byte array: 4 warps' partials), so each one's writes wait for the
            // previous one's reads: one barrier inside each, one before the second and third.
            "#15 shfl.sync.bfly.b32",
            "#5 bar.sync",
            "#1 .shared .align 16 .b8 __tile_smem[16];",
            "ld.shared.v4.f32",
            "add.rn.f32",
            "max.f32",
            "min.f32",
            // Every element is counted: no thread-dependent identity select.
            "!selp",
            "llvm:addrspace(3) global [16 x i8] undef",
        ],
    );
}

#[test]
fn reduce_f32_64_replicated() {
    // 64 elements under a 512-element layout tile: lanes 0..16 hold the elements, lane bit 4 and
    // both warp bits select nothing (copies), so the butterfly crosses 4 lane bits and no warp
    // has to meet another: every thread reaches the result on its own.
    check(
        &reduce_kernel("reduce_small", "f32", 64, 4, SPT4, &["sum", "max"]),
        &["#8 shfl.sync.bfly.b32", "!bar.sync", "!selp.f32"],
    );
    // Fewer elements than one thread's chunk: each thread holds all 4 (one chunk of 4 registers);
    // every lane and warp bit is a copy bit.
    check(
        &reduce_kernel(
            "reduce_tiny",
            "f32",
            4,
            2,
            "#blocked<spt = [8], tpw = [32], wpc = [2], order = [0]>",
            &["sum"],
        ),
        &["!shfl.sync.bfly.b32", "!bar.sync", "#3 add.rn.f32"],
    );
}

#[test]
fn reduce_ints() {
    check(
        &reduce_kernel("reduce_i32", "i32", 1024, 4, SPT4, &["sum", "max", "min"]),
        &[
            "#15 shfl.sync.bfly.b32",
            "max.s32",
            "min.s32",
            "ld.shared.v4.u32",
        ],
    );
    check(
        &reduce_kernel("reduce_i64", "i64", 1024, 4, SPT4, &["sum", "min"]),
        &[
            // An i64 crosses lanes as two 32-bit halves.
            "#20 shfl.sync.bfly.b32",
            "#3 bar.sync",
            "add.s64",
            "min.s64",
            "llvm:addrspace(3) global [32 x i8] undef",
        ],
    );
}

#[test]
fn reduce_one_warp() {
    // One warp: the butterfly alone; no shared memory, no barrier.
    check(
        &reduce_kernel(
            "reduce_warp",
            "f32",
            256,
            1,
            "#blocked<spt = [4], tpw = [32], wpc = [1], order = [0]>",
            &["sum"],
        ),
        &["#5 shfl.sync.bfly.b32", "!bar.sync", "!.shared"],
    );
}

#[test]
fn tuple_scan_beside_a_state_needs_no_shared_memory() {
    // `assign-layouts`' output for a recurrence along the rows of a 16 × 128 tile and a 16 × 16
    // state whose row sums are added to it (tests/passes/assign-layouts.tir, last case): the
    // scan runs in registers and across 8 lanes (3 steps of 2 shuffles for the pair, then the
    // prefix of the lane before), the state's row sums cross 8 lanes, and the conversion
    // between the two slices is a renumbering of registers: no barrier, no shared memory.
    check(
        r#"#blocked0 = #blocked<spt = [1, 16], tpw = [4, 8], wpc = [4, 1], order = [0, 1]>
#slice0 = #slice<dim = 1, parent = #blocked0>
#blocked1 = #blocked<spt = [1, 2], tpw = [4, 8], wpc = [4, 1], order = [0, 1]>
#slice1 = #slice<dim = 0, parent = #blocked1>
#slice2 = #slice<dim = 1, parent = #blocked1>
#slice3 = #slice<dim = 0, parent = #blocked0>
kernel @recurrence_beside_state(%x: ptr<f32> {divisibility = 16}, %s: ptr<f32> {divisibility = 16}) attributes {num_warps = 4} {
  %0 = arange {start = 0, end = 16} : tensor<16xi32, #slice0>
  %1 = arange {start = 0, end = 16} : tensor<16xi32, #slice1>
  %2 = arange {start = 0, end = 16} : tensor<16xi32, #slice0>
  %3 = arange {start = 0, end = 16} : tensor<16xi32, #slice2>
  %4 = arange {start = 0, end = 128} : tensor<128xi32, #slice3>
  %5 = arange {start = 0, end = 128} : tensor<128xi32, #slice3>
  %6 = expand_dims {axis = 1} %0 : tensor<16x1xi32, #blocked0>
  %7 = expand_dims {axis = 1} %3 : tensor<16x1xi32, #blocked1>
  %8 = expand_dims {axis = 1} %2 : tensor<16x1xi32, #blocked0>
  %9 = constant 128 : i32
  %10 = splat %9 : tensor<16x1xi32, #blocked0>
  %11 = splat %9 : tensor<16x1xi32, #blocked0>
  %12 = mul %6, %10 : tensor<16x1xi32, #blocked0>
  %13 = mul %8, %11 : tensor<16x1xi32, #blocked0>
  %14 = broadcast %12 : tensor<16x128xi32, #blocked0>
  %15 = broadcast %13 : tensor<16x128xi32, #blocked0>
  %16 = expand_dims {axis = 0} %4 : tensor<1x128xi32, #blocked0>
  %17 = expand_dims {axis = 0} %5 : tensor<1x128xi32, #blocked0>
  %18 = broadcast %16 : tensor<16x128xi32, #blocked0>
  %19 = broadcast %17 : tensor<16x128xi32, #blocked0>
  %20 = add %14, %18 : tensor<16x128xi32, #blocked0>
  %21 = add %15, %19 : tensor<16x128xi32, #blocked0>
  %22 = splat %x : tensor<16x128xptr<f32>, #blocked0>
  %23 = splat %x : tensor<16x128xptr<f32>, #blocked0>
  %24 = addptr %22, %20 : tensor<16x128xptr<f32>, #blocked0>
  %25 = addptr %23, %21 : tensor<16x128xptr<f32>, #blocked0>
  %26 = load %24 : tensor<16x128xf32, #blocked0>
  %27, %28 = associative_scan {axis = 1} %26, %26 : tensor<16x128xf32, #blocked0>, tensor<16x128xf32, #blocked0> {
  ^bb0(%29: f32, %30: f32, %31: f32, %32: f32):
    %33 = mul %29, %31 : f32
    %34 = mul %30, %31 : f32
    %35 = add %34, %32 : f32
    yield %33, %35
  }
  %36 = constant 16 : i32
  %37 = splat %36 : tensor<16x1xi32, #blocked1>
  %38 = mul %7, %37 : tensor<16x1xi32, #blocked1>
  %39 = broadcast %38 : tensor<16x16xi32, #blocked1>
  %40 = expand_dims {axis = 0} %1 : tensor<1x16xi32, #blocked1>
  %41 = broadcast %40 : tensor<16x16xi32, #blocked1>
  %42 = add %39, %41 : tensor<16x16xi32, #blocked1>
  %43 = splat %s : tensor<16x16xptr<f32>, #blocked1>
  %44 = addptr %43, %42 : tensor<16x16xptr<f32>, #blocked1>
  %45 = load %44 : tensor<16x16xf32, #blocked1>
  %46 = reduce sum {axis = 1} %45 : tensor<16xf32, #slice2>
  %47 = convert_layout %46 : tensor<16xf32, #slice0>
  %48 = expand_dims {axis = 1} %47 : tensor<16x1xf32, #blocked0>
  %49 = broadcast %48 : tensor<16x128xf32, #blocked0>
  %50 = add %28, %49 : tensor<16x128xf32, #blocked0>
  store %25, %50
  return
}"#,
        &[
            "#8 shfl.sync.idx.b32",
            "#3 shfl.sync.bfly.b32",
            "!bar.sync",
            "!.shared",
        ],
    );
}

#[test]
fn rejects_what_it_cannot_compile() {
    // Tile-level IR (no layouts).
    check_err(
        "kernel @tile_level(%x: ptr<f32>) attributes {num_warps = 4} {
  %r = arange {start = 0, end = 128} : tensor<128xi32>
  %xs = splat %x : tensor<128xptr<f32>>
  %xp = addptr %xs, %r : tensor<128xptr<f32>>
  %v = load %xp : tensor<128xf32>
  store %xp, %v
  return
}",
        "kernel `tile_level` (sm_90a): lowering: op0 `arange`: `tensor<128xi32>` has no layout; the LLVM back end takes GPU-level IR (run layout assignment first)",
    );
    // A kernel that does not verify is refused, not lowered.
    check_err(
        "kernel @bad(%x: ptr<f32>) attributes {num_warps = 3} {
  return
}",
        "kernel `bad` (sm_90a): the kernel does not verify: kernel: num_warps = 3 is not a power of two from 1 to 32",
    );
    // A reduction along an axis yields the operand's layout sliced at that axis, nothing else.
    check_err(
        "kernel @reduce2d(%v: f32, %out: ptr<f32>) attributes {num_warps = 4} {
  %t = splat %v : tensor<16x64xf32, #blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>>
  %r = reduce sum {axis = 1} %t : tensor<16xf32, #blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>>
  return
}",
        "kernel `reduce2d` (sm_90a): the kernel does not verify: op1 `%1 = reduce sum {axis = 1} %0 : tensor<16xf32, #blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>>`: the result's layout must be the layout of `tensor<16x64xf32, #blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>>` sliced at dimension 1",
    );
    // Half-precision scalars are not kernel parameters (the front end passes f32).
    check_err(
        "kernel @half_param(%v: f16, %out: ptr<f16>) attributes {num_warps = 4} {
  store %out, %v
  return
}",
        "kernel `half_param` (sm_90a): lowering: kernel parameter #0 is a scalar `f16`; pass it as `f32` and cast it",
    );
    // A name the PTX entry could not keep.
    check_err(
        "kernel @add.mul(%x: ptr<f32>) attributes {num_warps = 4} {
  return
}",
        "kernel `add.mul` (sm_90a): kernel name: not a PTX identifier (letters, digits and `_`, not starting with a digit)",
    );
}

/// What a verified GPU-level kernel may still ask beyond the lowering's reach: each error the
/// lowering returns (rather than reporting a bug) is reached here or in `tests/ui`, which has
/// scratch shared memory over the static limit (`roll_shared_memory`) and a kernel over the
/// target's shared memory (`pipeline_shared_too_big`).
#[test]
fn refuses_what_it_does_not_implement() {
    // A vectorized `async_copy` whose threads hold runs down the rows, not along the columns.
    let sh = "#shared<vec = 8, per_phase = 2, max_phase = 4>";
    let mma = "#mma<version = 2, wpc = [2, 2]>";
    check_err(
        &format!(
            "kernel @rows(%a: ptr<f16>) attributes {{num_warps = 4}} {{
  %0 = local_alloc : smem<2x64x32xf16, {sh}>
  %1 = constant 0 : i32
  %2 = splat %a : tensor<64x32xptr<f16>, #blocked<spt = [8, 1], tpw = [4, 8], wpc = [1, 4], order = [0, 1]>>
  async_copy {{vec = 8}} %0, %1, %2
  async_commit
  async_wait {{pending = 0}}
  barrier
  %3 = local_load %0, %1 : tensor<64x32xf16, #dot_op<idx = 0, parent = {mma}, k_width = 2>>
  return
}}"
        ),
        "kernel `rows` (sm_90a): lowering: op3 `async_copy`: `async_copy` of 8 elements needs runs along the columns",
    );
    // A scan along the rows of an mma layout, whose registers split the rows between lanes.
    check_err(
        &format!(
            "kernel @scan_rows(%v: f32) attributes {{num_warps = 4}} {{
  %0 = splat %v : tensor<32x32xf32, {mma}>
  %1 = scan sum {{axis = 0}} %0 : tensor<32x32xf32, {mma}>
  return
}}"
        ),
        "kernel `scan_rows` (sm_90a): lowering: op1 `scan`: a scan's layout must hold its axis in registers, then lanes, then warps",
    );
    // Two reductions laid over the same scratch bytes with no `barrier` between (the
    // `insert-barriers` pass places it; without it the second's writes race the first's reads):
    // refused as an internal error, at the op that needs the barrier.
    let unordered = reduce_kernel("unordered", "f32", 1024, 4, SPT4, &["sum", "max"]);
    check_err(
        &unordered,
        "kernel `unordered` (sm_90a): lowering: op12 `reduce`: internal error: its shared-memory accesses may race an earlier op's with no barrier between (the `insert-barriers` pass places them)",
    );
    let f = tile_core::ir::parse(&unordered).unwrap();
    assert!(compile(&f, Target::Sm90a).unwrap_err().internal);
    // `warp_group_dot` with K not a multiple of the instruction's 16, and with a `B` stage too
    // narrow for a `wgmma` descriptor's swizzle (rows of 16 bytes).
    let wgmma = |k: u32, n: u32| {
        let sa = tile_core::ir::SharedLayout::wgmma(k, 2);
        let sb = tile_core::ir::SharedLayout::wgmma(n, 2);
        let acc = format!("tensor<64x{n}xf32, #mma<version = 3, wpc = [4, 1]>>");
        format!(
            "kernel @wg(%a: ptr<f16>) attributes {{num_warps = 4, target = sm_90a}} {{
  %0 = local_alloc : smem<1x64x{k}xf16, {sa}>
  %1 = local_alloc : smem<1x{k}x{n}xf16, {sb}>
  %2 = constant 0 : i32
  %3 = constant 0.0 : f32
  %4 = splat %3 : {acc}
  fence_async_shared
  %5 = warp_group_dot %0, %2, %1, %2, %4 : {acc}
  %6 = warp_group_wait {{pending = 0}} %5 : {acc}
  return
}}"
        )
    };
    check_err(
        &wgmma(8, 64),
        "kernel `wg` (sm_90a): lowering: op6 `warp_group_dot`: `wgmma` needs whole 64-row warpgroup tiles and K a multiple of 16: 64 × 8 × 64 on #mma<version = 3, wpc = [4, 1]>",
    );
    check_err(
        &wgmma(64, 8),
        "kernel `wg` (sm_90a): lowering: op6 `warp_group_dot`: a `wgmma` operand needs rows of 32, 64 or 128 bytes per swizzle block, not 16 (8 columns)",
    );
}

/// Compiling the same kernel many times in one process gives the same PTX (the proc macro calls
/// the back end for every variant and target).
#[test]
fn repeatable() {
    let f =
        tile_core::ir::parse(&add_mul("add_mul", 4, " {divisibility = 16}").replace("#L", SPT4))
            .expect("parses");
    let first = compile(&f, Target::Sm80).expect("compiles").ptx;
    for _ in 0..3 {
        for t in Target::ALL {
            let a = compile(&f, t).expect("compiles");
            if t == Target::Sm80 {
                assert_eq!(a.ptx, first);
            }
        }
    }
}

/// Reductions of a 2-D tile along each axis. Each thread holds one row's 8 elements (two chunks
/// of 4). Along the rows: 8 lanes hold a row, so 3 butterfly steps for the thread's one row, and no
/// shared memory (the warps split the rows). Down the columns: 4 lanes, so 2 steps for each of the
/// thread's 8 columns, then the 4 warps through a `4 × 64` shared array. The row sums move to the
/// column layout through a `convert_layout` (16 floats of shared memory, laid over the first).
#[test]
fn reduce_2d_along_each_axis() {
    let b = "#blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>";
    let s0 = format!("#slice<dim = 0, parent = {b}>");
    let s1 = format!("#slice<dim = 1, parent = {b}>");
    check(
        &format!(
            "kernel @reduce_axes(%x: ptr<f32> {{divisibility = 16}}, %out: ptr<f32> {{divisibility = 16}}) attributes {{num_warps = 4}} {{
  %r = arange {{start = 0, end = 16}} : tensor<16xi32, {s1}>
  %re = expand_dims {{axis = 1}} %r : tensor<16x1xi32, {b}>
  %c64 = constant 64 : i32
  %s = splat %c64 : tensor<16x1xi32, {b}>
  %ro = mul %re, %s : tensor<16x1xi32, {b}>
  %rb = broadcast %ro : tensor<16x64xi32, {b}>
  %c = arange {{start = 0, end = 64}} : tensor<64xi32, {s0}>
  %ce = expand_dims {{axis = 0}} %c : tensor<1x64xi32, {b}>
  %cb = broadcast %ce : tensor<16x64xi32, {b}>
  %o = add %rb, %cb : tensor<16x64xi32, {b}>
  %xp = splat %x : tensor<16x64xptr<f32>, {b}>
  %p = addptr %xp, %o : tensor<16x64xptr<f32>, {b}>
  %v = load {{vec = 4}} %p : tensor<16x64xf32, {b}>
  %rows = reduce sum {{axis = 1}} %v : tensor<16xf32, {s1}>
  %cols = reduce max {{axis = 0}} %v : tensor<64xf32, {s0}>
  %cp = splat %out : tensor<64xptr<f32>, {s0}>
  %cq = addptr %cp, %c : tensor<64xptr<f32>, {s0}>
  store %cq, %cols
  %rc = convert_layout %rows : tensor<16xf32, {s0}>
  %r0 = arange {{start = 0, end = 16}} : tensor<16xi32, {s0}>
  %rp = splat %out : tensor<16xptr<f32>, {s0}>
  %rq = addptr %rp, %r0 : tensor<16xptr<f32>, {s0}>
  store %rq, %rc
  return
}}"
        ),
        &[
            "ld.global.v4.f32",
            // Row sums: 3 steps (xor 1, 2, 4); column maxima: 8 × 2 steps (xor 8, 16).
            "#19 shfl.sync.bfly.b32",
            // The column maxima's 4 × 64 floats and the conversion's 16 share one array.
            "llvm:addrspace(3) global [1024 x i8] undef",
            "bar.sync",
            "max.f32",
        ],
    );
}

/// `gather` of a `16 × 64` tile along its columns by a `16 × 128` index in another layout:
/// the source through 4 KiB of scratch shared memory (one barrier between its writes and the
/// reads), each index's low 6 bits (`and` with 63) picking the column.
#[test]
fn gather_through_shared_memory() {
    let a = "#blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>";
    let b = "#blocked<spt = [1, 4], tpw = [1, 32], wpc = [4, 1], order = [1, 0]>";
    check(
        &format!(
            "kernel @gather_shared(%x: ptr<f32> {{divisibility = 16}}, %i: ptr<i32> {{divisibility = 16}}, %out: ptr<f32> {{divisibility = 16}}) attributes {{num_warps = 4}} {{
  %c = arange {{start = 0, end = 64}} : tensor<64xi32, #slice<dim = 0, parent = {a}>>
  %ce = expand_dims {{axis = 0}} %c : tensor<1x64xi32, {a}>
  %cb = broadcast %ce : tensor<16x64xi32, {a}>
  %xp = splat %x : tensor<16x64xptr<f32>, {a}>
  %p = addptr %xp, %cb : tensor<16x64xptr<f32>, {a}>
  %v = load {{vec = 4}} %p : tensor<16x64xf32, {a}>
  %d = arange {{start = 0, end = 128}} : tensor<128xi32, #slice<dim = 0, parent = {b}>>
  %de = expand_dims {{axis = 0}} %d : tensor<1x128xi32, {b}>
  %db = broadcast %de : tensor<16x128xi32, {b}>
  %ip = splat %i : tensor<16x128xptr<i32>, {b}>
  %iq = addptr %ip, %db : tensor<16x128xptr<i32>, {b}>
  %idx = load {{vec = 4}} %iq : tensor<16x128xi32, {b}>
  %g = gather {{axis = 1}} %v, %idx : tensor<16x128xf32, {b}>
  %op = splat %out : tensor<16x128xptr<f32>, {b}>
  %oq = addptr %op, %db : tensor<16x128xptr<f32>, {b}>
  store {{vec = 4}} %oq, %g
  return
}}"
        ),
        &[
            "llvm:addrspace(3) global [4096 x i8] undef",
            "#1 bar.sync",
            "and.b32",
            "ld.shared.f32",
            "!selp",
        ],
    );
}

/// `gather` along rows of 4 that each thread holds whole, source and index in one layout: three
/// selects per element on the index's two low bits, no shared memory.
#[test]
fn gather_in_registers() {
    let a = "#blocked<spt = [1, 4], tpw = [32, 1], wpc = [4, 1], order = [1, 0]>";
    check(
        &format!(
            "kernel @gather_regs(%x: ptr<f32> {{divisibility = 16}}, %i: ptr<i32> {{divisibility = 16}}, %out: ptr<f32> {{divisibility = 16}}) attributes {{num_warps = 4}} {{
  %r = arange {{start = 0, end = 128}} : tensor<128xi32, #slice<dim = 1, parent = {a}>>
  %re = expand_dims {{axis = 1}} %r : tensor<128x1xi32, {a}>
  %c4 = constant 4 : i32
  %s = splat %c4 : tensor<128x1xi32, {a}>
  %ro = mul %re, %s : tensor<128x1xi32, {a}>
  %rb = broadcast %ro : tensor<128x4xi32, {a}>
  %c = arange {{start = 0, end = 4}} : tensor<4xi32, #slice<dim = 0, parent = {a}>>
  %ce = expand_dims {{axis = 0}} %c : tensor<1x4xi32, {a}>
  %cb = broadcast %ce : tensor<128x4xi32, {a}>
  %o = add %rb, %cb : tensor<128x4xi32, {a}>
  %xp = splat %x : tensor<128x4xptr<f32>, {a}>
  %p = addptr %xp, %o : tensor<128x4xptr<f32>, {a}>
  %v = load {{vec = 4}} %p : tensor<128x4xf32, {a}>
  %ip = splat %i : tensor<128x4xptr<i32>, {a}>
  %iq = addptr %ip, %o : tensor<128x4xptr<i32>, {a}>
  %idx = load {{vec = 4}} %iq : tensor<128x4xi32, {a}>
  %g = gather {{axis = 1}} %v, %idx : tensor<128x4xf32, {a}>
  %op = splat %out : tensor<128x4xptr<f32>, {a}>
  %oq = addptr %op, %o : tensor<128x4xptr<f32>, {a}>
  store {{vec = 4}} %oq, %g
  return
}}"
        ),
        &["!bar.sync", "!.shared", "#12 selp.f32", "ld.global.v4", "st.global.v4"],
    );
}

/// `local_load` windows (what `prefetch-dot` makes: a 32 × 32 × 32 f16 `dot` read in two
/// 16-wide K slices, slice 0 of the next stage carried by the loop): each window is one
/// `ldmatrix.x4` per operand and warp, at the window's offset, and the `mma`s keep their place
/// between the reads and the barrier (one before it in the body, one after).
#[test]
fn local_load_windows_and_mma_order() {
    let ir = "#mma0 = #mma<version = 2, wpc = [2, 2]>
#shared0 = #shared<vec = 8, per_phase = 2, max_phase = 4>
#blocked0 = #blocked<spt = [1, 8], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>
#dot_op0 = #dot_op<idx = 0, parent = #mma0, k_width = 2>
#dot_op1 = #dot_op<idx = 1, parent = #mma0, k_width = 2>
kernel @windows(%a: ptr<f16> {divisibility = 16}, %c: ptr<f32> {divisibility = 16}, %k: i32 {divisibility = 16}) attributes {num_warps = 4} {
  %0 = constant 0.0 : f32
  %1 = splat %0 : tensor<32x32xf32, #mma0>
  %2 = constant 0 : i32
  %3 = constant 32 : i32
  %4 = local_alloc : smem<3x32x32xf16, #shared0>
  %5 = local_alloc : smem<3x32x32xf16, #shared0>
  %6 = splat %a : tensor<32x32xptr<f16>, #blocked0>
  async_copy {vec = 8} %4, %2, %6
  async_copy {vec = 8} %5, %2, %6
  async_commit
  %7 = constant 1 : i32
  async_copy {vec = 8} %4, %7, %6
  async_copy {vec = 8} %5, %7, %6
  async_commit
  %8 = constant 2 : i32
  %9 = constant 3 : i32
  async_wait {pending = 1}
  barrier
  %10 = local_load %4, %2 : tensor<32x16xf16, #dot_op0>
  %11 = local_load %5, %2 : tensor<16x32xf16, #dot_op1>
  %12, %13, %14, %15, %16 = for %2, %k, %3, %1, %2, %8, %10, %11 : tensor<32x32xf32, #mma0>, i32, i32, tensor<32x16xf16, #dot_op0>, tensor<16x32xf16, #dot_op1> {
  ^bb0(%17: i32, %18: tensor<32x32xf32, #mma0>, %19: i32, %20: i32, %21: tensor<32x16xf16, #dot_op0>, %22: tensor<16x32xf16, #dot_op1>):
    async_copy {vec = 8} %4, %20, %6
    async_copy {vec = 8} %5, %20, %6
    async_commit
    %23 = local_load {offset = [0, 16]} %4, %19 : tensor<32x16xf16, #dot_op0>
    %24 = local_load {offset = [16, 0]} %5, %19 : tensor<16x32xf16, #dot_op1>
    %25 = dot %21, %22, %18 : tensor<32x32xf32, #mma0>
    %26 = add %19, %7 : i32
    %27 = cmp lt %26, %9 : i1
    %28 = select %27, %26, %2 : i32
    %29 = add %20, %7 : i32
    %30 = cmp lt %29, %9 : i1
    %31 = select %30, %29, %2 : i32
    async_wait {pending = 1}
    barrier
    %32 = local_load %4, %28 : tensor<32x16xf16, #dot_op0>
    %33 = local_load %5, %28 : tensor<16x32xf16, #dot_op1>
    %34 = dot %23, %24, %25 : tensor<32x32xf32, #mma0>
    yield %34, %28, %31, %32, %33
  }
  async_wait {pending = 0}
  %35 = splat %c : tensor<32x32xptr<f32>, #mma0>
  store {vec = 2} %35, %12
  return
}";
    check(
        ir,
        &[
            // Slice 0 before the loop, slice 1 and the next slice 0 in the body.
            "#3 ldmatrix.sync.aligned.m8n8.x4.shared.b16",
            "#3 ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
            // Two n8 tiles per warp and slice: two mma per dot.
            "#4 mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
            "#2 bar.sync",
        ],
    );
    // In the body: the first slice's mma precede the barrier, the second's follow it.
    let f = tile_core::ir::parse(ir).unwrap();
    let ptx = compile(&f, Target::Sm90a).unwrap().ptx;
    let body = &ptx[ptx.find("cp.async.commit_group").unwrap()..];
    let body = &body[body.find("bar.sync").map_or(0, |i| i + 1)..];
    let (before, after) = body.split_at(body.find("bar.sync").expect("the body's barrier"));
    assert_eq!(before.matches("mma.sync").count(), 2, "{ptx}");
    assert!(after.matches("mma.sync").count() >= 2, "{ptx}");
}

#[test]
fn targets() {
    assert_eq!(Target::ALL, [Target::Sm90a, Target::Sm80]);
    let names: Vec<(&str, (u32, u32))> = Target::ALL
        .iter()
        .map(|t| (t.arch(), t.capability()))
        .collect();
    assert_eq!(names, [("sm_90a", (9, 0)), ("sm_80", (8, 0))]);
}

/// Parses and verifies `ir`, places its barriers (`insert-barriers`, the pipeline's last pass),
/// compiles it for every target and checks `expected` (see the module doc) plus what every kernel
/// has: the entry, the block size, the target line. Then assembles the PTX with ptxas when it is
/// available.
fn check(ir: &str, expected: &[&str]) {
    let mut f = tile_core::ir::parse(ir).unwrap_or_else(|e| panic!("parse error {e}\n{ir}"));
    tile_core::ir::verify(&f).unwrap_or_else(|e| panic!("verify error {e}\n{ir}"));
    Pass::InsertBarriers.run(&mut f, tile_codegen::llvm::scratch_bytes);
    let threads = 32 * f.num_warps;
    for target in Target::ALL {
        let a = compile(&f, target).unwrap_or_else(|e| panic!("{e}"));
        let ptx = &a.ptx;
        let ctx = format!("kernel `{}` for {target}", f.name);
        dump(&f.name, target, ptx, &a.llvm_ir);
        let (major, minor) = target.ptx_isa();
        let mut all: Vec<String> = vec![
            format!(".version {major}.{minor}"),
            format!(".target {}", target.arch()),
            format!(".visible .entry {}(", f.name),
            format!(".maxntid {threads}, 1, 1"),
        ];
        all.extend(expected.iter().map(|s| s.to_string()));
        for e in &all {
            if let Some(want) = e.strip_prefix("llvm:") {
                match want.strip_prefix('!') {
                    Some(absent) => assert!(
                        !a.llvm_ir.contains(absent),
                        "{ctx}: LLVM IR has `{absent}`:\n{}",
                        a.llvm_ir
                    ),
                    None => assert!(
                        a.llvm_ir.contains(want),
                        "{ctx}: LLVM IR lacks `{want}`:\n{}",
                        a.llvm_ir
                    ),
                }
            } else if let Some(absent) = e.strip_prefix('!') {
                assert!(!ptx.contains(absent), "{ctx}: PTX has `{absent}`:\n{ptx}");
            } else if let Some(rest) = e.strip_prefix('#') {
                let (n, want) = rest.split_once(' ').expect("`#N pattern`");
                let n: usize = n.parse().expect("a count");
                let got = ptx.matches(want).count();
                assert_eq!(
                    got, n,
                    "{ctx}: `{want}` appears {got} times, expected {n}:\n{ptx}"
                );
            } else {
                assert!(ptx.contains(e.as_str()), "{ctx}: PTX lacks `{e}`:\n{ptx}");
            }
        }
        assemble(&ctx, target, ptx);
    }
}

/// Parses `ir` and checks that compiling it for sm_90a fails with exactly `expected`.
fn check_err(ir: &str, expected: &str) {
    let f = tile_core::ir::parse(ir).unwrap_or_else(|e| panic!("parse error {e}\n{ir}"));
    match compile(&f, Target::Sm90a) {
        Ok(_) => panic!(
            "kernel `{}` compiled; expected the error\n{expected}",
            f.name
        ),
        Err(e) => assert_eq!(e.to_string(), expected),
    }
}

/// Writes the PTX and the optimized LLVM IR to `$TILE_TEST_DUMP/NAME.ARCH.{ptx,ll}` when that
/// variable is set.
fn dump(name: &str, target: Target, ptx: &str, llvm_ir: &str) {
    if let Some(dir) = std::env::var_os("TILE_TEST_DUMP") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("create the dump directory");
        for (ext, text) in [("ptx", ptx), ("ll", llvm_ir)] {
            std::fs::write(dir.join(format!("{name}.{}.{ext}", target.arch())), text)
                .expect("write the dump");
        }
    }
}

/// Assembles `ptx` for `target` with ptxas, when [`tile_codegen::ptxas::find`] finds it, and
/// requires success without spills; prints ptxas's summary.
fn assemble(ctx: &str, target: Target, ptx: &str) {
    let Some(ptxas) = tile_codegen::ptxas::find() else {
        println!(
            "{ctx}: ptxas not found (set TILE_PTXAS or run scripts/setup.sh); assembly skipped"
        );
        return;
    };
    let report = tile_codegen::ptxas::assemble(&ptxas, ptx, target.arch())
        .unwrap_or_else(|e| panic!("{ctx}: {e}\n{ptx}"));
    assert!(!report.spills(), "{ctx}: ptxas spilled:\n{}", report.raw);
    println!(
        "{ctx}: ptxas: {} registers, {} bytes spill stores, {} bytes spill loads",
        report.registers, report.spill_stores, report.spill_loads
    );
}

/// `ptxas::cached_cubin`: the first call assembles and stores, the second reads the same bytes
/// and the same `ptxas -v` report back from the cache (a PTX no earlier run has seen, by a
/// comment naming this process).
#[test]
fn cubins_are_cached() {
    let Some(ptxas) = tile_codegen::ptxas::find() else {
        println!("skipped: no ptxas (run scripts/setup.sh, or set TILE_PTXAS)");
        return;
    };
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let ptx = format!(
        "// {} {nonce}\n.version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{{\n\tret;\n}}\n",
        std::process::id()
    );
    let before =
        std::fs::read_dir(std::env::temp_dir().join("tile-cubins")).map_or(0, |d| d.count());
    let first = tile_codegen::ptxas::cached_cubin(&ptxas, &ptx, "sm_80").unwrap();
    let after =
        std::fs::read_dir(std::env::temp_dir().join("tile-cubins")).map_or(0, |d| d.count());
    let second = tile_codegen::ptxas::cached_cubin(&ptxas, &ptx, "sm_80").unwrap();
    assert!(first.1.starts_with(b"\x7fELF"), "not a cubin");
    assert_eq!(first, second);
    assert!(first.0.raw.contains("Used"), "no report: {}", first.0.raw);
    assert!(after > before, "the first call stored nothing");
}
