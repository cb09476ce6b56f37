//! Must not compile: an 8-stage ring of 128×64 and 64×256 f16 tiles needs 384 KiB of shared memory
//! per program, more than sm_90a (227 KiB) or sm_80 (163 KiB) allows; the error names the limit and
//! the kernel.
use tile::prelude::*;

#[tile_kernel(num_warps = 8, num_stages = 8)]
fn big(a: Ptr<f16, { 128 * k }>, b: Ptr<f16, { k * 256 }>, c: Ptr<f32, 32768>, k: i32) {
    let rows = arange(0, 128);
    let cols = arange(0, 256);
    let ks = arange(0, 64);
    let mut acc = zeros([128, 256]);
    for k0 in (0..k).step_by(64) {
        let kk = k0 + ks;
        let at = load(a + rows.expand_dims(1) * k + kk.expand_dims(0), (kk < k).expand_dims(0));
        let bt = load(b + kk.expand_dims(1) * 256 + cols.expand_dims(0), (kk < k).expand_dims(1));
        acc = dot(at, bt, acc);
    }
    store(c + rows.expand_dims(1) * 256 + cols.expand_dims(0), acc);
}

fn main() {}
