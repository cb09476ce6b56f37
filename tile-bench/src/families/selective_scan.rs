//! Mamba's selective scan, forward, with the skip, the gate and `delta_bias` under a softplus
//! (examples/selective_scan): fused against discretize, scan, contract. The shape is `[batch,
//! channels, len, 16]` (the last the state size), as the baseline writes it; f32 and bf16
//! sequences. Checked: `y` on the example's channels (all of a small shape, 48 of a large one)
//! against the float64 loop, 1e-4 (f32) and 1e-2 (bf16).

use tile::{bf16, Buffer, Device};

use super::{Job, Plan};
use crate::measure::{compare, not_a_form, Case, Ctx, Form, Meta, OutErr, Res};
use crate::selective_scan::host::{self, Host, Storage};
use crate::selective_scan::kernels::{fused, unfused, Inputs, Scratch, Shape};

const NAME: &str = "selective_scan";

/// The jobs of this family; shapes are `(batch, channels, len)`.
pub fn jobs(plan: &Plan) -> Vec<Job> {
    let small = [
        (1, 1, 1),
        (2, 5, 300),
        (1, 17, 129),
        (2, 16, 128),
        (3, 100, 1000),
    ];
    plan.shapes(&small, &small, &[(8, 2048, 4096)])
        .into_iter()
        .map(|((batch, channels, len), timed)| {
            let s = Shape {
                batch,
                channels,
                len,
            };
            let label = format!("{batch}×{channels}×{len}");
            Job::new(NAME, label, timed, move |ctx| {
                bench::<f32>(ctx, s, timed, "f32")?;
                bench::<bf16>(ctx, s, timed, "bf16")
            })
        })
        .collect()
}

fn bench<T: Storage>(ctx: &mut Ctx, s: Shape, timed: bool, dtype: &'static str) -> Res<()> {
    let h = host::host::<T>(s, (s.batch * 131 + s.channels * 7 + s.len) as u64);
    let channels = host::checked_channels(s);
    let want = host::reference(s, &h, &channels);
    let e = std::mem::size_of::<T>() as f64;
    let meta = Meta {
        kernel: NAME,
        variant: None,
        shape: vec![s.batch.into(), s.channels.into(), s.len.into(), 16],
        dtype,
        // Minimal traffic: u, delta, z read and y written once, B and C once, A, D and the bias
        // once.
        bytes: 4.0 * s.seq() as f64 * e + 2.0 * s.bc() as f64 * e + s.channels as f64 * 18.0 * 4.0,
        flops: None,
        timed,
    };
    let tol = if dtype == "bf16" { 1e-2 } else { 1e-4 };
    ctx.bench(
        &meta,
        &ScanCase {
            s,
            h,
            channels,
            want,
            tol,
            _t: std::marker::PhantomData::<T>,
        },
    );
    Ok(())
}

struct ScanCase<T> {
    s: Shape,
    h: Host,
    channels: Vec<(usize, usize)>,
    want: Vec<f64>,
    tol: f64,
    _t: std::marker::PhantomData<T>,
}

struct State<T: Storage> {
    x: Inputs<T>,
    scratch: Option<Scratch>,
    y: Buffer<T>,
}

impl<T: Storage> Case for ScanCase<T> {
    type State = State<T>;

    fn setup(&self, dev: &Device) -> Res<State<T>> {
        Ok(State {
            x: host::upload::<T>(dev, &self.h)?,
            scratch: None,
            y: dev.upload(&vec![T::from_f32(f32::NAN); self.s.seq()])?,
        })
    }

    fn run(&self, dev: &Device, st: &mut State<T>, form: Form) -> Result<(), tile::Error> {
        match form {
            Form::Fused => fused(dev, self.s, &st.x, &mut st.y),
            Form::Unfused => {
                if st.scratch.is_none() {
                    st.scratch = Some(Scratch::new(dev, self.s)?);
                }
                match st.scratch.as_mut() {
                    Some(scratch) => unfused(dev, self.s, &st.x, scratch, &mut st.y),
                    None => Err(not_a_form(form)),
                }
            }
            other => Err(not_a_form(other)),
        }
    }

    fn verify(&self, dev: &Device, st: &State<T>, _: Form) -> Res<Vec<OutErr>> {
        let got = host::gather(self.s, &dev.download(&st.y)?, &self.channels);
        Ok(vec![compare("y", &got, &self.want, self.tol)])
    }

    fn ops(&self, form: Form) -> String {
        match form {
            Form::Fused => "1 kernel, program (16 channels, batch element), chunks of 128 along the sequence, states in registers".into(),
            Form::Unfused => "3 kernels: exp(Δ·A) and Δ·B·u to [B, D, 16, L] f32, the scan of the states in place, the contraction with C + skip + gate".into(),
            other => not_a_form(other).to_string(),
        }
    }
}
