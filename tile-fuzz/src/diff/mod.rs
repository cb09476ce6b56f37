//! Differential testing: generated kernels ([`gen`]) compiled in this process, run on the
//! interpreter and on a CUDA device with the same inputs, and their outputs compared — bit for
//! bit where the language promises it, within a tolerance elsewhere ([`gen::Tol`]).
//!
//! ```text
//! tile-fuzz diff [--seed S] [--count N] [--first I] [--jobs J] [--time-limit-ms T]
//!                [--out DIR] [--interp-only] [--in-process] [--ptxas]
//! tile-fuzz diff --seed S --case I [--text FILE]  # one case (or FILE's kernel with its
//!                                                 # launch), in this process, verbose
//! tile-fuzz diff --text FILE [--interp-only]       # a saved kernel with its `// launch:` line
//! ```
//!
//! Case `I` of seed `S` is the same kernel and inputs on every machine. Each case runs in a
//! worker process (`tile-fuzz diff-worker`), so that a GPU fault, which poisons the CUDA
//! context, or a hang costs one case; a worker is replaced after it fails and every 200 cases
//! (compiled modules are leaked: a launch needs them `'static`). `--in-process` runs the cases
//! in this process instead (what `compute-sanitizer` should wrap). `--interp-only` compiles
//! every case for both targets, runs the interpreter and assembles nothing else: CI's run, on a
//! machine without a GPU; with `TILE_FUZZ_PTXAS` set (`--ptxas`) every module is assembled
//! too and spills are findings. Mismatches are minimized (statements deleted, expressions
//! replaced by their operands, then fewer programs and smaller extents, while the mismatch
//! stays: [`shrink`]) and written to `--out` (default `target/diff`) with their launches and the
//! command that replays them.

pub mod gen;
mod run;
mod shrink;

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::rng::Rng;
use crate::{Answer, Worker};

pub use run::Verdict;

/// Settings of a run.
pub struct DiffOptions {
    seed: u64,
    first: usize,
    count: usize,
    jobs: usize,
    limit: Duration,
    out: PathBuf,
    interp_only: bool,
    in_process: bool,
    /// Replay this one case verbosely.
    case: Option<usize>,
    /// With `case`: this kernel text instead of the generated one (same launch), to try a
    /// variant of a finding by hand.
    text: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<DiffOptions, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut o = DiffOptions {
        seed: 1,
        first: 0,
        count: 200,
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        limit: Duration::from_secs(120),
        out: root.join("target/diff"),
        interp_only: false,
        in_process: false,
        case: None,
        text: None,
    };
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        match flag {
            "--interp-only" => o.interp_only = true,
            "--in-process" => o.in_process = true,
            "--ptxas" => {
                let Some(ptxas) = tile_codegen::ptxas::find() else {
                    return Err(
                        "--ptxas, but no ptxas found (scripts/setup.sh, or TILE_PTXAS)".into(),
                    );
                };
                // Workers inherit it (no other thread runs yet).
                std::env::set_var(crate::case::PTXAS_ENV, ptxas);
            }
            _ => {
                let val = args
                    .get(i + 1)
                    .ok_or_else(|| format!("{flag} needs a value"))?;
                let num = || val.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
                match flag {
                    "--seed" => o.seed = num()?,
                    "--first" => o.first = num()? as usize,
                    "--count" => o.count = num()? as usize,
                    "--jobs" => o.jobs = (num()? as usize).max(1),
                    "--time-limit-ms" => o.limit = Duration::from_millis(num()?),
                    "--out" => o.out = PathBuf::from(val),
                    "--case" => o.case = Some(num()? as usize),
                    "--text" => o.text = Some(PathBuf::from(val)),
                    _ => return Err(format!("unknown argument `{flag}` (see the module docs)")),
                }
                i += 1;
            }
        }
        i += 1;
    }
    Ok(o)
}

/// Separates a worker's message from the minimized kernel it attaches to a mismatch.
const MINIMIZED: char = '\u{1e}';

/// The generator's seed for case `index` of run `seed`.
pub fn case_rng(seed: u64, index: usize) -> Rng {
    Rng::new(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ (index as u64).wrapping_mul(0x9e37_79b9))
}

