//! Runs the `tile-bench` binary in its interpreter smoke mode (every kernel family, fused and
//! unfused, at tiny sizes on the CPU interpreter, as CI does without a GPU) and checks what it
//! writes: exit code 0, the loud "meaningless" notice, `tile.json` with baseline-compatible rows
//! that all passed, `tile.md` and the plots. Also: bad usage exits with 2, an unmatched filter
//! with 1, without panicking.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tile-bench"))
        .args(args)
        .output()
        .expect("tile-bench should start")
}

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tile-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

const FAMILIES: [&str; 12] = [
    "fused_add_mul",
    "elementwise_chains",
    "fused_bias_gelu",
    "act_and_mul",
    "fused_layernorm",
    "fused_add_rmsnorm",
    "fused_softmax",
    "mean_center",
    "qk_norm_rope",
    "softmax_regression_simple",
    "softmax_regression",
    "cross_entropy",
];

#[test]
fn interpreter_smoke_run_checks_every_family_and_writes_every_output() {
    let dir = out_dir("smoke");
    let out = bench(&[
        "--interpreter",
        "--out",
        dir.to_str().expect("utf-8 temp dir"),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "tile-bench failed ({:?})\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    assert!(stdout.contains("TIMINGS ARE MEANINGLESS"), "{stdout}");
    assert!(!stdout.contains("FAILED"), "{stdout}");

    let text = std::fs::read_to_string(dir.join("tile.json")).expect("tile.json written");
    let doc: Value = serde_json::from_str(&text).expect("tile.json is JSON");
    assert_eq!(doc["meaningful_timings"], Value::Bool(false));
    assert_eq!(doc["mode"], "interpreter");
    for key in ["device", "date", "command", "copy_gbps", "launch", "method"] {
        assert!(!doc[key].is_null(), "tile.json lacks {key}");
    }
    assert!(doc["launch"]["tile_us"].as_f64().is_some_and(|v| v > 0.0));
    let rows = doc["rows"].as_array().expect("rows");
    for fam in FAMILIES {
        for imp in ["tile_fused", "tile_unfused"] {
            let n = rows
                .iter()
                .filter(|r| r["kernel"] == fam && r["impl"] == imp)
                .count();
            assert!(n > 0, "no {imp} row of {fam}");
        }
    }
    for r in rows {
        // The fields bench/join.py joins on and reads, as bench/python/baseline.py writes them.
        for key in [
            "kernel", "variant", "shape", "dtype", "impl", "graph", "ms", "gbps",
        ] {
            assert!(r.get(key).is_some(), "row lacks {key}: {r}");
        }
        assert!(r.get("pct_copy").is_some() && r.get("ok").is_some());
        assert_eq!(r["ok"], Value::Bool(true), "failed row: {r}");
        assert_eq!(r["graph"], Value::Bool(false));
        assert!(r["shape"].as_array().is_some_and(|s| !s.is_empty()));
        assert!(r["ms"].as_f64().is_some_and(|ms| ms > 0.0), "{r}");
    }
    // Variant names and shapes as the baseline writes them.
    let has = |kernel: &str, variant: Value, shape: Value| {
        rows.iter()
            .any(|r| r["kernel"] == kernel && r["variant"] == variant && r["shape"] == shape)
    };
    assert!(has(
        "act_and_mul",
        "silu".into(),
        serde_json::json!([2, 2050])
    ));
    assert!(has(
        "elementwise_chains",
        "add_tanh_scale".into(),
        serde_json::json!([5, 1023])
    ));
    assert!(has(
        "fused_bias_gelu",
        "tanh".into(),
        serde_json::json!([17, 1])
    ));
    assert!(has(
        "qk_norm_rope",
        Value::Null,
        serde_json::json!([3, 4, 2, 128])
    ));
    assert!(has(
        "fused_layernorm",
        Value::Null,
        serde_json::json!([2, 5000])
    ));
    assert!(has(
        "flash_attention",
        "fwd".into(),
        serde_json::json!([1, 4, 256, 64])
    ));

    let md = std::fs::read_to_string(dir.join("tile.md")).expect("tile.md written");
    assert!(md.contains("MEANINGLESS"));
    for fam in FAMILIES {
        assert!(md.contains(&format!("## {fam}")), "tile.md lacks {fam}");
        for ext in ["png", "svg"] {
            let p = dir.join("plots").join(format!("{fam}.{ext}"));
            let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            assert!(len > 1000, "{} is {len} bytes", p.display());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_usage_is_an_error_not_a_panic() {
    let out = bench(&["--reps", "zero"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--reps needs a non-negative integer"));
    let out = bench(&["--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
    let dir = out_dir("nomatch");
    let d = dir.to_str().expect("utf-8 temp dir");
    let out = bench(&["--interpreter", "--filter", "no_such_kernel", "--out", d]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no kernel family matches"));
    let out = bench(&["--help"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--filter SUBSTR"));
    let _ = std::fs::remove_dir_all(&dir);
}
