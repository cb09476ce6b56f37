//! Compile-fail tests: every DSL misuse is a rustc error with the caret under the offending
//! tokens. One case per diagnostic in `tests/ui/`; `TRYBUILD=overwrite` blesses the `.stderr`
//! files, whose diff is reviewed like code.
//!
//! `tests/ui-ptxas/` holds the cases of the spill check, which needs a ptxas at build time
//! (`scripts/setup.sh` installs one; the macro then assembles every module): they run where one
//! is found, always in CI. One `TestCases` runs both folders (trybuild builds them as one crate).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    if tile_codegen::ptxas::find().is_some() && tile_codegen::pipeline::cubin_ptxas().is_some() {
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
