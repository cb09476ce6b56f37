//! The whole pipeline on one kernel: specializations, targets, and the stage dumps.

use tile_codegen::frontend::KernelOptions;
use tile_codegen::pipeline::{compile, DumpConfig};

const KERNEL: &str = "
fn scale(x: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, s: f32, BLOCK: Const<512>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(out + offs, load(x + offs, mask) * s, mask);
}";

#[test]
fn dumps_every_stage_of_every_variant_and_target() {
    let dir = std::env::temp_dir().join(format!("tile-dump-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let item: syn::ItemFn = syn::parse_str(KERNEL).unwrap();
    let dump = DumpConfig {
        stages: vec!["ir".into(), "gpu-ir".into(), "llvm".into(), "ptx".into()],
        dir: dir.clone(),
        skip_passes: Vec::new(),
        cubin: None,
    };
    let all = compile(&item, &KernelOptions::default(), &dump).unwrap();
    assert_eq!(all.len(), 1, "one constant value, one instance");
    let c = &all[0];
    assert_eq!(c.kernel.written, [false, true, false, false]);
    assert_eq!(c.variants.len(), 2);
    // `n` only has to keep 4-element (16-byte) runs of f32 aligned.
    assert_eq!(c.variants[0].divisibility, [16, 16, 4, 1]);
    assert_eq!(c.variants[1].divisibility, [1, 1, 1, 1]);
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "scale.ir",
            "scale.v0.sm_80.gpu-ir",
            "scale.v0.sm_80.ll",
            "scale.v0.sm_80.ptx",
            "scale.v0.sm_90a.gpu-ir",
            "scale.v0.sm_90a.ll",
            "scale.v0.sm_90a.ptx",
            "scale.v1.sm_80.gpu-ir",
            "scale.v1.sm_80.ll",
            "scale.v1.sm_80.ptx",
            "scale.v1.sm_90a.gpu-ir",
            "scale.v1.sm_90a.ll",
            "scale.v1.sm_90a.ptx",
        ]
    );
    let ptx = std::fs::read_to_string(dir.join("scale.v0.sm_90a.ptx")).unwrap();
    assert!(
        ptx.contains(".target sm_90a") && ptx.contains(".entry scale("),
        "{ptx}"
    );
    let ptx80 = std::fs::read_to_string(dir.join("scale.v0.sm_80.ptx")).unwrap();
    assert!(ptx80.contains(".target sm_80"), "{ptx80}");
    let gpu = std::fs::read_to_string(dir.join("scale.v0.sm_90a.gpu-ir")).unwrap();
    assert!(
        gpu.contains("load {vec = 4}")
            && gpu.contains("#blocked<spt = [4], tpw = [32], wpc = [4]")
            && gpu.contains("target = sm_90a"),
        "{gpu}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn only_the_requested_stages_are_written() {
    let dir = std::env::temp_dir().join(format!("tile-dump-test-ptx-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let item: syn::ItemFn = syn::parse_str(KERNEL).unwrap();
    let dump = DumpConfig {
        stages: vec!["ptx".into()],
        dir: dir.clone(),
        skip_passes: Vec::new(),
        cubin: None,
    };
    compile(&item, &KernelOptions::default(), &dump).unwrap();
    let n = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(n, 4, "two variants × two targets of PTX");
    std::fs::remove_dir_all(&dir).unwrap();
    compile(&item, &KernelOptions::default(), &DumpConfig::default()).unwrap();
    assert!(!dir.exists());
}

#[test]
fn specializations_are_separate_instances_with_their_own_dumps() {
    let dir = std::env::temp_dir().join(format!("tile-dump-test-spec-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let item: syn::ItemFn = syn::parse_str(
        "fn copy(x: Ptr<f32, n>, y: Ptr<f32, n>, n: i32, BLOCK: Const<{[256, 2048]}>) {
            let offs = program_id(0) * BLOCK + arange(0, BLOCK);
            store(y + offs, load(x + offs, offs < n), offs < n);
        }",
    )
    .unwrap();
    let opts = KernelOptions {
        num_warps: None,
        elems_per_thread: None,
        max_auto_warps: 16,
        num_stages: None,
        stages_span: None,
        aligned_only: false,
        unit_only: false,
        fast_math: false,
        autotune: None,
    };
    let dump = DumpConfig {
        stages: vec!["ir".into()],
        dir: dir.clone(),
        skip_passes: Vec::new(),
        cubin: None,
    };
    let all = compile(&item, &opts, &dump).unwrap();
    let names: Vec<&str> = all.iter().map(|c| c.kernel.name.as_str()).collect();
    assert_eq!(names, ["copy__BLOCK_256", "copy__BLOCK_2048"]);
    let warps: Vec<u32> = all.iter().map(|c| c.variants[0].num_warps).collect();
    assert_eq!(warps, [4, 8]);
    assert!(all[1].tile_ir.contains("arange {start = 0, end = 2048}"));
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["copy__BLOCK_2048.ir", "copy__BLOCK_256.ir"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A tensor-core `dot` over f16 rows gets three specializations: 16-byte rows (`cp.async` of 16
/// bytes), rows that are only a multiple of 2 elements (`cp.async` of 4 bytes, still 4 warps),
/// and nothing assumed (synchronous 2-byte copies, on 8 warps).
#[test]
fn dot_kernels_get_a_specialization_for_even_rows() {
    // 64 × 64 tiles (32 accumulator elements per thread on 4 warps) keep 4 warps with 4-byte
    // copies; 128 × 128 ones (128 per thread) take 8, as the element-wise variant does.
    for (t, want_warps) in [(64, [4, 4, 8]), (128, [4, 8, 8])] {
        let item: syn::ItemFn = syn::parse_str(&format!(
            "fn mm(a: Ptr<f16, {{ m * k }}>, b: Ptr<f16, {{ k * n }}>, c: Ptr<f32, {{ m * n }}>,
                   m: i32, n: i32, k: i32) {{
                let r = program_id(0) * {t} + arange(0, {t});
                let cols = arange(0, {t});
                let ks = arange(0, 32);
                let mut acc = zeros([{t}, {t}]);
                for k0 in (0..k).step_by(32) {{
                    let kk = k0 + ks;
                    let at = load(a + r.expand_dims(1) * k + kk.expand_dims(0),
                                  (r < m).expand_dims(1) & (kk < k).expand_dims(0));
                    let bt = load(b + kk.expand_dims(1) * n + cols.expand_dims(0),
                                  (kk < k).expand_dims(1) & (cols < n).expand_dims(0));
                    acc = dot(at, bt, acc);
                }}
                store(c + r.expand_dims(1) * n + cols.expand_dims(0), acc,
                      (r < m).expand_dims(1) & (cols < n).expand_dims(0));
            }}"
        ))
        .unwrap();
        let dump = DumpConfig {
            stages: Vec::new(),
            dir: std::env::temp_dir(),
            skip_passes: Vec::new(),
            cubin: None,
        };
        let all = compile(&item, &KernelOptions::default(), &dump).unwrap();
        let v = &all[0].variants;
        let divs: Vec<&[u32]> = v.iter().map(|v| v.divisibility.as_slice()).collect();
        assert_eq!(
            divs,
            [
                &[16, 16, 16, 1, 8, 8][..],
                &[16, 16, 16, 1, 2, 2],
                &[1, 1, 1, 1, 1, 1]
            ]
        );
        let warps: Vec<u32> = v.iter().map(|v| v.num_warps).collect();
        assert_eq!(warps, want_warps, "{t} x {t} tiles");
        let copies_on = |i: usize, t: usize, bytes: &str| {
            v[i].targets[t].gpu_ir.matches("async_copy").count() > 0
                && v[i].targets[t]
                    .artifacts
                    .ptx
                    .contains(&format!("], {bytes}, "))
        };
        let copies = |i: usize, bytes: &str| copies_on(i, 0, bytes);
        // The aligned variant's loads are the boxes of `a` and `b`: on sm_90a the copy engine
        // fetches them (implied descriptors), on sm_80 16-byte `cp.async`.
        assert!(
            v[0].targets[0].gpu_ir.contains("tma_load"),
            "the copy engine on sm_90a"
        );
        assert!(
            copies_on(0, 1, "16"),
            "16-byte cp.async in the aligned variant on sm_80"
        );
        assert!(copies(1, "4"), "4-byte cp.async in the even-rows variant");
        let ptx = &v[2].targets[0].artifacts.ptx;
        assert!(
            !ptx.contains("cp.async.ca.shared") && !ptx.contains("cp.async.cg.shared"),
            "no cp.async copy in the generic variant"
        );
        // Its copies go a run of consecutive elements per asm block, from one address with
        // immediate offsets, pairs stored as 32-bit words.
        assert!(
            ptx.contains("+14]; mov.b32 w, {t0, t1}; st.shared.b32 ["),
            "runs of 8 copied from one address"
        );
        // `specialize = aligned`: the first specialization only.
        let opts = KernelOptions {
            aligned_only: true,
            ..KernelOptions::default()
        };
        let only = compile(&item, &opts, &dump).unwrap();
        let divs: Vec<&[u32]> = only[0]
            .variants
            .iter()
            .map(|v| v.divisibility.as_slice())
            .collect();
        assert_eq!(divs, [&[16, 16, 16, 1, 8, 8][..]]);
    }
}

/// The GPU-level passes run once per target: each target's IR names it, and `pipeline-dot`
/// sizes its automatic ring by it (a 128 × 128 × 64 f16 tile takes 32 KiB a stage: on sm_90a its
/// `dot` runs on `wgmma`, 4 stages within 192 KiB, one group in flight; 2 on sm_80, whose PTX must
/// leave room for two programs on a 100 KiB SM).
#[test]
fn gpu_level_ir_per_target() {
    let item: syn::ItemFn = syn::parse_str(
        "fn mm(a: Ptr<f16, { m * k }>, b: Ptr<f16, { k * n }>, c: Ptr<f32, { m * n }>,
               m: i32, n: i32, k: i32) {
            let r = program_id(0) * 128 + arange(0, 128);
            let cols = arange(0, 128);
            let ks = arange(0, 64);
            let mut acc = zeros([128, 128]);
            for k0 in (0..k).step_by(64) {
                let kk = k0 + ks;
                let at = load(a + r.expand_dims(1) * k + kk.expand_dims(0),
                              (r < m).expand_dims(1) & (kk < k).expand_dims(0));
                let bt = load(b + kk.expand_dims(1) * n + cols.expand_dims(0),
                              (kk < k).expand_dims(1) & (cols < n).expand_dims(0));
                acc = dot(at, bt, acc);
            }
            store(c + r.expand_dims(1) * n + cols.expand_dims(0), acc,
                  (r < m).expand_dims(1) & (cols < n).expand_dims(0));
        }",
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("tile-per-target-{}", std::process::id()));
    let dump = DumpConfig {
        stages: vec!["gpu-ir".into()],
        dir: dir.clone(),
        skip_passes: Vec::new(),
        cubin: None,
    };
    let all = compile(&item, &KernelOptions::default(), &dump).unwrap();
    let v0 = &all[0].variants[0];
    let archs: Vec<&str> = v0.targets.iter().map(|t| t.target.arch()).collect();
    assert_eq!(archs, ["sm_90a", "sm_80"]);
    for (t, stages) in v0.targets.iter().zip([4, 2]) {
        let arch = t.target.arch();
        assert!(t.gpu_ir.contains(&format!("target = {arch}")), "{arch}");
        assert!(
            t.gpu_ir.contains(&format!("smem<{stages}x128x64xf16")),
            "{arch}: {stages} stages"
        );
        let dumped = std::fs::read_to_string(dir.join(format!("mm.v0.{arch}.gpu-ir"))).unwrap();
        assert_eq!(dumped, t.gpu_ir);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A GEMM through tensor descriptors, every stride an argument: after `lower-descriptors` its
/// loop is the form `pipeline-dot` pipelines (no warning at the `dot`), and in the unit-stride
/// variant its copies move 16 bytes at a time (`cp.async` of 8 f16) on sm_80, as the
/// hand-written kernel's do, while on sm_90a the tensor memory accelerator copies its tiles.
#[test]
fn descriptor_gemm_is_pipelined_and_vectorized() {
    let item: syn::ItemFn = syn::parse_str(
        "fn mm(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f32>, m: i32, n: i32, k: i32,
               sam: i32, sak: i32, sbk: i32, sbn: i32, scm: i32,
               BM: Const<128>, BN: Const<128>, BK: Const<32>) {
            let (pm, pn) = (program_id(0) * BM, program_id(1) * BN);
            let a_desc = make_tensor_descriptor(a, [m, k], [sam, sak], [BM, BK]);
            let b_desc = make_tensor_descriptor(b, [k, n], [sbk, sbn], [BK, BN]);
            let c_desc = make_tensor_descriptor(c, [m, n], [scm, 1], [BM, BN]);
            let mut acc = zeros([BM, BN]);
            for k0 in (0..k).step_by(BK) {
                acc = dot(a_desc.load([pm, k0]), b_desc.load([k0, pn]), acc);
            }
            c_desc.store([pm, pn], acc);
        }",
    )
    .unwrap();
    let all = compile(&item, &KernelOptions::default(), &DumpConfig::default()).unwrap();
    let c = &all[0];
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(c.kernel.ir.desc_slots, 3);
    let v0 = &c.variants[0];
    // The unit-stride variant assumes `sak` and `sbn` are 1, and the row strides multiples of
    // 8 (16-byte rows of f16: `(pm + i) · sam` is a multiple of `sam`, not of `pm`'s 128).
    assert_eq!(v0.divisibility[6], 8, "{:?}", v0.divisibility);
    assert_eq!(v0.divisibility[8], 8, "{:?}", v0.divisibility);
    assert_eq!(
        v0.divisibility[7],
        tile_core::runtime::EQUALS_ONE,
        "{:?}",
        v0.divisibility
    );
    assert_eq!(
        v0.divisibility[9],
        tile_core::runtime::EQUALS_ONE,
        "{:?}",
        v0.divisibility
    );
    for t in &v0.targets {
        let arch = t.target.arch();
        assert!(!t.gpu_ir.contains("desc_"), "{arch}: left unexpanded");
        let copy = match t.target {
            tile_core::Target::Sm90a => "tma_load {slot = 0}",
            tile_core::Target::Sm80 => "async_copy {vec = 8}",
        };
        assert!(t.gpu_ir.contains(copy), "{arch}:\n{}", t.gpu_ir);
        assert!(t.gpu_ir.contains("smem<"), "{arch}: no ring");
    }
    // The unaligned variant copies with `cp.async` everywhere: no tensor map takes its arrays.
    let last = c.variants.last().unwrap();
    assert!(last
        .targets
        .iter()
        .all(|t| !t.gpu_ir.contains("tma_load") && t.gpu_ir.contains("async_copy")));
}

/// A loop's only `dot` with a register `A` computed in the loop (a loaded tile scaled and cast,
/// Triton's `tl.dot(a.to(tl.float32) * s).to(tl.float16), b)` form): on sm_90a its `wgmma` is
/// retired right after it is issued (`pending = 0`), since the next iteration writes the
/// registers the group reads; left in flight (`pending = 1`) it summed the next iteration's
/// operand on the GPU (found by differential testing). A loaded `A` keeps its group in flight.
#[test]
fn wgmma_with_a_computed_in_the_loop_is_retired_before_the_next_a() {
    let kernel = |a_expr: &str| -> String {
        let item: syn::ItemFn = syn::parse_str(&format!(
            "fn mm(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f32>, k: i32) {{
                let rm = arange(0, 128);
                let rn = arange(0, 64);
                let rk = arange(0, 32);
                let mut acc = zeros([128, 64]);
                for k0 in (0..k).step_by(32) {{
                    let ta = load(a + rm.expand_dims(1) * k + (k0 + rk).expand_dims(0));
                    let tb = load(b + (k0 + rk).expand_dims(1) * 64 + rn.expand_dims(0));
                    acc = dot({a_expr}, tb, acc);
                }}
                store(c + rm.expand_dims(1) * 64 + rn.expand_dims(0), acc);
            }}"
        ))
        .unwrap();
        let all = compile(&item, &KernelOptions::default(), &DumpConfig::default()).unwrap();
        let v = all[0].variants.last().unwrap();
        let t = v
            .targets
            .iter()
            .find(|t| t.target == tile_core::Target::Sm90a)
            .unwrap();
        t.gpu_ir.clone()
    };
    let computed = kernel("(ta as f32 * 0.5) as f16");
    assert!(computed.contains("warp_group_dot"), "{computed}");
    assert!(
        computed.contains("warp_group_wait {pending = 0}") && !computed.contains("pending = 1"),
        "{computed}"
    );
    let loaded = kernel("ta");
    assert!(loaded.contains("warp_group_wait {pending = 1}"), "{loaded}");
}

/// The guide's GEMM through plain pointer arithmetic, `A`'s strides arguments: its operand
/// loads read exactly the box of an array (address and mask say the extents), so they are
/// implied descriptors, one hidden slot each in every module. On sm_90a the first variant's
/// loop is fed by the tensor memory accelerator as a descriptor loop is; sm_80 and the
/// unaligned variant keep the loads the kernel wrote (`cp.async`).
#[test]
fn pointer_gemm_loads_are_implied_descriptors_on_hopper() {
    let item: syn::ItemFn = syn::parse_str(
        "fn mm(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f32>, m: i32, n: i32, k: i32, sam: i32, sak: i32,
               BM: Const<128>, BN: Const<128>, BK: Const<32>) {
            let rows = program_id(0) * BM + arange(0, BM);
            let cols = program_id(1) * BN + arange(0, BN);
            let ks = arange(0, BK);
            let mut acc = zeros([BM, BN]);
            for k0 in (0..k).step_by(BK) {
                let kk = k0 + ks;
                let at = load(a + (rows * sam).expand_dims(1) + kk.expand_dims(0) * sak,
                              (rows < m).expand_dims(1) & (kk < k).expand_dims(0));
                let bt = load(b + kk.expand_dims(1) * n + cols.expand_dims(0),
                              (kk.expand_dims(1) < k) & (cols.expand_dims(0) < n));
                acc = dot(at, bt, acc);
            }
            store(c + rows.expand_dims(1) * n + cols.expand_dims(0), acc,
                  (rows < m).expand_dims(1) & (cols < n).expand_dims(0));
        }",
    )
    .unwrap();
    let all = compile(&item, &KernelOptions::default(), &DumpConfig::default()).unwrap();
    let c = &all[0];
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(c.kernel.ir.desc_slots, 0);
    use tile_core::runtime::DescScalar::{Const, Param};
    let described: Vec<_> = c
        .implied
        .iter()
        .map(|h| (h.slot, h.ptr, h.dims.clone(), h.strides.clone(), h.implied))
        .collect();
    assert_eq!(
        described,
        [
            (
                0,
                0,
                vec![Param(3), Param(5)],
                vec![Param(6), Param(7)],
                true
            ),
            (
                1,
                1,
                vec![Param(5), Param(4)],
                vec![Param(4), Const(1)],
                true
            ),
        ]
    );
    for v in &c.variants {
        for t in &v.targets {
            assert!(
                t.gpu_ir.contains("descriptors = 2"),
                "every module declares both slots"
            );
        }
    }
    // The first variant assumes `sak` = 1: on sm_90a both operands come by the copy engine.
    let v0 = &c.variants[0];
    assert_eq!(v0.divisibility[7], tile_core::runtime::EQUALS_ONE);
    for t in &v0.targets {
        let arch = t.target.arch();
        match t.target {
            tile_core::Target::Sm90a => {
                assert!(
                    t.gpu_ir.contains("tma_load {slot = 0}")
                        && t.gpu_ir.contains("tma_load {slot = 1}")
                        && !t.gpu_ir.contains("async_copy"),
                    "{arch}:\n{}",
                    t.gpu_ir
                );
                let slots: Vec<u32> = t.tma.iter().map(|x| x.slot).collect();
                assert!(slots.contains(&0) && slots.contains(&1), "{slots:?}");
            }
            tile_core::Target::Sm80 => {
                assert!(!t.gpu_ir.contains("tma_load") && t.gpu_ir.contains("async_copy"));
                assert!(t.tma.is_empty());
            }
        }
        assert!(!t.gpu_ir.contains("desc_"), "{arch}: left unexpanded");
    }
    let last = c.variants.last().unwrap();
    assert!(last
        .targets
        .iter()
        .all(|t| !t.gpu_ir.contains("tma_load") && t.gpu_ir.contains("async_copy")));
}

/// Loads that are not an array's box stay loads everywhere: a column that may be negative
/// (`off` is any `i32`; through the pointer a column of -1 is the previous row's element, for a
/// descriptor it is outside the array),
/// a mask without the `k` bound, a tile used by arithmetic before the `dot`, `other` not 0.
#[test]
fn loads_that_are_not_an_arrays_box_are_not_implied() {
    let body = |a_load: &str| {
        format!(
            "fn mm(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f32>, m: i32, n: i32, k: i32, off: i32,
                   BM: Const<128>, BN: Const<128>, BK: Const<32>) {{
                let rows = program_id(0) * BM + arange(0, BM);
                let cols = program_id(1) * BN + arange(0, BN);
                let ks = arange(0, BK);
                let mut acc = zeros([BM, BN]);
                for k0 in (0..k).step_by(BK) {{
                    let kk = k0 + ks;
                    let at = {a_load};
                    let bt = load(b + kk.expand_dims(1) * n + cols.expand_dims(0),
                                  (kk < k).expand_dims(1) & (cols < n).expand_dims(0));
                    acc = dot(at, bt, acc);
                }}
                store(c + rows.expand_dims(1) * n + cols.expand_dims(0), acc,
                      (rows < m).expand_dims(1) & (cols < n).expand_dims(0));
            }}"
        )
    };
    let cases = [
        "load(a + rows.expand_dims(1) * k + ((k0 + off) + ks).expand_dims(0),
              (rows < m).expand_dims(1) & (((k0 + off) + ks) < k).expand_dims(0))",
        "load(a + rows.expand_dims(1) * k + kk.expand_dims(0), (rows < m).expand_dims(1))",
        "(load(a + rows.expand_dims(1) * k + kk.expand_dims(0),
               (rows < m).expand_dims(1) & (kk < k).expand_dims(0)) as f32 * 2.0) as f16",
        "load(a + rows.expand_dims(1) * k + kk.expand_dims(0),
              (rows < m).expand_dims(1) & (kk < k).expand_dims(0), 1.0)",
    ];
    for (i, case) in cases.iter().enumerate() {
        let item: syn::ItemFn = syn::parse_str(&body(case)).unwrap();
        let all = compile(&item, &KernelOptions::default(), &DumpConfig::default()).unwrap();
        let slots: Vec<_> = all[0].implied.iter().map(|h| (h.slot, h.ptr)).collect();
        // `b`'s load is the array's box in every case; `a`'s never.
        assert_eq!(slots, [(0, 1)], "case {i}");
        // A loop that mixes a copied and a loaded operand copies neither by TMA (the scaled
        // `A` is not loaded for the `dot`: `B` alone may be).
        if i != 2 {
            for t in all[0].variants.iter().flat_map(|v| &v.targets) {
                assert!(!t.gpu_ir.contains("tma_load"), "case {i}");
            }
        }
    }
}
