//! The passes, one per file, each with one name and one golden test
//! (`tile-codegen/tests/passes/<name>.tir`).
//!
//! | name             | level        | does                                                       |
//! |------------------|--------------|------------------------------------------------------------|
//! | `canonicalize`   | tile         | folds constants, simplifies `x + 0`, `x * 1`, splat chains |
//! | `cse`            | tile and GPU | merges identical pure ops (scoped: never out of a loop body or branch) |
//! | `dce`            | tile and GPU | removes pure ops whose results are unused                  |
//! | `induction`      | tile         | a value a loop carries and advances by a loop-invariant step (`a_ptrs += BK * stride`) becomes a function of the induction variable, so its loads can be pipelined |
//! | `hoist-loads`    | tile and GPU | moves loads (and their address math) as early as memory order and a register budget allow, so they overlap; again after `assign-layouts` added `convert_layout`s |
//! | `version-alignment` | tile (first in the GPU pipeline) | a `dot` loop whose operand addresses use loaded addresses or strides runs under `if` (those values 16-byte aligned) { a copy whose copies are vectors, through `hint`s } else { the loop } |
//! | `lower-descriptors` | tile (second in the GPU pipeline) | expands tensor-descriptor accesses (`desc_load`, `desc_store`) that the Hopper copy path does not keep into masked `load`s and `store`s of 64-bit offsets |
//! | `pipeline-loads` | tile (third in the GPU pipeline) | issues a `dot` or scan loop's tile loads one iteration ahead, carrying the loaded tiles |
//! | `assign-layouts` | tile → GPU   | gives every tensor a layout: blocked, sized for 16-byte coalesced accesses, a slice of a 2-D one, or mma for a tensor-core `dot`'s result (with `accelerate_dot`); inserts `convert_layout` where needed |
//! | `vectorize`      | GPU          | sets each load/store's `vec` from axis analysis             |
//! | `hoist-invariant` | GPU         | moves a loop's `convert_layout` of a value from outside the loop to before the loop (LLVM never moves a conversion through shared memory) |
//! | `pipeline-dot`   | GPU          | a tensor-core `dot` loop's tiles through a ring of `num_stages` shared buffers filled by `cp.async` ahead of use |
//! | `prefetch-dot`   | GPU (not in the default pipeline) | such a loop reads each stage in `K` slices, the next stage's first slice before the barrier's last `mma`s |
//! | `insert-barriers` | GPU (last)  | a `barrier` before every op whose shared-memory accesses may race an earlier op's, with the bytes [`crate::analysis::shared_alloc`] gives each user |
//!
//! The analyses passes ask (axis facts, the shared-memory allocation, barrier placement) are in
//! [`crate::analysis`], which the LLVM back end reads too; passes never depend on the back end.
//! Where a pass needs the back end's answer (the scratch bytes of an op, for the allocation), the
//! caller hands it in ([`Pass::run`]).

pub mod accelerate_dot;
pub mod assign_layouts;
pub mod canonicalize;
pub mod cse;
pub mod dce;
pub(crate) mod edit;
pub mod hoist_invariant;
pub mod hoist_loads;
pub mod induction;
pub mod insert_barriers;
pub mod lower_descriptors;
pub mod pipeline_dot;
pub mod pipeline_loads;
pub mod prefetch_dot;
pub mod prefetch_rows;
pub mod vectorize;
pub mod version_alignment;

use tile_core::ir::Function;

use crate::analysis::ScratchBytes;

/// A pass, by identity: pass lists are lists of these, so a misspelled pass is a compile error
/// in tile's own code and a reported error where a name comes from outside (`TILE_SKIP_PASSES`,
/// golden test files).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pass {
    /// `canonicalize`.
    Canonicalize,
    /// `cse`.
    Cse,
    /// `dce`.
    Dce,
    /// `hoist-loads`.
    HoistLoads,
    /// `hoist-invariant`.
    HoistInvariant,
    /// `induction`.
    Induction,
    /// `lower-descriptors`.
    LowerDescriptors,
    /// `pipeline-loads`.
    PipelineLoads,
    /// `prefetch-rows`.
    PrefetchRows,
    /// `assign-layouts`.
    AssignLayouts,
    /// `vectorize`.
    Vectorize,
    /// `pipeline-dot`.
    PipelineDot,
    /// `prefetch-dot`.
    PrefetchDot,
    /// `insert-barriers`.
    InsertBarriers,
    /// `version-alignment`.
    VersionAlignment,
}

