//! Compile-fail tests: every DSL misuse is a rustc error with the caret under the offending
//! tokens. One case per diagnostic in `tests/ui/`; `TRYBUILD=overwrite` blesses the `.stderr`
//! files, whose diff is reviewed like code.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
