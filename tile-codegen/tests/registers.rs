//! The register-pressure estimate (`tile_codegen::registers`) on GPU-level IR the pipeline
//! builds: what it counts live, and the per-thread register limit.

use tile_codegen::frontend::KernelOptions;
use tile_codegen::pipeline::{compile, DumpConfig};
use tile_codegen::registers::{limit, pressure, Pressure, OVERHEAD};

/// The estimate for `text`'s first variant on its first target, with the name of the op at
/// the peak.
fn estimate(text: &str) -> (Pressure, String) {
    let item: syn::ItemFn = syn::parse_str(text).unwrap();
    let kernels = compile(&item, &KernelOptions::default(), &DumpConfig::default()).unwrap();
    let g = tile_core::ir::parse(&kernels[0].variants[0].targets[0].gpu_ir).unwrap();
    let p = pressure(&g);
    let at =
        p.at.map_or("-".to_string(), |op| g.op(op).kind.name().to_string());
    (p, at)
}

#[test]
fn limits_follow_the_warps() {
    assert_eq!(limit(1), 255);
    assert_eq!(limit(4), 255);
    assert_eq!(limit(8), 255);
    assert_eq!(limit(16), 128);
    assert_eq!(limit(32), 64);
}

/// A 4096-wide f32 row on 4 warps is 32 registers a thread; two rows live at once are twice
/// that, and indices (the offsets, the pointers) cost a few registers, not one per element.
#[test]
fn live_rows_add_up() {
    let one =
        "#[tile_kernel(num_warps = 4)] fn k(x: Ptr<f32, { n * 4096 }>, o: Ptr<f32, n>, n: i32) { \
        let offs = program_id(0) * 4096 + arange(0, 4096); \
        let a = load(x + offs); \
        store(o + program_id(0), a.sum() / a.max()); }";
    let two = "#[tile_kernel(num_warps = 4)] fn k(x: Ptr<f32, { n * 4096 }>, y: Ptr<f32, { n * 4096 }>, o: Ptr<f32, n>, n: i32) { \
        let offs = program_id(0) * 4096 + arange(0, 4096); \
        let a = load(x + offs); \
        let b = load(y + offs); \
        store(o + program_id(0), (a * b).sum() / (a.max() + b.max())); }";
    let (p1, _) = estimate(one);
    let (p2, at) = estimate(two);
    assert!(
        (OVERHEAD + 32..OVERHEAD + 48).contains(&p1.registers),
        "one row: {p1:?}"
    );
    assert!(
        (OVERHEAD + 96..OVERHEAD + 112).contains(&p2.registers),
        "two rows and their product: {p2:?} at {at}"
    );
}

/// A tile loaded before a loop and used after it is live through the loop, beside the loop's
/// own values.
#[test]
fn values_used_after_a_loop_stay_live_through_it() {
    let text = "#[tile_kernel(num_warps = 4)] fn k(x: Ptr<f32, { n * 4096 }>, o: Ptr<f32, { n * 4096 }>, n: i32, m: i32) { \
        let offs = program_id(0) * 4096 + arange(0, 4096); \
        let a = load(x + offs); \
        let mut acc = zeros([4096]); \
        for i in 0..m { acc = acc + load(x + offs + i); } \
        store(o + offs, acc * a); }";
    let (p, at) = estimate(text);
    // `a`, `acc` and the loaded row: 3 × 32.
    assert!(p.registers >= OVERHEAD + 96, "{p:?} at {at}");
}
