//! The verifier: one negative test per invariant its module documentation lists, each through one
//! `rejects(ir, expected message)` helper, plus the parser's own errors and a round trip.

use tile_core::ir::{parse, print, verify, DType, Function, OpKind, Type};

const HEADER: &str = "kernel @k(%p: ptr<f32>, %q: ptr<i32>, %n: i32) attributes {num_warps = 4} {";

/// Wraps `body` in a kernel, parses it, and asserts the verifier reports `expected`.
fn rejects(body: &str, expected: &str) {
    rejects_kernel(&format!("{HEADER}\n{body}\n}}\n"), expected);
}

fn rejects_kernel(text: &str, expected: &str) {
    let f = parse(text).unwrap_or_else(|e| panic!("parse error {e} in\n{text}"));
    let errs = verify(&f).expect_err("the verifier accepted a broken kernel");
    let all = errs.to_string();
    assert!(
        all.contains(expected),
        "expected `{expected}` among:\n{all}"
    );
}

fn accepts(body: &str) {
    let text = format!("{HEADER}\n{body}\n}}\n");
    let f = parse(&text).unwrap();
    if let Err(e) = verify(&f) {
        panic!("rejected a valid kernel: {e}\n{text}");
    }
    if text.contains('#') {
        // GPU level: printing names every layout once, as an alias; the aliased text reads back.
        let printed = print(&f);
        let again = parse(&printed).unwrap_or_else(|e| panic!("parse error {e} in\n{printed}"));
        assert_eq!(print(&again), printed, "round trip");
        assert_eq!(again.values.len(), f.values.len());
        for (a, b) in again.values.iter().zip(&f.values) {
            assert_eq!(a.ty, b.ty, "round trip of types");
        }
    } else {
        assert_eq!(print(&f), text, "round trip");
    }
}

#[test]
fn a_valid_kernel_round_trips() {
    accepts(
        "  %0 = program_id {axis = 0} : i32
  %1 = constant 128 : i32
  %2 = mul %0, %1 : i32
  %3 = arange {start = 0, end = 128} : tensor<128xi32>
  %4 = splat %2 : tensor<128xi32>
  %5 = add %4, %3 : tensor<128xi32>
  %6 = splat %n : tensor<128xi32>
  %7 = cmp lt %5, %6 : tensor<128xi1>
  %8 = splat %p : tensor<128xptr<f32>>
  %9 = addptr %8, %5 : tensor<128xptr<f32>>
  %10 = constant -0.5 : f32
  %11 = splat %10 : tensor<128xf32>
  %12 = load %9, %7, %11 : tensor<128xf32>
  %13 = constant inf : f32
  %14 = min %12, %11 : tensor<128xf32>
  %15 = select %7, %14, %11 : tensor<128xf32>
  store %9, %15, %7
  return",
    );
}

#[test]
fn gpu_level_kernel_round_trips() {
    let l = "#blocked<spt = [4], tpw = [32], wpc = [4], order = [0]>";
    accepts(&format!(
        "  %0 = arange {{start = 0, end = 1024}} : tensor<1024xi32, {l}>
  %1 = splat %p : tensor<1024xptr<f32>, {l}>
  %2 = addptr %1, %0 : tensor<1024xptr<f32>, {l}>
  %3 = load {{vec = 4}} %2 : tensor<1024xf32, {l}>
  store {{vec = 4}} %2, %3
  return"
    ));
}

#[test]
fn dominance_use_before_definition() {
    // The text form cannot spell this (names must be defined first), so build it directly.
    let mut f = Function::new("k", vec![("n".into(), Type::scalar(DType::I32))], 4);
    let b = f.entry();
    let n = f.params()[0];
    let c = f.push1(
        b,
        OpKind::Constant(tile_core::ir::ConstValue::Int(1)),
        vec![],
        Type::scalar(DType::I32),
    );
    let add = f.push_op(
        b,
        OpKind::Binary(tile_core::ir::BinOp::Add),
        vec![n, n],
        vec![Type::scalar(DType::I32)],
    );
    f.ops[add.index()].operands[1] = tile_core::ir::ValueId(c.0 + 1); // the add's own result
    f.push_op(b, OpKind::Return, vec![], vec![]);
    let e = verify(&f).unwrap_err().to_string();
    assert!(e.contains("operand #1 is used before it is defined"), "{e}");
}

#[test]
fn operands_wrong_count() {
    rejects("  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = splat %p : tensor<4xptr<f32>>\n  %2 = addptr %1, %0 : tensor<4xptr<f32>>\n  %3 = load %2, %2 : tensor<4xf32>\n  return", "`load` takes 1 or 3 operand(s), found 2");
}

#[test]
fn shapes_power_of_two() {
    rejects(
        "  %0 = splat %n : tensor<1000xi32>\n  return",
        "has a dimension that is not a power of two",
    );
}

#[test]
fn layouts_all_or_none() {
    rejects(
        "  %0 = arange {start = 0, end = 128} : tensor<128xi32, #blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>>\n  %1 = splat %n : tensor<128xi32>\n  return",
        "have a layout and 1 do not",
    );
}

#[test]
fn layouts_threads_and_warps() {
    rejects(
        "  %0 = arange {start = 0, end = 128} : tensor<128xi32, #blocked<spt = [1], tpw = [16], wpc = [8], order = [0]>>\n  return",
        "does not have 32 threads per warp",
    );
    rejects(
        "  %0 = arange {start = 0, end = 128} : tensor<128xi32, #blocked<spt = [1], tpw = [32], wpc = [2], order = [0]>>\n  return",
        "spreads over 2 warps, the kernel has 4",
    );
}

#[test]
fn elementwise_same_types() {
    rejects(
        "  %0 = constant 1.0 : f32\n  %1 = add %n, %0 : i32",
        "operand type `f32` differs from `i32`",
    );
    rejects(
        "  %0 = constant 1.0 : f32\n  %1 = xor %0, %0 : f32\n  return",
        "`xor` takes integers or booleans, found `f32`",
    );
    rejects(
        "  %0 = cmp lt %n, %n : i32\n  return",
        "the result must be `i1`",
    );
    rejects(
        "  %0 = constant 3 : i64\n  %1 = umulhi %0, %0 : i64\n  return",
        "`umulhi` takes i32, found `i64`",
    );
    accepts("  %0 = umulhi %n, %n : i32\n  return");
}

#[test]
fn constant_fits_type() {
    rejects(
        "  %0 = constant 3000000000 : i32\n  return",
        "does not fit type `i32`",
    );
    rejects("  %0 = constant 2 : i1\n  return", "does not fit type `i1`");
}

#[test]
fn program_id_axis() {
    rejects(
        "  %0 = program_id {axis = 3} : i32\n  return",
        "grid axis 3 is not 0, 1 or 2",
    );
}

#[test]
fn arange_shape() {
    rejects(
        "  %0 = arange {start = 0, end = 64} : tensor<128xi32>\n  return",
        "the result must be `tensor<64xi32>`",
    );
}

#[test]
fn splat_of_scalar() {
    rejects("  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = splat %0 : tensor<4xi32>\n  return", "the operand of `splat` must be a scalar");
}

#[test]
fn addptr_integer_offset() {
    rejects(
        "  %0 = constant 1.0 : f32\n  %1 = addptr %p, %0 : ptr<f32>\n  return",
        "the offset of `addptr` must be `i32` or `i64`",
    );
}

#[test]
fn load_store_types() {
    rejects(
        "  %0 = constant 1.0 : f32\n  store %q, %0\n  return",
        "the stored value must be `i32`, found `f32`",
    );
    rejects(
        "  %0 = arange {start = 0, end = 8} : tensor<8xi32>\n  %1 = splat %p : tensor<8xptr<f32>>\n  %2 = addptr %1, %0 : tensor<8xptr<f32>>\n  %3 = arange {start = 0, end = 4} : tensor<4xi32>\n  %4 = splat %n : tensor<4xi32>\n  %5 = cmp lt %3, %4 : tensor<4xi1>\n  %6 = load %2 : tensor<8xf32>\n  store %2, %6, %5\n  return",
        "the mask must be `tensor<8xi1>`, found `tensor<4xi1>`",
    );
    rejects("  %0 = arange {start = 0, end = 8} : tensor<8xi32>\n  %1 = splat %p : tensor<8xptr<f32>>\n  %2 = addptr %1, %0 : tensor<8xptr<f32>>\n  %3 = load {vec = 4} %2 : tensor<8xf32>\n  return", "vec = 4 needs a layout");
}

#[test]
fn return_last_and_present() {
    rejects("  %0 = constant 1 : i32", "does not end with `return`");
    rejects(
        "  return\n  %0 = constant 1 : i32",
        "`return` must be the last op",
    );
}

#[test]
fn kernel_warps_and_parameters() {
    rejects_kernel(
        "kernel @k(%n: i32) attributes {num_warps = 3} {\n  return\n}\n",
        "num_warps = 3 is not a power of two",
    );
    rejects_kernel(
        "kernel @k(%t: tensor<4xi32>) attributes {num_warps = 4} {\n  return\n}\n",
        "parameter #0 is a tensor",
    );
    rejects_kernel(
        "kernel @k(%n: i32 {divisibility = 12}) attributes {num_warps = 4} {\n  return\n}\n",
        "divisibility 12, not a power of two",
    );
}

