//! The findings of differential testing, each a kernel with its launch in
//! `tile-fuzz/regressions/`: on a CUDA device each must give the interpreter's values (the bug it
//! found stays fixed); without one each still compiles for both targets and runs on the
//! interpreter, and the GPU half says it was skipped.

use std::path::Path;
use std::process::Command;

#[test]
fn differential_findings_stay_fixed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tile-fuzz/regressions")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    let gpu = match tile_core::runtime::Device::cuda(0) {
        Ok(_) => true,
        Err(e) => {
            println!("skipped (GPU test): {e}; the regressions run on the interpreter only");
            false
        }
    };
    for f in &files {
        let out = Command::new(env!("CARGO_BIN_EXE_tile-fuzz"))
            .arg("diff")
            .args((!gpu).then_some("--interp-only"))
            .arg("--text")
            .arg(f)
            .output()
            .expect("running tile-fuzz diff");
        let text = String::from_utf8_lossy(&out.stdout);
        println!("{text}");
        assert!(out.status.success(), "{}: {text}", f.display());
        let want = if gpu { "equal" } else { "interpreted" };
        assert!(
            text.contains(&format!(": {want}")) || text.contains(": within-tolerance"),
            "{}: {text}",
            f.display()
        );
    }
}
