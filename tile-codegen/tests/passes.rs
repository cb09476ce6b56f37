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
        p.run(&mut f, tile_codegen::llvm::scratch_bytes);
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
fn induction() {
    check("induction");
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
fn insert_barriers() {
    check("insert-barriers");
}

#[test]
fn pipeline_loads() {
    check("pipeline-loads");
}

#[test]
fn lower_descriptors() {
    check("lower-descriptors");
}

#[test]
fn prefetch_rows() {
    check("prefetch-rows");
}

#[test]
fn version_alignment() {
    check("version-alignment");
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

/// The case of `file` (a golden file) numbered `i`, as parsed input.
fn golden_input(file: &str, i: usize) -> tile_core::ir::Function {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/passes")
        .join(format!("{file}.tir"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let case = text.split(&format!("{SEPARATOR}\n")).nth(i).expect("case");
    let input = case
        .split_once(&format!("{EXPECT}\n"))
        .map_or(case, |c| c.0);
    parse(input).unwrap_or_else(|e| panic!("{file} case {i}: {e}"))
}

/// The shared-memory allocation of the barrier pass's cases: users never live at once share
/// bytes; a ring filled by copies lives until the wait after its loop; live users get disjoint,
/// aligned bytes.
#[test]
fn shared_allocation_by_liveness() {
    use tile_codegen::analysis::shared_alloc::{Allocation, Kind};
    use tile_codegen::llvm::scratch_bytes;
    use tile_core::ir::OpKind;
    let ops_of = |f: &tile_core::ir::Function, pred: fn(&OpKind) -> bool| -> Vec<_> {
        f.walk()
            .into_iter()
            .filter(|&o| pred(&f.op(o).kind))
            .collect()
    };

    // Three reductions across 4 warps: 16 bytes each (4 f32 partials), all at offset 0.
    let f = golden_input("insert-barriers", 0);
    let a = Allocation::of(&f, scratch_bytes).unwrap();
    let reds = ops_of(&f, |k| matches!(k, OpKind::Reduce { .. }));
    assert_eq!(reds.len(), 3);
    for r in reds {
        let p = a.place(r).unwrap();
        assert_eq!((p.offset, p.bytes, p.kind), (0, 16, Kind::Scratch));
    }
    assert_eq!((a.size, a.dynamic), (16, false));

    // Two 3-stage rings of 32 × 32 f16 (6 KiB each) live through the loop and its final wait; the
    // epilogue's conversion (32 × 32 f32, 4 KiB) comes after both and reuses the first ring's bytes.
    let f = golden_input("insert-barriers", 3);
    let a = Allocation::of(&f, scratch_bytes).unwrap();
    let rings = ops_of(&f, |k| matches!(k, OpKind::LocalAlloc));
    let conv = ops_of(&f, |k| matches!(k, OpKind::ConvertLayout));
    let wait0 = ops_of(&f, |k| matches!(k, OpKind::AsyncWait { pending: 0 }));
    let order = f.walk();
    let pos = |o| order.iter().position(|&x| x == o).unwrap();
    let (r0, r1) = (a.place(rings[0]).unwrap(), a.place(rings[1]).unwrap());
    assert_eq!((r0.offset, r0.bytes, r0.kind), (0, 6144, Kind::Buffer));
    assert_eq!((r1.offset, r1.bytes), (6144, 6144));
    assert_eq!(r0.live, (pos(rings[0]), pos(wait0[0])));
    let c = a.place(conv[0]).unwrap();
    assert_eq!((c.offset, c.bytes, c.kind), (0, 4096, Kind::Scratch));
    assert_eq!((a.size, a.dynamic), (12288, true));
}

#[test]
fn hoist_invariant() {
    check("hoist-invariant");
}
