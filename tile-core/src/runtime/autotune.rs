//! The run-time half of autotuning: an [`Autotuner`] picks one of a kernel's build-time
//! configurations for each launch key and device, times the candidates the first time a key is
//! seen, and remembers the pick in memory and on disk.
//!
//! Every configuration of an autotuned kernel is compiled at build time; the generated code
//! holds one `static` [`Autotuner`] per kernel, naming the configurations ([`ConfigDesc`]: a
//! label such as `BM=128, BN=128, BK=32, num_warps=4, num_stages=4`) and a hash of their
//! compiled code. Before each launch it calls [`Autotuner::choose`] with the launch's key (the
//! integer arguments the user named, such as `m, n, k`) and a `bench` closure that times one
//! configuration (usually through [`time_ms`]), then launches the configuration returned.
//!
//! # What decides
//!
//! In this order, the first that applies:
//!
//! 1. **The interpreter** never times: it runs the heuristic's pick, else the first
//!    configuration the prune keeps, else configuration 0 — and says once per kernel and
//!    process that tuning is ignored there ([`Source::Interpreter`]).
//! 2. **Deterministic mode** never times and never reads the disk cache: the same untimed pick
//!    ([`Source::Deterministic`]). It is on when the environment variable `TILE_AUTOTUNE` is
//!    `off` (or `0`, `false`), on a device made with [`Device::with_deterministic_tuning`], or
//!    after [`Autotuner::set_deterministic`].
//! 3. **A heuristic** (a user function from the key to a configuration, Triton's
//!    `@heuristics`) picks without timing ([`Source::Heuristic`]).
//! 4. Otherwise the pick is **timed**: a decision in memory for this device and key is used as
//!    it is. Else the candidates are every configuration, or those the user's `prune` keeps for
//!    the key; a single candidate is taken without timing or caching ([`Source::Only`]). Else a
//!    valid entry of the disk cache is used ([`Source::Disk`]); else each candidate is timed with
//!    `bench` and the fastest kept ([`Source::Timed`]; times within [`TIE`] (1%) of the fastest count as equal and go to the lowest index, so
//!    equal timings give the same pick every time). A candidate whose `bench` fails (a launch
//!    refused for its resources, say) is skipped and noted in the decision; when all fail, the
//!    first error is returned and nothing is remembered, so the next launch tries again.
//!
//! Untimed picks are remembered in memory too (the heuristic runs once per device and key).
//!
//! # Keying
//!
//! A decision belongs to a device identity ([`DeviceIdentity`]: the GPU's name, compute
//! capability, CUDA driver version and the PTX target the device was told to use, if any) and
//! a key. Two GPUs of the same model share decisions; a driver update or a different forced
//! target tunes again. On disk the kernel's name and hash are part of the key as well, so
//! a rebuilt kernel whose code changed never reads its old decisions.
//!
//! # The disk cache
//!
//! One plain-text file per (device identity, kernel, kernel hash, key), in the directory
//! `$TILE_CACHE_DIR/autotune`, else `$XDG_CACHE_HOME/tile/autotune`, else
//! `$HOME/.cache/tile/autotune`, else `tile-autotune` in the temporary directory;
//! `TILE_AUTOTUNE_CACHE=0` (or `off`, `false`) turns it off. The file is named
//! `<kernel>-<hash>.txt`, the hash (64-bit FNV-1a, stable across Rust versions) taken over
//! every key field, and holds `field = value` lines: every key field in plain text, the chosen
//! configuration's index and label, and each configuration's measured time (`time.3 = 0.0412`,
//! in ms; `not timed` for one the prune dropped; `failed: …` with the error). A read checks
//! every field against what this process expects; a mismatch, an unparsable file, an index out
//! of range or a label that is not the configuration's at that index makes the entry ignored
//! with a warning (once per message and process), tuned again and overwritten. Writes go to a
//! unique temporary file in the same directory, renamed over the entry, so concurrent writers
//! (threads or processes) never leave a torn file: the last rename wins, and every rename
//! installs a whole, valid entry. A write that fails (a read-only directory) is a warning, never
//! an error. The environment is read once per process, at the first decision.
//!
//! # What is timed
//!
//! Whatever `bench(i)` does: the generated code launches configuration `i` on the device (on
//! scratch copies where the kernel writes its inputs) through [`time_ms`], which returns the
//! median device time of one launch over a few batches of launches between CUDA events. Timing
//! runs on the launch's own stream, on the caller's thread, while the caller waits.
//!
//! # Threads
//!
//! The tuner's lock is never held while user code runs (`bench`, `prune`, `heuristic`): a key
//! being tuned is marked as such, the lock released, the candidates timed, and the decision
//! stored under the lock again. Another thread that asks for the same device and key meanwhile
//! waits for that decision instead of tuning too; one asking for another key tunes at the same
//! time (on one GPU the two timings then disturb each other). If the tuning thread fails or
//! panics, the mark is removed and a waiting thread tunes in its place. A `bench` that asks the
//! same tuner for the key it is tuning (which would wait for itself) gets an error instead.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use super::device::{CudaDevice, Device};
use super::error::Error;

/// The environment variable that turns timing off: `off`, `0` or `false` make every autotuned
/// kernel take its heuristic's pick or its first configuration (deterministic mode).
pub const AUTOTUNE_ENV: &str = "TILE_AUTOTUNE";

/// The environment variable that turns the on-disk autotuning cache off (`0`, `off`, `false`).
pub const AUTOTUNE_CACHE_ENV: &str = "TILE_AUTOTUNE_CACHE";

/// The environment variable naming tile's cache directory; autotuning decisions go to its
/// `autotune` subdirectory.
pub const CACHE_DIR_ENV: &str = "TILE_CACHE_DIR";

/// The version of the cache files' format, written in each file and checked on reading.
const FORMAT: &str = "1";

/// Autotuning on devices.
impl Device {
    /// This device with autotuned kernels in deterministic mode: they never time
    /// configurations, and take their heuristic's pick or their first configuration (as
    /// `TILE_AUTOTUNE=off` does for every device). `on = false` gives the default back. The
    /// interpreter never times, so on it this changes nothing.
    pub fn with_deterministic_tuning(self, on: bool) -> Device {
        match self {
            Device::Cuda(mut c) => {
                c.deterministic_tuning = on;
                Device::Cuda(c)
            }
            Device::Interpreter => Device::Interpreter,
        }
    }

    /// Whether autotuned kernels run in deterministic mode on this device
    /// ([`Device::with_deterministic_tuning`]; always true on the interpreter).
    pub fn deterministic_tuning(&self) -> bool {
        match self {
            Device::Cuda(c) => c.deterministic_tuning,
            Device::Interpreter => true,
        }
    }
}

/// One configuration of an autotuned kernel, as messages and the disk cache name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConfigDesc {
    /// Its constants and options, such as `BM=128, BN=128, BK=32, num_warps=4, num_stages=4`.
    pub label: &'static str,
}

impl ConfigDesc {
    /// A configuration with this label.
    pub const fn new(label: &'static str) -> ConfigDesc {
        ConfigDesc { label }
    }
}

/// What decisions are keyed by besides the launch key: the facts of a GPU that change which
/// configuration is fastest.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceIdentity {
    /// The GPU's name (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// The CUDA driver's version (`cuDriverGetVersion`: 12040 for 12.4), when known.
    pub driver_version: Option<i32>,
    /// The PTX target the device was told to use ([`Device::with_target`]), if any.
    pub target: Option<&'static str>,
}

impl DeviceIdentity {
    /// The identity of a device (the interpreter's is [`DeviceIdentity::interpreter`]).
    pub fn of(dev: &Device) -> DeviceIdentity {
        match dev {
            Device::Cuda(c) => DeviceIdentity::of_cuda(c),
            Device::Interpreter => DeviceIdentity::interpreter(),
        }
    }

    /// The CPU interpreter's identity (no capability, driver or target).
    pub fn interpreter() -> DeviceIdentity {
        DeviceIdentity {
            name: "tile CPU interpreter".into(),
            compute_capability: (0, 0),
            driver_version: None,
            target: None,
        }
    }

    fn of_cuda(c: &CudaDevice) -> DeviceIdentity {
        DeviceIdentity {
            name: c.name.clone(),
            compute_capability: c.cc,
            driver_version: driver_version(),
            target: c.target.map(|t| t.arch()),
        }
    }
}

