//! The stages as lists of passes, and running them: the tile level of every instance (with the
//! `ir` dump), the GPU level of one specialization for one target, the IR verified after every
//! pass in debug builds and printed and parsed again between levels; and what a build writes
//! and leaves out (`TILE_DUMP`, `TILE_DUMP_DIR`, `TILE_SKIP_PASSES`, the `ptxas` for cubins).

use std::path::PathBuf;

use tile_core::ir::{print, verify, ConstValue, Function, OpKind};
use tile_core::runtime::EQUALS_ONE;
use tile_core::Target;

use super::Failure;
use crate::budget;
use crate::frontend::{self, FnTable, Kernel, KernelOptions};
use crate::llvm;
use crate::passes::Pass;

/// Passes run at the tile level, in order.
pub const TILE_PASSES: &[Pass] = &[
    Pass::Induction,
    Pass::Canonicalize,
    Pass::Cse,
    Pass::Dce,
    Pass::HoistLoads,
];

/// Passes from the tile level to the GPU level, in order.
pub const GPU_PASSES: &[Pass] = &[
    Pass::VersionAlignment,
    Pass::LowerDescriptors,
    Pass::PipelineLoads,
    Pass::PrefetchRows,
    Pass::AssignLayouts,
    Pass::Vectorize,
    Pass::HoistInvariant,
    Pass::PipelineDot,
    Pass::Cse,
    Pass::Dce,
    Pass::HoistLoads,
    Pass::InsertBarriers,
];

/// Which stages to write, and where; which passes to leave out (for A/B measurements); and the
/// `ptxas` that assembles each target's cubin, if any.
#[derive(Clone, Debug, Default)]
pub struct DumpConfig {
    /// Stage names to write.
    pub stages: Vec<String>,
    /// Directory.
    pub dir: PathBuf,
    /// Passes not to run (`TILE_SKIP_PASSES`, comma-separated names). The passes that make the
    /// IR valid for the next level (`assign-layouts`) cannot be skipped.
    pub skip_passes: Vec<Pass>,
    /// The `ptxas` that assembles every target's PTX into a cubin embedded beside it (see
    /// [`cubin_ptxas`]); `None`: PTX only, which the driver compiles when it loads it.
    pub cubin: Option<PathBuf>,
}

/// The `ptxas` `#[tile_kernel]` assembles cubins with: [`crate::ptxas::find`]'s, unless
/// `TILE_CUBIN` turns cubins off ([`tile_core::runtime::cubins_off`]). With a cubin for its
/// architecture a device loads the kernel without compiling PTX (the driver's compilation is
/// ~25 ms per module on an H100).
pub fn cubin_ptxas() -> Option<PathBuf> {
    if tile_core::runtime::cubins_off() {
        None
    } else {
        crate::ptxas::find()
    }
}

impl DumpConfig {
    /// Reads `TILE_DUMP`, `TILE_DUMP_DIR` and `TILE_SKIP_PASSES`; a name in `TILE_SKIP_PASSES`
    /// that is not a pass, or names a pass that cannot be left out, is an error.
    pub fn from_env() -> Result<DumpConfig, String> {
        let stages: Vec<String> = std::env::var("TILE_DUMP")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let dir = std::env::var("TILE_DUMP_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| PathBuf::from("target/tile-dump"));
        let skip_passes =
            parse_skip_passes(&std::env::var("TILE_SKIP_PASSES").unwrap_or_default())?;
        Ok(DumpConfig {
            stages,
            dir,
            skip_passes,
            cubin: None,
        })
    }

    fn wants(&self, stage: &str) -> bool {
        self.stages.iter().any(|s| s == stage || s == "all")
    }

    pub(super) fn write(&self, stage: &str, file: String, text: &str) -> Result<(), String> {
        if !self.wants(stage) {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("creating {}: {e}", self.dir.display()))?;
        let path = self.dir.join(file);
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
    }
}

/// The passes named in `spec` (comma-separated, as `TILE_SKIP_PASSES` holds them).
pub fn parse_skip_passes(spec: &str) -> Result<Vec<Pass>, String> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            let p = Pass::from_name(name).map_err(|e| format!("TILE_SKIP_PASSES: {e}"))?;
            if p.skippable() {
                Ok(p)
            } else {
                Err(format!(
                    "TILE_SKIP_PASSES: `{p}` cannot be left out (the GPU-level IR needs it)"
                ))
            }
        })
        .collect()
}

