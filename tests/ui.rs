//! Compile-fail tests: every DSL misuse is a rustc error with the caret under the offending
//! tokens. One case per diagnostic in `tests/ui/`; `TRYBUILD=overwrite` blesses the `.stderr`
//! files, whose diff is reviewed like code.
//!
//! `tests/ui-ptxas/` holds the cases of the spill check, which needs a ptxas at build time
//! (`scripts/setup.sh` installs one; the macro then assembles every module): they run where one
//! is found, always in CI. One `TestCases` runs both folders (trybuild builds them as one crate).

use std::path::{Path, PathBuf};

/// The ptxas the macro finds, as `tile_codegen::ptxas::find` looks for it: `TILE_PTXAS`, then
/// the one `scripts/setup.sh` installs, then `PATH`. Written out here so that this package's
/// tests do not depend on the compiler crate: they are built again with the `tracing` feature,
/// and the compiler would be built again with them.
fn ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TILE_PTXAS").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let local =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/nvcc/nvidia/cuda_nvcc/bin/ptxas");
    if local.is_file() {
        return Some(local);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("ptxas"))
        .find(|p| p.is_file())
}

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    if ptxas().is_some() && !tile_core::runtime::cubins_off() {
        t.compile_fail("tests/ui-ptxas/*.rs");
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "ptxas not found in CI: scripts/setup.sh installs it into .tools/"
        );
        println!(
            "tests/ui-ptxas skipped: no ptxas at build time (scripts/setup.sh, or TILE_PTXAS)"
        );
    }
}
