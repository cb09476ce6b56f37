//! Every kernel the project compiles: its embedded IR prints, parses and prints back identically
//! and verifies, and every specialization's PTX assembles with ptxas for sm_80 and sm_90a with no
//! spills, into the cubin the build embedded beside it.

use tile_tests as common;

use tile::ir::{parse, print, verify};

#[test]
fn ir_round_trips_for_every_kernel() {
    let kernels = common::all();
    assert!(kernels.len() >= 7);
    for k in kernels {
        let f = parse(k.ir).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        verify(&f).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        assert_eq!(print(&f), k.ir, "{}: print(parse(ir)) differs", k.name);
    }
}

#[test]
fn every_variant_assembles_without_spills() {
    let Some(ptxas) = tile_codegen::ptxas::find() else {
        if std::env::var_os("CI").is_some() {
            panic!("ptxas not found in CI: scripts/setup.sh installs it into .tools/");
        }
        println!("skipped: no ptxas (run scripts/setup.sh, or set TILE_PTXAS)");
        return;
    };
    // Every module, assembled on every core (ptxas is most of this test's time). Each variant
    // has both targets, except an autotuning configuration the build left out on one or both
    // (the kernel then has an instance with both: configuration 0, which must build
    // everywhere).
    let mut modules = Vec::new();
    let all = common::all();
    let both = |v: &tile::Variant| {
        let archs: Vec<&str> = v.targets.iter().map(|t| t.target.arch()).collect();
        archs == ["sm_90a", "sm_80"]
    };
    for k in &all {
        assert!(!k.variants.is_empty(), "{}", k.name);
        for (vi, v) in k.variants.iter().enumerate() {
            let archs: Vec<&str> = v.targets.iter().map(|t| t.target.arch()).collect();
            if !both(v) {
                let sibling = all
                    .iter()
                    .any(|o| o.rust_name == k.rust_name && o.variants.iter().all(&both));
                assert!(sibling, "{} v{vi}: targets {archs:?}", k.name);
            }
            modules.extend(v.targets.iter().map(|t| (k.name, vi, t)));
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut reports: Vec<_> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&(name, vi, t)) = modules.get(i) else {
                            return done;
                        };
                        let arch = t.target.arch();
                        let assembled = tile_codegen::ptxas::assemble_cubin(&ptxas, t.ptx, arch)
                            .unwrap_or_else(|e| panic!("{name} v{vi} {arch}: ptxas failed:\n{e}"));
                        done.push((i, assembled));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a ptxas worker panicked"))
            .collect()
    });
    reports.sort_by_key(|(i, _)| *i);
    // Every spilling variant, so that one run names them all.
    let mut spills = Vec::new();
    for ((name, vi, t), (_, (r, cubin))) in modules.iter().zip(&reports) {
        let arch = t.target.arch();
        // The build found the same ptxas (this run's TILE_PTXAS, or .tools/), so it embedded
        // this very cubin, unless TILE_CUBIN turned cubins off.
        if tile_codegen::pipeline::cubin_ptxas().is_some() {
            assert!(
                t.cubin == cubin.as_slice(),
                "{name} v{vi} {arch}: the embedded cubin ({} bytes) is not ptxas's ({} bytes)",
                t.cubin.len(),
                cubin.len()
            );
        }
        if (r.spill_stores, r.spill_loads) != (0, 0) {
            spills.push(format!("{name} v{vi} {arch} spills:\n{}", r.raw));
        }
        // A stack frame without spills (ptxas reserves a few bytes for some kernels at the
        // register cap) is reported, not failed.
        println!(
            "{name:<24} v{vi} {arch:<7} {:>3} registers, {} bytes stack",
            r.registers, r.stack_frame
        );
    }
    assert_eq!(reports.len(), modules.len());
    let assembled = reports.len();
    println!("{assembled} PTX modules assembled");
    assert!(spills.is_empty(), "{}", spills.join("\n"));
}