/// `tile-fuzz diff …`.
pub fn main(args: &[String]) -> ExitCode {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("tile-fuzz diff: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(i) = o.case {
        return replay(&o, i);
    }
    if let Some(file) = &o.text {
        return replay_file(file, o.interp_only);
    }
    let mode = if o.interp_only {
        "interpreter only"
    } else {
        "interpreter against the GPU"
    };
    println!(
        "tile-fuzz diff: seed {}, cases {}..{}, {} jobs, {mode}, limit {} ms",
        o.seed,
        o.first,
        o.first + o.count,
        o.jobs,
        o.limit.as_millis()
    );
    let started = Instant::now();
    let next = AtomicUsize::new(o.first);
    let results: Mutex<Vec<(usize, Verdict, String)>> = Mutex::new(Vec::new());
    let done = AtomicUsize::new(0);
    let step = (o.count / 20).max(1);
    let end = o.first + o.count;
    let jobs = if o.in_process { 1 } else { o.jobs };
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                let mut slot: Option<Worker> = None;
                let mut served = 0;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= end {
                        break;
                    }
                    let (v, msg) = if o.in_process {
                        run::run_case(o.seed, i, o.interp_only)
                    } else {
                        if served >= 200 {
                            if let Some(w) = slot.take() {
                                w.stop();
                            }
                            served = 0;
                        }
                        served += 1;
                        remote(&mut slot, o.seed, i, o.interp_only, o.limit)
                    };
                    if !v.passed() {
                        if let Some(w) = slot.take() {
                            w.stop();
                        }
                    }
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if n % step == 0 {
                        eprintln!(
                            "tile-fuzz diff: {n}/{} cases, {:.0} s",
                            o.count,
                            started.elapsed().as_secs_f64()
                        );
                    }
                    if let Ok(mut r) = results.lock() {
                        r.push((i, v, msg));
                    }
                }
                if let Some(w) = slot {
                    w.stop();
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|r| r.0);
    report(&o, &results, started.elapsed())
}

/// Runs case `i` in `slot`'s worker within `limit`.
fn remote(
    slot: &mut Option<Worker>,
    seed: u64,
    i: usize,
    interp_only: bool,
    limit: Duration,
) -> (Verdict, String) {
    let line = format!("{seed} {i} {}", u8::from(interp_only));
    match crate::ask_worker(slot, "diff-worker", &line, limit).0 {
        Answer::Line(name, msg) => (Verdict::from_name(&name).unwrap_or(Verdict::Crash), msg),
        Answer::Timeout(msg) => (Verdict::Timeout, msg),
        Answer::Died(msg) => (Verdict::Crash, msg),
    }
}

/// The worker: `SEED INDEX INTERP_ONLY` per stdin line, `verdict<TAB>message` per stdout line.
pub fn worker() -> ExitCode {
    std::panic::set_hook(Box::new(|_| {}));
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let mut it = line
            .split_whitespace()
            .map(|w| w.parse::<u64>().unwrap_or(0));
        let (seed, i, only) = (
            it.next().unwrap_or(0),
            it.next().unwrap_or(0),
            it.next().unwrap_or(0),
        );
        let (v, mut msg) = run::run_case(seed, i as usize, only == 1);
        msg = msg.replace('\n', " ");
        if v == Verdict::Mismatch {
            // Minimized here, in parallel with the other workers' cases.
            let case = gen::case(&mut case_rng(seed, i as usize));
            let small = run::minimize(&case, only == 1);
            msg = format!(
                "{msg}{MINIMIZED}{}{MINIMIZED}{}",
                crate::escape(&small.text),
                run::launch_line(&small)
            );
        }
        if writeln!(stdout, "{}\t{}", v.name(), msg)
            .and_then(|_| stdout.flush())
            .is_err()
        {
            break;
        }
    }
    ExitCode::SUCCESS
}

