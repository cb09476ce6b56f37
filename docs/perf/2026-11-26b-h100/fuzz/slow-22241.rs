// case 22241 (generated), compiled, 3537 ms
#[tile_kernel(num_warps = 8)]
fn k(p0: Ptr<f16>, n: i32, m: i32) {
    let v1 = program_id(0) * 128 + arange(0, 128);
    let v2 = (program_id(1) * 1 + arange(0, 1)).expand_dims(1) * 1 + arange(0, 1).expand_dims(0);
    if 1 < 2 {
        let v3 = load(p0 + v1) as f32;
    }
    let v4 = -(full([128], 2.80));
    let v5 = load(p0 + min(arange(0, 128), (zeros([1, 1])).argmin(0)), ((arange(0, 128) < n) | (v1 < n))) as f32;
    store(p0 + (v1 + (4 + n)), ((associative_scan((v5).roll(1, 0), 0, |p, q| min(q, p), reverse = true) + select((n > 0), (v5).sum(), 1.82))) as f16, (v1 < n));
    let v6 = load(p0 + min((v1).expand_dims(1) * 1 + (arange(0, 128)).expand_dims(0), (v2 * 8)), ((arange(0, 1).expand_dims(1) * 1 + arange(0, 1).expand_dims(0) < n) & (v2 < n)), 0.8) as f32;
    let mut v7 = max(zeros([128]), zeros([128]));
    for i in (0..n).step_by(1) {
        let v8 = load(p0 + (-(full([1, 1], 1.27))).argmin(0)) as f32;
        let v9 = (((arange(0, 1).expand_dims(1) * 1 + arange(0, 1).expand_dims(0) / i) + n) * ((v8).argmax(0) / 8));
        v7 = v7 + ((v6).argmin(0) as f32);
    }
    store(p0 + (v6).argmin(1), (((max(v6, v6) * v6)).max(1)) as f16);
    let v10 = !((v4 != v4));
    let v11 = 0.79;
    store(p0 + v1, (-(v4)) as f16, (v1 == m));
}

