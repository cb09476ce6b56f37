//! The command line: options, defaults and their parsing (bad input is an `Err` with a message,
//! never a panic).

use std::path::PathBuf;

/// What `--help` prints.
pub const USAGE: &str = "\
usage: tile-bench [--filter SUBSTR] [--case SUBSTR] [--quick] [--out DIR] [--graph-all]
                  [--warmup N] [--reps N] [--interpreter] [--no-plots] [--attn-parts A,B]
                  [--attn-dtypes A,B]

Benchmarks every kernel family of tile's examples, fused and unfused, against a float64 reference
(checked before timing) and the device-to-device copy bandwidth; writes DIR/tile.json, DIR/tile.md
and DIR/plots/*.png|svg.

  --filter SUBSTR  only the kernel families whose name contains SUBSTR
  --case SUBSTR    only the steps whose label (as the progress bar shows it, e.g. `08 grouped
                   matmul 4x512`) contains SUBSTR: one shape, to profile it
  --quick          the small shapes of bench/python/baseline.py --quick, few repetitions
  --out DIR        output folder (default bench-out)
  --graph-all      CUDA-graph timings for every size, not only launch-bound ones (< 75 us)
  --warmup N       untimed launches before timing (default 10; quick 2; interpreter 0)
  --reps N         timing samples, median taken (default 50; quick 5; interpreter 1); on a GPU
                   each sample is a batch of back-to-back launches after an L2 flush, as
                   bench/python/baseline.py samples (examples/common/mod.rs: sample_ms)
  --interpreter    run on the CPU interpreter even if there is a GPU (smoke test, tiny sizes)
  --no-plots       skip the plots
  --attn-parts A,B flash_attention family: only these parts, named as bench/python/baseline.py
                   names them (fwd, bwd, gqa, varlen, mods, decode; default all), so that a
                   run in parts joins the baseline's parts
  --attn-dtypes A,B flash_attention family: only these dtypes (bf16, f16) of the fwd and bwd
                   grids, as baseline.py's --attn-dtypes (small and check-only shapes run in
                   every dtype)
  -h, --help       this text

Without a GPU the interpreter runs tiny sizes: a smoke test whose timings are meaningless.";

/// The parsed options.
#[derive(Clone, Debug)]
pub struct Opts {
    /// Only families whose name contains this (empty: all).
    pub filter: String,
    /// Only steps whose label contains this (empty: all).
    pub case: String,
    /// Small shapes, few repetitions.
    pub quick: bool,
    /// Output folder.
    pub out: PathBuf,
    /// CUDA graphs for every size.
    pub graph_all: bool,
    /// Untimed launches before timing, if given.
    pub warmup: Option<usize>,
    /// Timed launches, if given.
    pub reps: Option<usize>,
    /// Force the CPU interpreter.
    pub interpreter: bool,
    /// Skip the plots.
    pub no_plots: bool,
    /// `--attn-parts` (empty: all).
    pub attn_parts: Vec<String>,
    /// `--attn-dtypes` (empty: all).
    pub attn_dtypes: Vec<String>,
}

/// The parts of the flash_attention family, as `bench/python/attention.py` names them.
pub const ATTN_PARTS: [&str; 7] = ["fwd", "bwd", "gqa", "varlen", "mods", "decode", "dropout"];

/// The dtypes `--attn-dtypes` takes.
pub const ATTN_DTYPES: [&str; 2] = ["bf16", "f16"];

/// A comma-separated list whose every item is one of `known` (empty items dropped).
fn list_of(name: &str, v: &str, known: &[&str]) -> Result<Vec<String>, String> {
    let items: Vec<String> = v
        .split(',')
        .filter(|x| !x.is_empty())
        .map(String::from)
        .collect();
    match items.iter().find(|x| !known.contains(&x.as_str())) {
        Some(bad) => Err(format!(
            "{name}: unknown {bad:?}; known: {}",
            known.join(", ")
        )),
        None => Ok(items),
    }
}

impl Opts {
    /// `(warm-up, repetitions)`: as given, else the defaults for a GPU or the interpreter.
    pub fn warmup_reps(&self, gpu: bool) -> (usize, usize) {
        let (w, r) = match (gpu, self.quick) {
            (false, _) => (0, 1),
            (true, true) => (2, 5),
            (true, false) => (10, 50),
        };
        (self.warmup.unwrap_or(w), self.reps.unwrap_or(r).max(1))
    }
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    /// Run with these options.
    Run(Opts),
    /// Print the usage.
    Help,
}

/// Parses the arguments (without the program name).
pub fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut o = Opts {
        filter: String::new(),
        case: String::new(),
        quick: false,
        out: PathBuf::from("bench-out"),
        graph_all: false,
        warmup: None,
        reps: None,
        interpreter: false,
        no_plots: false,
        attn_parts: Vec::new(),
        attn_dtypes: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        // `--opt=value` is accepted too.
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs {what}")),
            }
        };
        let count = |v: String| -> Result<usize, String> {
            v.parse::<usize>()
                .map_err(|_| format!("{name} needs a non-negative integer, got {v:?}"))
        };
        match name {
            "--filter" => o.filter = value("a substring")?,
            "--case" => o.case = value("a substring")?,
            "--quick" => o.quick = true,
            "--out" => {
                let v = value("a folder")?;
                if v.is_empty() {
                    return Err("--out needs a non-empty folder".into());
                }
                o.out = PathBuf::from(v);
            }
            "--graph-all" => o.graph_all = true,
            "--warmup" => o.warmup = Some(count(value("a count")?)?),
            "--reps" => {
                let n = count(value("a count")?)?;
                if n == 0 {
                    return Err("--reps must be at least 1".into());
                }
                o.reps = Some(n);
            }
            "--interpreter" => o.interpreter = true,
            "--no-plots" => o.no_plots = true,
            "--attn-parts" => o.attn_parts = list_of(name, &value("parts")?, &ATTN_PARTS)?,
            "--attn-dtypes" => o.attn_dtypes = list_of(name, &value("dtypes")?, &ATTN_DTYPES)?,
            "-h" | "--help" => return Ok(Parsed::Help),
            other => return Err(format!("unknown argument {other:?}")),
        }
        if inline.is_some()
            && matches!(
                name,
                "--quick" | "--graph-all" | "--interpreter" | "--no-plots"
            )
        {
            return Err(format!("{name} takes no value"));
        }
    }
    Ok(Parsed::Run(o))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Parsed, String> {
        parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn parses_options_and_rejects_bad_input() {
        let Ok(Parsed::Run(o)) = p(&[
            "--filter", "soft", "--quick", "--out=x", "--reps", "3", "--case", "4096x",
        ]) else {
            panic!("should parse");
        };
        assert_eq!(
            (
                o.filter.as_str(),
                o.case.as_str(),
                o.quick,
                o.out.clone(),
                o.reps
            ),
            ("soft", "4096x", true, PathBuf::from("x"), Some(3))
        );
        assert_eq!(o.warmup_reps(true), (2, 3));
        assert!(matches!(p(&["--help"]), Ok(Parsed::Help)));
        let Ok(Parsed::Run(o)) = p(&["--attn-parts", "fwd,gqa", "--attn-dtypes=bf16"]) else {
            panic!("should parse");
        };
        assert_eq!(
            (o.attn_parts, o.attn_dtypes),
            (vec!["fwd".into(), "gqa".into()], vec!["bf16".into()])
        );
        for bad in [
            &["--filter"][..],
            &["--case"],
            &["--reps", "0"],
            &["--reps", "-1"],
            &["--warmup", "x"],
            &["--bogus"],
            &["--out", ""],
            &["--quick=1"],
            &["--attn-parts", "fwd,bogus"],
            &["--attn-dtypes", "f32"],
        ] {
            assert!(p(bad).is_err(), "{bad:?} should be rejected");
        }
    }
}