/// `--case I`: prints the kernel and its launch, runs it in this process and prints the verdict;
/// for a mismatch also the minimized kernel.
fn replay(o: &DiffOptions, i: usize) -> ExitCode {
    let mut case = gen::case(&mut case_rng(o.seed, i));
    if let Some(file) = &o.text {
        match std::fs::read_to_string(file) {
            Ok(t) => case.text = t,
            Err(e) => {
                eprintln!("tile-fuzz diff: --text {}: {e}", file.display());
                return ExitCode::from(2);
            }
        }
    }
    println!("// seed {} case {i}\n{}", o.seed, case.text);
    println!(
        "// grid {:?}, special inputs: {}, params: {}",
        case.grid,
        case.special,
        run::describe(&case.params)
    );
    let (v, msg) = run::run_text(&case, &case.text, o.interp_only);
    println!("// {}: {msg}", v.name());
    if v == Verdict::Mismatch {
        let small = run::minimize(&case, o.interp_only);
        println!(
            "// minimized (save it with this line to replay it with --text):\n// launch: {}\n{}",
            run::launch_line(&small),
            small.text
        );
    }
    if v.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `--text FILE` alone: the kernel in FILE with the launch on its `// launch:` line (a saved
/// finding, see [`run::launch_line`]).
fn replay_file(file: &std::path::Path, interp_only: bool) -> ExitCode {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("tile-fuzz diff: {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let Some(line) = text.lines().find_map(|l| l.strip_prefix("// launch:")) else {
        eprintln!("tile-fuzz diff: {}: no `// launch:` line", file.display());
        return ExitCode::from(2);
    };
    let case = match run::parse_launch(line, text.clone()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tile-fuzz diff: {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let (v, msg) = run::run_text(&case, &case.text, interp_only);
    println!("{}: {}: {msg}", file.display(), v.name());
    if v.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn report(o: &DiffOptions, results: &[(usize, Verdict, String)], took: Duration) -> ExitCode {
    let mut counts: BTreeMap<Verdict, usize> = BTreeMap::new();
    for (_, v, _) in results {
        *counts.entry(*v).or_default() += 1;
    }
    // Why generated kernels were rejected, most common first (the generator's blind spots).
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for (_, v, msg) in results {
        if *v == Verdict::Rejected {
            let key: String = msg.chars().take(90).collect();
            *reasons.entry(key).or_default() += 1;
        }
    }
    let mut reasons: Vec<(String, usize)> = reasons.into_iter().collect();
    reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
    for (msg, n) in reasons.iter().take(8) {
        println!("  rejected ×{n}: {msg}");
    }
    let bad: Vec<&(usize, Verdict, String)> = results.iter().filter(|r| !r.1.passed()).collect();
    if !bad.is_empty() {
        let _ = std::fs::create_dir_all(&o.out);
    }
    for (n, (i, v, msg)) in bad.iter().enumerate() {
        let case = gen::case(&mut case_rng(o.seed, *i));
        let mut parts = msg.split(MINIMIZED);
        let msg = parts.next().unwrap_or_default().to_string();
        let (small, small_launch) = match (parts.next(), parts.next()) {
            (Some(t), Some(l)) => (crate::unescape(t), l.to_string()),
            _ if *v == Verdict::Mismatch && o.in_process => {
                let c = run::minimize(&case, o.interp_only);
                (c.text.clone(), run::launch_line(&c))
            }
            _ => (String::new(), String::new()),
        };
        let file = o.out.join(format!("{}-{}-{i}.rs", v.name(), o.seed));
        let body = format!(
            "// {}: {msg}\n// replay: tile-fuzz diff --seed {} --case {i}\n// grid {:?}, special inputs: {}, params: {}\n// minimized (its launch: {small_launch}):\n{small}\n// original:\n// launch: {}\n{}",
            v.name(),
            o.seed,
            case.grid,
            case.special,
            run::describe(&case.params),
            run::launch_line(&case),
            case.text
        );
        let _ = std::fs::write(&file, body);
        if n < 30 {
            println!("- case {i}: {}: {msg}", v.name());
        }
    }
    println!(
        "\n| outcome | cases |\n|---|---|{}",
        Verdict::ALL
            .iter()
            .map(|v| format!("\n| {} | {} |", v.name(), counts.get(v).unwrap_or(&0)))
            .collect::<String>()
    );
    println!(
        "\n{} cases in {:.1} s (seed {}, cases {}..{}); replay one: tile-fuzz diff --seed {} --case I",
        results.len(),
        took.as_secs_f64(),
        o.seed,
        o.first,
        o.first + o.count,
        o.seed
    );
    if bad.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!(
            "{} cases failed; their kernels: {}",
            bad.len(),
            o.out.display()
        );
        ExitCode::FAILURE
    }
}
