//! The passes, one per file, each with one name and one golden test
//! (`tile-codegen/tests/passes/<name>.tir`).
//!
//! | name             | level        | does                                                       |
//! |------------------|--------------|------------------------------------------------------------|
//! | `canonicalize`   | tile         | folds constants, simplifies `x + 0`, `x * 1`, splat chains |
//! | `cse`            | tile and GPU | merges identical pure ops (scoped: never out of a loop body or branch) |
//! | `dce`            | tile and GPU | removes pure ops whose results are unused                  |
//! | `hoist-loads`    | tile and GPU | moves loads (and their address math) as early as memory order and a register budget allow, so they overlap; again after `assign-layouts` added `convert_layout`s |
//! | `pipeline-loads` | tile (first in the GPU pipeline) | issues a `dot` loop's tile loads one iteration ahead, carrying the loaded tiles |
//! | `assign-layouts` | tile → GPU   | gives every tensor a layout: blocked, sized for 16-byte coalesced accesses, a slice of a 2-D one, or mma for a tensor-core `dot`'s result (with `accelerate_dot`); inserts `convert_layout` where needed |
//! | `vectorize`      | GPU          | sets each load/store's `vec` from axis analysis             |
//! | `pipeline-dot`   | GPU          | a tensor-core `dot` loop's tiles through a ring of `num_stages` shared buffers filled by `cp.async` ahead of use |
//!
//! [`axis_info`] is the analysis (contiguity, divisibility, constancy) the last two share.

pub mod accelerate_dot;
pub mod assign_layouts;
pub mod axis_info;
pub mod canonicalize;
pub mod cse;
pub mod dce;
pub mod hoist_loads;
pub mod pipeline_dot;
pub mod pipeline_loads;
pub mod vectorize;

use tile_core::ir::Function;

/// A named transformation of a kernel.
pub struct Pass {
    /// The pass's name, as in golden tests and dumps.
    pub name: &'static str,
    /// Runs it in place.
    pub run: fn(&mut Function),
}

/// Every pass, by name.
pub const ALL: &[Pass] = &[
    Pass {
        name: "canonicalize",
        run: canonicalize::run,
    },
    Pass {
        name: "cse",
        run: cse::run,
    },
    Pass {
        name: "dce",
        run: dce::run,
    },
    Pass {
        name: "hoist-loads",
        run: hoist_loads::run,
    },
    Pass {
        name: "pipeline-loads",
        run: pipeline_loads::run,
    },
    Pass {
        name: "assign-layouts",
        run: assign_layouts::run,
    },
    Pass {
        name: "vectorize",
        run: vectorize::run,
    },
    Pass {
        name: "pipeline-dot",
        run: pipeline_dot::run,
    },
];

/// The pass called `name`.
pub fn by_name(name: &str) -> Option<&'static Pass> {
    ALL.iter().find(|p| p.name == name)
}
