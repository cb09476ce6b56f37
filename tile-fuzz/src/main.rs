//! `tile-fuzz`: compiles generated and mutated kernels, each in a child process with a time
//! limit, counts the outcomes, and minimizes every case that finds a bug (a panic, a crash, an
//! internal error, an error without a location, or a case over the time limit).
//!
//! ```text
//! cargo run --release -p tile-fuzz -- [--seed S] [--generated N] [--mutated N] [--jobs J]
//!                                     [--time-limit-ms T] [--slow-ms T] [--out DIR] [--show N]
//!                                     [--ptxas] [--emit DIR]
//! cargo run --release -p tile-fuzz -- replay target/fuzz/*.rs
//! cargo run --release -p tile-fuzz -- corpus
//! cargo run --release -p tile-fuzz -- diff [--seed S] [--count N] …   (see `diff`)
//! ```
//!
//! Generated kernels come from a grammar of the whole language ([`gen`]); mutated ones are the
//! repository's own kernels (examples, tests, UI cases) with token-level changes ([`mutate`]).
//! Workers are this binary run as `tile-fuzz worker`: each reads one case per line on stdin and
//! answers one line; a worker that dies or runs over the limit is replaced, and the case is
//! counted as a crash or a timeout. The same seed gives the same cases. Findings (original and
//! minimized text) go to `--out` (default `target/fuzz`); the exit status is 1 if there were any.
//! Progress goes to stderr every 5% of the cases. With `--ptxas`, every compiled case's modules
//! are assembled too, and one that spills registers is a finding (`spill`). `--emit DIR` writes
//! the cases to `DIR` (one file each, for `replay`) instead of compiling them.
//!
//! `diff` is differential testing ([`diff`]): generated kernels run on the interpreter and on a
//! GPU with the same inputs, their outputs compared.
//!
//! `replay` compiles saved cases in this process and prints each one's outcome, time and
//! compile cost ([`tile_codegen::budget`]); `corpus` does the same for every kernel of the
//! repository, slowest first (`TILE_FUZZ_SHOW` of them, default 20): the check that the
//! compile-cost budget's weights still match LLVM's times.

mod case;
mod diff;
mod gen;
mod mutate;
mod rng;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use case::Outcome;
use rng::Rng;

/// Command-line settings.
struct Options {
    seed: u64,
    generated: usize,
    mutated: usize,
    jobs: usize,
    limit: Duration,
    slow: Duration,
    out: PathBuf,
    show: usize,
    /// Assemble every compiled case's modules and count spills as findings.
    ptxas: bool,
    /// Write the cases to this folder (`NNNNNN.rs`, for `replay` and calibration) and stop.
    emit: Option<PathBuf>,
}

fn parse_args() -> Result<Options, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut o = Options {
        seed: 1,
        generated: 500,
        mutated: 500,
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        limit: Duration::from_secs(10),
        slow: Duration::from_secs(2),
        out: root.join("target/fuzz"),
        show: 5,
        ptxas: false,
        emit: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let val = |i: usize| -> Result<&String, String> {
            args.get(i + 1)
                .ok_or_else(|| format!("{} needs a value", args[i]))
        };
        let num = |i: usize| -> Result<u64, String> {
            val(i)?
                .parse::<u64>()
                .map_err(|e| format!("{}: {e}", args[i]))
        };
        match args[i].as_str() {
            "--seed" => o.seed = num(i)?,
            "--generated" => o.generated = num(i)? as usize,
            "--mutated" => o.mutated = num(i)? as usize,
            "--jobs" => o.jobs = (num(i)? as usize).max(1),
            "--time-limit-ms" => o.limit = Duration::from_millis(num(i)?),
            "--slow-ms" => o.slow = Duration::from_millis(num(i)?),
            "--out" => o.out = PathBuf::from(val(i)?),
            "--show" => o.show = num(i)? as usize,
            "--emit" => o.emit = Some(PathBuf::from(val(i)?)),
            "--ptxas" => {
                o.ptxas = true;
                i += 1;
                continue;
            }
            other => return Err(format!("unknown argument `{other}` (see the crate docs)")),
        }
        i += 2;
    }
    Ok(o)
}

/// Case text on one line.
pub(crate) fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n")
}

pub(crate) fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('n') => out.push('\n'),
                Some(o) => out.push(o),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The child side: one case per stdin line, one answer per stdout line.
