//! Golden tests, one file per pass: `tests/passes/<pass>.tir` holds cases separated by lines
//! `// -----`; each case is an input kernel, a line `// expect:`, and the kernel the pass must
//! print. `TILE_BLESS=1 cargo test -p tile-codegen --test passes` rewrites the expectations; review
//! the diff like code.

use std::path::Path;

use tile_codegen::passes;
use tile_core::ir::{parse, print, verify};

const SEPARATOR: &str = "// -----";
const EXPECT: &str = "// expect:";

fn check(pass: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/passes")
        .join(format!("{pass}.tir"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let p = passes::Pass::from_name(pass).unwrap_or_else(|e| panic!("{e}"));
    let bless = std::env::var_os("TILE_BLESS").is_some();
    let mut blessed = Vec::new();
    for (i, case) in text.split(&format!("{SEPARATOR}\n")).enumerate() {
        let (input, expected) = case
            .split_once(&format!("{EXPECT}\n"))
            .unwrap_or((case, ""));
        let mut f = parse(input).unwrap_or_else(|e| panic!("{pass} case {i}: input: {e}"));
        verify(&f).unwrap_or_else(|e| panic!("{pass} case {i}: input does not verify: {e}"));
        p.run(&mut f);
        let got = print(&f);
        let reparsed = parse(&got).unwrap_or_else(|e| panic!("{pass} case {i}: output: {e}"));
        verify(&reparsed)
            .unwrap_or_else(|e| panic!("{pass} case {i}: output does not verify: {e}\n{got}"));
        if bless {
            blessed.push(format!("{input}{EXPECT}\n{got}"));
        } else {
            assert_eq!(got, expected, "{pass} case {i} (TILE_BLESS=1 to accept)");
        }
    }
    if bless {
        std::fs::write(&path, blessed.join(&format!("{SEPARATOR}\n"))).unwrap();
    }
}

#[test]
fn canonicalize() {
    check("canonicalize");
}

#[test]
fn cse() {
    check("cse");
}

#[test]
fn dce() {
    check("dce");
}

#[test]
fn hoist_loads() {
    check("hoist-loads");
}

#[test]
fn assign_layouts() {
    check("assign-layouts");
}

#[test]
fn vectorize() {
    check("vectorize");
}

#[test]
fn pipeline_dot() {
    check("pipeline-dot");
}

#[test]
fn prefetch_dot() {
    check("prefetch-dot");
}

#[test]
fn pipeline_loads() {
    check("pipeline-loads");
}

/// Every pass has its golden file, and its name leads back to it.
#[test]
fn every_pass_has_a_golden_file() {
    for p in passes::Pass::ALL {
        assert_eq!(passes::Pass::from_name(p.name()), Ok(p));
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/passes")
            .join(format!("{}.tir", p.name()));
        assert!(path.exists(), "{p}: no {}", path.display());
    }
}

/// A misspelled or unskippable name in `TILE_SKIP_PASSES` is an error that says which.
#[test]
fn skip_list_names_are_checked() {
    use tile_codegen::pipeline::parse_skip_passes;
    assert_eq!(
        parse_skip_passes(" cse, hoist-loads ,"),
        Ok(vec![passes::Pass::Cse, passes::Pass::HoistLoads])
    );
    assert_eq!(parse_skip_passes(""), Ok(vec![]));
    let e = parse_skip_passes("cse,hoist_loads").unwrap_err();
    assert!(e.contains("`hoist_loads` is not a pass"), "{e}");
    assert!(e.contains("hoist-loads"), "{e}");
    let e = parse_skip_passes("assign-layouts").unwrap_err();
    assert!(e.contains("cannot be left out"), "{e}");
}
