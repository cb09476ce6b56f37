//! Assembling PTX with NVIDIA's `ptxas`, on machines with or without a GPU.
//!
//! `ptxas` turns our PTX into SASS for one architecture (`sm_80`, `sm_90a`, …) and, with `-v`, says
//! what each kernel costs: registers per thread, stack frame, spill stores and loads, static shared
//! memory. Assembling every kernel proves the PTX is valid for that target long before it reaches a
//! GPU, and the numbers show register pressure and spills.
//!
//! [`find`] locates the binary: `$TILE_PTXAS`, else the copy `scripts/setup.sh` installs from the
//! PyPI wheel `nvidia-cuda-nvcc-cu12` into `<workspace>/.tools/nvcc/nvidia/cuda_nvcc/bin/ptxas`,
//! else `ptxas` on `PATH`. [`assemble`] runs it on a PTX string and parses its `-v` report with
//! [`parse_verbose`]:
//!
//! ```text
//! ptxas info    : 0 bytes gmem
//! ptxas info    : Compiling entry function 'spilly' for 'sm_80'
//! ptxas info    : Function properties for spilly
//!     232 bytes stack frame, 228 bytes spill stores, 264 bytes spill loads
//! ptxas info    : Used 24 registers, used 0 barriers, 232 bytes cumulative stack size, 368 bytes cmem[0]
//! ```
//!
//! Shared memory counts only what the PTX declares statically (`.shared`); dynamic shared memory is
//! sized at launch and ptxas never sees it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cache_files::{cache_dir, key_hex, temp_dirs, write_atomically};
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that names the `ptxas` binary to use.
pub const ENV_VAR: &str = "TILE_PTXAS";

/// Where `scripts/setup.sh` installs ptxas, relative to the workspace root.
pub const TOOLS_PATH: &str = ".tools/nvcc/nvidia/cuda_nvcc/bin/ptxas";

/// Locates `ptxas`: `$TILE_PTXAS` when set and non-empty (trusted as given, so a wrong setting fails
/// loudly in [`assemble`] instead of silently skipping), else the workspace's
/// `.tools/nvcc/nvidia/cuda_nvcc/bin/ptxas` if it exists, else the first `ptxas` on `PATH`.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(ENV_VAR).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let local = workspace.join(TOOLS_PATH);
    if local.is_file() {
        return Some(local);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("ptxas"))
        .find(|p| p.is_file())
}

/// What `ptxas -v` reported for one PTX module and one architecture.
///
/// A module with several entry functions gets, in each field, the largest value over them (the
/// figure that limits occupancy or signals trouble); `raw` has them all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The architecture assembled for, e.g. `sm_90a`.
    pub arch: String,
    /// Registers per thread (`Used N registers`).
    pub registers: u32,
    /// Bytes of spill stores per thread.
    pub spill_stores: u64,
    /// Bytes of spill loads per thread.
    pub spill_loads: u64,
    /// Bytes of stack frame per thread (local arrays and spills).
    pub stack_frame: u64,
    /// Bytes of statically declared shared memory per block (`N bytes smem`).
    pub shared_bytes: u64,
    /// Everything ptxas printed (both streams, in the order their buffers reached the file).
    pub raw: String,
}

impl Report {
    /// True when ptxas spilled registers to local memory.
    pub fn spills(&self) -> bool {
        self.spill_stores > 0 || self.spill_loads > 0
    }
}

/// Assembles `ptx` for `arch` (`sm_80`, `sm_90a`, …) with `ptxas -arch=<arch> -v` and parses the
/// report. The PTX and the cubin live in uniquely named temporary files that are removed afterwards.
/// On failure the error carries ptxas's own messages.
pub fn assemble(ptxas: &Path, ptx: &str, arch: &str) -> Result<Report, String> {
    assemble_cubin(ptxas, ptx, arch).map(|(report, _)| report)
}