#[test]
fn parser_errors_have_locations() {
    let cases = [
        ("kernel @k() attributes {num_warps = 4} {\n  %0 = frobnicate : i32\n}\n", "2:8: unknown op `frobnicate`"),
        ("kernel @k() attributes {num_warps = 4} {\n  %0 = add %1, %1 : i32\n}\n", "2:12: use of undefined value `%1`"),
        ("kernel @k() attributes {num_warps = 4} {\n  %0 = constant 1 : i32\n  %0 = constant 2 : i32\n}\n", "3:3: value `%0` is defined twice"),
        ("kernel @k() attributes {num_warps = 4} {\n  %0 = constant 1 : u16\n}\n", "2:21: unknown element type `u16`"),
        ("kernel @k() attributes {num_warps = 4} {\n  return\n", "expected `}` closing the kernel"),
        ("kernel @k(%a: i32, %a: i32) attributes {num_warps = 4} {\n}\n", "parameter `%a` is declared twice"),
    ];
    for (text, expected) in cases {
        let e = parse(text).expect_err(expected).to_string();
        assert!(e.contains(expected), "expected `{expected}`, got `{e}`");
    }
}

#[test]
fn math_operands() {
    rejects(
        "  %0 = constant 1 : i32\n  %1 = exp %0 : i32\n  return",
        "`exp` does not take `i32`",
    );
    rejects(
        "  %0 = constant 1.0 : f32\n  %1 = fma %0, %0 : f32\n  return",
        "`fma` takes 3 operand(s), found 2",
    );
    accepts("  %0 = abs %n : i32\n  %1 = constant 2.0 : f32\n  %2 = pow %1, %1 : f32\n  %3 = fma %1, %1, %2 : f32\n  return");
}

#[test]
fn cast_keeps_shape() {
    rejects(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = cast %0 : tensor<8xf32>\n  return",
        "`cast` keeps the shape",
    );
    rejects(
        "  %0 = cast %p : i64\n  return",
        "`cast` converts numbers, not pointers",
    );
    accepts("  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = cast %0 : tensor<4xbf16>\n  %2 = cast %1 : tensor<4xf32>\n  return");
}

#[test]
fn reduce_axis_and_result() {
    rejects(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = reduce sum {axis = 1} %0 : i32\n  return",
        "axis 1 is out of range",
    );
    rejects(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = reduce max {axis = 0} %0 : f32\n  return",
        "the result must be `i32`",
    );
    rejects(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = cast %0 : tensor<4xf16>\n  %2 = reduce sum {axis = 0} %1 : f16\n  return",
        "reductions take 32- or 64-bit integers or f32",
    );
    accepts("  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = reduce min {axis = 0} %0 : i32\n  return");
}

#[test]
fn half_types_are_storage_only() {
    rejects(
        "  %0 = constant 1.0 : f16\n  %1 = add %0, %0 : f16\n  return",
        "`add` takes 32- or 64-bit integers or f32; cast `f16` first",
    );
}

/// A 2-D GPU-level kernel with slice layouts, `expand_dims`, `broadcast`, `reduce` along an axis
/// and `convert_layout` prints and parses back.
#[test]
fn slice_layouts_round_trip() {
    let b = "#blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>";
    let s0 = format!("#slice<dim = 0, parent = {b}>");
    let s1 = format!("#slice<dim = 1, parent = {b}>");
    accepts(&format!(
        "  %0 = arange {{start = 0, end = 32}} : tensor<32xi32, {s1}>
  %1 = expand_dims {{axis = 1}} %0 : tensor<32x1xi32, {b}>
  %2 = broadcast %1 : tensor<32x32xi32, {b}>
  %3 = reduce sum {{axis = 0}} %2 : tensor<32xi32, {s0}>
  %4 = convert_layout %3 : tensor<32xi32, {s1}>
  %5 = splat %q : tensor<32xptr<i32>, {s1}>
  %6 = addptr %5, %0 : tensor<32xptr<i32>, {s1}>
  store %6, %4
  return"
    ));
}

#[test]
fn layouts_slice_parent_rank() {
    // A slice of a 1-D parent would be a scalar.
    rejects(
        "  %0 = arange {start = 0, end = 32} : tensor<32xi32, #slice<dim = 0, parent = #blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>>>
  return",
        "does not have the tensor's rank",
    );
    rejects(
        "  %0 = arange {start = 0, end = 32} : tensor<32xi32, #slice<dim = 2, parent = #blocked<spt = [1, 1], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>>>
  return",
        "slices a dimension past its rank",
    );
}

#[test]
fn expand_dims_shape_axis_and_layout() {
    rejects(
        "  %0 = arange {start = 0, end = 32} : tensor<32xi32>
  %1 = expand_dims {axis = 2} %0 : tensor<32x1xi32>
  return",
        "axis 2 is out of range",
    );
    rejects(
        "  %0 = arange {start = 0, end = 32} : tensor<32xi32>
  %1 = expand_dims {axis = 0} %0 : tensor<32x1xi32>
  return",
        "the result must be `tensor<1x32xi32>`",
    );
    rejects(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>
  %1 = expand_dims {axis = 0} %0 : tensor<1x4xi32>
  %2 = expand_dims {axis = 0} %1 : tensor<1x1x4xi32>
  return",
        "rank > 2",
    );
    let b = "#blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>";
    rejects(
        &format!(
            "  %0 = arange {{start = 0, end = 32}} : tensor<32xi32, #slice<dim = 0, parent = {b}>>
  %1 = expand_dims {{axis = 1}} %0 : tensor<32x1xi32, {b}>
  return"
        ),
        "the operand's layout must be the layout of `tensor<32x1xi32",
    );
}

#[test]
fn broadcast_shapes_and_layout() {
    rejects(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>
  %1 = expand_dims {axis = 0} %0 : tensor<1x4xi32>
  %2 = broadcast %1 : tensor<8x8xi32>
  return",
        "does not broadcast to `tensor<8x8xi32>`",
    );
    let b = "#blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>";
    let c = "#blocked<spt = [1, 1], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>";
    rejects(
        &format!(
            "  %0 = arange {{start = 0, end = 4}} : tensor<4xi32, #slice<dim = 0, parent = {b}>>
  %1 = expand_dims {{axis = 0}} %0 : tensor<1x4xi32, {b}>
  %2 = broadcast %1 : tensor<8x4xi32, {c}>
  return"
        ),
        "`broadcast` keeps the layout",
    );
}

#[test]
fn convert_layout_only_layout_and_gpu_level() {
    rejects(
        "  %0 = arange {start = 0, end = 32} : tensor<32xi32>
  %1 = convert_layout %0 : tensor<32xi32>
  return",
        "exists only at the GPU level",
    );
    let l = "#blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>";
    rejects(
        &format!(
            "  %0 = arange {{start = 0, end = 32}} : tensor<32xi32, {l}>
  %1 = convert_layout %0 : tensor<64xi32, {l}>
  return"
        ),
        "changes only the layout",
    );
}

#[test]
fn reduce_result_layout_is_a_slice() {
    let b = "#blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>";
    rejects(
        &format!(
            "  %0 = arange {{start = 0, end = 32}} : tensor<32xi32, #slice<dim = 1, parent = {b}>>
  %1 = expand_dims {{axis = 1}} %0 : tensor<32x1xi32, {b}>
  %2 = broadcast %1 : tensor<32x32xi32, {b}>
  %3 = reduce sum {{axis = 1}} %2 : tensor<32xi32, #slice<dim = 0, parent = {b}>>
  return"
        ),
        "the result's layout must be the layout",
    );
}

/// A loop with a carried scalar and tile, nested, prints and parses back.
#[test]
fn loops_round_trip() {
    accepts(
        "  %0 = constant 0 : i32
  %1 = constant 4 : i32
  %2 = constant 0.0 : f32
  %3 = splat %2 : tensor<4xf32>
  %4, %5 = for %0, %n, %1, %2, %3 : f32, tensor<4xf32> {
  ^bb0(%6: i32, %7: f32, %8: tensor<4xf32>):
    %9 = arange {start = 0, end = 4} : tensor<4xi32>
    %10 = splat %6 : tensor<4xi32>
    %11 = add %10, %9 : tensor<4xi32>
    %12 = splat %p : tensor<4xptr<f32>>
    %13 = addptr %12, %11 : tensor<4xptr<f32>>
    %14 = load %13 : tensor<4xf32>
    %15 = add %8, %14 : tensor<4xf32>
    %16 = for %0, %1, %1, %7 : f32 {
    ^bb0(%17: i32, %18: f32):
      %19 = add %18, %18 : f32
      yield %19
    }
    yield %16, %15
  }
  %20 = reduce sum {axis = 0} %5 : f32
  store %p, %20
  return",
    );
}

#[test]
fn for_operands_results_and_body() {
    let lp = |bounds: &str, results: &str, args: &str, body: &str| {
        format!(
            "  %0 = constant 0 : i32\n  %1 = constant 1.0 : f32\n  {results} = for {bounds} {{\n  ^bb0({args}):\n{body}\n  }}\n  return"
        )
    };
    rejects(
        &lp(
            "%0, %n, %1, %1 : f32",
            "%2",
            "%3: i32, %4: f32",
            "    yield %4",
        ),
        "the step of `for` must be `i32`",
    );
    rejects(
        &lp(
            "%0, %n, %0, %1 : i32",
            "%2",
            "%3: i32, %4: f32",
            "    yield %4",
        ),
        "the results of `for` must have the types of its carried values",
    );
    rejects(
        &lp(
            "%0, %n, %0, %1 : f32",
            "%2",
            "%3: i32, %4: i32",
            "    yield %3",
        ),
        "the body's arguments must be the `i32` induction variable and the carried values",
    );
    rejects(
        &lp(
            "%0, %n, %0, %1 : f32",
            "%2",
            "%3: i32, %4: f32",
            "    yield %3",
        ),
        "`yield` must give one value of each carried value's type",
    );
    rejects(
        &lp(
            "%0, %n, %0, %1 : f32",
            "%2",
            "%3: i32, %4: f32",
            "    %5 = add %4, %4 : f32",
        ),
        "the body of `for` must end with `yield`",
    );
}

