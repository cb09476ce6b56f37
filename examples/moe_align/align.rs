//! The host side of `moe_align`: problems, inputs, buffers, the launches of each form and the
//! exact check of their outputs (shared by the example and its interpreter test).

use tile::prelude::*;

use super::kernels;

/// Errors of the example.
pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A routing problem: `tokens × k` ids over `experts`, slots padded to `block_size`.
#[derive(Clone, Copy)]
pub struct Shape {
    /// Tokens.
    pub tokens: usize,
    /// Experts per token (top-k).
    pub k: usize,
    /// Experts.
    pub experts: usize,
    /// Slots per block of an expert.
    pub block_size: usize,
}

impl Shape {
    /// Ids: `tokens × k`.
    pub fn n(self) -> usize {
        self.tokens * self.k
    }
    /// Slots in the worst case (every expert's last block one id short of full), as vLLM sizes
    /// `sorted_token_ids`.
    pub fn padded(self) -> usize {
        self.n() + self.experts * (self.block_size - 1)
    }
    /// Programs that hold ids (1024 each).
    pub fn rows(self) -> usize {
        self.n().div_ceil(1024)
    }
    /// Blocks of `block_size` slots in the worst case.
    pub fn blocks(self) -> usize {
        self.padded().div_ceil(self.block_size)
    }
    /// The experts tile: 64 or 256.
    pub fn eb(self) -> Res<i32> {
        match self.experts {
            1..=64 => Ok(64),
            65..=256 => Ok(256),
            e => Err(format!("{e} experts; the kernels are compiled for up to 256").into()),
        }
    }
    /// The shape as tables name it.
    pub fn name(self) -> String {
        format!(
            "{} tokens x top-{} of {} experts, block {}",
            self.tokens, self.k, self.experts, self.block_size
        )
    }
}

/// Per token `k` distinct experts, skewed toward low ids (a few experts are popular, as in real
/// routing).
pub fn route(s: Shape, seed: u64) -> Vec<i32> {
    let mut state = seed;
    let mut uniform = || {
        // splitmix64, top 24 bits.
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut ids = Vec::with_capacity(s.n());
    for _ in 0..s.tokens {
        let mut picked: Vec<i32> = Vec::with_capacity(s.k);
        while picked.len() < s.k {
            let u = uniform();
            let e = ((u * u) * s.experts as f32) as i32;
            let e = e.min(s.experts as i32 - 1);
            if !picked.contains(&e) {
                picked.push(e);
            }
        }
        ids.extend(picked);
    }
    ids
}

/// The device buffers of one problem.
pub struct Bufs {
    /// The `tokens × k` expert ids.
    pub ids: Buffer<i32>,
    /// Ids per expert.
    pub counts: Buffer<i32>,
    /// Each expert's first slot.
    pub starts: Buffer<i32>,
    /// Per program and expert: counts (zero between calls), then first slots.
    pub pc: Buffer<i32>,
    /// Per program and expert: the next free slot.
    pub cursor: Buffer<i32>,
    /// The ids' indices sorted by expert, padded per expert to whole blocks.
    pub sorted: Buffer<i32>,
    /// The expert of each block.
    pub expert_ids: Buffer<i32>,
    /// Slots used in all (padding included).
    pub total: Buffer<i32>,
}

/// The buffers of `s` on `dev`, `ids` uploaded, outputs poisoned with -7.
pub fn bufs(dev: &Device, s: Shape, ids: &[i32]) -> Res<Bufs> {
    let rows = s.rows().max(1) * s.experts;
    Ok(Bufs {
        ids: dev.upload(ids)?,
        counts: dev.zeros::<i32>(s.experts)?,
        starts: dev.zeros::<i32>(s.experts)?,
        pc: dev.zeros::<i32>(rows)?,
        cursor: dev.zeros::<i32>(rows)?,
        sorted: dev.upload(&vec![-7; s.padded()])?,
        expert_ids: dev.upload(&vec![-7; s.blocks()])?,
        total: dev.zeros::<i32>(1)?,
    })
}

/// The two forms (see `kernels.rs`).
#[derive(Clone, Copy, PartialEq)]
pub enum Form {
    /// Counts and cursors per program (5 kernels).
    PerRow,
    /// One counter per expert (3 kernels).
    PerId,
}

impl Form {
    /// Both forms.
    pub const ALL: [Form; 2] = [Form::PerRow, Form::PerId];

    /// The faster form for `s`, as measured on an H100 (README): one counter per expert while
    /// each expert gets at most 256 ids on average (8192 tokens × top-2 of 64: 21.0 µs against
    /// 24.0), per-program counters beyond (65536 × top-8 of 256, 2048 ids per expert: 53.7 µs
    /// against 323.5, where every id of an expert contends for one address).
    pub fn best(s: Shape) -> Form {
        if s.n() <= 256 * s.experts {
            Form::PerId
        } else {
            Form::PerRow
        }
    }
    /// The form as tables name it.
    pub fn name(self) -> &'static str {
        match self {
            Form::PerRow => "per-program counts and cursors (5 kernels)",
            Form::PerId => "one counter per expert (3 kernels)",
        }
    }
}