/// [`assemble`], also returning the cubin ptxas wrote: the SASS a device of that architecture
/// loads without compiling anything (what `#[tile_kernel]` embeds next to the PTX).
pub fn assemble_cubin(ptxas: &Path, ptx: &str, arch: &str) -> Result<(Report, Vec<u8>), String> {
    unstopped(assemble_cubin_until(ptxas, ptx, arch, &|| false))
}

/// The result of an `…_until` call whose `stop` never says stop.
fn unstopped<T>(r: Result<Option<T>, PtxasError>) -> Result<T, String> {
    match r {
        Ok(Some(t)) => Ok(t),
        Ok(None) => Err("ptxas was stopped".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Why ptxas gave no cubin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PtxasError {
    /// This machine cannot run it: no writable temporary directory for its files, or the
    /// program does not start. Not a fault of the PTX.
    Environment(String),
    /// ptxas ran and refused the PTX, with its own messages.
    Refused(String),
}

impl std::fmt::Display for PtxasError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PtxasError::Environment(m) | PtxasError::Refused(m) => f.write_str(m),
        }
    }
}

/// How often a running ptxas is asked whether it should stop.
const POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// [`assemble_cubin`], stopping ptxas as soon as `stop` returns true (asked every few
/// milliseconds while it runs): `Ok(None)` then. A build asks this of modules whose result can
/// no longer matter, because a module before them has already failed.
pub fn assemble_cubin_until(
    ptxas: &Path,
    ptx: &str,
    arch: &str,
    stop: &dyn Fn() -> bool,
) -> Result<Option<(Report, Vec<u8>)>, PtxasError> {
    let env = PtxasError::Environment;
    let tmp = TempFiles::new().map_err(env)?;
    std::fs::write(&tmp.ptx, ptx)
        .map_err(|e| env(format!("cannot write {}: {e}", tmp.ptx.display())))?;
    // Both streams go to one file, so that nothing waits on a full pipe while this thread
    // polls the process.
    let log = std::fs::File::create(&tmp.log)
        .map_err(|e| env(format!("cannot create {}: {e}", tmp.log.display())))?;
    let log2 = log
        .try_clone()
        .map_err(|e| env(format!("cannot open {} twice: {e}", tmp.log.display())))?;
    let mut child = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg("-o")
        .arg(&tmp.cubin)
        .arg(&tmp.ptx)
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(|e| env(format!("cannot run ptxas at {}: {e}", ptxas.display())))?;
    let status = loop {
        let early = match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if !stop() => {
                std::thread::sleep(POLL);
                continue;
            }
            Ok(None) => Ok(None),
            Err(e) => Err(env(format!(
                "waiting for ptxas at {}: {e}",
                ptxas.display()
            ))),
        };
        // Stopped, or the wait failed: the process goes too.
        let _ = child.kill();
        let _ = child.wait();
        return early;
    };
    let text = std::fs::read(&tmp.log)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    if !status.success() {
        return Err(PtxasError::Refused(format!(
            "ptxas -arch={arch} failed ({status}):\n{}",
            text.trim_end()
        )));
    }
    let cubin = std::fs::read(&tmp.cubin)
        .map_err(|e| env(format!("cannot read {}: {e}", tmp.cubin.display())))?;
    Ok(Some((parse_verbose(&text, arch), cubin)))
}

/// The cubin of `ptx` for `arch`, from a cache in the temporary directory (`TMPDIR`, or `/tmp`
/// where that does not exist; `tile-cubins/`) when an identical PTX was assembled before by the same `ptxas` (its path,
/// size and modification time are part of the key), else from [`assemble_cubin`], stored for
/// next time. `cargo check`, `clippy` and `build` expand the same kernels; the cache makes ptxas
/// run once per kernel, target and ptxas. A cache that cannot be read or written is skipped.
/// The report of `ptxas -v` is kept beside each cubin (`.log`), so a cache hit returns it too.
pub fn cached_cubin(ptxas: &Path, ptx: &str, arch: &str) -> Result<(Report, Vec<u8>), String> {
    unstopped(cached_cubin_until(ptxas, ptx, arch, &|| false))
}