#[test]
fn loop_values_stay_inside_and_yield_ends_loops() {
    rejects(
        "  %0 = constant 0 : i32
  for %0, %n, %0 {
  ^bb0(%1: i32):
    %2 = add %1, %1 : i32
    yield
  }
  store %q, %2
  return",
        "operand #1 is used before it is defined",
    );
    rejects(
        "  yield\n  return",
        "`yield` must be the last op of a loop body",
    );
}

#[test]
fn dot_shapes_and_types() {
    let pre = "  %0 = constant 1.0 : f32
  %1 = splat %0 : tensor<8x16xf32>
  %2 = splat %0 : tensor<16x4xf32>
  %3 = splat %0 : tensor<8x4xf32>
  %4 = splat %0 : tensor<4x4xf32>
  %5 = cast %1 : tensor<8x16xf16>";
    accepts(&format!(
        "{pre}\n  %6 = dot %1, %2, %3 : tensor<8x4xf32>\n  return"
    ));
    rejects(
        &format!("{pre}\n  %6 = dot %1, %4, %3 : tensor<8x4xf32>\n  return"),
        "inner dimensions differ",
    );
    rejects(
        &format!("{pre}\n  %6 = dot %5, %2, %3 : tensor<8x4xf32>\n  return"),
        "`dot` takes two tiles of one float type",
    );
    rejects(
        &format!("{pre}\n  %6 = dot %1, %2, %4 : tensor<8x4xf32>\n  return"),
        "the accumulator and the result must be `tensor<8x4xf32>`",
    );
}

#[test]
fn if_round_trips_and_checks_its_branches() {
    let ok = "  %0 = constant 1.0 : f32
  %1 = constant 0 : i32
  %2 = cmp gt %n, %1 : i1
  %3 = if %2 : f32 {
  ^bb0():
    %4 = add %0, %0 : f32
    yield %4
  ^bb0():
    yield %0
  }
  store %p, %3
  return";
    accepts(ok);
    rejects(
        &ok.replace("%3 = if %2 : f32", "%3 = if %1 : f32"),
        "the condition of `if` must be an `i1` scalar",
    );
    rejects(
        &ok.replace("    yield %0\n", "    yield %1\n"),
        "the else branch must yield one value of each result's type",
    );
    rejects(
        &ok.replace("    yield %4\n", ""),
        "the then branch of `if` must end with `yield`",
    );
}

/// A `while` whose condition takes a lock with an `atomic_cas` (an effect of its own) and whose
/// body carries a scalar, then a `debug_barrier`: prints and parses back.
const WHILE_OK: &str = "  %0 = constant 0 : i32
  %1 = constant 1 : i32
  %2 = constant 0.0 : f32
  %3, %4 = while %0, %2 : i32, f32 {
  ^bb0(%5: i32, %6: f32):
    %7 = atomic_cas %q, %0, %1 : i32
    %8 = cmp eq %7, %1 : i1
    %9 = cmp lt %5, %n : i1
    %10 = and %8, %9 : i1
    yield %10
  ^bb0(%11: i32, %12: f32):
    %13 = add %11, %1 : i32
    %14 = add %12, %12 : f32
    yield %13, %14
  }
  debug_barrier
  store %p, %4
  return";

#[test]
fn while_round_trips_and_checks_its_regions() {
    accepts(WHILE_OK);
    rejects(
        &WHILE_OK.replace(
            "%3, %4 = while %0, %2 : i32, f32",
            "%3, %4 = while %0, %2 : i32, i32",
        ),
        "the results of `while` must have the types of its carried values",
    );
    rejects(
        &WHILE_OK.replace("^bb0(%5: i32, %6: f32)", "^bb0(%5: i32, %6: i32)"),
        "the arguments of the condition of `while` must be the carried values",
    );
    rejects(
        &WHILE_OK.replace("    yield %10\n", "    yield %5\n"),
        "the condition of `while` must yield one `i1` scalar",
    );
    rejects(
        &WHILE_OK.replace("    yield %13, %14\n", "    yield %14, %13\n"),
        "the body of `while` must yield one value of each carried value's type",
    );
    rejects(
        &WHILE_OK.replace("    yield %13, %14\n", ""),
        "the body of `while` must end with `yield`",
    );
    // A value of the condition is not visible in the body.
    rejects(
        &WHILE_OK.replace("%14 = add %12, %12", "%14 = add %6, %12"),
        "used before it is defined",
    );
    rejects(
        &WHILE_OK.replace("  debug_barrier\n", "  debug_barrier %0\n"),
        "takes 0 operand",
    );
}

#[test]
fn roll_axis_shift_and_type() {
    rejects(
        "  %0 = arange {start = 0, end = 8} : tensor<8xi32>
  %1 = roll {axis = 1, shift = 4} %0 : tensor<8xi32>
  return",
        "axis 1 is out of range for `tensor<8xi32>`",
    );
    rejects(
        "  %0 = arange {start = 0, end = 8} : tensor<8xi32>
  %1 = roll {axis = 0, shift = 8} %0 : tensor<8xi32>
  return",
        "shift 8 is not below the extent of axis 0",
    );
    rejects(
        "  %0 = arange {start = 0, end = 8} : tensor<8xi32>
  %1 = roll {axis = 0, shift = 3} %0 : tensor<8xf32>
  return",
        "the result must be `tensor<8xi32>`",
    );
    accepts(
        "  %0 = arange {start = 0, end = 8} : tensor<8xi32>
  %1 = roll {axis = 0, shift = 3} %0 : tensor<8xi32>
  return",
    );
}

#[test]
fn gather_operands_and_type() {
    let src = "  %0 = constant 1.5 : f32
  %1 = splat %0 : tensor<8x16xf32>";
    rejects(
        &format!(
            "{src}
  %2 = arange {{start = 0, end = 16}} : tensor<16xi32>
  %3 = gather {{axis = 0}} %1, %2 : tensor<16xf32>
  return"
        ),
        "the index `tensor<16xi32>` must have the rank of `tensor<8x16xf32>` and its extents off axis 0",
    );
    rejects(
        &format!(
            "{src}
  %2 = constant 1 : i32
  %3 = splat %2 : tensor<4x8xi32>
  %4 = gather {{axis = 1}} %1, %3 : tensor<4x8xf32>
  return"
        ),
        "must have the rank of `tensor<8x16xf32>` and its extents off axis 1",
    );
    rejects(
        &format!(
            "{src}
  %2 = constant 1 : i64
  %3 = splat %2 : tensor<8x4xi64>
  %4 = gather {{axis = 1}} %1, %3 : tensor<8x4xf32>
  return"
        ),
        "the index must be an `i32` tensor, not `tensor<8x4xi64>`",
    );
    rejects(
        &format!(
            "{src}
  %2 = constant 1 : i32
  %3 = splat %2 : tensor<8x4xi32>
  %4 = gather {{axis = 2}} %1, %3 : tensor<8x4xf32>
  return"
        ),
        "axis 2 is out of range for `tensor<8x16xf32>`",
    );
    rejects(
        &format!(
            "{src}
  %2 = constant 1 : i32
  %3 = splat %2 : tensor<8x4xi32>
  %4 = gather {{axis = 1}} %1, %3 : tensor<8x16xf32>
  return"
        ),
        "the result must be `tensor<8x4xf32>` (layout aside)",
    );
    accepts(&format!(
        "{src}
  %2 = constant 1 : i32
  %3 = splat %2 : tensor<32x16xi32>
  %4 = gather {{axis = 0}} %1, %3 : tensor<32x16xf32>
  return"
    ));
    // GPU level: the source keeps a layout of its own; the result has the index's.
    let a = "#blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>";
    let b = "#blocked<spt = [4, 1], tpw = [8, 4], wpc = [1, 4], order = [0, 1]>";
    let gpu = |result: &str| {
        format!(
            "  %0 = constant 1.5 : f32
  %1 = splat %0 : tensor<8x16xf32, {a}>
  %2 = constant 1 : i32
  %3 = splat %2 : tensor<8x64xi32, {b}>
  %4 = gather {{axis = 1}} %1, %3 : tensor<8x64xf32, {result}>
  return"
        )
    };
    accepts(&gpu(b));
    rejects(&gpu(a), "the result has the index's layout");
}

