//! What the compiler's two on-disk caches share (ptxas's cubins, [`crate::ptxas`], and LLVM's
//! PTX, [`crate::ptx_cache`]): the folder they live under, a 128-bit file name for a key, and a
//! write that a concurrent reader never sees half done.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where ptxas's temporary files and the caches may go, in order: the system's temporary
/// directory (`TMPDIR`), then (on Unix) `/tmp`, for a `TMPDIR` that does not exist.
pub(crate) fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![std::env::temp_dir()];
    if cfg!(unix) && dirs[0] != Path::new("/tmp") {
        dirs.push(PathBuf::from("/tmp"));
    }
    dirs
}

/// The cache folder `name` under the first of [`temp_dirs`] that exists.
pub(crate) fn cache_dir(name: &str) -> Option<PathBuf> {
    temp_dirs()
        .into_iter()
        .find(|d| d.is_dir())
        .map(|d| d.join(name))
}

/// `key` as 32 hex digits: two 64-bit SipHashes of it, salted 0 and 1.
pub(crate) fn key_hex(key: &impl Hash) -> String {
    let hash = |salt: u8| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (salt, key).hash(&mut h);
        h.finish()
    };
    format!("{:016x}{:016x}", hash(0), hash(1))
}

/// Writes `bytes` to `path` (its folder created if need be) under a name unique to this
/// process and call, then renames it into place, so a reader never sees half a file. False,
/// with nothing left behind, when a step failed.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> bool {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let Some(dir) = path.parent() else {
        return false;
    };
    if std::fs::create_dir_all(dir).is_err() {
        return false;
    }
    let tmp = dir.join(format!(
        "{}.{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    if std::fs::write(&tmp, bytes).is_err() || std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_and_differ() {
        assert_eq!(key_hex(&("a", 1u32)), key_hex(&("a", 1u32)));
        assert_ne!(key_hex(&("a", 1u32)), key_hex(&("a", 2u32)));
        assert_eq!(key_hex(&"x").len(), 32);
    }

    #[test]
    fn a_write_lands_whole_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("tile-cache-files-{}", std::process::id()));
        let path = dir.join("sub").join("entry.bin");
        assert!(write_atomically(&path, b"bytes"));
        assert_eq!(std::fs::read(&path).unwrap(), b"bytes");
        let left = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
        assert_eq!(left, 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
