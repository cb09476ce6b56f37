// Found by differential testing (sm_90a): LLVM 19's InstSimplify crashed (a segfault in
// `getInverseMinMaxIntrinsic`, during EarlyCSE) on `maxnum(fma(a, b, a), maxnum(a, b))`: an
// element-wise float `max` of another intrinsic of the same two operands and their `max`. Float
// `min` and `max` are now PTX's `min.f32` / `max.f32` as inline assembly (`opt-19
// -passes=early-cse` still crashes on the same pattern written with `llvm.maxnum`).
// launch: grid 2 1 1; special 1; data 1; x0 f32 2000 0 input exact; x1 f32 2000 3 input exact; y0 f32 2000 1 output 2e-4; y1 f32 2000 0 output 2e-4; n i32 2000; s f32 -1.25e0; seed i32 1
#[tile_kernel]
fn kern(x0: Ptr<f32>, x1: Ptr<f32>, y0: Ptr<f32>, y1: Ptr<f32>, n: i32, s: f32, seed: i32, B: Const<1024>) {
    let offs = program_id(0) * B + arange(0, B);
    let mask = offs < n;
    let a = load(x0 + offs, mask, 0.0);
    let b = load(x1 + offs, mask, 0.0);
    store(y0 + offs, max(fma(a, b, a), max(a, b)), mask);
    store(y1 + offs, min(fma(b, a, s), min(b, a)), mask);
}