#[test]
fn tensor_core_layouts() {
    let mma = "#mma<version = 2, wpc = [2, 2]>";
    // Operands in the operand layouts of the accumulator's mma layout, through aliases.
    accepts(&format!(
        "  %0 = constant 0.0 : f16
  %1 = splat %0 : tensor<64x32xf16, #dot_op<idx = 0, parent = {mma}, k_width = 2>>
  %2 = splat %0 : tensor<32x64xf16, #dot_op<idx = 1, parent = {mma}, k_width = 2>>
  %3 = constant 0.0 : f32
  %4 = splat %3 : tensor<64x64xf32, {mma}>
  %5 = dot %1, %2, %4 : tensor<64x64xf32, {mma}>
  %6 = reduce max {{axis = 1}} %5 : tensor<64xf32, #slice<dim = 1, parent = {mma}>>
  return"
    ));
    rejects(
        "  %0 = constant 0.0 : f32\n  %1 = splat %0 : tensor<64x64xf32, #mma<version = 4, wpc = [2, 2]>>\n  return",
        "an mma layout is version 2 or 3 over 2-D tensors",
    );
    rejects(
        "  %0 = constant 0.0 : f32\n  %1 = splat %0 : tensor<64x64xf32, #mma<version = 3, wpc = [2, 2]>>\n  return",
        "an mma layout of version 3 has whole warpgroups along the rows",
    );
    accepts(
        "  %0 = constant 0.0 : f32\n  %1 = splat %0 : tensor<64x64xf32, #mma<version = 3, wpc = [4, 1]>>\n  return",
    );
    rejects(
        "  %0 = constant 0.0 : f32\n  %1 = splat %0 : tensor<64x64xf32, #mma<version = 2, wpc = [2, 4]>>\n  return",
        "it spreads over 8 warps, the kernel has 4",
    );
    rejects(
        "  %0 = constant 0.0 : f16\n  %1 = splat %0 : tensor<64x64xf16, #dot_op<idx = 0, parent = #blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>, k_width = 2>>\n  return",
        "an operand layout's parent must be an mma layout",
    );
    rejects(
        &format!("  %0 = constant 0.0 : f16\n  %1 = splat %0 : tensor<64x64xf16, #dot_op<idx = 2, parent = {mma}, k_width = 2>>\n  return"),
        "an operand layout has index 0 or 1 and k_width 1, 2 or 4",
    );
    // A tensor-core dot's operands must be in the operand layouts of its result's mma layout.
    rejects(
        &format!(
            "  %0 = constant 0.0 : f16
  %1 = splat %0 : tensor<64x32xf16, #blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>>
  %2 = splat %0 : tensor<32x64xf16, #dot_op<idx = 1, parent = {mma}, k_width = 2>>
  %3 = constant 0.0 : f32
  %4 = splat %3 : tensor<64x64xf32, {mma}>
  %5 = dot %1, %2, %4 : tensor<64x64xf32, {mma}>
  return"
        ),
        "operand 0 of a tensor-core `dot` must be in the layout",
    );
}

#[test]
fn tf32_dot() {
    let mma = "#mma<version = 2, wpc = [2, 2]>";
    let op = |i: u32, kw: u32| format!("#dot_op<idx = {i}, parent = {mma}, k_width = {kw}>");
    // f32 operands in k_width-1 operand layouts under `precision = tf32`; round trips.
    let ok = format!(
        "  %0 = constant 0.0 : f32
  %1 = splat %0 : tensor<64x16xf32, {}>
  %2 = splat %0 : tensor<16x64xf32, {}>
  %4 = splat %0 : tensor<64x64xf32, {mma}>
  %5 = dot {{precision = tf32}} %1, %2, %4 : tensor<64x64xf32, {mma}>
  return",
        op(0, 1),
        op(1, 1)
    );
    accepts(&ok);
    // Without tf32, f32 operands have no tensor-core form.
    rejects(
        &ok.replace("dot {precision = tf32}", "dot"),
        "a tensor-core `dot` takes f16, bf16, i8, f8e4m3, f8e5m2, or f32 with `precision = tf32`",
    );
    // tf32 operands hold one K element per register.
    rejects(
        &ok.replace(&op(0, 1), &op(0, 2)),
        "operand 0 of a tensor-core `dot` must be in the layout",
    );
    // `precision = tf32` is for f32 operands only.
    rejects(
        "  %0 = constant 0.0 : f16
  %1 = splat %0 : tensor<8x16xf16>
  %2 = splat %0 : tensor<16x4xf16>
  %3 = constant 0.0 : f32
  %4 = splat %3 : tensor<8x4xf32>
  %5 = dot {precision = tf32} %1, %2, %4 : tensor<8x4xf32>
  return",
        "`precision = tf32` applies to f32 operands",
    );
    // An unknown precision does not parse.
    let text = format!(
        "{HEADER}\n{}\n}}\n",
        ok.replace("precision = tf32", "precision = tf16")
    );
    let e = parse(&text).expect_err("an unknown precision parsed");
    assert!(e.msg.contains("unknown precision `tf16`"), "{e}");
}

#[test]
fn kernel_target() {
    let text = |attrs: &str| {
        format!("kernel @k(%p: ptr<f32>) attributes {{num_warps = 4{attrs}}} {{\n  return\n}}\n")
    };
    for ok in [", target = sm_90a", ", num_stages = 3, target = sm_80"] {
        let f = parse(&text(ok)).unwrap();
        verify(&f).unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert_eq!(print(&parse(&print(&f)).unwrap()), print(&f), "round trip");
    }
    assert_eq!(
        parse(&text(", target = sm_90a")).unwrap().target,
        Some(tile_core::Target::Sm90a)
    );
    for bad in ["hopper", "sm_100a"] {
        let e = parse(&text(&format!(", target = {bad}"))).expect_err("an unknown target parsed");
        assert!(
            e.msg
                .contains(&format!("`{bad}` is not a target tile compiles for")),
            "{e}"
        );
    }
    let e = parse(&text(", stages = 3")).expect_err("an unknown attribute parsed");
    assert!(e.msg.contains("unknown kernel attribute `stages`"), "{e}");
}

#[test]
fn unknown_layout_alias() {
    let text = format!("{HEADER}\n  %0 = arange {{start = 0, end = 128}} : tensor<128xi32, #blocked7>\n  return\n}}\n");
    let e = parse(&text).expect_err("an undefined alias parsed");
    assert!(e.msg.contains("unknown layout `#blocked7`"), "{e}");
}

#[test]
fn shared_memory_ops() {
    let mma = "#mma<version = 2, wpc = [2, 2]>";
    let blocked = "#blocked<spt = [1, 8], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>";
    let sh = "#shared<vec = 8, per_phase = 2, max_phase = 4>";
    let header = "kernel @k(%a: ptr<f16>, %n: i32) attributes {num_warps = 4, num_stages = 3} {";
    // A 3-stage ring (3 is not a power of two: stages may be any count), one copy, a wait, a
    // barrier and an ldmatrix read; round trips through the printer with aliases.
    let ok = format!(
        "{header}
  %0 = local_alloc : smem<3x64x32xf16, {sh}>
  %1 = constant 1 : i32
  %2 = splat %a : tensor<64x32xptr<f16>, {blocked}>
  %3 = constant 1 : i1
  %4 = splat %3 : tensor<64x32xi1, {blocked}>
  async_copy {{vec = 8}} %0, %1, %2, %4
  async_commit
  async_wait {{pending = 1}}
  barrier
  %5 = local_load %0, %1 : tensor<64x32xf16, #dot_op<idx = 0, parent = {mma}, k_width = 2>>
  return
}}
"
    );
    let f = parse(&ok).unwrap();
    verify(&f).unwrap_or_else(|e| panic!("{e}"));
    let printed = print(&f);
    assert!(printed.contains("num_stages = 3"), "{printed}");
    assert!(printed.contains("smem<3x64x32xf16, #shared0>"), "{printed}");
    assert_eq!(print(&parse(&printed).unwrap()), printed, "round trip");

    let reject = |from: &str, to: &str, expected: &str| {
        rejects_kernel(&ok.replace(from, to), expected);
    };
    // The swizzle: 16-byte chunks.
    reject(
        "vec = 8, per_phase",
        "vec = 4, per_phase",
        "the swizzle needs 16- or 32-byte chunks",
    );
    // The copy's pointers must be one stage of the buffer.
    reject(
        "%2 = splat %a : tensor<64x32xptr<f16>",
        "%2 = splat %a : tensor<32x64xptr<f16>",
        "`async_copy` needs pointers to one stage",
    );
    // The stage is an i32 scalar.
    reject(
        "%1 = constant 1 : i32",
        "%1 = constant 1 : i1",
        "the stage of `async_copy` must be an `i32` scalar",
    );
    // 2-byte elements, 2 at a time: 4 bytes is a cp.async size; 8 elements at once need runs of 8.
    reject(
        "async_copy {vec = 8}",
        "async_copy {vec = 16}",
        "vec = 16 does not divide",
    );
    // local_load reads into an operand layout, or a whole stage as stored into a distributed
    // layout (a side ring read back where its load was).
    let operand = format!("tensor<64x32xf16, #dot_op<idx = 0, parent = {mma}, k_width = 2>>");
    for layout in [blocked, mma] {
        let whole = ok.replace(&operand, &format!("tensor<64x32xf16, {layout}>"));
        verify(&parse(&whole).unwrap()).unwrap_or_else(|e| panic!("{e}\n{whole}"));
    }
    reject(
        &operand,
        &format!("tensor<32x32xf16, {blocked}>"),
        "`local_load` into a distributed layout reads a whole stage",
    );
    reject(
        &format!("local_load %0, %1 : {operand}"),
        &format!("local_load {{trans = true}} %0, %1 : tensor<32x64xf16, {mma}>"),
        "`local_load` into a distributed layout reads a whole stage",
    );
    reject(
        &operand,
        &format!("tensor<64x32xf16, #slice<dim = 0, parent = {blocked}>>"),
        "`local_load` reads a window of one stage",
    );
    // A window: one of the tiles of its shape (offset a multiple of its extent, inside the stage).
    let window = |offset: &str, shape: &str| {
        ok.replace(
            "local_load %0, %1 : tensor<64x32xf16",
            &format!("local_load {{offset = {offset}}} %0, %1 : tensor<{shape}xf16"),
        )
    };
    for (offset, shape, good) in [
        ("[0, 16]", "64x16", true),
        ("[32, 0]", "32x32", true),
        ("[0, 8]", "64x16", false),
        ("[0, 32]", "64x16", false),
        ("[0, 0]", "64x64", false),
    ] {
        let text = window(offset, shape);
        let parsed = parse(&text).unwrap_or_else(|e| panic!("{e}"));
        let printed = print(&parsed);
        // A window at the origin prints as the plain form.
        let shown =
            offset == "[0, 0]" || printed.contains(&format!("local_load {{offset = {offset}}}"));
        assert!(shown, "{printed}");
        assert_eq!(print(&parse(&printed).unwrap()), printed, "round trip");
        let found = verify(&parsed)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            found.contains("is not one of the tiles"),
            !good,
            "{offset} {shape}: {found}"
        );
    }
    // An f32 buffer reads into a tf32 (k_width 1) operand layout, not a 16-bit one.
    let f32_ring = ok
        .replace("ptr<f16>", "ptr<f32>")
        .replace("x32xf16", "x32xf32")
        .replace("vec = 8, per_phase = 2", "vec = 4, per_phase = 1")
        .replace("async_copy {vec = 8}", "async_copy {vec = 4}");
    verify(&parse(&f32_ring.replace("k_width = 2", "k_width = 1")).unwrap())
        .unwrap_or_else(|e| panic!("{e}"));
    rejects_kernel(&f32_ring, "`local_load` reads a window of one stage");
    // Only local_alloc makes a buffer.
    reject(
        &format!("%0 = local_alloc : smem<3x64x32xf16, {sh}>"),
        &format!("%0 = local_alloc : tensor<64x32xf16, {blocked}>"),
        "`local_alloc` yields an `smem` buffer",
    );
    // A register tensor never has a shared layout.
    let text = format!(
        "{HEADER}\n  %0 = constant 0.0 : f32\n  %1 = splat %0 : tensor<64x32xf32, {sh}>\n  return\n}}\n"
    );
    let e = parse(&text).expect_err("a tensor with a shared layout parsed");
    assert!(
        e.msg
            .contains("`smem<…>` is the type with a `#shared` layout"),
        "{e}"
    );
}