/// The CUDA driver's version, read once per process. Only called for a CUDA device, so the
/// driver library is loaded.
fn driver_version() -> Option<i32> {
    static VERSION: OnceLock<Option<i32>> = OnceLock::new();
    *VERSION.get_or_init(|| {
        let mut v: std::ffi::c_int = 0;
        // SAFETY: `cuDriverGetVersion` writes one int through a valid pointer to a local and
        // needs no initialized context; a `Device::Cuda` exists, so the driver library was
        // found and cudarc loads the symbol from it.
        let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
        (r == cudarc::driver::sys::CUresult::CUDA_SUCCESS).then_some(v)
    })
}

/// How a decision was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The candidates were timed in this process.
    Timed,
    /// Read from the disk cache (the times are those measured when it was written).
    Disk,
    /// One candidate only (a single configuration, or the only one the prune keeps): nothing
    /// to time or cache.
    Only,
    /// The kernel's heuristic picked without timing.
    Heuristic,
    /// Deterministic mode: the heuristic's pick, else the first configuration kept.
    Deterministic,
    /// The interpreter, which never times: as in deterministic mode.
    Interpreter,
}

/// What one configuration's timing gave, in a [`Decision`].
#[derive(Clone, Debug, PartialEq)]
pub enum Timing {
    /// Not timed (the prune dropped it, or the decision was made without timing).
    NotTimed,
    /// Device time of one launch, ms.
    Ms(f64),
    /// Its bench failed with this error, and it was skipped.
    Failed(String),
}

/// One decision of an [`Autotuner`]: which configuration a device and key run, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The kernel.
    pub kernel: &'static str,
    /// The device.
    pub device: DeviceIdentity,
    /// The launch key.
    pub key: Vec<i64>,
    /// The chosen configuration's index.
    pub config: usize,
    /// The chosen configuration's label.
    pub label: &'static str,
    /// How it was chosen.
    pub source: Source,
    /// Each configuration's timing, by index.
    pub times: Vec<Timing>,
    /// Wall time spent deciding (timing every candidate, or reading the cache), ms.
    pub tuning_ms: f64,
    /// What went wrong on the way without stopping the decision: configurations whose bench
    /// failed, a cache entry ignored, a cache write that failed.
    pub notes: Vec<String>,
}

/// Where decisions are kept on disk and whether timing is allowed, as the environment sets
/// them ([`TuneOptions::from_env`]) or as a caller gives them ([`Autotuner::choose_for`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TuneOptions {
    /// Never time: take the heuristic's pick or the first configuration kept.
    pub deterministic: bool,
    /// The disk cache's directory; `None` keeps decisions in memory only.
    pub cache_dir: Option<PathBuf>,
}

impl TuneOptions {
    /// The options the environment sets: `TILE_AUTOTUNE`, `TILE_AUTOTUNE_CACHE`,
    /// `TILE_CACHE_DIR`, `XDG_CACHE_HOME`, `HOME` (see the module doc).
    pub fn from_env() -> TuneOptions {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let off = |name: &str| {
            var(name).is_some_and(|v| {
                let v = v.to_string_lossy().to_ascii_lowercase();
                matches!(v.trim(), "off" | "0" | "false")
            })
        };
        let cache_dir = if off(AUTOTUNE_CACHE_ENV) {
            None
        } else if let Some(d) = var(CACHE_DIR_ENV) {
            Some(PathBuf::from(d).join("autotune"))
        } else if let Some(d) = var("XDG_CACHE_HOME") {
            Some(PathBuf::from(d).join("tile").join("autotune"))
        } else if let Some(d) = var("HOME") {
            Some(
                PathBuf::from(d)
                    .join(".cache")
                    .join("tile")
                    .join("autotune"),
            )
        } else {
            Some(std::env::temp_dir().join("tile-autotune"))
        };
        TuneOptions {
            deterministic: off(AUTOTUNE_ENV),
            cache_dir,
        }
    }
}

/// [`TuneOptions::from_env`], read once per process.
fn env_options() -> &'static TuneOptions {
    static OPTIONS: OnceLock<TuneOptions> = OnceLock::new();
    OPTIONS.get_or_init(TuneOptions::from_env)
}

/// A user function that keeps some configurations for a key (indices; order and repeats do not
/// matter).
pub type PruneFn = fn(&[i64]) -> Vec<usize>;

/// A user function that picks a configuration for a key without timing.
pub type HeuristicFn = fn(&[i64]) -> usize;

/// The decisions of one autotuned kernel: built in a `const` context (the generated code keeps
/// it in a `static`), filled at run time. See the module doc.
///
/// ```
/// use tile_core::runtime::autotune::{Autotuner, ConfigDesc};
/// use tile_core::runtime::Device;
///
/// static TUNER: Autotuner = Autotuner::new(
///     "my_kernel",
///     0x1234_5678_9abc_def0,
///     &[ConfigDesc::new("BLOCK=128"), ConfigDesc::new("BLOCK=256")],
/// );
///
/// # fn main() -> Result<(), tile_core::runtime::Error> {
/// let dev = Device::interpreter();
/// // The interpreter never times: config 0, and a note on stderr once.
/// let config = TUNER.choose(&dev, &[4096], |_| unreachable!())?;
/// assert_eq!(config, 0);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Autotuner {
    kernel: &'static str,
    kernel_hash: u64,
    configs: &'static [ConfigDesc],
    prune: Option<PruneFn>,
    heuristic: Option<HeuristicFn>,
    deterministic: AtomicBool,
    told_interpreter: AtomicBool,
    state: Mutex<State>,
    changed: Condvar,
}

/// The decisions made so far, and the keys being tuned.
#[derive(Debug)]
struct State {
    decisions: Vec<Decision>,
    devices: Vec<PerDevice>,
}

/// One device's decisions: indices into [`State::decisions`].
#[derive(Debug)]
struct PerDevice {
    id: DeviceIdentity,
    timed: BTreeMap<Vec<i64>, Slot>,
    untimed: BTreeMap<Vec<i64>, usize>,
}

#[derive(Debug, Clone, Copy)]
enum Slot {
    /// This thread is tuning the key.
    Tuning(ThreadId),
    /// Decided: the index of the decision.
    Done(usize),
}

impl State {
    fn device(&mut self, id: &DeviceIdentity) -> &mut PerDevice {
        let i = match self.devices.iter().position(|d| d.id == *id) {
            Some(i) => i,
            None => {
                self.devices.push(PerDevice {
                    id: id.clone(),
                    timed: BTreeMap::new(),
                    untimed: BTreeMap::new(),
                });
                self.devices.len() - 1
            }
        };
        &mut self.devices[i]
    }
}

/// Whether timing is allowed, as [`Autotuner::decide`] is told.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Tune,
    Untimed(Source),
}

impl Autotuner {
    /// An autotuner for `kernel`, whose configurations (at least one) are `configs` and whose
    /// compiled code hashes to `kernel_hash` (any hash of every configuration's code: it keys
    /// the disk cache, so that a kernel whose code changed tunes again).
    pub const fn new(
        kernel: &'static str,
        kernel_hash: u64,
        configs: &'static [ConfigDesc],
    ) -> Autotuner {
        assert!(
            !configs.is_empty(),
            "an autotuned kernel needs at least one configuration"
        );
        Autotuner {
            kernel,
            kernel_hash,
            configs,
            prune: None,
            heuristic: None,
            deterministic: AtomicBool::new(false),
            told_interpreter: AtomicBool::new(false),
            state: Mutex::new(State {
                decisions: Vec::new(),
                devices: Vec::new(),
            }),
            changed: Condvar::new(),
        }
    }

    /// This autotuner timing only the configurations `prune` keeps for each key.
    pub const fn with_prune(mut self, prune: PruneFn) -> Autotuner {
        self.prune = Some(prune);
        self
    }

    /// This autotuner picking with `heuristic` instead of timing.
    pub const fn with_heuristic(mut self, heuristic: HeuristicFn) -> Autotuner {
        self.heuristic = Some(heuristic);
        self
    }

    /// Turns deterministic mode on or off for this kernel (see the module doc; the environment
    /// and the device can turn it on too).
    pub fn set_deterministic(&self, on: bool) {
        self.deterministic.store(on, Ordering::Relaxed);
    }

