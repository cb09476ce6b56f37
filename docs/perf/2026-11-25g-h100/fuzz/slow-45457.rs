// case 45457 (generated), compiled, 2183 ms
#[tile_kernel(num_warps = 1)]
fn k(p0: Ptr<f32, n>, n: i32, m: i32) {
    let v1 = program_id(0) * 64 + arange(0, 64);
    let v2 = (program_id(1) * 64 + arange(0, 64)).expand_dims(1) * 64 + arange(0, 64).expand_dims(0);
    if 2 < 1 {
        let mut v3 = (2.97 - 2.99);
        for i in (0..n).step_by(64) {
            let v4 = load(p0 + arange(0, 64), ((v1 < n) & (arange(0, 64) < n)));
            let v5 = zeros([64, 64]);
            v3 = v3 + -(-(3.87));
        }
    }
    let v6 = load(p0 + v1, (zeros([64]) == full([64], 3.87)));
    let v7 = atomic_xchg(p0 + min((full([64, 64], 2.47)).argmax(1), max(v1, v1)), (((v2 as f32)).max(1))) as f32;
    let v8 = (((v1 + m) as f32)).roll(1, 0);
    let v9 = max((max(v1, v1) / (m % m)), ((arange(0, 64) / 8) / (0 % 4)));
    store(p0 + (full([64, 64], 0.44)).argmax(1), ((-(full([64, 64], 2.81))).sum(1)), (v1 < n));
    let v10 = load(p0 + max(min(v2, v2), min(v2, arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0))), !((v2 < n)));
    let v11 = (v10 - 2.10);
    atomic_xchg(p0 + v2, (dot((dot(zeros([64, 64]) as f16, v11 as f16)).roll(0, 0), v10)), ((v2 < n) | (v2 < n)), scope = cta);
}

