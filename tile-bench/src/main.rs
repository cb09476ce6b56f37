//! `tile-bench`: benchmarks every kernel family of tile's examples, fused and unfused, in every
//! dtype and at every size the examples declare, and writes the results as tables, JSON and plots.
//!
//! ```text
//! cargo run --release -p tile-bench -- [--filter SUBSTR] [--quick] [--out DIR] [--graph-all]
//!                                      [--warmup N] [--reps N] [--interpreter] [--no-plots]
//!                                      [--attn-parts A,B] [--attn-dtypes A,B]
//! ```
//!
//! The kernels and their launchers are the examples' own (`examples/NAME/kernels.rs`, included by
//! the `tile-examples` library), as are the CUDA-event timing, the CUDA-graph capture and replay and the copy
//! bandwidth (`examples/common/mod.rs`). Method, on a GPU:
//!
//! - ceilings first: the device-to-device copy bandwidth (1 GiB, bytes read + bytes written; again
//!   at the end), a read-mostly rate (a row-mean kernel that reads 256 MiB and writes 64 KiB), and
//!   the host cost of one launch through tile's wrapper against cudarc's own launch of the same
//!   PTX (as `examples/launch_overhead.rs`);
//! - per (kernel, variant, shape, dtype) and per form (fused, unfused): seeded random inputs in the
//!   example's ranges (never zeros), outputs poisoned with NaN, one launch, then a check of every
//!   output against a float64 CPU reference by relative L2 error (NaN never passes) with the
//!   example's tolerance: a form that fails is not timed and its row says so;
//! - then device time sampled as `bench/python/baseline.py` samples PyTorch and Triton: after
//!   `--warmup` untimed launches (default 10), the median of `--reps` samples (default 50), each
//!   a batch of back-to-back launches (~0.2 ms of work, 1 to 50) between CUDA events, the L2
//!   flushed and the GPU held busy before each sample so no host launch cost is timed; the sizes
//!   are the examples' GPU sizes, far above L2;
//! - where the plain fused time is under 75 µs (launch-bound; `--graph-all`: everywhere), both
//!   forms again as CUDA-graph replays, each graph's output checked before it is timed;
//! - effective GB/s counts every input read once and every output written once, as the examples.
//!
//! Without a GPU (or with `--interpreter`) every kernel runs on the CPU interpreter at tiny sizes:
//! a smoke test of the checks and of every output file. Its timings are meaningless and it says so.
//! Exit code 0 when every check passed, 1 when one failed or a measurement raised, 2 on bad usage.
//!
//! Output under `--out` (default `bench-out/`): `tile.json` (one row per measurement, keyed like
//! `bench/python/baseline.py`'s rows so that `bench/join.py` can join them), `tile.md` (a table
//! per kernel family, also printed) and `plots/FAMILY.{png,svg}` (GB/s against bytes moved).

// The examples' kernels and host code, under the names the families use.
use tile_examples::act_and_mul::kernels as act_and_mul;
use tile_examples::common;
use tile_examples::cross_entropy::ce;
use tile_examples::dequant_matmul::host as dequant_host;
use tile_examples::dequant_matmul::w8a8;
use tile_examples::elementwise_chains::kernels as elementwise_chains;
use tile_examples::flash_attention;
use tile_examples::fused_add_mul::kernels as fused_add_mul;
use tile_examples::fused_add_rmsnorm::kernels as fused_add_rmsnorm;
use tile_examples::fused_bias_gelu::kernels as fused_bias_gelu;
use tile_examples::fused_layernorm::kernels as fused_layernorm;
use tile_examples::fused_layernorm::reference as fused_layernorm_reference;
use tile_examples::fused_softmax::kernels as fused_softmax;
use tile_examples::gemm::kernels as gemm_kernels;
use tile_examples::gemm_bias_act::kernels as gemm_bias_act;
use tile_examples::mean_center::kernels as mean_center;
use tile_examples::moe_align as moe;
use tile_examples::qk_norm_rope::host as qk_norm_rope_host;
use tile_examples::qk_norm_rope::kernels as qk_norm_rope;
use tile_examples::selective_scan;
use tile_examples::softmax_regression::kernels as softmax_regression;
use tile_examples::softmax_regression_simple::kernels as softmax_regression_simple;
use tile_examples::softmax_regression_simple::reference as softmax_regression_reference;
/// The dropout examples' kernels and the code they share.
mod dropout {
    pub use tile_examples::common::dropout as shared;
    pub use tile_examples::fused_bias_gelu_dropout::kernels as gelu;
    pub use tile_examples::residual_bias_dropout::kernels as residual;
}