    /// The kernel's name.
    pub fn kernel(&self) -> &'static str {
        self.kernel
    }

    /// The hash of the configurations' code.
    pub fn kernel_hash(&self) -> u64 {
        self.kernel_hash
    }

    /// The configurations.
    pub fn configs(&self) -> &'static [ConfigDesc] {
        self.configs
    }

    /// Every decision made so far in this process, in order (a later launch that finds its
    /// decision in memory adds none).
    pub fn decisions(&self) -> Vec<Decision> {
        self.lock().decisions.clone()
    }

    /// Forgets the decisions kept in memory (not those on disk), so the next launch of each key
    /// decides again. Keys being tuned right now stay marked.
    pub fn clear(&self) {
        let mut st = self.lock();
        st.decisions.clear();
        for d in &mut st.devices {
            d.timed.retain(|_, s| matches!(s, Slot::Tuning(_)));
            d.untimed.clear();
        }
    }

    /// Forgets the decision for `key` on `dev`, in memory and in the disk cache the environment
    /// names (see [`TuneOptions::from_env`]), so that the next launch with `key` times its
    /// candidates again: for a benchmark that tunes every size afresh, or a caller whose key
    /// leaves out what decides the speed (a grouped GEMM keyed on its group's size alone, whose
    /// matrices' sizes live in device memory, decides once for every size). Other keys stay
    /// decided, a key being tuned right now stays marked, and [`Autotuner::decisions`] keeps
    /// its record. A cache entry that cannot be removed is an `Err`.
    pub fn forget(&self, dev: &Device, key: &[i64]) -> Result<(), Error> {
        self.forget_for(&DeviceIdentity::of(dev), key, env_options())
    }

    /// [`Autotuner::forget`] for a device given by its identity, with the options given rather
    /// than read from the environment.
    pub fn forget_for(
        &self,
        id: &DeviceIdentity,
        key: &[i64],
        options: &TuneOptions,
    ) -> Result<(), Error> {
        {
            let mut st = self.lock();
            let d = st.device(id);
            if let Some(Slot::Done(_)) = d.timed.get(key) {
                d.timed.remove(key);
            }
            d.untimed.remove(key);
        }
        let Some(dir) = options.cache_dir.as_deref() else {
            return Ok(());
        };
        let path = self.cache_file(dir, id, key);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.error(format!(
                "could not remove the autotuning cache file {}: {e}",
                path.display()
            ))),
        }
    }

    /// The configuration to launch on `dev` for `key`; `bench(i)` returns the device time (ms)
    /// of one launch of configuration `i`, and is called only when timing (see the module
    /// doc). Settings come from the environment (read once per process), the device and
    /// [`Autotuner::set_deterministic`]. On the device inside [`Device::capture`], a key that
    /// would need timing is an `Err` (events cannot be recorded there): launch it once before
    /// the capture.
    pub fn choose(
        &self,
        dev: &Device,
        key: &[i64],
        bench: impl FnMut(usize) -> Result<f64, Error>,
    ) -> Result<usize, Error> {
        match dev {
            Device::Interpreter => {
                static INTERPRETER: OnceLock<DeviceIdentity> = OnceLock::new();
                let id = INTERPRETER.get_or_init(DeviceIdentity::interpreter);
                let config = self.untimed(id, key, Source::Interpreter)?;
                if !self.told_interpreter.swap(true, Ordering::Relaxed) {
                    let what = if self.heuristic.is_some() {
                        "the heuristic's pick"
                    } else if self.prune.is_some() {
                        "the first configuration the prune keeps"
                    } else {
                        "configuration 0"
                    };
                    let msg = format!(
                        "tile: kernel `{}` is autotuned, but the interpreter does not time \
                         kernels: it runs {what} for each key (configuration {config}, {}, for \
                         key {key:?})",
                        self.kernel, self.configs[config].label
                    );
                    trace_event!(info, kernel = self.kernel, config, "{msg}");
                    eprintln!("{msg}");
                }
                Ok(config)
            }
            Device::Cuda(c) => {
                let env = env_options();
                let id = DeviceIdentity::of_cuda(c);
                let deterministic = env.deterministic || c.deterministic_tuning;
                self.decide(
                    &id,
                    key,
                    deterministic,
                    env.cache_dir.as_deref(),
                    c.recording.is_some(),
                    bench,
                )
            }
        }
    }

    /// [`Autotuner::choose`] for a device given by its identity, with the options given rather
    /// than read from the environment: for tools, and for tests without a GPU.
    pub fn choose_for(
        &self,
        id: &DeviceIdentity,
        key: &[i64],
        options: &TuneOptions,
        bench: impl FnMut(usize) -> Result<f64, Error>,
    ) -> Result<usize, Error> {
        self.decide(
            id,
            key,
            options.deterministic,
            options.cache_dir.as_deref(),
            false,
            bench,
        )
    }

    /// The file the disk cache in `dir` keeps the decision for `id` and `key` in.
    pub fn cache_file(&self, dir: &Path, id: &DeviceIdentity, key: &[i64]) -> PathBuf {
        let fields = self.key_fields(id, key);
        let mut h = Fnv::new();
        for (name, value) in &fields {
            h = h
                .write(name.as_bytes())
                .write(b"\0")
                .write(value.as_bytes())
                .write(b"\0");
        }
        let stem: String = self
            .kernel
            .chars()
            .take(64)
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        dir.join(format!("{stem}-{:016x}.txt", h.finish()))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn decide(
        &self,
        id: &DeviceIdentity,
        key: &[i64],
        deterministic: bool,
        cache_dir: Option<&Path>,
        recording: bool,
        bench: impl FnMut(usize) -> Result<f64, Error>,
    ) -> Result<usize, Error> {
        let mode = if deterministic || self.deterministic.load(Ordering::Relaxed) {
            Mode::Untimed(Source::Deterministic)
        } else if self.heuristic.is_some() {
            Mode::Untimed(Source::Heuristic)
        } else {
            Mode::Tune
        };
        match mode {
            Mode::Untimed(source) => self.untimed(id, key, source),
            Mode::Tune => self.timed(id, key, cache_dir, recording, bench),
        }
    }

    /// A pick without timing, remembered per device and key.
    fn untimed(&self, id: &DeviceIdentity, key: &[i64], source: Source) -> Result<usize, Error> {
        {
            let mut st = self.lock();
            if let Some(&i) = st.device(id).untimed.get(key) {
                return Ok(st.decisions[i].config);
            }
        }
        // Computed without the lock (user code); two threads may both compute the same pick.
        let config = self.untimed_pick(key)?;
        let decision = Decision {
            kernel: self.kernel,
            device: id.clone(),
            key: key.to_vec(),
            config,
            label: self.configs[config].label,
            source,
            times: vec![Timing::NotTimed; self.configs.len()],
            tuning_ms: 0.0,
            notes: Vec::new(),
        };
        let mut st = self.lock();
        if let Some(&i) = st.device(id).untimed.get(key) {
            return Ok(st.decisions[i].config);
        }
        st.decisions.push(decision.clone());
        let i = st.decisions.len() - 1;
        st.device(id).untimed.insert(key.to_vec(), i);
        drop(st);
        trace_decision(&decision);
        Ok(config)
    }

    /// The heuristic's pick, else the first configuration the prune keeps, else 0.
    fn untimed_pick(&self, key: &[i64]) -> Result<usize, Error> {
        match self.heuristic {
            Some(h) => {
                let i = h(key);
                if i >= self.configs.len() {
                    return Err(self.error(format!(
                        "the heuristic picked configuration {i} for key {key:?}, but there are {}",
                        self.configs.len()
                    )));
                }
                Ok(i)
            }
            None => Ok(self.candidates(key)?[0]),
        }
    }

    /// The configurations to time for `key`: all, or those the prune keeps, in index order.
    fn candidates(&self, key: &[i64]) -> Result<Vec<usize>, Error> {
        let n = self.configs.len();
        let Some(prune) = self.prune else {
            return Ok((0..n).collect());
        };
        let mut kept = prune(key);
        if let Some(bad) = kept.iter().find(|&&i| i >= n) {
            return Err(self.error(format!(
                "the prune kept configuration {bad} for key {key:?}, but there are {n}"
            )));
        }
        kept.sort_unstable();
        kept.dedup();
        if kept.is_empty() {
            return Err(self.error(format!("the prune kept no configuration for key {key:?}")));
        }
        Ok(kept)
    }

    fn error(&self, msg: String) -> Error {
        Error::Autotune {
            kernel: self.kernel,
            msg,
        }
    }

    /// A timed pick: from memory, else from disk, else by timing; one thread per device and
    /// key decides while the others wait.
    fn timed(
        &self,
        id: &DeviceIdentity,
        key: &[i64],
        cache_dir: Option<&Path>,
        recording: bool,
        bench: impl FnMut(usize) -> Result<f64, Error>,
    ) -> Result<usize, Error> {
        let me = std::thread::current().id();
        let mut st = self.lock();
        loop {
            match st.device(id).timed.get(key).copied() {
                Some(Slot::Done(i)) => return Ok(st.decisions[i].config),
                Some(Slot::Tuning(t)) if t == me => {
                    return Err(self.error(format!(
                        "key {key:?} was asked for again while its configurations are being \
                         timed (a bench that launches the autotuned kernel itself?)"
                    )))
                }
                Some(Slot::Tuning(_)) => {
                    st = self.changed.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                None => {
                    st.device(id).timed.insert(key.to_vec(), Slot::Tuning(me));
                    break;
                }
            }
        }
        drop(st);
        let mut pending = Pending {
            tuner: self,
            id,
            key,
            armed: true,
        };
        let decision = self.tune(id, key, cache_dir, recording, bench)?;
        let config = decision.config;
        trace_decision(&decision);
        let mut st = self.lock();
        st.decisions.push(decision);
        let i = st.decisions.len() - 1;
        st.device(id).timed.insert(key.to_vec(), Slot::Done(i));
        pending.armed = false;
        drop(st);
        self.changed.notify_all();
        Ok(config)
    }

    /// Reads the disk cache, else times the candidates and writes the cache. Runs without the
    /// lock.
    fn tune(
        &self,
        id: &DeviceIdentity,
        key: &[i64],
        cache_dir: Option<&Path>,
        recording: bool,
        mut bench: impl FnMut(usize) -> Result<f64, Error>,
    ) -> Result<Decision, Error> {
        let started = Instant::now();
        let mut notes = Vec::new();
        let decision = |config: usize, source, times, notes| Decision {
            kernel: self.kernel,
            device: id.clone(),
            key: key.to_vec(),
            config,
            label: self.configs[config].label,
            source,
            times,
            tuning_ms: started.elapsed().as_secs_f64() * 1e3,
            notes,
        };
        let candidates = self.candidates(key)?;
        if let [only] = candidates[..] {
            let times = vec![Timing::NotTimed; self.configs.len()];
            return Ok(decision(only, Source::Only, times, notes));
        }
        let path = cache_dir.map(|d| self.cache_file(d, id, key));
        if let Some(path) = &path {
            match self.read_entry(path, id, key) {
                Ok(Some((config, times))) => {
                    return Ok(decision(config, Source::Disk, times, notes))
                }
                Ok(None) => {}
                Err(why) => {
                    let msg = format!(
                        "ignoring the autotuning cache file {} ({why}); kernel `{}` is tuned \
                         again for key {key:?} and the file rewritten",
                        path.display(),
                        self.kernel
                    );
                    warn_once(&msg);
                    notes.push(msg);
                }
            }
        }
        if recording {
            return Err(Error::Capture(format!(
                "kernel `{}` has no tuned configuration yet for key {key:?} on {}, and timing \
                 cannot run inside `Device::capture`: launch it once with this key before the \
                 capture",
                self.kernel, id.name
            )));
        }
        let mut times = vec![Timing::NotTimed; self.configs.len()];
        let mut best: Option<(usize, f64)> = None;
        let mut first_error = None;
        for &c in &candidates {
            let failure = match bench(c) {
                Ok(ms) if ms.is_finite() && ms >= 0.0 => {
                    times[c] = Timing::Ms(ms);
                    if best.is_none_or(|(_, b)| ms < b) {
                        best = Some((c, ms));
                    }
                    continue;
                }
                Ok(ms) => self.error(format!(
                    "the bench of configuration {c} returned {ms} ms, not a time"
                )),
                Err(e) => e,
            };
            let label = self.configs[c].label;
            let msg = format!("configuration {c} ({label}) skipped: {failure}");
            trace_event!(debug, kernel = self.kernel, config = c, label, error = %failure, "tile: autotuning skips a configuration");
            times[c] = Timing::Failed(failure.to_string());
            notes.push(msg);
            first_error.get_or_insert(failure);
        }
        let Some((_, fastest)) = best else {
            return Err(first_error.expect("a candidate exists, and each either timed or failed"));
        };
        // Within the timing's noise of the fastest counts as equal: the lowest such index.
        let config = (0..times.len())
            .find(|&c| matches!(times[c], Timing::Ms(t) if t <= fastest * (1.0 + TIE)))
            .unwrap_or(0);
        if let (Some(path), Some(dir)) = (&path, cache_dir) {
            if let Err(why) = self.write_entry(dir, path, id, key, config, &times) {
                let msg = format!(
                    "could not write the autotuning cache file {}: {why}; the decision is kept \
                     in memory only",
                    path.display()
                );
                warn_once(&msg);
                notes.push(msg);
            }
        }
        Ok(decision(config, Source::Timed, times, notes))
    }

    /// Every field that identifies an entry, in file order.
    fn key_fields(&self, id: &DeviceIdentity, key: &[i64]) -> Vec<(&'static str, String)> {
        let (major, minor) = id.compute_capability;
        vec![
            ("format", FORMAT.to_string()),
            ("kernel", self.kernel.to_string()),
            ("kernel_hash", format!("{:016x}", self.kernel_hash)),
            ("device", id.name.clone()),
            ("compute_capability", format!("{major}.{minor}")),
            (
                "driver_version",
                id.driver_version
                    .map_or_else(|| "unknown".to_string(), |v| v.to_string()),
            ),
            ("target", id.target.unwrap_or("newest").to_string()),
            (
                "key",
                key.iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            ("configs", self.configs.len().to_string()),
        ]
    }

    /// The entry at `path`: `Ok(None)` when there is none, `Err` (why) when it is not a valid
    /// entry for this kernel, device and key.
    fn read_entry(
        &self,
        path: &Path,
        id: &DeviceIdentity,
        key: &[i64],
    ) -> Result<Option<(usize, Vec<Timing>)>, String> {
        let text = match fs::read(path) {
            Ok(bytes) => String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("unreadable: {e}")),
        };
        let mut got = BTreeMap::new();
        for line in text.lines() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((name, value)) = line.split_once('=') else {
                return Err(format!("line `{line}` is not `field = value`"));
            };
            let name = name.trim();
            let value = unescape(value.strip_prefix(' ').unwrap_or(value))
                .ok_or_else(|| format!("field `{name}` has a bad escape"))?;
            if got.insert(name.to_string(), value).is_some() {
                return Err(format!("field `{name}` appears twice"));
            }
        }
        let mut take = |name: &str| {
            got.remove(name)
                .ok_or_else(|| format!("field `{name}` is missing"))
        };
        for (name, want) in self.key_fields(id, key) {
            let value = take(name)?;
            if value != want {
                return Err(format!("field `{name}` is `{value}`, expected `{want}`"));
            }
        }
        let n = self.configs.len();
        let config: usize = take("config")?
            .parse()
            .map_err(|_| "field `config` is not an index".to_string())?;
        if config >= n {
            return Err(format!(
                "configuration {config} is out of range ({n} configurations)"
            ));
        }
        let label = take("label")?;
        if label != self.configs[config].label {
            return Err(format!(
                "the label of configuration {config} is `{label}`, expected `{}`",
                self.configs[config].label
            ));
        }
        let mut times = Vec::with_capacity(n);
        for j in 0..n {
            let value = take(&format!("time.{j}"))?;
            times.push(
                parse_timing(&value)
                    .ok_or_else(|| format!("field `time.{j}` is `{value}`, not a time"))?,
            );
        }
        if !matches!(times[config], Timing::Ms(_)) {
            return Err(format!("the chosen configuration {config} has no time"));
        }
        if let Some(name) = got.keys().next() {
            return Err(format!("unknown field `{name}`"));
        }
        Ok(Some((config, times)))
    }

    /// Writes the entry to a unique temporary file in `dir`, then renames it to `path`.
    fn write_entry(
        &self,
        dir: &Path,
        path: &Path,
        id: &DeviceIdentity,
        key: &[i64],
        config: usize,
        times: &[Timing],
    ) -> std::io::Result<()> {
        let mut text = String::from("# tile autotuning decision (one kernel, device and key)\n");
        let mut line = |name: &str, value: &str| {
            text.push_str(name);
            text.push_str(" = ");
            text.push_str(&escape(value));
            text.push('\n');
        };
        for (name, value) in self.key_fields(id, key) {
            line(name, &value);
        }
        line("config", &config.to_string());
        line("label", self.configs[config].label);
        for (j, t) in times.iter().enumerate() {
            line(&format!("time.{j}"), &timing_text(t));
        }
        fs::create_dir_all(dir)?;
        static SERIAL: AtomicU64 = AtomicU64::new(0);
        let file_name = path
            .file_name()
            .map_or_else(|| "entry".into(), |n| n.to_string_lossy().into_owned());
        let tmp = dir.join(format!(
            ".{file_name}.{}.{}.tmp",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let written = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .and_then(|()| fs::rename(&tmp, path));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
    }
}

/// Removes the "tuning" mark of a key when its tuning ends without a decision (an error or a
/// panic), and wakes the threads waiting for it.
struct Pending<'a> {
    tuner: &'a Autotuner,
    id: &'a DeviceIdentity,
    key: &'a [i64],
    armed: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.tuner.lock().device(self.id).timed.remove(self.key);
            self.tuner.changed.notify_all();
        }
    }
}