/// `warp_group_dot` of 8-bit operands (8-bit floats in any pairing, or `i8` into `i32`): read
/// K-major only (`trans_b`, no `trans_a`), in the 8-bit `wgmma` layout.
#[test]
fn warp_group_dot_of_8bit_operands() {
    let mma = "#mma<version = 3, wpc = [4, 1]>";
    let l = tile_core::ir::SharedLayout::wgmma(64, 1).to_string();
    let header = "kernel @k(%n: i32) attributes {num_warps = 4, target = sm_90a} {";
    let ok = format!(
        "{header}
  %0 = local_alloc : smem<3x64x64xf8e4m3, {l}>
  %1 = local_alloc : smem<3x64x64xf8e5m2, {l}>
  %2 = constant 1 : i32
  %3 = constant 0.0 : f32
  %4 = splat %3 : tensor<64x64xf32, {mma}>
  %6 = warp_group_dot {{trans_b = true}} %0, %2, %1, %2, %4 : tensor<64x64xf32, {mma}>
  %7 = warp_group_wait {{pending = 0}} %6 : tensor<64x64xf32, {mma}>
  return
}}
"
    );
    let f = parse(&ok).unwrap_or_else(|e| panic!("{e}"));
    verify(&f).unwrap_or_else(|e| panic!("{e}"));
    let reject = |from: &str, to: &str, expected: &str| {
        rejects_kernel(&ok.replace(from, to), expected);
    };
    // `B` read N-major, or `A` M-major: the 8-bit forms have no transpose.
    reject("{trans_b = true}", "", "reads 8-bit operands K-major only");
    reject(
        "{trans_b = true}",
        "{trans_a = true, trans_b = true}",
        "reads 8-bit operands K-major only",
    );
    // An 8-bit float by an f16 stage.
    reject(
        "smem<3x64x64xf8e5m2",
        "smem<3x64x64xf16",
        "multiplies an f16 or bf16 `M × K` operand",
    );
    // `i8` by `i8` accumulates in `i32`, not `f32`.
    let s8 = ok.replace("xf8e4m3,", "xi8,").replace("xf8e5m2,", "xi8,");
    rejects_kernel(
        &s8,
        "the accumulator of `warp_group_dot` is i32 in an mma layout of version 3",
    );
    let s8_ok = s8
        .replace("%3 = constant 0.0 : f32", "%3 = constant 0 : i32")
        .replace("x64xf32,", "x64xi32,");
    let f = parse(&s8_ok).unwrap_or_else(|e| panic!("{e}"));
    verify(&f).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn warp_group_ops() {
    let mma = "#mma<version = 3, wpc = [4, 1]>";
    let blocked = "#blocked<spt = [1, 8], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>";
    let sa = "#shared<vec = 8, per_phase = 1, max_phase = 8>";
    let sb = "#shared<vec = 8, per_phase = 1, max_phase = 8, block = 64>";
    let header = "kernel @k(%a: ptr<f16>, %n: i32) attributes {num_warps = 4, target = sm_90a} {";
    // Two rings in their `wgmma` layouts (B cut into 64-column blocks), a fence, a group and
    // its waits; round trips with the block printed.
    let ok = format!(
        "{header}
  %0 = local_alloc : smem<3x64x64xf16, {sa}>
  %1 = local_alloc : smem<3x64x128xf16, {sb}>
  %2 = constant 1 : i32
  %3 = constant 0.0 : f32
  %4 = splat %3 : tensor<64x128xf32, {mma}>
  %5 = splat %a : tensor<64x64xptr<f16>, {blocked}>
  async_copy {{vec = 8}} %0, %2, %5
  async_commit
  async_wait {{pending = 0}}
  fence_async_shared
  barrier
  %6 = warp_group_dot %0, %2, %1, %2, %4 : tensor<64x128xf32, {mma}>
  %7 = warp_group_wait {{pending = 1}} %6 : tensor<64x128xf32, {mma}>
  %8 = warp_group_wait {{pending = 0}} %7 : tensor<64x128xf32, {mma}>
  return
}}
"
    );
    let f = parse(&ok).unwrap_or_else(|e| panic!("{e}"));
    verify(&f).unwrap_or_else(|e| panic!("{e}"));
    let printed = print(&f);
    assert!(printed.contains("block = 64>"), "{printed}");
    assert_eq!(print(&parse(&printed).unwrap()), printed, "round trip");
    let reject = |from: &str, to: &str, expected: &str| {
        rejects_kernel(&ok.replace(from, to), expected);
    };
    // The operands' buffers must be in the `wgmma` layout (B's rows are 256 bytes: blocks).
    reject(sb, sa, "reads buffers in their `wgmma` layouts");
    // A block is a power of two below the columns.
    reject(
        "block = 64",
        "block = 128",
        "a column block is a power of two below",
    );
    // The shapes must chain: A's K is B's rows.
    reject(
        "smem<3x64x128xf16",
        "smem<3x32x128xf16",
        "multiplies an f16 or bf16 `M × K` operand by a `K × N` stage",
    );
    // The accumulator is f32 in a version-3 mma layout.
    reject(
        &format!("%4 = splat %3 : tensor<64x128xf32, {mma}>"),
        "%4 = splat %3 : tensor<64x128xf32, #mma<version = 2, wpc = [4, 1]>>",
        "the accumulator of `warp_group_dot` is f32 in an mma layout of version 3",
    );
    // With `trans_b` the `B` stage is `N × K`: its 128 columns would be K, not A's 64.
    reject(
        "%6 = warp_group_dot %0, %2, %1, %2, %4",
        "%6 = warp_group_dot {trans_b = true} %0, %2, %1, %2, %4",
        "multiplies an f16 or bf16 `M × K` operand by a `K × N` stage",
    );
    // With `trans_a` the `A` stage is `K × M` (square here: the same shapes), read M-major.
    let ta = ok.replace(
        "%6 = warp_group_dot %0, %2, %1, %2, %4",
        "%6 = warp_group_dot {trans_a = true} %0, %2, %1, %2, %4",
    );
    let f = parse(&ta).unwrap_or_else(|e| panic!("{e}"));
    verify(&f).unwrap_or_else(|e| panic!("{e}"));
    assert!(print(&f).contains("{trans_a = true}"));
    reject(
        "%6 = warp_group_dot %0, %2, %1, %2, %4",
        "%6 = warp_group_dot %0, %2, %4",
        "`warp_group_dot` takes 4 or 5 operand(s), found 3",
    );
    reject(
        &format!("%7 = warp_group_wait {{pending = 1}} %6 : tensor<64x128xf32, {mma}>"),
        "%7 = warp_group_wait {pending = 1} %6 : tensor<64x128xf32, #mma<version = 2, wpc = [4, 1]>>",
        "`warp_group_wait` yields its operand's type",
    );
}

