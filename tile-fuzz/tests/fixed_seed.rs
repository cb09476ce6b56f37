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
