//! The fuzzer's fixed-seed run, as CI runs it: 1000 generated and 1000 mutated kernels, each in a
//! worker process; any panic, crash, internal error, error without a location or case over the
//! time limit fails the test (the findings are printed, minimized, and written to
//! `target/fuzz`). The limit is generous because CI builds without optimization; the 2-second
//! budget for a release build is what `tile-fuzz --slow-ms 2000` reports. Where a ptxas is
//! found (always in CI), the cases build as the macro builds them with one (`--ptxas`: every
//! module assembled under the spill check), and a module that spills is a finding too.

use std::process::Command;

#[test]
fn fixed_seed_run_finds_nothing() {
    let ptxas = tile_codegen::ptxas::find().is_some();
    assert!(
        ptxas || std::env::var_os("CI").is_none(),
        "ptxas not found in CI: scripts/setup.sh installs it into .tools/"
    );
    if !ptxas {
        println!("no ptxas: spills not checked (run scripts/setup.sh, or set TILE_PTXAS)");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_tile-fuzz"))
        .args(ptxas.then_some("--ptxas"))
        .args([
            "--seed",
            "1",
            "--generated",
            "1000",
            "--mutated",
            "1000",
            "--jobs",
            "2",
            "--time-limit-ms",
            "120000",
            "--slow-ms",
            "20000",
        ])
        .output()
        .expect("running tile-fuzz");
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(out.status.success(), "tile-fuzz found bugs:\n{text}");
    assert!(text.contains("no findings"), "{text}");
    assert!(text.contains("| compiled |"), "{text}");
}

/// Differential testing's fixed-seed run without a GPU: 300 generated kernels, each compiled for
/// both targets (and assembled under the spill check where a ptxas is found) and run on the
/// interpreter with its inputs. A kernel the compiler rejects without a location, breaks on,
/// spills, or whose launch the interpreter refuses (every access is masked by construction)
/// fails the test; the GPU half runs on the GPU machine (`scripts/gpu/diff.sh`).
#[test]
fn differential_generator_runs_on_the_interpreter() {
    let ptxas = tile_codegen::ptxas::find().is_some();
    let out = Command::new(env!("CARGO_BIN_EXE_tile-fuzz"))
        .arg("diff")
        .args(ptxas.then_some("--ptxas"))
        .args([
            "--interp-only",
            "--seed",
            "1",
            "--count",
            "300",
            "--jobs",
            "2",
        ])
        .args(["--time-limit-ms", "300000"])
        .output()
        .expect("running tile-fuzz diff");
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(out.status.success(), "tile-fuzz diff failed:\n{text}");
    // Most generated kernels must get through: the generator follows the language's rules.
    let interpreted: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("| interpreted | "))
        .and_then(|n| n.trim_end_matches(" |").parse().ok())
        .unwrap_or(0);
    assert!(interpreted >= 270, "{interpreted} of 300 ran:\n{text}");
}