/// [`cached_cubin`], stopping ptxas when `stop` says so, as [`assemble_cubin_until`] does
/// (`Ok(None)`; nothing is stored then).
pub fn cached_cubin_until(
    ptxas: &Path,
    ptx: &str,
    arch: &str,
    stop: &dyn Fn() -> bool,
) -> Result<Option<(Report, Vec<u8>)>, PtxasError> {
    let stamp = std::fs::metadata(ptxas)
        .ok()
        .map(|m| (m.len(), m.modified().ok()));
    let Some(dir) = cache_dir("tile-cubins") else {
        return assemble_cubin_until(ptxas, ptx, arch, stop);
    };
    let key = key_hex(&(ptxas, stamp, arch, ptx));
    let file = dir.join(format!("{key}-{arch}.cubin"));
    let log = file.with_extension("log");
    // The log is written before the cubin, so a cubin found has its log.
    if let (Ok(bytes), Ok(text)) = (std::fs::read(&file), std::fs::read_to_string(&log)) {
        if bytes.starts_with(b"\x7fELF") {
            return Ok(Some((parse_verbose(&text, arch), bytes)));
        }
    }
    let Some((report, cubin)) = assemble_cubin_until(ptxas, ptx, arch, stop)? else {
        return Ok(None);
    };
    if write_atomically(&log, report.raw.as_bytes()) {
        write_atomically(&file, &cubin);
    }
    Ok(Some((report, cubin)))
}

/// Parses the text of `ptxas -v`. `arch` is used when the text does not name one
/// (`Compiling entry function '…' for 'sm_80'`). Lines it does not know are ignored.
pub fn parse_verbose(text: &str, arch: &str) -> Report {
    let mut report = Report {
        arch: arch.to_string(),
        raw: text.to_string(),
        ..Report::default()
    };
    for line in text.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            if let Some(a) = rest
                .split(" for '")
                .nth(1)
                .and_then(|s| s.split('\'').next())
            {
                report.arch = a.to_string();
            }
        }
        for part in line.split(',') {
            // "Used 24 registers" may follow "ptxas info    : ".
            let part = part.rsplit(": ").next().unwrap_or(part).trim();
            let mut words = part.split_whitespace();
            let (Some(first), Some(second)) = (words.next(), words.next()) else {
                continue;
            };
            let rest: Vec<&str> = words.collect();
            if first == "Used" && rest.first() == Some(&"registers") {
                if let Ok(n) = second.parse::<u32>() {
                    report.registers = report.registers.max(n);
                }
                continue;
            }
            let (Ok(n), "bytes") = (first.parse::<u64>(), second) else {
                continue;
            };
            let field = match rest.as_slice() {
                ["stack", "frame"] => &mut report.stack_frame,
                ["spill", "stores"] => &mut report.spill_stores,
                ["spill", "loads"] => &mut report.spill_loads,
                ["smem"] => &mut report.shared_bytes,
                _ => continue,
            };
            *field = (*field).max(n);
        }
    }
    report
}

/// A `.ptx` path, its `.cubin` and ptxas's `.log`, unique to this call, removed on drop.
struct TempFiles {
    ptx: PathBuf,
    cubin: PathBuf,
    log: PathBuf,
}

impl TempFiles {
    /// In the first of [`temp_dirs`] where the files can be created.
    fn new() -> Result<TempFiles, String> {
        let mut tried = Vec::new();
        for dir in temp_dirs() {
            match TempFiles::new_in(&dir) {
                Ok(t) => return Ok(t),
                Err(e) => tried.push(format!("{}: {e}", dir.display())),
            }
        }
        Err(format!(
            "no directory for ptxas's temporary files ({}); set TMPDIR to a writable \
             directory, or TILE_CUBIN=0 to build without cubins (PTX only, and no spill check)",
            tried.join("; ")
        ))
    }