mod ceilings;
mod cli;
mod families;
mod measure;
mod plot;
mod report;
mod user_gemm;

use std::process::ExitCode;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use tile::Device;

use cli::Opts;
use measure::{Ctx, Res};

/// The loud line of an interpreter run, printed first and last.
const MEANINGLESS: &str = "NO GPU: kernels run on the CPU interpreter at tiny sizes. THIS IS A \
                           SMOKE TEST: TIMINGS ARE MEANINGLESS, only the checks count.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match cli::parse(&args) {
        Ok(cli::Parsed::Run(o)) => o,
        Ok(cli::Parsed::Help) => {
            println!("{}", cli::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("tile-bench: {e}\n\n{}", cli::USAGE);
            return ExitCode::from(2);
        }
    };
    match run(opts) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("tile-bench: a check failed or a measurement raised (see FAILURES above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("tile-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The whole run; `Ok(true)` when every check passed and nothing raised.
fn run(opts: Opts) -> Res<bool> {
    let start = Instant::now();
    let (dev, no_gpu) = if opts.interpreter {
        (
            Device::interpreter(),
            Some("--interpreter was given".to_string()),
        )
    } else {
        let (d, e) = Device::best_available();
        (d, e.map(|e| e.to_string()))
    };
    if let Some(why) = &no_gpu {
        println!("No CUDA device ({why}).");
        println!("{MEANINGLESS}");
    }
    println!("device: {}", dev.name());
    let gpu = dev.is_cuda();
    let (warmup, reps) = opts.warmup_reps(gpu);
    println!(
        "timing: median of {reps} runs after {warmup} warm-ups{}",
        if opts.quick {
            " (quick: small shapes)"
        } else {
            ""
        }
    );

    let plan = families::Plan {
        gpu,
        quick: opts.quick,
        attn_parts: opts.attn_parts.clone(),
        attn_dtypes: opts.attn_dtypes.clone(),
    };
    let jobs: Vec<families::Job> = families::jobs(&plan)
        .into_iter()
        .filter(|j| j.family.contains(opts.filter.as_str()))
        .filter(|j| j.label.contains(opts.case.as_str()))
        .collect();
    if jobs.is_empty() && !opts.case.is_empty() {
        return Err(format!(
            "nothing to run: no step of the families matching --filter {:?} has a label \
             containing --case {:?}",
            opts.filter, opts.case
        )
        .into());
    }
    if jobs.is_empty() {
        if families::FAMILIES
            .iter()
            .any(|f| f.contains(opts.filter.as_str()))
        {
            return Err(format!(
                "nothing to run: the families matching --filter {:?} have no case in the \
                 flash_attention parts {:?} (tile-bench has fwd, bwd, gqa, varlen and decode)",
                opts.filter, opts.attn_parts
            )
            .into());
        }
        return Err(format!(
            "no kernel family matches --filter {:?}; families: {}",
            opts.filter,
            families::FAMILIES.join(", ")
        )
        .into());
    }
    std::fs::create_dir_all(&opts.out)
        .map_err(|e| format!("creating the output folder {}: {e}", opts.out.display()))?;

    // The ceilings: the copy bandwidth is every row's denominator, so without it nothing is
    // measured; the other two are reported as failures when they fail, and the run goes on.
    let mut failures = Vec::new();
    let copy_gbps = ceilings::copy_gbps(&dev)?;
    println!("device-to-device copy bandwidth (read + write): {copy_gbps:.0} GB/s");
    let read_gbps = match ceilings::read_gbps(&dev) {
        Ok(r) => r,
        Err(e) => {
            println!("read-mostly rate: raised: {e} -> FAILED");
            failures.push(format!("read-mostly rate: {e}"));
            None
        }
    };
    if let Some(r) = read_gbps {
        println!("read-mostly rate (tile row-mean kernel, 16384x4096 f32): {r:.0} GB/s");
    }
    let launch = match ceilings::launch_cost(&dev) {
        Ok(l) => {
            println!("{}", l.summary());
            Some(l)
        }
        Err(e) => {
            println!("launch cost: raised: {e} -> FAILED");
            failures.push(format!("launch cost: {e}"));
            None
        }
    };

    let pb = ProgressBar::new(jobs.len() as u64);
    pb.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}")
            .map_err(|e| format!("progress bar template: {e}"))?
            .progress_chars("=> "),
    );
    let mut ctx = Ctx::new(dev, copy_gbps, warmup, reps, opts.graph_all, pb.clone());
    ctx.failures = failures;
    for job in jobs {
        pb.set_message(job.label.clone());
        let t = Instant::now();
        let label = job.label.clone();
        if let Err(e) = (job.run)(&mut ctx) {
            ctx.say(&format!("{label}: raised: {e} -> FAILED"));
            ctx.failures.push(format!("{label}: {e}"));
        }
        ctx.say(&format!("   ({label}: {:.1} s)", t.elapsed().as_secs_f64()));
        pb.inc(1);
    }
    pb.finish_and_clear();

    let copy_end = match ceilings::copy_gbps(&ctx.dev) {
        Ok(c) => {
            println!("device-to-device copy bandwidth at the end: {c:.0} GB/s");
            c
        }
        Err(e) => {
            println!("copy bandwidth at the end: raised: {e} -> FAILED");
            ctx.failures.push(format!("copy bandwidth at the end: {e}"));
            f64::NAN
        }
    };

    let doc = report::Doc::new(
        &ctx,
        &opts,
        report::Ceilings {
            copy_gbps,
            copy_gbps_end: copy_end,
            read_gbps,
            launch,
        },
        start.elapsed().as_secs_f64(),
    );
    let md = report::markdown(&doc);
    println!();
    println!("{md}");
    let json_path = opts.out.join("tile.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&doc)?)
        .map_err(|e| format!("writing {}: {e}", json_path.display()))?;
    let md_path = opts.out.join("tile.md");
    std::fs::write(&md_path, &md).map_err(|e| format!("writing {}: {e}", md_path.display()))?;
    let mut written = vec![
        json_path.display().to_string(),
        md_path.display().to_string(),
    ];
    if !opts.no_plots {
        match plot::family_plots(&doc, &opts.out.join("plots")) {
            Ok(files) => written.extend(files),
            Err(e) => {
                // A plot that cannot be drawn is reported, not fatal: the numbers are written.
                println!("plots: {e} -> FAILED");
                ctx.failures.push(format!("plots: {e}"));
            }
        }
    }
    println!("wrote: {}", written.join(", "));
    if !gpu {
        println!("{MEANINGLESS}");
    }
    print_tuning();
    let n_ok = doc.rows.iter().chain(&doc.checks).filter(|r| r.ok).count();
    let n_all = doc.rows.len() + doc.checks.len();
    if !ctx.failures.is_empty() {
        println!("FAILURES:\n  {}", ctx.failures.join("\n  "));
    }
    println!(
        "checks: {n_ok} passed, {} failed; {} timed rows; {:.0} s",
        n_all - n_ok,
        doc.rows.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(ctx.failures.is_empty() && n_ok == n_all)
}

/// Every autotuning decision this run made (the examples' tuners): key, choice, where it came
/// from, the tuning time and each candidate's time.
fn print_tuning() {
    let tuners = [
        &gemm_kernels::gemm_tuned::TUNER,
        &softmax_regression::TUNER,
        &ce::TUNER,
        &tile_tutorials::matrix_multiplication::matmul_kernel_autotuned::TUNER,
        &tile_tutorials::fused_attention::_attn_fwd::TUNER,
        &tile_tutorials::grouped_gemm::grouped_matmul_kernel::TUNER,
        &tile_examples::flash_attention::decode::attn_decode_split::TUNER,
    ];
    for t in tuners {
        for d in t.decisions() {
            let times: Vec<String> = d
                .times
                .iter()
                .map(|t| match t {
                    tile::autotune::Timing::Ms(ms) => format!("{ms:.4}"),
                    tile::autotune::Timing::NotTimed => "-".into(),
                    tile::autotune::Timing::Failed(e) => format!("failed ({e})"),
                })
                .collect();
            println!(
                "tuned {} {:?}: config {} ({}) from {:?} in {:.1} ms; times (ms): {}",
                t.kernel(),
                d.key,
                d.config,
                d.label,
                d.source,
                d.tuning_ms,
                times.join(", ")
            );
        }
    }
}