/// Runs `passes` in order, except those in `skip`. With debug assertions on (tests, debug
/// builds of the macro) the IR is verified after every pass, and an invalid IR names the pass
/// that made it and locates the op.
pub fn run_passes(f: &mut Function, passes: &[Pass], skip: &[Pass]) -> Result<(), Failure> {
    for &p in passes.iter().filter(|p| !skip.contains(p)) {
        p.run(f, llvm::scratch_bytes);
        if cfg!(debug_assertions) {
            if let Err(e) = verify(f) {
                return Err(Failure {
                    loc: e.0.first().and_then(|v| v.loc),
                    msg: format!("the IR is invalid after `{p}`:\n{e}"),
                });
            }
        }
    }
    Ok(())
}

/// Prints `f` and parses it again (ids dense and in program order), keeping the source
/// locations, and verifies the result.
pub(super) fn reparse(f: &Function, what: &str) -> Result<(String, Function), Failure> {
    let text = print(f);
    let mut g = tile_core::ir::parse(&text).map_err(|e| Failure::from(e.to_string()))?;
    g.set_locs(&f.locs())
        .map_err(|e| Failure::from(format!("internal error: {what}: {e}")))?;
    verify(&g).map_err(|e| Failure {
        loc: e.0.first().and_then(|v| v.loc),
        msg: format!("{what} is invalid:\n{e}"),
    })?;
    Ok((text, g))
}

/// One specialization after the tile-level passes.
pub struct TileLevel {
    /// The front end's kernel (name, parameters, spans).
    pub kernel: Kernel,
    /// The optimized tile-level IR, as text (embedded for the interpreter).
    pub text: String,
    /// The same, parsed (ids dense and in program order).
    pub ir: Function,
    /// Its [`budget::cost`].
    pub cost: u64,
}

/// The front end and the tile-level passes for every specialization of a kernel: what the
/// compile-cost budget is checked on before any GPU code is built.
pub fn tile_level(
    item: &syn::ItemFn,
    fns: &FnTable,
    opts: &KernelOptions,
    dump: &DumpConfig,
) -> syn::Result<Vec<TileLevel>> {
    frontend::lower_kernel(item, opts, fns)?
        .into_iter()
        .map(|kernel| {
            let mut f = kernel.ir.clone();
            let optimized = run_passes(&mut f, TILE_PASSES, &dump.skip_passes)
                .and_then(|()| reparse(&f, "tile-level IR"))
                .and_then(|(text, ir)| {
                    dump.write("ir", format!("{}.ir", kernel.name), &text)?;
                    Ok((text, ir))
                });
            match optimized {
                Ok((text, ir)) => {
                    let cost = budget::cost(&ir);
                    Ok(TileLevel {
                        kernel,
                        text,
                        ir,
                        cost,
                    })
                }
                Err(e) => {
                    let msg = format!("internal error in tile: {}", e.msg);
                    Err(match kernel.range_of(e.loc) {
                        Some(r) => r.error(msg),
                        None => syn::Error::new_spanned(&item.sig.ident, msg),
                    })
                }
            }
        })
        .collect()
}

