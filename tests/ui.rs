//! Compile-fail tests: every DSL misuse is a rustc error with the caret under the offending
//! tokens. One case per diagnostic in `tests/ui/`; `TRYBUILD=overwrite` blesses the `.stderr`
//! files, whose diff is reviewed like code.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}

/// Compile-fail tests of the spill check, which needs a ptxas at build time (`scripts/setup.sh`
/// installs one; the macro then assembles every module): skipped without one, except in CI.
#[test]
fn ui_ptxas() {
    if tile_codegen::ptxas::find().is_none() || tile_codegen::pipeline::cubin_ptxas().is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "ptxas not found in CI: scripts/setup.sh installs it into .tools/"
        );
        println!("skipped: no ptxas at build time (run scripts/setup.sh, or set TILE_PTXAS)");
        return;
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui-ptxas/*.rs");
}