/// Emits a new decision as a `tracing` event (with the `tracing` feature).
fn trace_decision(d: &Decision) {
    #[cfg(feature = "tracing")]
    {
        let times: Vec<String> = d.times.iter().map(timing_text).collect();
        trace_event!(
            info,
            kernel = d.kernel,
            device = %d.device.name,
            key = ?d.key,
            config = d.config,
            label = d.label,
            source = ?d.source,
            tuning_ms = d.tuning_ms,
            times_ms = ?times,
            notes = d.notes.len(),
            "tile: autotuning decision"
        );
    }
    #[cfg(not(feature = "tracing"))]
    let _ = d;
}

/// Prints `msg` as a warning on stderr (and as a `tracing` event), once per process.
fn warn_once(msg: &str) {
    static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    if SAID
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(msg.to_string())
    {
        trace_event!(warn, "{msg}");
        eprintln!("tile: warning: {msg}");
    }
}

fn timing_text(t: &Timing) -> String {
    match t {
        Timing::NotTimed => "not timed".into(),
        Timing::Ms(ms) => ms.to_string(),
        Timing::Failed(e) => format!("failed: {e}"),
    }
}

fn parse_timing(s: &str) -> Option<Timing> {
    if s == "not timed" {
        return Some(Timing::NotTimed);
    }
    if let Some(e) = s.strip_prefix("failed: ") {
        return Some(Timing::Failed(e.to_string()));
    }
    let ms: f64 = s.parse().ok()?;
    (ms.is_finite() && ms >= 0.0).then_some(Timing::Ms(ms))
}