    fn new_in(dir: &Path) -> Result<TempFiles, std::io::Error> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let stem = format!("tile-ptxas-{}-{nanos}-{n}", std::process::id());
            let ptx = dir.join(format!("{stem}.ptx"));
            // create_new: never reuse (or clobber) a file another process made.
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&ptx)
            {
                Ok(_) => {
                    let cubin = dir.join(format!("{stem}.cubin"));
                    let log = dir.join(format!("{stem}.log"));
                    return Ok(TempFiles { ptx, cubin, log });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for TempFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.ptx);
        let _ = std::fs::remove_file(&self.cubin);
        let _ = std::fs::remove_file(&self.log);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ptxas -arch=sm_80 -v` (CUDA 12.9, V12.9.86) on a PTX module with two kernels: one with a
    /// 1 KiB `.shared` buffer and a 64-byte `.local` array, one plain.
    const TWO_KERNELS_SM80: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'with_smem_and_stack' for 'sm_80'
ptxas info    : Function properties for with_smem_and_stack
    64 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 64 bytes cumulative stack size, 1024 bytes smem, 364 bytes cmem[0]
ptxas info    : Compile time = 5.862 ms
ptxas info    : Compiling entry function 'add_one' for 'sm_80'
ptxas info    : Function properties for add_one
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 364 bytes cmem[0]
ptxas info    : Compile time = 1.189 ms
";

    /// The same module with `-arch=sm_90a`.
    const TWO_KERNELS_SM90A: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'with_smem_and_stack' for 'sm_90a'
ptxas info    : Function properties for with_smem_and_stack
    64 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 14 registers, used 1 barriers, 64 bytes cumulative stack size, 1024 bytes smem
ptxas info    : Compile time = 3.014 ms
ptxas info    : Compiling entry function 'add_one' for 'sm_90a'
ptxas info    : Function properties for add_one
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
ptxas info    : Compile time = 1.360 ms
";

    /// `ptxas -arch=sm_80 -v --maxrregcount 16` on a kernel keeping 48 floats live: it spills.
    const SPILLS_SM80: &str = "\
ptxas warning : For profile sm_80 adjusting per thread register count of 16 to lower bound of 24
ptxas info    : Overriding maximum register limit 256 for 'spilly' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'spilly' for 'sm_80'
ptxas info    : Function properties for spilly
    232 bytes stack frame, 228 bytes spill stores, 264 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 232 bytes cumulative stack size, 368 bytes cmem[0]
ptxas info    : Compile time = 7.830 ms
";

    /// One plain kernel and one using 1 KiB of shared memory and a 64-byte local array, in the PTX
    /// that produced `TWO_KERNELS_SM80`.
    const TINY_PTX: &str = r#"
.version 7.0
.target sm_80
.address_size 64

.visible .entry add_one(.param .u64 p_out, .param .u32 p_n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [p_out];
    ld.param.u32 %r1, [p_n];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    add.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd4], %f2;
DONE:
    ret;
}

.visible .entry with_smem_and_stack(.param .u64 p_out, .param .u32 p_i)
{
    .reg .b32 %r<6>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<8>;
    .shared .align 4 .b8 buf[1024];
    .local .align 4 .b8 arr[64];

    ld.param.u64 %rd1, [p_out];
    ld.param.u32 %r1, [p_i];
    mov.u32 %r2, %tid.x;
    cvt.rn.f32.u32 %f1, %r2;
    mov.u64 %rd2, buf;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.shared.f32 [%rd4], %f1;
    bar.sync 0;
    mov.u64 %rd5, arr;
    and.b32 %r3, %r1, 15;
    mul.wide.u32 %rd6, %r3, 4;
    add.s64 %rd7, %rd5, %rd6;
    ld.shared.f32 %f2, [%rd4+4];
    st.local.f32 [%rd7], %f2;
    xor.b32 %r4, %r3, 1;
    mul.wide.u32 %rd6, %r4, 4;
    add.s64 %rd7, %rd5, %rd6;
    ld.local.f32 %f2, [%rd7];
    cvta.to.global.u64 %rd1, %rd1;
    add.s64 %rd1, %rd1, %rd3;
    st.global.f32 [%rd1], %f2;
    ret;
}
"#;

    #[test]
    fn parses_two_kernels_taking_the_largest() {
        let r = parse_verbose(TWO_KERNELS_SM80, "sm_80");
        assert_eq!(r.arch, "sm_80");
        assert_eq!(r.registers, 12);
        assert_eq!(r.stack_frame, 64);
        assert_eq!(r.spill_stores, 0);
        assert_eq!(r.spill_loads, 0);
        assert_eq!(r.shared_bytes, 1024);
        assert!(!r.spills());
        assert_eq!(r.raw, TWO_KERNELS_SM80);
    }

    #[test]
    fn parses_sm90a_without_cmem() {
        let r = parse_verbose(TWO_KERNELS_SM90A, "ignored");
        assert_eq!(r.arch, "sm_90a");
        assert_eq!(r.registers, 14);
        assert_eq!(r.stack_frame, 64);
        assert_eq!(r.shared_bytes, 1024);
    }

    #[test]
    fn parses_spills() {
        let r = parse_verbose(SPILLS_SM80, "sm_80");
        assert_eq!(r.registers, 24);
        assert_eq!(r.stack_frame, 232);
        assert_eq!(r.spill_stores, 228);
        assert_eq!(r.spill_loads, 264);
        assert_eq!(r.shared_bytes, 0);
        assert!(r.spills());
    }

    #[test]
    fn unknown_text_gives_zeros_and_the_given_arch() {
        let r = parse_verbose("ptxas info    : 0 bytes gmem\nsomething else\n", "sm_86");
        assert_eq!(
            r,
            Report {
                arch: "sm_86".into(),
                raw: "ptxas info    : 0 bytes gmem\nsomething else\n".into(),
                ..Report::default()
            }
        );
    }

    #[test]
    fn real_ptxas_assembles_tiny_ptx() {
        let Some(ptxas) = find() else {
            println!("skipped: no ptxas");
            return;
        };
        for arch in ["sm_80", "sm_90a"] {
            let r = assemble(&ptxas, TINY_PTX, arch)
                .unwrap_or_else(|e| panic!("{} on {arch}: {e}", ptxas.display()));
            assert_eq!(r.arch, arch, "{}", r.raw);
            assert!(r.registers > 0, "{}", r.raw);
            assert_eq!(r.shared_bytes, 1024, "{}", r.raw);
            assert_eq!(r.stack_frame, 64, "{}", r.raw);
            assert!(!r.spills(), "{}", r.raw);
        }
        let bad = TINY_PTX.replace("cvt.rn.f32.u32", "cvt.f32.u32");
        let err = assemble(&ptxas, &bad, "sm_80").unwrap_err();
        assert!(err.contains("Rounding modifier required"), "{err}");
    }

    #[test]
    fn a_stopped_ptxas_gives_nothing() {
        let Some(ptxas) = find() else {
            println!("skipped: no ptxas");
            return;
        };
        let r = assemble_cubin_until(&ptxas, TINY_PTX, "sm_80", &|| true).unwrap();
        assert!(r.is_none());
        let r = assemble_cubin_until(&ptxas, TINY_PTX, "sm_90a", &|| false).unwrap();
        let (report, cubin) = r.expect("not stopped");
        assert_eq!(report.arch, "sm_90a", "{}", report.raw);
        assert!(cubin.starts_with(b"\x7fELF"));
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_panic() {
        let missing = std::env::temp_dir()
            .join("tile-no-such-directory")
            .join("below");
        let err = TempFiles::new_in(&missing)
            .err()
            .expect("no such directory");
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err}");
    }

    #[test]
    fn temporary_files_go_away() {
        let tmp = TempFiles::new().unwrap();
        let paths = [tmp.ptx.clone(), tmp.cubin.clone(), tmp.log.clone()];
        for p in &paths[1..] {
            std::fs::write(p, b"x").unwrap();
        }
        assert!(paths.iter().all(|p| p.exists()));
        drop(tmp);
        assert!(paths.iter().all(|p| !p.exists()), "{paths:?}");
    }
}
