//! MoE routing as vLLM's `moe_align_block_size` computes it (examples/moe_align), block size 64:
//! the ids' indices sorted by expert into padded slots, the expert of every block, the padded
//! total. The example's faster form for the shape (`align::Form::best`) is `tile_fused`: PyTorch
//! needs about 15 kernels (`baseline.py`), tile 3 or 5. Ids as the example routes them (per token
//! `k` distinct experts, skewed toward low ids). The check is exact (`align::verify`: each
//! expert's slots hold exactly its ids' indices, in the order the atomics landed, then pads; blocks
//! and total as a host computation; the per-program counters zero again after the call).
//! Traffic: the ids read, the slots, the blocks' experts and the total written, as `baseline.py`.

use tile::Device;

use super::{i32_of, Job, Plan};
use crate::measure::{exact, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};
use crate::moe::align::{self, Bufs, Shape};

const NAME: &str = "moe_align";
/// The block size of every case (vLLM's common one; `baseline.py`'s).
const BLOCK_SIZE: usize = 64;

/// The jobs of this family.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let checks = [(1, 1, 1), (17, 2, 64), (1000, 8, 256)];
    let big = [(8192, 2, 64), (65536, 8, 256)];
    plan.shapes(&checks, &checks, &big)
        .into_iter()
        .map(|((tokens, k, experts), timed)| {
            let label = format!("{tokens}x{k}x{experts}");
            Job::new(NAME, label, timed, move |ctx| {
                let s = Shape {
                    tokens,
                    k,
                    experts,
                    block_size: BLOCK_SIZE,
                };
                bench(ctx, s, timed)
            })
        })
        .collect()
}

fn bench(ctx: &mut Ctx, s: Shape, timed: bool) -> Res<()> {
    i32_of(s.padded())?;
    let ids = align::route(s, (s.n() * 31 + s.experts) as u64);
    let meta = Meta {
        kernel: NAME,
        variant: Some("block64"),
        shape: vec![s.tokens as i64, s.k as i64, s.experts as i64],
        dtype: "i32",
        bytes: 4.0 * (s.n() + s.padded() + s.blocks() + 1) as f64,
        flops: None,
        timed,
    };
    ctx.bench(&meta, &MoeCase { s, ids });
    Ok(())
}

struct MoeCase {
    s: Shape,
    ids: Vec<i32>,
}

impl Case for MoeCase {
    type State = Bufs;

    fn setup(&self, dev: &Device) -> Res<Bufs> {
        align::bufs(dev, self.s, &self.ids)
    }

    fn run(&self, dev: &Device, b: &mut Bufs, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => align::launch(dev, self.s, b, align::Form::best(self.s)),
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, b: &Bufs, _: Form) -> Res<Vec<OutErr>> {
        let problem = align::verify(dev, self.s, &self.ids, b)?;
        if let Some(p) = &problem {
            eprintln!("moe_align {}: {p}", self.s.name());
        }
        Ok(vec![exact(
            "sorted_token_ids, expert_ids, total",
            problem.is_none(),
        )])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => align::Form::best(self.s).name().into(),
            other => not_a_form(other).to_string(),
        }
    }

    fn forms(&self) -> Vec<Form> {
        vec![Form::Fused]
    }
}