/// Keeps a value on one line: `\` and line breaks escaped.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            '\\' => '\\',
            'n' => '\n',
            'r' => '\r',
            _ => return None,
        });
    }
    Some(out)
}

/// 64-bit FNV-1a: a hash whose value is fixed by its definition (the standard library's may
/// change between Rust versions), for names that later builds and processes must find again:
/// the disk cache's files, [`source_hash`], and the kernel hashes and macro names tile's
/// macros derive.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv::new()
    }
}

impl Fnv {
    /// The hash of nothing.
    pub const fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    /// The hash after `bytes` more.
    pub const fn write(mut self, bytes: &[u8]) -> Fnv {
        let mut i = 0;
        while i < bytes.len() {
            self.0 ^= bytes[i] as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
            i += 1;
        }
        self
    }

    /// The hash's value.
    pub const fn finish(self) -> u64 {
        self.0
    }
}

/// Device time (ms) aimed at per sample of [`time_ms`]: shorter launches are timed in batches.
const SAMPLE_MS: f64 = 1.0;

/// Launches per sample of [`time_ms`] at most.
const MAX_BATCH: usize = 100;

/// Samples [`time_ms`] takes of a launch short enough.
const SAMPLES: usize = 5;

/// Device time (ms) [`time_ms`] spends on samples at most, when a launch is long.
const SAMPLE_BUDGET_MS: f64 = 25.0;

/// How long [`time_ms`] runs a kernel untimed first when it has timed nothing for
/// [`IDLE`]: an idle GPU runs at low clocks for its first milliseconds of work, and the first
/// candidates of a decision would look slower than they are (measured on an H100: a 6 µs kernel
/// timed 3× slower right after idling).
pub const WARMUP: std::time::Duration = std::time::Duration::from_millis(20);

/// See [`WARMUP`].
pub const IDLE: std::time::Duration = std::time::Duration::from_millis(100);

/// Times within this fraction of the fastest count as equal, and the lowest index among them
/// is chosen: two configurations that perform alike are told apart by noise, not by speed
/// (launch-bound kernels of a few microseconds time alike whatever their tiles), so the one
/// listed first, the user's preference, wins.
pub const TIE: f64 = 0.01;

/// A 64-bit FNV-1a hash of `text`, usable in a `const`: the `kernel_hash` of a tuner written by
/// hand (host code choosing among kernels or launch plans, as the `softmax_regression` example
/// chooses its tile), taken over the source that defines the candidates
/// (`source_hash(include_str!("kernels.rs"))`), so that editing them invalidates the disk cache.
pub const fn source_hash(text: &str) -> u64 {
    Fnv::new().write(text.as_bytes()).finish()
}