/// The GPU-level IR of `tile` for `target` with parameter `i` assumed a multiple of `div[i]`
/// (or, for [`EQUALS_ONE`], the integer 1: its uses read a constant 1, folded by
/// `canonicalize` before the GPU-level passes).
pub(super) fn gpu_level(
    tile: &Function,
    div: &[u32],
    skip: &[Pass],
    target: Target,
) -> Result<Function, Failure> {
    gpu_level_with(tile, div, skip, target, GPU_PASSES)
}

/// [`gpu_level`] through the GPU-level passes `passes` only.
fn gpu_level_with(
    tile: &Function,
    div: &[u32],
    skip: &[Pass],
    target: Target,
    passes: &[Pass],
) -> Result<Function, Failure> {
    let mut g = tile.clone();
    let mut ones = false;
    for (i, &d) in div.iter().enumerate() {
        if d == EQUALS_ONE {
            let p = g.params()[i];
            let ty = g.ty(p).clone();
            let entry = g.entry();
            let one = g.insert_op(
                entry,
                0,
                OpKind::Constant(ConstValue::Int(1)),
                vec![],
                vec![ty],
            );
            let one = g.op(one).results[0];
            g.replace_all_uses(p, one);
            g.param_attrs[i].divisibility = 1;
            ones = true;
        } else {
            g.param_attrs[i].divisibility = d;
        }
    }
    if ones {
        run_passes(&mut g, &[Pass::Canonicalize, Pass::Dce], skip)?;
    }
    g.target = Some(target);
    // Plain loads that read an array's box: one hidden slot each in every module (so that all
    // share one parameter list), taken as descriptor accesses where the copy engine fills a ring.
    let implied = crate::analysis::implied::implied_loads(tile);
    g.desc_slots = tile.desc_slots + implied.len() as u32;
    if !skip.contains(&Pass::LowerDescriptors) {
        crate::passes::lower_descriptors::imply(&mut g, &implied);
    }
    run_passes(&mut g, passes, skip)?;
    Ok(g)
}

/// Whether `built` (GPU-level IR) copies some loop's operands into a ring of shared buffers
/// ahead of their use (`cp.async` or TMA): the only thing `num_stages` sizes.
pub(super) fn has_rings(built: &Function) -> bool {
    built.walk().into_iter().any(|op| {
        matches!(
            built.op(op).kind,
            OpKind::AsyncCopy { .. } | OpKind::TmaLoad { .. }
        )
    })
}

/// Why the tensor-core `dot`s of [`gpu_level`]'s result that read their operands without a
/// pipelined ring were not given one (`pipeline-dot`'s [`explain`](crate::passes::pipeline_dot::explain)
/// on the IR it received), each with the `dot`'s source location; empty when there is none
/// (the common case, found without running any pass again).
pub(super) fn unpipelined(
    tile: &Function,
    div: &[u32],
    skip: &[Pass],
    target: Target,
    built: &Function,
) -> Result<Vec<Failure>, Failure> {
    let in_loop_unpipelined = built.walk().into_iter().any(|op| {
        let d = built.op(op);
        matches!(d.kind, OpKind::Dot { .. })
            && matches!(
                built.ty(d.results[0]).layout,
                Some(tile_core::ir::Layout::Mma(_))
            )
            && built.op(op).block != built.entry()
            && d.operands[..2].iter().any(|&v| {
                built
                    .def_op(v)
                    .is_some_and(|o| matches!(built.op(o).kind, OpKind::ConvertLayout))
            })
    });
    if !in_loop_unpipelined || skip.contains(&Pass::PipelineDot) || tile.num_stages == 1 {
        return Ok(Vec::new());
    }
    let until = GPU_PASSES
        .iter()
        .position(|&p| p == Pass::PipelineDot)
        .unwrap_or(GPU_PASSES.len());
    let g = gpu_level_with(tile, div, skip, target, &GPU_PASSES[..until])?;
    Ok(crate::passes::pipeline_dot::explain(&g)
        .into_iter()
        .map(|(dot, why)| Failure {
            msg: why.join("; "),
            loc: g.op(dot).loc,
        })
        .collect())
}
