//! Kernel texts that once made the compiler panic, overflow its stack, blame itself ("internal
//! error") or give an error without a location: each must come back as a located error
//! (or compile), never a panic.

use tile_codegen::frontend::KernelOptions;
use tile_codegen::pipeline::{compile, DumpConfig};

/// Compiles `text`; `Ok(None)` when it compiled, `Ok(Some(message))` for a user error with a
/// location, `Err` for a panic, an internal error or an error without a location.
fn outcome(text: &str) -> Result<Option<String>, String> {
    let item: syn::ItemFn = syn::parse_str(text).map_err(|e| format!("test input: {e}"))?;
    let dump = DumpConfig::default();
    let r = std::panic::catch_unwind(|| compile(&item, &KernelOptions::default(), &dump));
    match r {
        Err(p) => Err(format!(
            "panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
        Ok(Ok(_)) => Ok(None),
        Ok(Err(e)) => {
            let msg = e.to_string();
            if msg.contains("internal error") {
                return Err(format!("internal error: {msg}"));
            }
            let span = e.span().start();
            if span.line == 0 && span.column == 0 {
                return Err(format!("no location: {msg}"));
            }
            Ok(Some(msg))
        }
    }
}

/// Each case with what it must give: `None` when it compiles, else a piece of the located error.
#[test]
fn findings_are_located_errors() {
    let overflow = Some("overflows i64");
    let too_many = Some("holds more than 1048576 elements");
    let extent = Some("an extent is built from");
    let cases: [(&str, Option<&str>); 19] = [
        // Found by tile-fuzz: a negative value in a list of constants named an instance
        // `k__MODE_-1`, which the IR parser refused (an internal error).
        (
            "fn k(x: Ptr<f32>, MODE: Const<{ [1, -1] }>) { let o = arange(0, 16); store(x + o, load(x + o) * MODE as f32); }",
            None,
        ),
        // Found by tile-fuzz: 12 s to compile (every thread held all 1024 elements).
        (
            "fn k(p: Ptr<f32>) { let u = arange(0, 1).expand_dims(1) + arange(0, 1).expand_dims(0); let s = load(p + u).min(0); let o = arange(0, 1024); store(p + o, load(p + o) * s); }",
            None,
        ),
        // One tile of 2^20 elements compiled for 7 s to minutes: a thread holds 128 at most.
        (
            "fn k(p: Ptr<f32>, n: i32) { let o = arange(0, 1048576); store(p + o, 1.0, o < n); }",
            Some("a thread holds at most 128"),
        ),
        (
            "fn k(p: Ptr<f32>, n: i32) { let o = arange(0, 16384); store(p + o, 1.0, o < n); }",
            None,
        ),
        // Found by tile-fuzz: an FMA `dot` joined to a tensor-core `dot`'s result class.
        (
            "fn k(p: Ptr<f32>) { let r = arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0); store(p + r, max(dot(full([64, 64], 0.5), full([64, 64], 1.5)), dot(zeros([64, 64]) as f16, zeros([64, 64]) as f16))); }",
            None,
        ),
        ("fn k() { let x = -i64::MIN; }", overflow),
        ("fn k() { let t = arange(-1, i64::MAX); }", Some("a tile size is a power of two")),
        ("fn k() { let x = *1; }", Some("not supported in kernels")),
        ("fn k(p: Ptr<f32>) { store(p, zeros([65536, 65536]).sum(1).sum(0)); }", too_many),
        ("fn k(p: Ptr<i32>) { store(p + arange(0, 256), arange(0, 1)); }", None),
        (
            "fn k(p: Ptr<i32>) { store(p + arange(0, 1024), arange(0, 1024), arange(0, 1) < 1); }",
            None,
        ),
        (
            "fn k(p: Ptr<f32>) { store(p + arange(0, 2048).expand_dims(1) * 2048 + arange(0, 2048).expand_dims(0), 1.0); }",
            too_many,
        ),
        ("fn r#type(p: Ptr<f32>) { store(p + arange(0, 128), 1.0); }", None),
        ("fn ключ(p: Ptr<f32>) { store(p + arange(0, 128), 1.0); }", None),
        ("fn k(x: Ptr<f32, {}>) {}", extent),
        ("fn k(x: Ptr<f32, { n; n }>, n: i32) {}", extent),
        // A lone `;` is an empty statement (legal Rust), once refused without a location.
        ("fn k() { ; }", None),
        (
            "fn k(p: Ptr<i64>) { store(p + arange(0, 128), arange(0, 128) + (9223372036854775807 + 1)); }",
            overflow,
        ),
        (
            "fn k(p: Ptr<i64>) { store(p + arange(0, 128), arange(0, 128) * (4 % 0)); }",
            Some("divides by zero"),
        ),
    ];
    let mut bad = Vec::new();
    for (text, want) in cases {
        match (outcome(text), want) {
            (Ok(None), None) => {}
            (Ok(Some(m)), Some(w)) if m.contains(w) => {}
            (Ok(got), _) => bad.push(format!("{text}: got {got:?}, want {want:?}")),
            (Err(e), _) => bad.push(format!("{text}: {e}")),
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Attribute options that do not parse (tile-fuzz found these without a location: syn reports
/// the end of the attribute's tokens at the attribute) are errors at their own tokens.
#[test]
fn malformed_options_are_located() {
    let cases = [
        ("num_warps =", "needs a value"),
        ("specialize = unsafe", "`specialize` takes"),
        ("num_warps = < auto", "`num_warps` takes"),
        ("num_warps = 4,, num_stages = 3", "expected an option"),
        ("num_stages 3", "expected `=`"),
    ];
    let mut bad = Vec::new();
    for (attr, want) in cases {
        let tokens: proc_macro2::TokenStream = attr.parse().expect("test input");
        match tile_codegen::frontend::parse_options(tokens) {
            Ok(_) => bad.push(format!("{attr}: accepted")),
            Err(e) => {
                let at = e.span().start();
                if at.line == 0 && at.column == 0 {
                    bad.push(format!("{attr}: no location: {e}"));
                } else if !e.to_string().contains(want) {
                    bad.push(format!("{attr}: got {e}, want {want}"));
                }
            }
        }
    }
    let one = tile_codegen::frontend::parse_options("num_stages = 1".parse().expect("input"));
    assert_eq!(one.map(|o| o.num_stages).ok(), Some(Some(1)));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// A kernel of `n` lines `line` between a 2-D tile `v` loaded from `x` and its store.
fn repeated(n: usize, line: &str, elem: &str) -> String {
    format!(
        "fn k(x: Ptr<{elem}, 8192>, out: Ptr<{elem}, 8192>) {{ \
         let offs = arange(0, 64).expand_dims(1) * 128 + arange(0, 128).expand_dims(0); \
         let mut v = load(x + offs); {} store(out + offs, v); }}",
        line.repeat(n)
    )
}

/// Kernels the compile-cost budget refuses, each at once and with an error that names the
/// limit; and kernels that once took seconds in tile's own passes, compiled in a blink.
#[test]
fn compile_cost_is_bounded() {
    let budget = "a kernel may cost at most";
    let cases: Vec<(String, Option<&str>)> = vec![
        // Integer ops that reuse their results in a 2-D kernel: `assign-layouts` copied them
        // per user, exponentially (each of Philox's rounds doubled the copies), before `cse`
        // merged them again: 6.5 s for the fused dropout kernels.
        (repeated(40, "v = (v * 3) ^ v + v;", "i32"), None),
        // Over the budget by far: refused from the tile-level estimate, before any GPU work.
        (repeated(400, "v = sin(v) + v;", "f32"), Some(budget)),
        // Just over it: refused from the GPU-level IR of each module, before LLVM.
        (repeated(24, "v = sin(v) + v;", "f32"), Some(budget)),
        // Scalar arithmetic by the thousand: `hoist-loads` was quadratic in a block's ops.
        (
            format!(
                "fn k(out: Ptr<i32, 128>, n: i32) {{ let mut s = n; {} store(out + arange(0, 128), s); }}",
                "s = (s * 3) ^ 7;".repeat(8000)
            ),
            Some(budget),
        ),
    ];
    let mut bad = Vec::new();
    for (text, want) in &cases {
        let start = std::time::Instant::now();
        let got = outcome(text);
        let took = start.elapsed();
        let short = &text[..text.len().min(120)];
        match (got, want) {
            (Ok(None), None) => {}
            (Ok(Some(m)), Some(w)) if m.contains(w) => {}
            (Ok(got), _) => bad.push(format!("{short}: got {got:?}, want {want:?}")),
            (Err(e), _) => bad.push(format!("{short}: {e}")),
        }
        // Generous (tests build tile's crates at opt-level 2 with debug assertions, and CI's
        // machine is shared); each of these took 6 to 60 s before.
        if took > std::time::Duration::from_secs(20) {
            bad.push(format!("{short}: {took:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Found by `tile-fuzz --ptxas`: a 16-bit float `atomic_xchg` (a compare-and-swap loop) in a
/// 4-warp kernel, which ptxas capped at 40 registers and spilled 8 bytes on sm_90a until such
/// kernels asked for one program per SM (`minctasm`). Every module must assemble without spills.
#[test]
fn half_atomic_loops_assemble_without_spills() {
    let Some(ptxas) = tile_codegen::ptxas::find() else {
        println!("skipped (ptxas): run scripts/setup.sh, or set TILE_PTXAS");
        return;
    };
    let text = "fn k(p1: Ptr<f16, n>, p2: Ptr<bf16, { n * m }>, n: i32, m: i32) { \
        let v2 = (program_id(1) * 32 + arange(0, 32)).expand_dims(1) * 32 + arange(0, 32).expand_dims(0); \
        let v3 = zeros([32, 32]); \
        let o = arange(0, 32).expand_dims(1) * 32 + arange(0, 32).expand_dims(0); \
        store(p2 + v2, (((v2 - m) as f32) * zeros([32, 32]).roll(1, 1)) as bf16, (o < n) & (arange(0, 32).expand_dims(1) * 32 < n)); \
        atomic_xchg(p1 + o, ((-v3).cummin(1) + v3) as f16, (o < n) & (v2 < n), sem = acq_rel, scope = sys); \
        store(p2 + min(v2, o), select(v2 < n, exp(zeros([32, 32])), v3) as bf16, !(v2 < n)); }";
    let item: syn::ItemFn = syn::parse_str(text).unwrap();
    let kernels = compile(&item, &KernelOptions::default(), &DumpConfig::default()).unwrap();
    for k in &kernels {
        for v in &k.variants {
            for t in &v.targets {
                let r = tile_codegen::ptxas::assemble(&ptxas, &t.artifacts.ptx, t.target.arch())
                    .unwrap();
                assert!(
                    !r.spills(),
                    "{} {}: {}",
                    k.kernel.name,
                    t.target.arch(),
                    r.raw
                );
            }
        }
    }
}

/// Found by `tile-fuzz --ptxas`: a 4-warp kernel that ptxas, left to trade registers for
/// occupancy, capped at 96 registers and spilled 24 bytes on sm_90a (155 hold it). With a ptxas
/// at build time, the pipeline lowers such a module again with one program per SM; it must come
/// out without spills and ask for it, while a module that did not spill keeps ptxas's choice.
#[test]
fn occupancy_spills_are_lowered_again_with_one_program_per_sm() {
    let Some(ptxas) = tile_codegen::ptxas::find() else {
        println!("skipped (ptxas): run scripts/setup.sh, or set TILE_PTXAS");
        return;
    };
    let text = "fn k(p0: Ptr<bf16, { n * m }>, p1: Ptr<f16>, p2: Ptr<f32, n>, n: i32, m: i32) { \
        let v1 = program_id(0) * 4 + arange(0, 4); \
        let v2 = (program_id(1) * 64 + arange(0, 64)).expand_dims(1) * 64 + arange(0, 64).expand_dims(0); \
        let v3 = load(p1 + (max(v2, arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0)) / m), (arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0) < n)) as f32; \
        let v4 = load(p2 + (arange(0, 4) - n), !((v1 < n))); \
        let v5 = -(select((v4 == v4), (full([4], 0.9)).sqrt(), (v4 - 0.74))); \
        let mut v6 = zeros([64, 64]); \
        for i in (0..4).step_by(64) { \
            store(p0 + max(arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0), max(v2, arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0))), ((max(-(full([64, 64], 2.6)), (v3 - 2.49)) * (0.87).tanh())) as bf16, (v2 < n)); \
            v6 = v6 + v3; \
        } \
        let v9 = load(p1 + arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0), (v6 <= v3)) as f32; }";
    let item: syn::ItemFn = syn::parse_str(text).unwrap();
    let dump = DumpConfig {
        cubin: Some(ptxas.clone()),
        ..DumpConfig::default()
    };
    let kernels = compile(&item, &KernelOptions::default(), &dump).unwrap();
    let mut asked = 0;
    for k in &kernels {
        for (vi, v) in k.variants.iter().enumerate() {
            for t in &v.targets {
                let arch = t.target.arch();
                let r = tile_codegen::ptxas::assemble(&ptxas, &t.artifacts.ptx, arch).unwrap();
                assert!(!r.spills(), "v{vi} {arch}: {}", r.raw);
                asked += usize::from(t.artifacts.ptx.contains(".minnctapersm 1"));
            }
        }
    }
    // The unaligned variant on sm_90a spilled; the other three modules did not.
    assert_eq!(asked, 1, "modules asking for one program per SM");
}

/// The occupancy policy: W8A8's 8-warp `i8` product (128 × 128 × 64 tiles) on `mma.sync`
/// (sm_80; on sm_90a it now runs on `wgmma` in about 108 registers, two programs without asking),
/// which ptxas left free fits in more than 128 registers a thread and so runs one program per
/// SM, is assembled again asking for two and fits them without spilling (1.19x faster at 4096³
/// on the H200, measured when sm_90a ran it on `mma.sync` too); the same product on 4 warps,
/// which two programs' registers never limit, keeps ptxas's choice.
#[test]
fn two_programs_per_sm_where_registers_alone_keep_the_second_off() {
    let Some(ptxas) = tile_codegen::ptxas::find() else {
        println!("skipped (ptxas): run scripts/setup.sh, or set TILE_PTXAS");
        return;
    };
    let text = "fn k(xq: Ptr<i8, { m * k }>, wq: Ptr<i8, { n * k }>, c: Ptr<i32, { m * n }>, m: i32, n: i32, k: i32) { \
            let rows = program_id(0) * 128 + arange(0, 128); \
            let cols = program_id(1) * 128 + arange(0, 128); \
            let ks = arange(0, 64); \
            let mut acc = full([128, 128], 0); \
            for k0 in (0..k).step_by(64) { \
                let kk = (k0 + ks).expand_dims(0); \
                let x = load(xq + rows.expand_dims(1) * k + kk, (rows < m).expand_dims(1) & (kk < k), 0); \
                let w = load(wq + cols.expand_dims(1) * k + kk, (cols < n).expand_dims(1) & (kk < k), 0); \
                acc = dot(x, w.trans(), acc); \
            } \
            store(c + rows.expand_dims(1) * n + cols.expand_dims(0), acc, (rows < m).expand_dims(1) & (cols < n).expand_dims(0)); }";
    let dump = DumpConfig {
        cubin: Some(ptxas.clone()),
        ..DumpConfig::default()
    };
    for (warps, want_two) in [(8, true), (4, false)] {
        let item: syn::ItemFn = syn::parse_str(text).unwrap();
        let options = KernelOptions {
            num_warps: Some(warps),
            aligned_only: true,
            ..KernelOptions::default()
        };
        let kernels = compile(&item, &options, &dump).unwrap();
        let module = kernels[0].variants[0]
            .targets
            .iter()
            .find(|t| t.target == tile_core::Target::Sm80)
            .expect("an sm_80 module");
        let ptx = &module.artifacts.ptx;
        let r = tile_codegen::ptxas::assemble(&ptxas, ptx, "sm_80").unwrap();
        assert!(!r.spills(), "{warps} warps: {}", r.raw);
        assert_eq!(
            ptx.contains(".minnctapersm 2"),
            want_two,
            "{warps} warps: {} registers",
            r.registers
        );
        if want_two {
            assert!(r.registers <= 128, "{} registers", r.registers);
        }
    }
}

/// A masked load of the addresses a loop stores to stays in the loop: LLVM took the predicated
/// load's inline asm for memory-free and hoisted it out, so every iteration read the value from
/// before the loop. In the PTX every predicated store now has its load (unrolled copies alike).
#[test]
fn masked_loads_are_not_hoisted_past_stores() {
    let text = "fn k(out: Ptr<f32, n>, n: i32, m: i32) { \
        let offs = arange(0, 128); \
        let mk = offs < n; \
        for i in 0..m { store(out + offs, load(out + offs, mk) + 1.0, mk); } }";
    let item: syn::ItemFn = syn::parse_str(text).unwrap();
    let kernels = compile(&item, &KernelOptions::default(), &DumpConfig::default()).unwrap();
    for k in &kernels {
        for (vi, v) in k.variants.iter().enumerate() {
            for t in &v.targets {
                let ptx = &t.artifacts.ptx;
                let loads = ptx.matches("ld.global").count();
                let stores = ptx.matches("st.global").count();
                assert!(
                    stores > 0 && loads >= stores,
                    "v{vi} {}: {loads} loads for {stores} stores:\n{ptx}",
                    t.target.arch()
                );
            }
        }
    }
}