/// The device time (ms) of one call of `run`, which launches on `dev`: what an autotuned
/// kernel's generated code times each configuration with.
///
/// The method: one launch then a synchronization (a first launch loads the module, and is not
/// timed); if nothing was timed for [`IDLE`], launches for [`WARMUP`] (so the first
/// configuration of a decision is not timed at idle clocks); three launches timed on the host
/// give the host's cost `h` of queueing one; one launch between two events gives an estimate
/// `e`; then up to 5 samples, each a batch of back-to-back launches (as many as make 1 ms of
/// device time, 1 to 100) between two events, with no synchronization between samples; the
/// result is the median sample divided by its batch. Every timed launch or batch is queued
/// behind a [`Device::hold`] of twice the host's time to queue it (plus 50 µs), so the whole
/// batch is queued before its first launch runs and the events bracket device time only: a
/// kernel shorter than its launch (a few microseconds) is timed as it runs, not at the rate the
/// host launches it, which would make every configuration look alike. Launches longer than 5
/// ms get fewer samples (as many as fit 25 ms, at least one, an odd count), so a slow
/// configuration costs a few of its launches. A configuration of short launches thus costs
/// about 5 ms of device time (plus the holds: about twice the host's time to queue its
/// batches), one of 5 ms launches 35 ms, a longer one three of its launches: tens of ms per
/// configuration at most, as a first launch can afford, where Triton's `do_bench` spends 25 ms
/// warming up and 100 ms repeating by default. The L2 cache is not flushed between samples (the
/// inputs of small problems stay warm, as they often are when the kernel runs in a program), a
/// difference that moves every configuration's time alike far more than it reorders them.
pub fn time_ms(dev: &Device, mut run: impl FnMut() -> Result<(), Error>) -> Result<f64, Error> {
    let ms = |a: &super::event::Event, b: &super::event::Event| -> Result<f64, Error> {
        Ok(a.elapsed(b)?.as_secs_f64() * 1e3)
    };
    // After an idle spell, the GPU's clocks first: runs for `WARMUP`, queued in batches.
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    let idle = LAST
        .lock()
        .map(|l| l.is_none_or(|t| t.elapsed() > IDLE))
        .unwrap_or(true);
    run()?;
    dev.synchronize()?;
    if idle {
        let warm = Instant::now();
        while warm.elapsed() < WARMUP {
            for _ in 0..16 {
                run()?;
            }
            dev.synchronize()?;
        }
    }
    // The host's cost of queueing one launch, the device busy with the ones before.
    let queued = Instant::now();
    for _ in 0..3 {
        run()?;
    }
    let host_ms = queued.elapsed().as_secs_f64() * 1e3 / 3.0;
    let hold = |launches: usize| {
        dev.hold(Duration::from_secs_f64(
            (2.0 * host_ms * launches as f64 + 0.05) / 1e3,
        ))
    };
    hold(1)?;
    let start = dev.record_event()?;
    run()?;
    let end = dev.record_event()?;
    let estimate = ms(&start, &end)?.max(1e-4);
    let batch = ((SAMPLE_MS / estimate).ceil() as usize).clamp(1, MAX_BATCH);
    // An odd count, so that the median is one sample.
    let samples = ((SAMPLE_BUDGET_MS / (estimate * batch as f64)) as usize).clamp(1, SAMPLES);
    let samples = samples - (1 - samples % 2);
    let mut events = Vec::with_capacity(samples);
    for _ in 0..samples {
        hold(batch)?;
        let start = dev.record_event()?;
        for _ in 0..batch {
            run()?;
        }
        events.push((start, dev.record_event()?));
    }
    let mut times = events
        .iter()
        .map(|(s, e)| Ok(ms(s, e)? / batch as f64))
        .collect::<Result<Vec<f64>, Error>>()?;
    times.sort_by(f64::total_cmp);
    if let Ok(mut l) = LAST.lock() {
        *l = Some(Instant::now());
    }
    Ok(times[times.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    static CONFIGS: [ConfigDesc; 4] = [
        ConfigDesc::new("BM=64, BN=64, num_warps=4"),
        ConfigDesc::new("BM=128, BN=64, num_warps=4"),
        ConfigDesc::new("BM=128, BN=128, num_warps=8"),
        ConfigDesc::new("BM=256, BN=128, num_warps=8"),
    ];

    fn keep_odd(_: &[i64]) -> Vec<usize> {
        vec![3, 1, 3]
    }

    fn second(_: &[i64]) -> usize {
        2
    }

    /// Built in a `static`, as the generated code builds it.
    static STATIC_TUNER: Autotuner = Autotuner::new("static_kernel", 7, &CONFIGS)
        .with_prune(keep_odd)
        .with_heuristic(second);

    fn tuner() -> Autotuner {
        Autotuner::new("test_kernel", 0xabcd, &CONFIGS)
    }

    fn gpu() -> DeviceIdentity {
        DeviceIdentity {
            name: "Test GPU 80GB".into(),
            compute_capability: (9, 0),
            driver_version: Some(12040),
            target: None,
        }
    }

    /// A fresh directory under the temporary directory, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "tile-autotune-test-{name}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn options(&self) -> TuneOptions {
            TuneOptions {
                deterministic: false,
                cache_dir: Some(self.0.clone()),
            }
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn memory_only() -> TuneOptions {
        TuneOptions::default()
    }

    /// A bench with fixed times that counts its calls (and which configurations it timed).
    fn fixed<'a>(
        times: &[f64],
        calls: &'a Mutex<Vec<usize>>,
    ) -> impl FnMut(usize) -> Result<f64, Error> + 'a {
        let times = times.to_vec();
        move |i| {
            calls.lock().unwrap().push(i);
            Ok(times[i])
        }
    }

    fn never(_: usize) -> Result<f64, Error> {
        panic!("bench called")
    }

    #[test]
    fn a_forgotten_key_is_timed_again_and_its_disk_entry_removed() {
        let dir = TempDir::new("forget");
        let opts = dir.options();
        let t = tuner();
        let calls = Mutex::new(Vec::new());
        let c = t
            .choose_for(&gpu(), &[4], &opts, fixed(&[0.5, 0.2, 0.3, 0.4], &calls))
            .unwrap();
        assert_eq!(c, 1);
        let other = t
            .choose_for(&gpu(), &[8], &opts, fixed(&[0.1, 0.2, 0.3, 0.4], &calls))
            .unwrap();
        assert_eq!(other, 0);
        assert!(t.cache_file(&dir.0, &gpu(), &[4]).exists());
        t.forget_for(&gpu(), &[4], &opts).unwrap();
        assert!(!t.cache_file(&dir.0, &gpu(), &[4]).exists());
        assert!(
            t.cache_file(&dir.0, &gpu(), &[8]).exists(),
            "other keys stay on disk"
        );
        // The same key decides again, by timing (a second process would too: no entry on disk).
        calls.lock().unwrap().clear();
        let again = t
            .choose_for(&gpu(), &[4], &opts, fixed(&[0.1, 0.2, 0.3, 0.4], &calls))
            .unwrap();
        assert_eq!(again, 0);
        assert_eq!(*calls.lock().unwrap(), vec![0, 1, 2, 3]);
        // The other key is still decided in memory: no timing.
        assert_eq!(t.choose_for(&gpu(), &[8], &opts, never).unwrap(), 0);
        assert_eq!(t.decisions().len(), 3, "the record keeps every decision");
        // Forgetting what was never decided is not an error.
        t.forget_for(&gpu(), &[99], &opts).unwrap();
        t.forget_for(&gpu(), &[4], &memory_only()).unwrap();
    }

    #[test]
    fn times_within_the_tie_go_to_the_lowest_index() {
        let t = tuner();
        let times = [0.5, 0.303, 0.301, 0.300];
        let c = t
            .choose_for(&gpu(), &[1], &memory_only(), |i| Ok(times[i]))
            .unwrap();
        assert_eq!(c, 1, "0.303 is within 1% of 0.300");
    }

    #[test]
    fn the_fastest_is_chosen() {
        let t = tuner();
        let calls = Mutex::new(Vec::new());
        let c = t
            .choose_for(
                &gpu(),
                &[4096, 4096, 512],
                &memory_only(),
                fixed(&[0.5, 0.3, 0.2, 0.4], &calls),
            )
            .unwrap();
        assert_eq!(c, 2);
        assert_eq!(*calls.lock().unwrap(), vec![0, 1, 2, 3]);
        let d = t.decisions();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].source, Source::Timed);
        assert_eq!(d[0].label, CONFIGS[2].label);
        assert_eq!(d[0].key, vec![4096, 4096, 512]);
        assert_eq!(d[0].times[3], Timing::Ms(0.4));
    }

    #[test]
    fn equal_times_pick_the_lowest_index() {
        let calls = Mutex::new(Vec::new());
        let c = tuner()
            .choose_for(
                &gpu(),
                &[1],
                &memory_only(),
                fixed(&[0.5, 0.2, 0.2, 0.2], &calls),
            )
            .unwrap();
        assert_eq!(c, 1);
    }

    #[test]
    fn the_prune_restricts_the_candidates() {
        let t = tuner().with_prune(keep_odd);
        let calls = Mutex::new(Vec::new());
        let c = t
            .choose_for(
                &gpu(),
                &[1],
                &memory_only(),
                fixed(&[0.1, 0.5, 0.1, 0.3], &calls),
            )
            .unwrap();
        assert_eq!(c, 3);
        assert_eq!(*calls.lock().unwrap(), vec![1, 3]);
        assert_eq!(t.decisions()[0].times[0], Timing::NotTimed);
    }

    #[test]
    fn inside_a_capture_only_a_known_decision_is_taken() {
        let t = tuner();
        let e = t
            .decide(&gpu(), &[1], false, None, true, never)
            .unwrap_err();
        assert!(matches!(e, Error::Capture(_)), "{e}");
        assert!(
            e.to_string()
                .contains("launch it once with this key before"),
            "{e}"
        );
        t.choose_for(&gpu(), &[1], &memory_only(), |i| Ok(4.0 - i as f64))
            .unwrap();
        assert_eq!(t.decide(&gpu(), &[1], false, None, true, never).unwrap(), 3);
        assert_eq!(
            t.decide(&gpu(), &[1], true, None, true, never).unwrap(),
            0,
            "deterministic"
        );
    }

    #[test]
    fn a_single_candidate_is_not_timed() {
        fn just_two(_: &[i64]) -> Vec<usize> {
            vec![2, 2]
        }
        let dir = TempDir::new("single");
        let t = tuner().with_prune(just_two);
        assert_eq!(
            t.choose_for(&gpu(), &[1], &dir.options(), never).unwrap(),
            2
        );
        assert_eq!(t.decisions()[0].source, Source::Only);
        assert_eq!(fs::read_dir(&dir.0).unwrap().count(), 0, "nothing cached");
        static ONE: [ConfigDesc; 1] = [ConfigDesc::new("BLOCK=1024")];
        let one = Autotuner::new("one", 1, &ONE);
        assert_eq!(
            one.choose_for(&gpu(), &[1], &dir.options(), never).unwrap(),
            0
        );
    }

    #[test]
    fn a_prune_that_keeps_nothing_or_too_much_is_an_error() {
        fn none(_: &[i64]) -> Vec<usize> {
            Vec::new()
        }
        fn beyond(_: &[i64]) -> Vec<usize> {
            vec![0, 4]
        }
        let e = tuner()
            .with_prune(none)
            .choose_for(&gpu(), &[5], &memory_only(), never)
            .unwrap_err();
        assert!(
            e.to_string().contains("kept no configuration for key [5]"),
            "{e}"
        );
        let e = tuner()
            .with_prune(beyond)
            .choose_for(&gpu(), &[5], &memory_only(), never)
            .unwrap_err();
        assert!(e.to_string().contains("kept configuration 4"), "{e}");
    }

    #[test]
    fn a_heuristic_picks_without_timing() {
        let t = tuner().with_heuristic(second);
        assert_eq!(
            t.choose_for(&gpu(), &[1], &memory_only(), never).unwrap(),
            2
        );
        assert_eq!(
            t.choose_for(&gpu(), &[1], &memory_only(), never).unwrap(),
            2
        );
        let d = t.decisions();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].source, Source::Heuristic);
        assert_eq!(
            STATIC_TUNER
                .choose_for(&gpu(), &[1], &memory_only(), never)
                .unwrap(),
            2
        );

        fn wild(_: &[i64]) -> usize {
            9
        }
        let e = tuner()
            .with_heuristic(wild)
            .choose_for(&gpu(), &[1], &memory_only(), never)
            .unwrap_err();
        assert!(e.to_string().contains("picked configuration 9"), "{e}");
    }

    #[test]
    fn deterministic_mode_never_times() {
        let dir = TempDir::new("deterministic");
        // A timed decision for config 2 on disk, which deterministic mode must not read.
        let calls = Mutex::new(Vec::new());
        let opts = dir.options();
        tuner()
            .choose_for(&gpu(), &[1], &opts, fixed(&[0.5, 0.3, 0.2, 0.4], &calls))
            .unwrap();
        let det = TuneOptions {
            deterministic: true,
            ..dir.options()
        };
        let t = tuner();
        assert_eq!(t.choose_for(&gpu(), &[1], &det, never).unwrap(), 0);
        assert_eq!(t.decisions()[0].source, Source::Deterministic);
        // The first configuration the prune keeps; the heuristic's pick.
        assert_eq!(
            tuner()
                .with_prune(keep_odd)
                .choose_for(&gpu(), &[1], &det, never)
                .unwrap(),
            1
        );
        let h = tuner().with_heuristic(second);
        assert_eq!(h.choose_for(&gpu(), &[1], &det, never).unwrap(), 2);
        // The tuner's own switch.
        let t = tuner();
        t.set_deterministic(true);
        assert_eq!(t.choose_for(&gpu(), &[1], &opts, never).unwrap(), 0);
        t.set_deterministic(false);
        assert_eq!(
            t.choose_for(&gpu(), &[1], &opts, never).unwrap(),
            2,
            "tuning on again: the disk entry"
        );
    }

    #[test]
    fn failing_configurations_are_skipped() {
        let t = tuner();
        let c = t
            .choose_for(&gpu(), &[1], &memory_only(), |i| match i {
                0 => Ok(0.1),
                1 => Err(Error::Args("out of resources".into())),
                2 => Ok(f64::NAN),
                _ => Ok(0.3),
            })
            .unwrap();
        assert_eq!(c, 0);
        let d = &t.decisions()[0];
        assert!(matches!(&d.times[1], Timing::Failed(e) if e.contains("out of resources")));
        assert!(matches!(&d.times[2], Timing::Failed(e) if e.contains("not a time")));
        assert_eq!(d.notes.len(), 2, "{:?}", d.notes);
        assert!(d.notes[0].contains("configuration 1 (BM=128, BN=64, num_warps=4) skipped"));
    }

    #[test]
    fn all_failing_is_the_first_error_and_nothing_is_remembered() {
        let t = tuner();
        let calls = AtomicUsize::new(0);
        let bench = |i: usize| {
            calls.fetch_add(1, Ordering::Relaxed);
            Err(Error::Args(format!("failure {i}")))
        };
        let e = t
            .choose_for(&gpu(), &[1], &memory_only(), bench)
            .unwrap_err();
        assert_eq!(e.to_string(), "bad arguments: failure 0");
        assert!(t.choose_for(&gpu(), &[1], &memory_only(), bench).is_err());
        assert_eq!(calls.load(Ordering::Relaxed), 8, "tried again");
        assert!(t.decisions().is_empty());
    }

    #[test]
    fn a_decision_in_memory_is_not_timed_again() {
        let t = tuner();
        let calls = Mutex::new(Vec::new());
        let opts = memory_only();
        let times = [0.5, 0.3, 0.2, 0.4];
        assert_eq!(
            t.choose_for(&gpu(), &[1], &opts, fixed(&times, &calls))
                .unwrap(),
            2
        );
        assert_eq!(t.choose_for(&gpu(), &[1], &opts, never).unwrap(), 2);
        assert_eq!(calls.lock().unwrap().len(), 4);
        assert_eq!(t.decisions().len(), 1);
        t.clear();
        assert!(t.decisions().is_empty());
        assert_eq!(
            t.choose_for(&gpu(), &[1], &opts, fixed(&times, &calls))
                .unwrap(),
            2
        );
        assert_eq!(calls.lock().unwrap().len(), 8, "timed again after clear");
    }

    #[test]
    fn a_second_process_reads_the_disk_cache() {
        let dir = TempDir::new("second-process");
        let calls = Mutex::new(Vec::new());
        let times = [0.5, 0.3, 0.2, 0.4];
        let first = tuner();
        assert_eq!(
            first
                .choose_for(&gpu(), &[64, 32], &dir.options(), fixed(&times, &calls))
                .unwrap(),
            2
        );
        let path = first.cache_file(&dir.0, &gpu(), &[64, 32]);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("device = Test GPU 80GB\n"), "{text}");
        assert!(text.contains("key = 64, 32\n"), "{text}");
        assert!(
            text.contains("label = BM=128, BN=128, num_warps=8\n"),
            "{text}"
        );
        assert!(text.contains("time.3 = 0.4\n"), "{text}");

        let second = tuner();
        assert_eq!(
            second
                .choose_for(&gpu(), &[64, 32], &dir.options(), never)
                .unwrap(),
            2
        );
        let d = &second.decisions()[0];
        assert_eq!(d.source, Source::Disk);
        assert_eq!(d.times, first.decisions()[0].times);
        assert!(d.notes.is_empty(), "{:?}", d.notes);
    }

    /// A valid entry for key [1] (config 2) in `dir`, edited by `edit`, read by a fresh tuner:
    /// it must tune again, note why, and leave a valid entry behind.
    fn corrupt<E: AsRef<[u8]>>(name: &str, edit: impl FnOnce(String) -> E, why: &str) {
        let dir = TempDir::new(name);
        let calls = Mutex::new(Vec::new());
        let times = [0.5, 0.3, 0.2, 0.4];
        tuner()
            .choose_for(&gpu(), &[1], &dir.options(), fixed(&times, &calls))
            .unwrap();
        let path = tuner().cache_file(&dir.0, &gpu(), &[1]);
        fs::write(&path, edit(fs::read_to_string(&path).unwrap())).unwrap();
        let t = tuner();
        let retimes = [0.5, 0.1, 0.2, 0.4];
        assert_eq!(
            t.choose_for(&gpu(), &[1], &dir.options(), fixed(&retimes, &calls))
                .unwrap(),
            1
        );
        assert_eq!(calls.lock().unwrap().len(), 8, "{name}: tuned again");
        let d = &t.decisions()[0];
        assert_eq!(d.source, Source::Timed);
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("ignoring the autotuning cache file") && n.contains(why)),
            "{name}: {:?}",
            d.notes
        );
        let fresh = tuner();
        assert_eq!(
            fresh
                .choose_for(&gpu(), &[1], &dir.options(), never)
                .unwrap(),
            1,
            "{name}: rewritten"
        );
    }

    #[test]
    fn a_corrupted_cache_file_is_ignored_and_rewritten() {
        corrupt(
            "garbage",
            |_| "\u{1}\u{2} garbage\n",
            "is not `field = value`",
        );
        corrupt(
            "not-utf8",
            |t| [t.as_bytes(), &[0xff]].concat(),
            "not UTF-8 text",
        );
        corrupt("empty", |_| "", "field `format` is missing");
        corrupt(
            "wrong-field",
            |t| t.replace("device = Test GPU 80GB", "device = Other GPU"),
            "field `device` is `Other GPU`, expected `Test GPU 80GB`",
        );
        corrupt(
            "out-of-range",
            |t| t.replace("config = 2", "config = 7"),
            "configuration 7 is out of range (4 configurations)",
        );
        corrupt(
            "not-an-index",
            |t| t.replace("config = 2", "config = two"),
            "field `config` is not an index",
        );
        corrupt(
            "label",
            |t| t.replace("label = BM=128, BN=128, num_warps=8", "label = BM=32"),
            "the label of configuration 2 is `BM=32`",
        );
        corrupt(
            "label-of-another",
            |t| t.replace("config = 2", "config = 3"),
            "the label of configuration 3",
        );
        corrupt(
            "missing",
            |t| t.replace("time.1 = 0.3\n", ""),
            "field `time.1` is missing",
        );
        corrupt(
            "twice",
            |t| t + "config = 2\n",
            "field `config` appears twice",
        );
        corrupt(
            "unknown",
            |t| t + "colour = blue\n",
            "unknown field `colour`",
        );
        corrupt(
            "bad-time",
            |t| t.replace("time.0 = 0.5", "time.0 = fast"),
            "field `time.0` is `fast`",
        );
        corrupt(
            "untimed-choice",
            |t| t.replace("time.2 = 0.2", "time.2 = not timed"),
            "the chosen configuration 2 has no time",
        );
        corrupt(
            "escape",
            |t| t.replace("device = Test", "device = \\qTest"),
            "bad escape",
        );
    }

    #[test]
    fn keys_devices_and_kernel_hashes_have_their_own_entries() {
        let dir = TempDir::new("keys");
        let t = tuner();
        let other_gpu = DeviceIdentity {
            name: "Other GPU".into(),
            ..gpu()
        };
        let other_driver = DeviceIdentity {
            driver_version: Some(12080),
            ..gpu()
        };
        let other_target = DeviceIdentity {
            target: Some("sm_80"),
            ..gpu()
        };
        let other_cc = DeviceIdentity {
            compute_capability: (8, 0),
            ..gpu()
        };
        let paths: BTreeSet<PathBuf> = [
            t.cache_file(&dir.0, &gpu(), &[1, 2]),
            t.cache_file(&dir.0, &gpu(), &[2, 1]),
            t.cache_file(&dir.0, &gpu(), &[1, 2, 0]),
            t.cache_file(&dir.0, &other_gpu, &[1, 2]),
            t.cache_file(&dir.0, &other_driver, &[1, 2]),
            t.cache_file(&dir.0, &other_target, &[1, 2]),
            t.cache_file(&dir.0, &other_cc, &[1, 2]),
            Autotuner::new("test_kernel", 0xabce, &CONFIGS).cache_file(&dir.0, &gpu(), &[1, 2]),
            Autotuner::new("other_kernel", 0xabcd, &CONFIGS).cache_file(&dir.0, &gpu(), &[1, 2]),
        ]
        .into_iter()
        .collect();
        assert_eq!(paths.len(), 9);

        // In memory: each device and key decides on its own.
        let calls = Mutex::new(Vec::new());
        let opts = dir.options();
        t.choose_for(&gpu(), &[1, 2], &opts, fixed(&[0.5, 0.3, 0.2, 0.4], &calls))
            .unwrap();
        t.choose_for(&gpu(), &[2, 1], &opts, fixed(&[0.1, 0.3, 0.2, 0.4], &calls))
            .unwrap();
        t.choose_for(
            &other_gpu,
            &[1, 2],
            &opts,
            fixed(&[0.5, 0.3, 0.2, 0.1], &calls),
        )
        .unwrap();
        assert_eq!(calls.lock().unwrap().len(), 12);
        assert_eq!(t.choose_for(&gpu(), &[1, 2], &opts, never).unwrap(), 2);
        assert_eq!(t.choose_for(&gpu(), &[2, 1], &opts, never).unwrap(), 0);
        assert_eq!(t.choose_for(&other_gpu, &[1, 2], &opts, never).unwrap(), 3);
        // On disk: a kernel whose code changed does not read the old entries.
        let rebuilt = Autotuner::new("test_kernel", 0xabce, &CONFIGS);
        rebuilt
            .choose_for(&gpu(), &[1, 2], &opts, fixed(&[0.5, 0.3, 0.2, 0.4], &calls))
            .unwrap();
        assert_eq!(calls.lock().unwrap().len(), 16);
        assert_eq!(fs::read_dir(&dir.0).unwrap().count(), 4);
    }

    #[test]
    fn concurrent_writers_leave_only_valid_files() {
        let dir = Arc::new(TempDir::new("concurrent"));
        let threads: Vec<_> = (0..8)
            .map(|thread| {
                let dir = dir.clone();
                std::thread::spawn(move || {
                    for round in 0..20 {
                        // A fresh tuner per round: another process, as far as the cache knows.
                        let t = tuner();
                        let key = [(round % 3) as i64];
                        let mut times = [0.5, 0.3, 0.2, 0.4];
                        times[(thread + round) % 4] = 0.01;
                        let id = gpu();
                        let path = t.cache_file(&dir.0, &id, &key);
                        let timed: Vec<Timing> = times.iter().map(|&t| Timing::Ms(t)).collect();
                        let best = (thread + round) % 4;
                        t.write_entry(&dir.0, &path, &id, &key, best, &timed)
                            .unwrap();
                        t.choose_for(&id, &key, &dir.options(), |i| Ok(times[i]))
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let names: Vec<String> = fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names.len(),
            3,
            "one file per key, no temporary files left: {names:?}"
        );
        for key in 0..3 {
            let t = tuner();
            t.choose_for(&gpu(), &[key], &dir.options(), never).unwrap();
            assert_eq!(t.decisions()[0].source, Source::Disk);
        }
    }

    #[test]
    fn threads_asking_for_one_new_key_tune_it_once() {
        let t = Arc::new(tuner());
        let calls = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..6)
            .map(|_| {
                let (t, calls) = (t.clone(), calls.clone());
                std::thread::spawn(move || {
                    t.choose_for(&gpu(), &[7], &memory_only(), |i| {
                        calls.fetch_add(1, Ordering::Relaxed);
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        Ok([0.5, 0.3, 0.2, 0.4][i])
                    })
                    .unwrap()
                })
            })
            .collect();
        for th in threads {
            assert_eq!(th.join().unwrap(), 2);
        }
        assert_eq!(calls.load(Ordering::Relaxed), 4);
        assert_eq!(t.decisions().len(), 1);
    }

    #[test]
    fn a_bench_that_asks_for_its_own_key_gets_an_error() {
        let t = tuner();
        let e = t
            .choose_for(&gpu(), &[1], &memory_only(), |_| {
                t.choose_for(&gpu(), &[1], &memory_only(), never)?;
                Ok(1.0)
            })
            .unwrap_err();
        assert!(e.to_string().contains("asked for again while"), "{e}");
        // Not stuck: the key can be tuned afterwards.
        assert_eq!(
            t.choose_for(&gpu(), &[1], &memory_only(), |i| Ok(i as f64))
                .unwrap(),
            0
        );
    }

    #[test]
    fn a_panicking_bench_leaves_the_key_free() {
        let t = tuner();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            t.choose_for(&gpu(), &[1], &memory_only(), never)
        }));
        assert!(r.is_err());
        assert_eq!(
            t.choose_for(&gpu(), &[1], &memory_only(), |i| Ok(4.0 - i as f64))
                .unwrap(),
            3
        );
    }

    #[test]
    fn the_interpreter_never_times() {
        let t = tuner();
        let dev = Device::interpreter();
        assert_eq!(t.choose(&dev, &[1], never).unwrap(), 0);
        assert_eq!(t.choose(&dev, &[2], never).unwrap(), 0);
        assert!(t
            .decisions()
            .iter()
            .all(|d| d.source == Source::Interpreter));
        assert_eq!(
            tuner()
                .with_heuristic(second)
                .choose(&dev, &[1], never)
                .unwrap(),
            2
        );
        assert_eq!(
            tuner()
                .with_prune(keep_odd)
                .choose(&dev, &[1], never)
                .unwrap(),
            1
        );
        assert!(dev
            .clone()
            .with_deterministic_tuning(false)
            .deterministic_tuning());
    }

    #[test]
    fn a_cache_write_failure_is_a_note_not_an_error() {
        let dir = TempDir::new("unwritable");
        let blocker = dir.0.join("file");
        fs::write(&blocker, "not a directory").unwrap();
        let opts = TuneOptions {
            deterministic: false,
            cache_dir: Some(blocker.join("autotune")),
        };
        let t = tuner();
        assert_eq!(
            t.choose_for(&gpu(), &[1], &opts, |i| Ok(i as f64)).unwrap(),
            0
        );
        let d = &t.decisions()[0];
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("could not write the autotuning cache file")),
            "{:?}",
            d.notes
        );
    }

    #[test]
    fn labels_with_line_breaks_round_trip() {
        static ODD: [ConfigDesc; 2] = [ConfigDesc::new("a\\b"), ConfigDesc::new("c\nd = e")];
        let dir = TempDir::new("escape");
        let t = Autotuner::new("odd kernel/name", 1, &ODD);
        assert_eq!(
            t.choose_for(&gpu(), &[], &dir.options(), |i| Ok(1.0 - i as f64))
                .unwrap(),
            1
        );
        let fresh = Autotuner::new("odd kernel/name", 1, &ODD);
        assert_eq!(
            fresh
                .choose_for(&gpu(), &[], &dir.options(), never)
                .unwrap(),
            1
        );
        let name = t.cache_file(&dir.0, &gpu(), &[]);
        assert!(name
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("odd_kernel_name-"));
        for s in ["", "a\\nb", "\\", "x\r\ny"] {
            assert_eq!(unescape(&escape(s)).as_deref(), Some(s));
        }
    }

    #[test]
    fn options_come_from_the_environment() {
        // Reads the variables this process has, whatever they are: only checks the shape.
        let o = TuneOptions::from_env();
        if let Some(d) = o.cache_dir {
            assert!(
                d.ends_with("autotune") || d.ends_with("tile-autotune"),
                "{}",
                d.display()
            );
        }
    }
}