#[test]
fn atomics_pointee_values_and_mask() {
    accepts("  %0 = constant 1.0 : f32\n  %1 = atomic_rmw add %p, %0 : f32\n  %2 = constant 1 : i32\n  %3 = atomic_cas %q, %2, %n : i32\n  return");
    rejects(
        "  %0 = constant 1 : i32\n  %1 = atomic_rmw xor %p, %0 : f32\n  return",
        "atomic `xor` does not take `f32`",
    );
    rejects(
        "  %0 = constant 1 : i32\n  %1 = atomic_rmw add %p, %0 : f32\n  return",
        "the atomic's value must be `f32`, found `i32`",
    );
    rejects(
        "  %0 = atomic_rmw max %n, %n : i32\n  return",
        "operand #0 of an atomic must be a pointer",
    );
    rejects(
        "  %0 = atomic_cas %q, %n : i32\n  return",
        "`atomic_cas` takes 3 or 4 operand(s), found 2",
    );
    rejects(
        "  %0 = constant 1 : i32\n  %1 = atomic_rmw add %q, %0, %0 : i32\n  return",
        "the mask must be `i1`, found `i32`",
    );
}

#[test]
fn scan_axis_and_type() {
    accepts("  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = scan sum {axis = 0} %0 : tensor<4xi32>\n  return");
    rejects(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = scan sum {axis = 1} %0 : tensor<4xi32>\n  return",
        "axis 1 is out of range for `tensor<4xi32>`",
    );
    rejects(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = scan max {axis = 0} %0 : tensor<4xf32>\n  return",
        "the result must be `tensor<4xi32>`",
    );
    rejects(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = cast %0 : tensor<4xf16>\n  %2 = scan sum {axis = 0} %1 : tensor<4xf16>\n  return",
        "scans take 32- or 64-bit integers or f32, found `f16`",
    );
}

#[test]
fn associative_scan_operands_combiner_and_results() {
    // A linear recurrence over an (f32, f32) pair: round trip, and each rule broken once.
    let scan = |results: &str, args: &str, body: &str| {
        format!(
            "  %0 = arange {{start = 0, end = 8}} : tensor<8xi32>
  %1 = cast %0 : tensor<8xf32>
  %2 = constant 2.0 : f32
  {results} = associative_scan {{axis = 0}} %1, %1 : tensor<8xf32>, tensor<8xf32> {{
  ^bb0({args}):
{body}
  }}
  return"
        )
    };
    let args = "%5: f32, %6: f32, %7: f32, %8: f32";
    let body = "    %9 = mul %5, %7 : f32\n    %10 = mul %6, %7 : f32\n    %11 = add %10, %8 : f32\n    yield %9, %11";
    accepts(&scan("%3, %4", args, body));
    // A scalar from before the op may be used in the combiner.
    accepts(&scan(
        "%3, %4",
        args,
        "    %9 = mul %5, %7 : f32\n    %10 = mul %6, %2 : f32\n    %11 = add %10, %8 : f32\n    yield %9, %11",
    ));
    rejects(
        &scan("%3, %4", "%5: f32, %6: f32, %7: f32", "    yield %5, %6"),
        "the combiner's arguments must be two tuples of scalars",
    );
    rejects(
        &scan("%3, %4", args, "    %9 = cast %5 : i32\n    yield %9, %6"),
        "the combiner must yield one scalar of each operand's element type",
    );
    rejects(
        &scan(
            "%3, %4",
            args,
            "    %9 = splat %5 : tensor<8xf32>\n    %10 = reduce sum {axis = 0} %9 : f32\n    yield %10, %6",
        ),
        "a combiner holds element-wise ops on scalars only, found `splat`",
    );
    rejects(
        &scan(
            "%3, %4",
            args,
            "    %9 = add %1, %1 : tensor<8xf32>\n    yield %5, %6",
        ),
        "a combiner's ops take and give scalar numbers only (`add`)",
    );
    rejects(
        &scan("%3, %4", args, "    %9 = mul %5, %7 : f32"),
        "the combiner must end with `yield`",
    );
    rejects(
        &scan("%3, %4", args, body).replace(
            ": tensor<8xf32>, tensor<8xf32> {",
            ": tensor<8xf32>, tensor<8xi32> {",
        ),
        "the results of `associative_scan` must have the types of its operands",
    );
    rejects(
        &scan("%3, %4", args, body).replace("{axis = 0}", "{axis = 1}"),
        "axis 1 is out of range for `tensor<8xf32>`",
    );
    rejects(
        "  %0 = arange {start = 0, end = 8} : tensor<8xi32>
  %1 = cast %0 : tensor<8xf16>
  %2 = associative_scan {axis = 0} %1 : tensor<8xf16> {
  ^bb0(%3: f16, %5: f16):
    yield %5
  }
  return",
        "associative scans take 32- or 64-bit integers or f32, found `f16`",
    );
}

/// An error names the op by its id, carries the op's source location, and quotes the op's own
/// line as the printer writes it: value names as in the kernel's text, layouts spelled out.
#[test]
fn errors_name_and_print_the_op() {
    let l = "#blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>";
    let text = format!(
        "{HEADER}\n  %0 = arange {{start = 0, end = 128}} : tensor<128xi32, {l}>\n  %1 = splat %n : tensor<128xi32, {l}>\n  %2 = cmp lt %0, %1 : tensor<128xi32, {l}>\n  return\n}}\n"
    );
    let mut f = parse(&text).unwrap();
    let cmp = f.walk()[2];
    f.ops[cmp.index()].loc = Some(7);
    let errs = verify(&f)
        .expect_err("a `cmp` with an i32 result verified")
        .0;
    assert_eq!(errs.len(), 1, "{errs:?}");
    let e = &errs[0];
    assert_eq!(e.op, Some(cmp));
    assert_eq!(e.loc, Some(7));
    assert_eq!(
        e.op_text,
        format!("%2 = cmp lt %0, %1 : tensor<128xi32, {l}>")
    );
    assert_eq!(
        e.to_string(),
        format!("{cmp} `%2 = cmp lt %0, %1 : tensor<128xi32, {l}>`: the result must be `tensor<128xi1, {l}>`")
    );
    // An op inside a region: its line alone, named as in the whole text (after the loop's
    // arguments), without the region.
    rejects(
        "  %0 = constant 0 : i32\n  %1 = constant 4 : i32\n  %2 = constant 1 : i32\n  %3 = for %0, %1, %2, %0 : i32 {\n  ^bb0(%4: i32, %5: i32):\n    %6 = add %5, %4 : i64\n    yield %6\n  }\n  return",
        "`%6 = add %5, %4 : i64`: operand type `i32` differs from `i64`",
    );
    rejects(
        "  %0 = constant 0 : i32\n  %1 = constant 4 : i32\n  %2 = constant 1 : i32\n  %3 = for %0, %1, %2, %0 : i64 {\n  ^bb0(%4: i32, %5: i32):\n    yield %5\n  }\n  return",
        "`%3 = for %0, %1, %2, %0 : i64`: the results of `for` must have the types",
    );
    // A use before its definition names the value the kernel's text gives it.
    let mut f = Function::new("k", vec![("n".into(), Type::scalar(DType::I32))], 4);
    let b = f.entry();
    let n = f.params()[0];
    let add = f.push_op(
        b,
        OpKind::Binary(tile_core::ir::BinOp::Add),
        vec![n, n],
        vec![Type::scalar(DType::I32)],
    );
    let r = f.op(add).results[0];
    f.ops[add.index()].operands[1] = r;
    f.push_op(b, OpKind::Return, vec![], vec![]);
    let e = verify(&f).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "{add} `%0 = add %n, %0 : i32`: operand #1 is used before it is defined"
        )),
        "{e}"
    );
}

/// Locations carried across print and parse go back op by op; a function with another number of
/// ops is an error, not a silent no-op.
#[test]
fn set_locs_needs_the_same_ops() {
    let text =
        format!("{HEADER}\n  %0 = constant 1 : i32\n  %1 = add %0, %n : i32\n  return\n}}\n");
    let mut f = parse(&text).unwrap();
    let locs = vec![Some(3), None, Some(5)];
    f.set_locs(&locs).unwrap();
    assert_eq!(f.locs(), locs);
    let mut g = parse(&print(&f)).unwrap();
    g.set_locs(&f.locs()).unwrap();
    assert_eq!(g.locs(), locs);
    let e = g.set_locs(&locs[..2]).unwrap_err();
    assert_eq!((e.ops, e.locs), (3, 2));
    assert_eq!(
        e.to_string(),
        "2 source locations for 3 ops: they belong to another function"
    );
    assert_eq!(g.locs(), locs, "a mismatch sets nothing");
}

#[test]
fn hint_takes_integers_and_powers_of_two() {
    rejects(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = cast %0 : tensor<4xf32>\n  %2 = hint {multiple_of = 4} %1 : tensor<4xf32>\n  return",
        "`hint` takes integers, found `tensor<4xf32>`",
    );
    // A scalar (what `version-alignment` hints: a loaded address or stride).
    accepts("  %0 = constant 64 : i64\n  %1 = hint {multiple_of = 16} %0 : i64\n  return");
    rejects(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = hint {contiguous = 3} %0 : tensor<4xi32>\n  return",
        "are powers of two",
    );
    rejects(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = hint {contiguous = 4} %0 : tensor<4xi64>\n  return",
        "the result must be `tensor<4xi32>`",
    );
    accepts("  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = hint {multiple_of = 4, contiguous = 4} %0 : tensor<4xi32>\n  return");
}

