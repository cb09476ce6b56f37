//! A cache of the LLVM back end's output, so that one kernel expanded by several builds of the
//! same crate (`cargo clippy`, `cargo test`, `cargo doc` each expand every `#[tile_kernel]`) runs
//! LLVM once. The key is the module's GPU-level IR text (what the lowering reads: the kernel's
//! name, its ops, layouts and facts), the target, the lowering's options and the compiler's
//! fingerprint (a hash of tile-codegen's and tile-core's sources, `build.rs`), so a compiler
//! whose code changed never reads another's entries. The value is the PTX, the LLVM IR and the
//! two facts the launch needs ([`Artifacts`]). Only successes are stored: a failure is computed
//! again, with its message and location.
//!
//! Entries live beside ptxas's cubin cache, under the temporary directory (`tile-ptx/`), and
//! are written under a unique name and renamed into place, so concurrent builds never read half
//! an entry. `TILE_PTX_CACHE=0` turns the cache off; one that cannot be read or written is
//! skipped.

use std::path::PathBuf;

use tile_core::Target;

use crate::cache_files::{cache_dir, key_hex, write_atomically};
use crate::llvm::{Artifacts, Options};

/// The compiler's fingerprint (see `build.rs`).
const FINGERPRINT: &str = env!("TILE_CODEGEN_FINGERPRINT");

/// The first line of an entry; a later format changes it.
const MAGIC: &str = "tile-ptx 2";

/// Where entries go, unless the cache is off.
fn dir() -> Option<PathBuf> {
    if std::env::var_os("TILE_PTX_CACHE").is_some_and(|v| v == "0") {
        return None;
    }
    cache_dir("tile-ptx")
}

/// The entry's file name: a 128-bit hash of the key.
fn file_name(target: Target, options: Options, gpu_ir: &str) -> String {
    let key = key_hex(&(FINGERPRINT, target, options.programs_per_sm, gpu_ir));
    format!("{key}-{}.ptx", target.arch())
}

/// An entry's bytes: the magic line, a line of `dyn_shared_bytes programs_per_sm ptx_length`,
/// the PTX, then the LLVM IR.
fn encode(a: &Artifacts) -> Vec<u8> {
    let mut out = format!(
        "{MAGIC}\n{} {} {}\n",
        a.dyn_shared_bytes,
        a.programs_per_sm,
        a.ptx.len()
    )
    .into_bytes();
    out.extend_from_slice(a.ptx.as_bytes());
    out.extend_from_slice(a.llvm_ir.as_bytes());
    out
}

/// The inverse of [`encode`]; `None` for anything else.
fn decode(bytes: &[u8]) -> Option<Artifacts> {
    let text = std::str::from_utf8(bytes).ok()?;
    let rest = text.strip_prefix(MAGIC)?.strip_prefix('\n')?;
    let (line, body) = rest.split_once('\n')?;
    let mut fields = line.split(' ');
    let dyn_shared_bytes = fields.next()?.parse().ok()?;
    let programs_per_sm = fields.next()?.parse().ok()?;
    let ptx_len: usize = fields.next()?.parse().ok()?;
    if fields.next().is_some() || !body.is_char_boundary(ptx_len.min(body.len())) {
        return None;
    }
    let (ptx, llvm_ir) = (body.get(..ptx_len)?, body.get(ptx_len..)?);
    Some(Artifacts {
        llvm_ir: llvm_ir.to_string(),
        ptx: ptx.to_string(),
        dyn_shared_bytes,
        programs_per_sm,
    })
}

/// `lower()`'s artifacts for the module `gpu_ir` on `target` with `options`: from the cache
/// when an entry is there, else computed and, when they are a success, stored.
pub fn lower_cached<E>(
    target: Target,
    options: Options,
    gpu_ir: &str,
    lower: impl FnOnce() -> Result<Artifacts, E>,
) -> Result<Artifacts, E> {
    let Some(dir) = dir() else {
        return lower();
    };
    let file = dir.join(file_name(target, options, gpu_ir));
    if let Some(a) = std::fs::read(&file).ok().and_then(|b| decode(&b)) {
        return Ok(a);
    }
    let a = lower()?;
    write_atomically(&file, &encode(&a));
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifacts() -> Artifacts {
        Artifacts {
            llvm_ir: "define void @k() { ret void }\n".into(),
            ptx: ".version 8.0\n.target sm_90a\n// é\n".into(),
            dyn_shared_bytes: 65536,
            programs_per_sm: 2,
        }
    }

    #[test]
    fn entries_round_trip_and_refuse_other_bytes() {
        let a = artifacts();
        let b = decode(&encode(&a)).expect("decodes");
        assert_eq!(
            (b.llvm_ir, b.ptx, b.dyn_shared_bytes, b.programs_per_sm),
            (a.llvm_ir, a.ptx, a.dyn_shared_bytes, a.programs_per_sm)
        );
        let mut cut = encode(&artifacts());
        cut.truncate(20);
        assert!(decode(&cut).is_none());
        assert!(decode(b"tile-ptx 1\n0 0 0\n").is_none());
        assert!(decode(b"tile-ptx 2\n0 x 0\n").is_none());
        assert!(decode(b"tile-ptx 2\n0 0 99\nshort").is_none());
    }

    #[test]
    fn the_key_covers_target_options_and_ir() {
        let o = Options::default();
        let one = Options {
            programs_per_sm: Some(1),
        };
        let base = file_name(Target::Sm80, o, "kernel @k");
        assert_eq!(base, file_name(Target::Sm80, o, "kernel @k"));
        assert_ne!(base, file_name(Target::Sm90a, o, "kernel @k"));
        assert_ne!(base, file_name(Target::Sm80, one, "kernel @k"));
        assert_ne!(base, file_name(Target::Sm80, o, "kernel @j"));
        assert!(base.ends_with("-sm_80.ptx"));
    }

    #[test]
    fn a_second_lowering_is_read_back_and_failures_are_not_stored() {
        let ir = format!("kernel @cache_test_{} {{}}", std::process::id());
        let first: Result<Artifacts, ()> =
            lower_cached(Target::Sm80, Options::default(), &ir, || Ok(artifacts()));
        assert!(first.is_ok());
        // A cache that could be written returns the stored entry without lowering again.
        if dir().is_some_and(|d| {
            d.join(file_name(Target::Sm80, Options::default(), &ir))
                .is_file()
        }) {
            let again: Result<Artifacts, ()> =
                lower_cached(Target::Sm80, Options::default(), &ir, || {
                    panic!("lowered twice")
                });
            assert_eq!(again.map(|a| a.ptx).ok(), Some(artifacts().ptx));
        }
        let failing = format!("{ir} failing");
        let e: Result<Artifacts, &str> =
            lower_cached(Target::Sm80, Options::default(), &failing, || Err("no"));
        assert_eq!(e.err(), Some("no"));
        let after: Result<Artifacts, &str> =
            lower_cached(Target::Sm80, Options::default(), &failing, || Err("again"));
        assert_eq!(after.err(), Some("again"));
    }
}