fn worker() -> ExitCode {
    std::panic::set_hook(Box::new(|_| {}));
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let (outcome, msg) = case::compile_text(&unescape(&line));
        if writeln!(stdout, "{outcome}\t{msg}")
            .and_then(|_| stdout.flush())
            .is_err()
        {
            break;
        }
    }
    ExitCode::SUCCESS
}

/// `tile-fuzz replay FILE…`: compiles each finding file's original text (after its
/// `// original:` line; a file without one is taken whole) in this process and prints the
/// outcome and the time, to check a fix or time a case alone.
fn replay(files: Vec<String>) -> ExitCode {
    let mut bugs = 0;
    for file in &files {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{file}: {e}");
                return ExitCode::from(2);
            }
        };
        let case = text
            .split_once("// original:\n")
            .map_or(text.as_str(), |(_, c)| c);
        let start = Instant::now();
        let (o, msg) = case::compile_text(case);
        let ms = start.elapsed().as_millis();
        bugs += usize::from(o.is_bug());
        let cost =
            case::cost_of(case).map_or("-".to_string(), |(c, m)| format!("{c} in {m} modules"));
        println!("{file}: {o} in {ms} ms (cost {cost}) {msg}");
    }
    if bugs == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `tile-fuzz pressure FILE.gpu-ir…`: each GPU-level IR file (as `TILE_DUMP=gpu-ir` writes
/// them) with its estimated register pressure ([`tile_codegen::registers`]), the op of the
/// peak and the limit at its warps, tab-separated: what `scripts/register_calibration.py` sets
/// beside `ptxas -v`.
fn pressure(files: Vec<String>) -> ExitCode {
    let mut bad = false;
    for file in &files {
        let parsed = std::fs::read_to_string(file)
            .map_err(|e| e.to_string())
            .and_then(|t| tile_core::ir::parse(&t).map_err(|e| e.to_string()));
        match parsed {
            Ok(f) => {
                let p = tile_codegen::registers::pressure(&f);
                let at =
                    p.at.map_or("-".to_string(), |op| f.op(op).kind.name().to_string());
                println!(
                    "{file}\t{}\t{}\t{}\t{at}",
                    p.registers,
                    f.num_warps,
                    tile_codegen::registers::limit(f.num_warps)
                );
            }
            Err(e) => {
                eprintln!("{file}: {e}");
                bad = true;
            }
        }
    }
    if bad {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// One corpus kernel compiled: its time, outcome, name, message, and compile cost and modules.
type Timed = (Duration, Outcome, String, String, Option<(u64, u64)>);

/// `tile-fuzz corpus`: compiles every kernel of the corpus unchanged, in this process, and
/// prints the slowest 20 with their times and outcomes (the compile-cost budget's check
/// against the kernels users actually write).
fn time_corpus() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let corpus = mutate::corpus(&root);
    let mut timed: Vec<Timed> = corpus
        .iter()
        .map(|text| {
            let start = Instant::now();
            let (o, msg) = case::compile_text(text);
            let name = text
                .split_once("fn ")
                .and_then(|(_, rest)| {
                    rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .next()
                })
                .unwrap_or("?")
                .to_string();
            (start.elapsed(), o, name, msg, case::cost_of(text))
        })
        .collect();
    timed.sort_by_key(|t| std::cmp::Reverse(t.0));
    let total: Duration = timed.iter().map(|t| t.0).sum();
    println!(
        "{} kernels in {:.1} s; the slowest:",
        timed.len(),
        total.as_secs_f64()
    );
    let show = std::env::var("TILE_FUZZ_SHOW")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    for (took, o, name, msg, cost) in timed.iter().take(show) {
        let cost = cost.map_or("-".to_string(), |(c, m)| format!("{c}/{m}"));
        println!(
            "{:>7} ms  cost {cost:>11}  {o:<12} {name} {msg}",
            took.as_millis()
        );
    }
    if timed.iter().any(|t| t.1.is_bug()) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// A running worker process.
struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Worker {
    /// This binary run as `tile-fuzz MODE` (`worker`, `diff-worker`).
    fn spawn(mode: &str) -> Result<Worker, String> {
        let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
        let mut child = Command::new(exe)
            .arg(mode)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting a worker: {e}"))?;
        let stdin = child.stdin.take().ok_or("worker stdin")?;
        let stdout = child.stdout.take().ok_or("worker stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Worker {
            child,
            stdin,
            lines,
        })
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends `line` and waits up to `limit` for the answer; `Err(true)` when the time ran out,
    /// `Err(false)` when the worker is gone.
    fn ask(&mut self, line: &str, limit: Duration) -> Result<String, bool> {
        writeln!(self.stdin, "{line}")
            .and_then(|_| self.stdin.flush())
            .map_err(|_| false)?;
        self.lines.recv_timeout(limit).map_err(|e| match e {
            RecvTimeoutError::Timeout => true,
            RecvTimeoutError::Disconnected => false,
        })
    }
}

/// What became of a line put to a worker.
enum Answer {
    /// Its answer: the outcome's name and the message.
    Line(String, String),
    /// Over the time limit (the worker is stopped).
    Timeout(String),
    /// The worker could not start or died (it is gone).
    Died(String),
}

/// Puts `line` to `slot`'s worker, started as `tile-fuzz MODE` if there is none, and waits up
/// to `limit`; a worker that times out or dies leaves the slot empty. Also returns the time the
/// worker took (its start not counted).
fn ask_worker(
    slot: &mut Option<Worker>,
    mode: &str,
    line: &str,
    limit: Duration,
) -> (Answer, Duration) {
    if slot.is_none() {
        match Worker::spawn(mode) {
            Ok(w) => *slot = Some(w),
            Err(e) => return (Answer::Died(e), Duration::ZERO),
        }
    }
    let Some(w) = slot.as_mut() else {
        return (Answer::Died("no worker".into()), Duration::ZERO);
    };
    let start = Instant::now();
    let answer = w.ask(line, limit);
    let took = start.elapsed();
    let answer = match answer {
        Ok(line) => {
            let (name, msg) = line.split_once('\t').unwrap_or((line.as_str(), ""));
            Answer::Line(name.to_string(), msg.to_string())
        }
        Err(timed_out) => {
            let status = slot.take().map(|mut w| {
                let _ = w.child.kill();
                format!("{:?}", w.child.wait())
            });
            if timed_out {
                Answer::Timeout(format!("over {} ms", limit.as_millis()))
            } else {
                Answer::Died(format!("worker died: {}", status.unwrap_or_default()))
            }
        }
    };
    (answer, took)
}

/// Compiles `text` in `slot`'s worker (starting one if needed) within `limit`.
fn run_case(slot: &mut Option<Worker>, text: &str, limit: Duration) -> (Outcome, String, Duration) {
    let (answer, took) = ask_worker(slot, "worker", &escape(text), limit);
    match answer {
        Answer::Line(name, msg) => (
            Outcome::from_name(&name).unwrap_or(Outcome::Crash),
            msg,
            took,
        ),
        Answer::Timeout(msg) => (Outcome::Timeout, msg, took),
        Answer::Died(msg) => (Outcome::Crash, msg, took),
    }
}

/// A case and where it came from.
struct Case {
    origin: &'static str,
    text: String,
}

/// The cases of a run: `generated` from the grammar, `mutated` from the corpus, each from its own
/// seed (so a case does not depend on the order of the others).
fn cases(o: &Options, corpus: &[String]) -> Vec<Case> {
    let mut v = Vec::new();
    for i in 0..o.generated {
        let mut r = Rng::new(o.seed.wrapping_mul(0x1000_0000_01b3) ^ (i as u64) << 1);
        v.push(Case {
            origin: "generated",
            text: gen::kernel(&mut r),
        });
    }
    if !corpus.is_empty() {
        for i in 0..o.mutated {
            let mut r = Rng::new(o.seed.wrapping_mul(0x1000_0000_01b3) ^ ((i as u64) << 1 | 1));
            let base = &corpus[r.below(corpus.len())];
            v.push(Case {
                origin: "mutated",
                text: mutate::mutate(&mut r, base),
            });
        }
    }
    v
}

/// Smallest token subsequence of `text` (delta debugging: drop chunks, halving their size) that
/// still gives `want`, within `budget` compilations.
fn minimize(text: &str, want: Outcome, limit: Duration, mut budget: usize) -> String {
    let Ok(ts) = text.parse::<proc_macro2::TokenStream>() else {
        return text.to_string();
    };
    let mut toks: Vec<String> = Vec::new();
    mutate::flatten_public(ts, &mut toks);
    let mut slot = None;
    let mut chunk = toks.len() / 2;
    while chunk >= 1 && budget > 0 {
        let mut i = 0;
        let mut removed = false;
        while i < toks.len() && budget > 0 {
            let end = (i + chunk).min(toks.len());
            let mut trial = toks.clone();
            trial.drain(i..end);
            budget -= 1;
            let (o, _, _) = run_case(&mut slot, &mutate::unflatten_public(&trial), limit);
            if o == want {
                toks = trial;
                removed = true;
            } else {
                i += chunk;
            }
        }
        if !removed {
            chunk /= 2;
        }
    }
    if let Some(w) = slot {
        w.stop();
    }
    mutate::unflatten_public(&toks)
}

/// One finding.
struct Finding {
    origin: &'static str,
    outcome: Outcome,
    msg: String,
    text: String,
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("worker") {
        return worker();
    }
    if std::env::args().nth(1).as_deref() == Some("diff-worker") {
        return diff::worker();
    }
    if std::env::args().nth(1).as_deref() == Some("diff") {
        let args: Vec<String> = std::env::args().skip(2).collect();
        return diff::main(&args);
    }
    if std::env::args().nth(1).as_deref() == Some("replay") {
        return replay(std::env::args().skip(2).collect());
    }
    if std::env::args().nth(1).as_deref() == Some("corpus") {
        return time_corpus();
    }
    if std::env::args().nth(1).as_deref() == Some("pressure") {
        return pressure(std::env::args().skip(2).collect());
    }
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("tile-fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    if o.ptxas {
        let Some(ptxas) = tile_codegen::ptxas::find() else {
            eprintln!("tile-fuzz: --ptxas, but no ptxas found (scripts/setup.sh, or TILE_PTXAS)");
            return ExitCode::from(2);
        };
        // Workers inherit it (edition 2021: `set_var` is safe; no other thread runs yet).
        std::env::set_var(case::PTXAS_ENV, ptxas);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let corpus = mutate::corpus(&root);
    let all = cases(&o, &corpus);
    if let Some(dir) = &o.emit {
        let written = std::fs::create_dir_all(dir).and_then(|_| {
            all.iter().enumerate().try_for_each(|(i, c)| {
                std::fs::write(
                    dir.join(format!("{i:06}.rs")),
                    format!("// {}\n{}\n", c.origin, c.text),
                )
            })
        });
        if let Err(e) = written {
            eprintln!("tile-fuzz: --emit {}: {e}", dir.display());
            return ExitCode::from(2);
        }
        println!(
            "tile-fuzz: {} cases written to {}",
            all.len(),
            dir.display()
        );
        return ExitCode::SUCCESS;
    }
    println!(
        "tile-fuzz: seed {}, {} generated + {} mutated cases ({} kernels in the corpus), {} jobs, limit {} ms",
        o.seed,
        o.generated,
        all.len() - o.generated,
        corpus.len(),
        o.jobs,
        o.limit.as_millis()
    );
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Outcome, String, Duration)>> = Mutex::new(Vec::new());
    let started = Instant::now();
    let done = AtomicUsize::new(0);
    let bugs = AtomicUsize::new(0);
    let step = (all.len() / 20).max(1);
    std::thread::scope(|s| {
        for _ in 0..o.jobs {
            s.spawn(|| {
                let mut slot = None;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(c) = all.get(i) else { break };
                    let (out, msg, took) = run_case(&mut slot, &c.text, o.limit);
                    if out.is_bug() {
                        bugs.fetch_add(1, Ordering::Relaxed);
                    }
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    // Progress on stderr, every 5%: a long run that is cut short still says
                    // how far it got and whether it had found anything.
                    if n % step == 0 {
                        eprintln!(
                            "tile-fuzz: {n}/{} cases, {} findings, {:.0} s",
                            all.len(),
                            bugs.load(Ordering::Relaxed),
                            started.elapsed().as_secs_f64()
                        );
                    }
                    if let Ok(mut r) = results.lock() {
                        r.push((i, out, msg, took));
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

    // Counts per origin and outcome.
    let mut counts: BTreeMap<(&str, Outcome), usize> = BTreeMap::new();
    let mut slow = 0;
    let mut slowest = (Duration::ZERO, 0);
    for (i, out, _, took) in &results {
        *counts.entry((all[*i].origin, *out)).or_default() += 1;
        if *out != Outcome::Timeout && *took > o.slow {
            slow += 1;
        }
        if *took > slowest.0 {
            slowest = (*took, *i);
        }
    }
    println!(
        "\n| outcome | generated | mutated |\n|---|---|---|{}",
        Outcome::ALL
            .iter()
            .map(|&x| format!(
                "\n| {x} | {} | {} |",
                counts.get(&("generated", x)).unwrap_or(&0),
                counts.get(&("mutated", x)).unwrap_or(&0)
            ))
            .collect::<String>()
    );
    println!(
        "\n{} cases in {:.1} s; {} took over {} ms (not counted as timeouts); slowest {} ms (case {})",
        results.len(),
        started.elapsed().as_secs_f64(),
        slow,
        o.slow.as_millis(),
        slowest.0.as_millis(),
        slowest.1
    );

    // The slow cases' texts (slowest first, at most 20), to replay and profile.
    let mut slow_cases: Vec<&(usize, Outcome, String, Duration)> = results
        .iter()
        .filter(|r| r.1 != Outcome::Timeout && r.3 > o.slow)
        .collect();
    slow_cases.sort_by_key(|r| std::cmp::Reverse(r.3));
    if !slow_cases.is_empty() {
        let _ = std::fs::create_dir_all(&o.out);
        for (i, out, _, took) in slow_cases.iter().take(20) {
            let c = &all[*i];
            let file = o.out.join(format!("slow-{i}.rs"));
            let body = format!(
                "// case {i} ({}), {out}, {} ms\n{}\n",
                c.origin,
                took.as_millis(),
                c.text
            );
            let _ = std::fs::write(&file, body);
        }
        println!(
            "the {} slowest cases' texts: {}/slow-*.rs",
            slow_cases.len().min(20),
            o.out.display()
        );
    }

    let findings: Vec<Finding> = results
        .iter()
        .filter(|r| r.1.is_bug())
        .map(|(i, out, msg, _)| Finding {
            origin: all[*i].origin,
            outcome: *out,
            msg: msg.clone(),
            text: all[*i].text.clone(),
        })
        .collect();
    if findings.is_empty() {
        println!("no findings");
        return ExitCode::SUCCESS;
    }
    let _ = std::fs::create_dir_all(&o.out);
    println!(
        "\n{} findings (original and minimized text in {}):",
        findings.len(),
        o.out.display()
    );
    for (n, f) in findings.iter().enumerate() {
        let budget = if f.outcome == Outcome::Timeout {
            20
        } else {
            400
        };
        let small = if n < o.show.max(20) {
            minimize(&f.text, f.outcome, o.limit, budget)
        } else {
            String::new()
        };
        let file = o.out.join(format!("{}-{n}.rs", f.outcome));
        let body = format!(
            "// {} ({}): {}\n// minimized:\n{}\n\n// original:\n{}\n",
            f.outcome, f.origin, f.msg, small, f.text
        );
        let _ = std::fs::write(&file, body);
        if n < o.show {
            let shown: String = small.trim().chars().take(400).collect();
            println!("- {} ({}): {}\n    {shown}", f.outcome, f.origin, f.msg);
        }
    }
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deep nesting is a located error, not a stack overflow (found by this fuzzer: 5000
    /// parentheses or minus signs aborted the process).
    #[test]
    fn deep_nesting_is_an_error() {
        for d in [100usize, 5000] {
            let parens = format!(
                "fn k(n: i32) {{ let v = {}n{}; }}",
                "(".repeat(d),
                ")".repeat(d)
            );
            let minus = format!("fn k(n: i32) {{ let v = {}n; }}", "-".repeat(d));
            for t in [parens, minus] {
                let (o, msg) = case::compile_text(&t);
                let want = if d == 100 {
                    Outcome::Compiled
                } else {
                    Outcome::UserError
                };
                assert_eq!(o, want, "depth {d}: {msg}");
            }
        }
    }

    /// The same seed gives the same cases; escaping round-trips.
    #[test]
    fn cases_are_reproducible() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let corpus = mutate::corpus(&root);
        assert!(corpus.len() > 50, "{} kernels in the corpus", corpus.len());
        let o = Options {
            seed: 7,
            generated: 20,
            mutated: 20,
            jobs: 1,
            limit: Duration::from_secs(1),
            slow: Duration::from_secs(1),
            out: PathBuf::new(),
            show: 0,
            ptxas: false,
            emit: None,
        };
        let (a, b) = (cases(&o, &corpus), cases(&o, &corpus));
        assert_eq!(a.len(), 40);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.text, y.text);
            assert_eq!(unescape(&escape(&x.text)), x.text);
        }
    }
}