/// Rule 30: `trans` takes a 2-D tensor and swaps its extents; at the GPU level the result's
/// layout is the operand's transposed (a blocked layout with its dimensions swapped, or a
/// general linear layout).
#[test]
fn trans_shape_type_and_layout() {
    accepts(
        "  %0 = arange {start = 0, end = 16} : tensor<16xi32>
  %1 = expand_dims {axis = 1} %0 : tensor<16x1xi32>
  %2 = broadcast %1 : tensor<16x4xi32>
  %3 = trans %2 : tensor<4x16xi32>
  return",
    );
    rejects(
        "  %0 = arange {start = 0, end = 16} : tensor<16xi32>
  %1 = trans %0 : tensor<16xi32>
  return",
        "`trans` takes a 2-D tensor",
    );
    rejects(
        "  %0 = arange {start = 0, end = 16} : tensor<16xi32>
  %1 = expand_dims {axis = 1} %0 : tensor<16x1xi32>
  %2 = trans %1 : tensor<16x1xi32>
  return",
        "the result must be `tensor<1x16xi32>`",
    );
    let b = "#blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>";
    let bt = "#blocked<spt = [4, 1], tpw = [8, 4], wpc = [1, 4], order = [0, 1]>";
    let gpu = |result: &str| {
        format!(
            "  %0 = arange {{start = 0, end = 16}} : tensor<16xi32, #slice<dim = 1, parent = {b}>>
  %1 = expand_dims {{axis = 1}} %0 : tensor<16x1xi32, {b}>
  %2 = broadcast %1 : tensor<16x32xi32, {b}>
  %3 = trans %2 : tensor<32x16xi32, {result}>
  return"
        )
    };
    accepts(&gpu(bt));
    // The same map written as a linear layout (registers renumbered at most) is accepted too.
    let linear = "#linear<shape = [32, 16], reg = [[1, 0], [2, 0]], lane = [[4, 0], [8, 0], [16, 0], [0, 1], [0, 2]], warp = [[0, 4], [0, 8]]>";
    accepts(&gpu(linear));
    let swapped_regs = "#linear<shape = [32, 16], reg = [[2, 0], [1, 0]], lane = [[4, 0], [8, 0], [16, 0], [0, 1], [0, 2]], warp = [[0, 4], [0, 8]]>";
    accepts(&gpu(swapped_regs));
    rejects_kernel(
        &format!("{HEADER}\n{}\n}}\n", gpu(b)),
        "the result's layout must be the operand's transposed layout",
    );
}

/// Rule 31: `reshape` keeps the element type and count, rank 2 at most; at the GPU level the
/// result's layout is the operand's relabeled.
#[test]
fn reshape_count_type_and_layout() {
    accepts(
        "  %0 = arange {start = 0, end = 128} : tensor<128xi32>
  %1 = reshape %0 : tensor<8x16xi32>
  %2 = reshape %1 : tensor<16x8xi32>
  %3 = reshape %2 : tensor<128xi32>
  return",
    );
    rejects(
        "  %0 = arange {start = 0, end = 128} : tensor<128xi32>
  %1 = reshape %0 : tensor<8x8xi32>
  return",
        "`reshape` keeps the element type and count",
    );
    rejects(
        "  %0 = arange {start = 0, end = 128} : tensor<128xi32>
  %1 = reshape %0 : tensor<128xf32>
  return",
        "`reshape` keeps the element type and count",
    );
    rejects(
        "  %0 = arange {start = 0, end = 128} : tensor<128xi32>
  %1 = reshape %0 : tensor<2x4x16xi32>
  return",
        "rank > 2",
    );
    let l = "#blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>";
    let gpu = |result: &str| {
        format!(
            "  %0 = arange {{start = 0, end = 128}} : tensor<128xi32, {l}>
  %1 = reshape %0 : tensor<8x16xi32, {result}>
  return"
        )
    };
    accepts(&gpu(
        "#linear<shape = [8, 16], reg = [], lane = [[0, 1], [0, 2], [0, 4], [0, 8], [1, 0]], warp = [[2, 0], [4, 0]]>",
    ));
    rejects_kernel(
        &format!(
            "{HEADER}\n{}\n}}\n",
            gpu("#blocked<spt = [1, 1], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>")
        ),
        "the result's layout must be the operand's reshaped layout",
    );
}

/// Rule 37: `interleave` takes two tensors of one type and doubles the last extent;
/// `deinterleave` halves an even last extent into two results of one type; at the GPU level the
/// interleaved side's layout is the halves' with every basis doubled and the pair in registers.
#[test]
fn interleave_and_deinterleave_shapes_types_and_layouts() {
    accepts(
        "  %0 = arange {start = 0, end = 64} : tensor<64xi32>
  %1 = interleave %0, %0 : tensor<128xi32>
  %2, %3 = deinterleave %1 : tensor<64xi32>, tensor<64xi32>
  %4 = reshape %1 : tensor<8x16xi32>
  %5 = interleave %4, %4 : tensor<8x32xi32>
  return",
    );
    rejects(
        "  %0 = arange {start = 0, end = 64} : tensor<64xi32>
  %1 = cast %0 : tensor<64xf32>
  %2 = interleave %0, %1 : tensor<128xi32>
  return",
        "`interleave` takes two tensors of one type",
    );
    rejects(
        "  %0 = arange {start = 0, end = 64} : tensor<64xi32>
  %1 = interleave %0, %0 : tensor<64xi32>
  return",
        "the result must be `tensor<128xi32>`",
    );
    rejects(
        "  %0 = arange {start = 0, end = 64} : tensor<64xi32>
  %1 = reshape %0 : tensor<64x1xi32>
  %2, %3 = deinterleave %1 : tensor<64x1xi32>, tensor<64x1xi32>
  return",
        "`deinterleave` takes a tensor whose last extent is even",
    );
    rejects(
        "  %0 = arange {start = 0, end = 64} : tensor<64xi32>
  %1, %2 = deinterleave %0 : tensor<32xi32>, tensor<16xi32>
  return",
        "both results must be `tensor<32xi32>`",
    );
    let l = "#blocked<spt = [2], tpw = [32], wpc = [4], order = [0]>";
    // Two registers per thread become four: the pair's basis first, the others doubled.
    let doubled = "#linear<shape = [512], reg = [[1], [2]], lane = [[4], [8], [16], [32], [64]], warp = [[128], [256]]>";
    let gpu = |result: &str| {
        format!(
            "  %0 = arange {{start = 0, end = 256}} : tensor<256xi32, {l}>
  %1 = interleave %0, %0 : tensor<512xi32, {result}>
  %2, %3 = deinterleave %1 : tensor<256xi32, {l}>, tensor<256xi32, {l}>
  return"
        )
    };
    accepts(&gpu(doubled));
    // So is a blocked layout of four consecutive elements per thread: the same map.
    accepts(&gpu(
        "#blocked<spt = [4], tpw = [32], wpc = [4], order = [0]>",
    ));
    rejects(
        &gpu("#blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>"),
        "the result's layout must be the operands' interleaved layout",
    );
}

/// Rule 4 for linear layouts: the tensor's rank, extents at least the tensor's, every element
/// reached once; a smaller tensor takes the layout cut to its extents.
#[test]
fn linear_layouts() {
    let ok = "#linear<shape = [8, 16], reg = [], lane = [[0, 1], [0, 2], [0, 4], [0, 8], [1, 0]], warp = [[2, 0], [4, 0]]>";
    // A `1 × 16` operand of `broadcast` in the layout of its `8 × 16` result.
    accepts(&format!(
        "  %0 = constant 1 : i32
  %1 = splat %0 : tensor<1x16xi32, {ok}>
  %2 = broadcast %1 : tensor<8x16xi32, {ok}>
  return"
    ));
    rejects(
        &format!(
            "  %0 = constant 1 : i32
  %1 = splat %0 : tensor<16x16xi32, {ok}>
  return"
        ),
        "does not cover a tensor of shape [16, 16]",
    );
    rejects(
        &format!(
            "  %0 = constant 1 : i32
  %1 = splat %0 : tensor<128xi32, {ok}>
  return"
        ),
        "does not have the tensor's rank 1",
    );
    let twice = "#linear<shape = [8, 16], reg = [], lane = [[0, 1], [0, 1], [0, 4], [0, 8], [1, 0]], warp = [[2, 0], [4, 0]]>";
    rejects(
        &format!(
            "  %0 = constant 1 : i32
  %1 = splat %0 : tensor<8x16xi32, {twice}>
  return"
        ),
        "two bit patterns select the same element",
    );
    let text = format!(
        "{HEADER}\n  %0 = constant 1 : i32\n  %1 = splat %0 : tensor<8x16xi32, #linear<shape = [8, 16], reg = [[8, 0]], lane = [], warp = []>>\n  return\n}}\n"
    );
    let e = parse(&text)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains("basis [8, 0] is not an index of shape [8, 16]"),
        "{e}"
    );
}