/// A `dot` loop whose operands are addressed through a table loaded in the loop (`paged_gemm`)
/// still reads them through the `cp.async` ring, on both targets (a warning that it does not
/// would fail the build: the crate denies warnings in CI's clippy).
#[test]
fn operands_addressed_through_a_loaded_table_are_pipelined() {
    let k = &common::paged_gemm::KERNEL;
    for v in k.variants {
        for t in v.targets {
            let arch = t.target.arch();
            assert!(t.ptx.contains("cp.async.commit_group"), "{arch}: no ring");
            assert!(t.ptx.contains("cp.async.wait_group"), "{arch}: no ring");
        }
    }
}

/// A `dot` loop that also loads a tile no `dot` reads (`stepped_bias_gemm`, a tile added to the
/// product each step): on both targets that tile is copied ahead into a ring of its own by
/// 16-byte `cp.async`s (in a blocked layout, not the accumulator's 4-byte column pairs), and read
/// back from shared memory in the accumulator's layout, a column pair per `ld.shared.b32`; it is
/// not loaded from global memory in the loop.
#[test]
fn a_tile_added_to_the_product_is_copied_through_its_own_ring() {
    let k = &common::stepped_bias_gemm::KERNEL;
    let aligned = &k.variants[0];
    for t in aligned.targets {
        let arch = t.target.arch();
        assert!(
            !t.ptx.contains("cp.async.ca.shared.global"),
            "{arch}: copies narrower than 16 bytes"
        );
        assert!(
            t.ptx.contains("cp.async.cg.shared.global"),
            "{arch}: no 16-byte copies"
        );
        assert!(
            t.ptx.contains("ld.shared.b32") || t.ptx.contains("ld.shared.u32"),
            "{arch}: the side tile is not read back from shared memory"
        );
        assert!(
            !t.ptx.contains("ld.global"),
            "{arch}: a tile is still loaded from global memory synchronously"
        );
    }
}

#[test]
fn vectorized_variant_uses_16_byte_accesses() {
    let k = &common::fused_add_mul::add_mul::KERNEL;
    let aligned = &k.variants[0];
    assert!(aligned.divisibility.iter().all(|&d| d > 1));
    for t in aligned.targets {
        assert_eq!(
            t.ptx.matches("ld.global.v4.b32").count(),
            6,
            "{}",
            t.target.arch()
        );
        assert_eq!(
            t.ptx.matches("st.global.v4.b32").count(),
            2,
            "{}",
            t.target.arch()
        );
    }
    let generic = k.variants.last().unwrap();
    assert!(generic.divisibility.iter().all(|&d| d == 1));
    for t in generic.targets {
        assert!(
            !t.ptx.contains(".v4."),
            "{}: the generic variant must not assume alignment",
            t.target.arch()
        );
    }
}

/// The shared memory of the tensor-core kernels, by liveness: the `cp.async` ring of a `k` loop
/// and the scratch of the ops after it (softmax_regression's epilogue reduces its 16 × 128 logits
/// across warps twice) are never live at once, so they share bytes and a program needs the larger,
/// not the sum.
#[test]
fn ring_and_epilogue_share_shared_memory() {
    let mut seen = 0;
    for k in common::all() {
        for (vi, v) in k.variants.iter().enumerate() {
            for t in v.targets {
                if t.dyn_shared_bytes > 0 {
                    println!(
                        "{:<40} v{vi} {:<7} {:>6} bytes of dynamic shared memory",
                        k.name,
                        t.target.arch(),
                        t.dyn_shared_bytes
                    );
                }
            }
        }
        // 3 stages of a 16 × 32 and a 32 × 128 16-bit tile: 27 KiB, the ring alone.
        if k.name.starts_with("softmax_regression__") && k.name.contains("BM_16__") {
            for t in k.variants[0].targets {
                assert_eq!(
                    t.dyn_shared_bytes,
                    3 * (16 * 32 + 32 * 128) * 2,
                    "{} {}",
                    k.name,
                    t.target.arch()
                );
            }
            seen += 1;
        }
    }
    assert_eq!(
        seen, 4,
        "softmax_regression's 16-row instances (f16, bf16; one or two kernels)"
    );
}
