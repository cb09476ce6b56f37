//! The compiler's fingerprint, `TILE_CODEGEN_FINGERPRINT`: a hash of every source file of
//! tile-codegen and tile-core (the passes, the lowering, the IR and its printer), so that a
//! cached compilation ([`ptx_cache`](src/ptx_cache.rs)) is never reused by a compiler whose code
//! changed. Cargo reruns this script when a file under either `src/` changes.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut hashers = [
        std::collections::hash_map::DefaultHasher::new(),
        std::collections::hash_map::DefaultHasher::new(),
    ];
    for (salt, h) in hashers.iter_mut().enumerate() {
        salt.hash(h);
        std::env::var("CARGO_PKG_VERSION")
            .unwrap_or_default()
            .hash(h);
    }
    // tile-core's sources beside ours in the workspace; a tile-core from elsewhere is pinned by
    // the version above.
    for dir in [root.join("src"), root.join("../tile-core/src")] {
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut list = Vec::new();
        files(&dir, &mut list);
        list.sort();
        for f in list {
            let bytes = std::fs::read(&f).unwrap_or_default();
            for h in hashers.iter_mut() {
                f.strip_prefix(&root).unwrap_or(&f).hash(h);
                bytes.hash(h);
            }
        }
    }
    println!(
        "cargo:rustc-env=TILE_CODEGEN_FINGERPRINT={:016x}{:016x}",
        hashers[0].finish(),
        hashers[1].finish()
    );
    println!("cargo:rerun-if-changed=build.rs");
}