/// The launches of `form`.
pub fn launch(dev: &Device, s: Shape, b: &mut Bufs, form: Form) -> Result<(), Error> {
    let (n, e, padded) = (s.n() as i32, s.experts as i32, s.padded() as i32);
    let eb = s.eb().map_err(|err| Error::Args(err.to_string()))?;
    let (blocks, rows) = (s.blocks() as i32, s.rows() as i32);
    let fill = Grid::x(cdiv(s.padded(), 1024));
    let offsets = |dev: &Device, b: &mut Bufs| {
        kernels::expert_offsets::launch(
            dev,
            Grid::x(cdiv(s.blocks(), 32)),
            &b.counts,
            &mut b.starts,
            &mut b.expert_ids,
            &mut b.total,
            e,
            blocks,
            s.block_size as i32,
            eb,
        )
    };
    match form {
        Form::PerRow => {
            let columns = Grid::x(cdiv(s.experts, 32));
            kernels::count_rows::launch(
                dev,
                fill,
                &b.ids,
                &mut b.pc,
                &mut b.sorted,
                n,
                e,
                padded,
                rows,
            )?;
            kernels::column_sums::launch(dev, columns, &b.pc, &mut b.counts, e, rows)?;
            offsets(dev, b)?;
            kernels::row_cursors::launch(dev, columns, &b.pc, &b.starts, &mut b.cursor, e, rows)?;
            kernels::scatter_rows::launch(
                dev,
                Grid::x(cdiv(s.n(), 1024)),
                &b.ids,
                &mut b.pc,
                &mut b.cursor,
                &mut b.sorted,
                n,
                e,
                padded,
                rows,
                eb,
            )
        }
        Form::PerId => {
            kernels::count_each::launch(
                dev,
                fill,
                &b.ids,
                &mut b.counts,
                &mut b.sorted,
                n,
                e,
                padded,
            )?;
            offsets(dev, b)?;
            kernels::scatter_each::launch(
                dev,
                Grid::x(cdiv(s.n(), 1024)),
                &b.ids,
                &mut b.counts,
                &mut b.starts,
                &mut b.sorted,
                n,
                e,
                padded,
                eb,
            )
        }
    }
}

/// Whether the outputs in `b` are the routing of `ids` (see the module docs); the first problem
/// found, if any.
pub fn verify(dev: &Device, s: Shape, ids: &[i32], b: &Bufs) -> Res<Option<String>> {
    let n = s.n();
    let bs = s.block_size;
    let mut count = vec![0usize; s.experts];
    for &x in ids {
        count[x as usize] += 1;
    }
    let padded: Vec<usize> = count.iter().map(|&c| c.div_ceil(bs) * bs).collect();
    let start: Vec<usize> = padded
        .iter()
        .scan(0, |acc, &p| {
            let s0 = *acc;
            *acc += p;
            Some(s0)
        })
        .collect();
    let total: usize = padded.iter().sum();
    let sorted = dev.download(&b.sorted)?;
    let expert_ids = dev.download(&b.expert_ids)?;
    if dev.download(&b.total)?[0] as usize != total {
        return Ok(Some(format!(
            "total {:?}, want {total}",
            dev.download(&b.total)?
        )));
    }
    let zeroed =
        |buf: &Buffer<i32>| -> Res<bool> { Ok(dev.download(buf)?.iter().all(|&c| c == 0)) };
    if !zeroed(&b.pc)? {
        return Ok(Some(
            "the per-program counts are not zero after the call".into(),
        ));
    }
    let mut members: Vec<Vec<i32>> = vec![Vec::new(); s.experts];
    for (i, &x) in ids.iter().enumerate() {
        members[x as usize].push(i as i32);
    }
    for e in 0..s.experts {
        let mut got = sorted[start[e]..start[e] + count[e]].to_vec();
        got.sort_unstable();
        if got != members[e] {
            return Ok(Some(format!("expert {e}'s slots hold the wrong indices")));
        }
        if sorted[start[e] + count[e]..start[e] + padded[e]]
            .iter()
            .any(|&v| v != n as i32)
        {
            return Ok(Some(format!("expert {e}'s padding is not {n}")));
        }
    }
    if sorted[total..].iter().any(|&v| v != n as i32) {
        return Ok(Some("slots past the total are not the pad value".into()));
    }
    for (j, &got) in expert_ids.iter().enumerate() {
        let slot = j * bs;
        let want = if slot < total {
            (0..s.experts)
                .filter(|&e| start[e] + padded[e] <= slot)
                .count() as i32
        } else {
            -1
        };
        if got != want {
            return Ok(Some(format!("block {j}: expert {got}, want {want}")));
        }
    }
    Ok(None)
}