impl Pass {
    /// Every pass.
    pub const ALL: [Pass; 15] = [
        Pass::Canonicalize,
        Pass::Induction,
        Pass::Cse,
        Pass::Dce,
        Pass::HoistLoads,
        Pass::VersionAlignment,
        Pass::LowerDescriptors,
        Pass::PipelineLoads,
        Pass::PrefetchRows,
        Pass::AssignLayouts,
        Pass::Vectorize,
        Pass::HoistInvariant,
        Pass::PipelineDot,
        Pass::PrefetchDot,
        Pass::InsertBarriers,
    ];

    /// The pass's name, as in golden tests, dumps and `TILE_SKIP_PASSES`.
    pub fn name(self) -> &'static str {
        match self {
            Pass::Canonicalize => "canonicalize",
            Pass::Cse => "cse",
            Pass::Dce => "dce",
            Pass::HoistLoads => "hoist-loads",
            Pass::HoistInvariant => "hoist-invariant",
            Pass::Induction => "induction",
            Pass::LowerDescriptors => "lower-descriptors",
            Pass::PipelineLoads => "pipeline-loads",
            Pass::PrefetchRows => "prefetch-rows",
            Pass::VersionAlignment => "version-alignment",
            Pass::AssignLayouts => "assign-layouts",
            Pass::Vectorize => "vectorize",
            Pass::PipelineDot => "pipeline-dot",
            Pass::PrefetchDot => "prefetch-dot",
            Pass::InsertBarriers => "insert-barriers",
        }
    }

    /// Runs it on `f` in place. `scratch` is the back end's scratch bytes per op
    /// (`llvm::scratch_bytes`), which `insert-barriers` places through the allocation.
    pub fn run(self, f: &mut Function, scratch: ScratchBytes) {
        match self {
            Pass::Canonicalize => canonicalize::run(f),
            Pass::Cse => cse::run(f),
            Pass::Dce => dce::run(f),
            Pass::HoistLoads => hoist_loads::run(f),
            Pass::HoistInvariant => hoist_invariant::run(f),
            Pass::Induction => induction::run(f),
            Pass::LowerDescriptors => lower_descriptors::run(f),
            Pass::PipelineLoads => pipeline_loads::run(f),
            Pass::PrefetchRows => prefetch_rows::run(f),
            Pass::VersionAlignment => version_alignment::run(f),
            Pass::AssignLayouts => assign_layouts::run(f),
            Pass::Vectorize => vectorize::run(f),
            Pass::PipelineDot => pipeline_dot::run(f),
            Pass::PrefetchDot => prefetch_dot::run(f),
            Pass::InsertBarriers => insert_barriers::run(f, scratch),
        }
    }

    /// Whether the pipeline works without it: `assign-layouts` makes the IR valid for the GPU
    /// level, without `insert-barriers` shared memory races (the lowering refuses such a
    /// kernel), and without `lower-descriptors` the descriptor accesses reach passes and a back
    /// end that do not take them, so none of the three can be left out.
    pub fn skippable(self) -> bool {
        !matches!(
            self,
            Pass::AssignLayouts | Pass::InsertBarriers | Pass::LowerDescriptors
        )
    }

    /// The pass called `name`, or an error that lists the names.
    pub fn from_name(name: &str) -> Result<Pass, String> {
        Pass::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Pass::ALL.iter().map(|p| p.name()).collect();
                format!("`{name}` is not a pass (the passes: {})", names.join(", "))
            })
    }
}

impl std::fmt::Display for Pass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