#[test]
fn tma_ops() {
    let sa = "#shared<vec = 8, per_phase = 1, max_phase = 8>";
    let sbar = "#shared<vec = 2, per_phase = 1, max_phase = 1>";
    let header = "kernel @k(%a: ptr<f16>, %n: i32) attributes {num_warps = 4, target = sm_90a} {";
    // A ring of one descriptor's tiles, its barriers, a copy announced, issued and waited for.
    let ok = format!(
        "{header}
  %0 = local_alloc : smem<3x64x64xf16, {sa}>
  %1 = local_alloc : smem<3x1x2xi64, {sbar}>
  %2 = constant 1 : i32
  %3 = constant 1 : i1
  mbarrier_init %1
  barrier
  mbarrier_expect {{bytes = 8192}} %1, %2, %3
  tma_load {{slot = 0}} %0, %2, %1, %3, %n, %2
  mbarrier_wait %1, %2, %2
  mbarrier_inval %1
  return
}}
"
    );
    let mut f = parse(&ok).unwrap_or_else(|e| panic!("{e}"));
    f.desc_slots = 1;
    verify(&f).unwrap_or_else(|e| panic!("{e}"));
    // Without a descriptor slot, the copy has no tensor map.
    rejects_kernel(&ok, "copies through descriptor 0, but the kernel has 0");
    let reject = |from: &str, to: &str, expected: &str| {
        let mut f = parse(&ok.replace(from, to)).unwrap_or_else(|e| panic!("{e}"));
        f.desc_slots = 1;
        let all = verify(&f)
            .expect_err("the verifier accepted a broken kernel")
            .to_string();
        assert!(
            all.contains(expected),
            "expected `{expected}` among:\n{all}"
        );
    };
    reject(
        "smem<3x1x2xi64",
        "smem<3x1x2xi32",
        "needs a barrier buffer `smem<S x 1 x 2 x i64>`",
    );
    reject(
        "{bytes = 8192}",
        "{bytes = 0}",
        "`mbarrier_expect` announces no bytes",
    );
    reject(
        "mbarrier_wait %1, %2, %2",
        "mbarrier_wait %1, %2, %3",
        "the phase of `mbarrier_wait` must be an `i32` scalar",
    );
    reject(
        "tma_load {slot = 0} %0, %2, %1, %3, %n, %2",
        "tma_load {slot = 0} %0, %2, %1, %2, %n, %2",
        "the predicate of `tma_load` must be an `i1` scalar",
    );
    reject(
        "tma_load {slot = 0} %0, %2, %1, %3, %n, %2",
        "tma_load {slot = 0} %0, %2, %1, %3, %n",
        "`tma_load` takes 6 operand(s), found 5",
    );
}

#[test]
fn descriptor_accesses() {
    let header = "kernel @k(%p: ptr<f16>, %q: ptr<f32>, %m: i64, %n: i32) attributes {num_warps = 4, descriptors = 2} {";
    let ok = format!(
        "{header}
  %0 = constant 1 : i64
  %1 = constant 0 : i32
  %2 = desc_load {{slot = 0}} %p, %m, %m, %m, %0, %n, %1 : tensor<16x32xf16>
  desc_store {{slot = 1}} %p, %m, %m, %m, %0, %1, %n, %2
  %3 = desc_load {{slot = 1}} %q, %m, %0, %1 : tensor<64xf32>
  return
}}
"
    );
    let f = parse(&ok).unwrap();
    assert_eq!(f.desc_slots, 2);
    verify(&f).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(print(&f), ok, "round trip");

    let reject = |from: &str, to: &str, expected: &str| {
        let text = ok.replace(from, to);
        assert_ne!(text, ok, "`{from}` not found");
        rejects_kernel(&text, expected);
    };
    // The slot is one of the kernel's descriptors.
    reject(
        "descriptors = 2",
        "descriptors = 1",
        "slot 1 is not a descriptor of the kernel, which has 1",
    );
    // Rank 1 or 2.
    reject(
        "%3 = desc_load {slot = 1} %q, %m, %0, %1 : tensor<64xf32>",
        "%3 = desc_load {slot = 1} %q, %m, %0, %1 : f32",
        "the result of `desc_load` must be a tensor of rank 1 or 2, found `f32`",
    );
    // One extent, stride and coordinate per dimension.
    reject(
        "%q, %m, %0, %1 : tensor<64xf32>",
        "%q, %m, %0, %1, %1 : tensor<64xf32>",
        "`desc_load` takes 4 operand(s), found 5",
    );
    reject(
        "%0, %1, %n, %2",
        "%0, %1, %2",
        "`desc_store` takes 8 operand(s), found 7",
    );
    // A scalar pointer to the tile's element type.
    reject(
        "%3 = desc_load {slot = 1} %q,",
        "%3 = desc_load {slot = 1} %p,",
        "the result's element type `f32` is not the pointee `f16` of `ptr<f16>`",
    );
    reject(
        "%3 = desc_load {slot = 1} %q,",
        "%3 = desc_load {slot = 1} %m,",
        "operand #0 of `desc_load` must be a scalar pointer, found `i64`",
    );
    reject(
        "desc_store {slot = 1} %p,",
        "desc_store {slot = 1} %q,",
        "the stored value's element type `f16` is not the pointee `f32` of `ptr<f32>`",
    );
    // Extents and strides `i64`, coordinates `i32`.
    reject(
        "%q, %m, %0, %1 :",
        "%q, %n, %0, %1 :",
        "operand #1 of `desc_load` is an extent: an `i64` scalar, found `i32`",
    );
    reject(
        "%q, %m, %0, %1 :",
        "%q, %m, %1, %1 :",
        "operand #2 of `desc_load` is a stride: an `i64` scalar, found `i32`",
    );
    reject(
        "%q, %m, %0, %1 :",
        "%q, %m, %0, %0 :",
        "operand #3 of `desc_load` is a coordinate: an `i32` scalar, found `i64`",
    );
}

#[test]
fn integer_types_shifts_and_bitcasts() {
    accepts(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = cast %0 : tensor<4xu32>\n  %2 = constant 3 : u32\n  %3 = splat %2 : tensor<4xu32>\n  %4 = shr %1, %3 : tensor<4xu32>\n  %5 = shl %4, %3 : tensor<4xu32>\n  %6 = bitcast %5 : tensor<4xf32>\n  %7 = cast %0 : tensor<4xi8>\n  %8 = bitcast %7 : tensor<4xu8>\n  %9 = constant -1 : u64\n  %10 = reduce max {axis = 0} %1 : u32\n  return",
    );
    rejects(
        "  %0 = constant 1.0 : f32\n  %1 = shl %0, %0 : f32\n  return",
        "`shl` takes 32- or 64-bit integers, found `f32`",
    );
    rejects(
        "  %0 = constant 1 : i8\n  %1 = shr %0, %0 : i8\n  return",
        "`shr` takes 32- or 64-bit integers, found `i8`",
    );
    rejects(
        "  %0 = constant 1 : u8\n  %1 = add %0, %0 : u8\n  return",
        "`add` takes 32- or 64-bit integers or f32; cast `u8` first",
    );
    rejects(
        "  %0 = constant 256 : u8\n  return",
        "constant 256 does not fit type `u8`",
    );
    rejects(
        "  %0 = constant -1 : u32\n  return",
        "constant -1 does not fit type `u32`",
    );
    rejects(
        "  %0 = constant 1.0 : f32\n  %1 = bitcast %0 : u64\n  return",
        "`bitcast` keeps the width: `f32` to `u64`",
    );
    rejects(
        "  %0 = constant 1 : i1\n  %1 = bitcast %0 : u8\n  return",
        "`bitcast` reinterprets numbers, not booleans or pointers",
    );
    rejects(
        "  %0 = arange {start = 0, end = 4} : tensor<4xi32>\n  %1 = bitcast %0 : tensor<2xi32>\n  return",
        "`bitcast` keeps the shape",
    );
}

#[test]
fn i8_dot() {
    let mma = "#mma<version = 2, wpc = [2, 2]>";
    let op = |i: u32, kw: u32| format!("#dot_op<idx = {i}, parent = {mma}, k_width = {kw}>");
    // i8 operands in k_width-4 operand layouts, an i32 accumulator; round trips.
    let ok = format!(
        "  %0 = constant 0 : i8
  %1 = splat %0 : tensor<64x32xi8, {}>
  %2 = splat %0 : tensor<32x64xi8, {}>
  %3 = constant 0 : i32
  %4 = splat %3 : tensor<64x64xi32, {mma}>
  %5 = dot %1, %2, %4 : tensor<64x64xi32, {mma}>
  return",
        op(0, 4),
        op(1, 4)
    );
    accepts(&ok);
    // Four K elements per register.
    rejects(
        &ok.replace(&op(0, 4), &op(0, 2)),
        "operand 0 of a tensor-core `dot` must be in the layout",
    );
    // The accumulator is i32.
    let f32_acc = ok
        .replace("%3 = constant 0 : i32", "%3 = constant 0.0 : f32")
        .replace("tensor<64x64xi32", "tensor<64x64xf32");
    rejects(&f32_acc, "the accumulator and the result must be");
}

#[test]
fn storage_floats_and_f64() {
    // 8-bit floats neither negate nor compare; f64 takes sqrt but not exp.
    let neg = "  %0 = constant 1.0 : f8e4m3
  %1 = neg %0 : f8e4m3
  return";
    rejects(neg, "`neg` does not take `f8e4m3`; cast it to `f32` first");
    let cmp = "  %0 = constant 1.0 : f8e5m2
  %1 = cmp lt %0, %0 : i1
  return";
    rejects(cmp, "`cmp` does not take `f8e5m2`; cast it to `f32` first");
    accepts(
        "  %0 = constant 2.0 : f64
  %1 = sqrt %0 : f64
  %2 = cast %1 : f8e4m3
  %3 = cast %2 : f64
  return",
    );
    rejects(
        "  %0 = constant 2.0 : f64
  %1 = exp %0 : f64
  return",
        "`exp` does not take `f64`",
    );
}
