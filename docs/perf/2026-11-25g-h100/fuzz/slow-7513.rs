// case 7513 (generated), compiled, 2168 ms
#[tile_kernel(num_warps = 1)]
fn k(p0: Ptr<f32, n>, p1: Ptr<f32, n>, n: i32, m: i32) {
    let v1 = program_id(0) * 256 + arange(0, 256);
    let v2 = (program_id(1) * 64 + arange(0, 64)).expand_dims(1) * 64 + arange(0, 64).expand_dims(0);
    let v3 = (((full([256], 1.78)).roll(1, 0) / -(zeros([256])))).roll(2, 0);
    let v4 = (dot((zeros([64, 64]) * zeros([64, 64])), -(zeros([64, 64])), precision = tf32) < min((zeros([64, 64])).roll(0, 0), -(zeros([64, 64]))));
    let v5 = v2;
    let v6 = load(p1 + (v1 * (m % n)), (v1 < n));
    let v7 = full([64, 64], 3.10);
    let mut v8 = dot(v7 as f16, v7 as f16);
    for i in (0..4).step_by(1) {
        let v9 = v1;
        let v10 = (min(v9, (v9 - i)) + 3);
        let mut v11 = (0.3 * 3.26);
        for i in (0..4).step_by(1) {
            let v12 = select((n > 0), 1.82, -((3.8 + 1.99)));
            let v13 = !((v9 < n));
            v11 = v11 + select((n > 0), v12, v12);
        }
        v8 = v8 + select(v4, dot(zeros([64, 64]), v7, precision = tf32), (zeros([64, 64])).cummax(0, reverse = true));
    }
    let v14 = (((v8).max(1)).argmax(0) * (v3).argmin(0));
    if 2 < 1 {
        let v15 = load(p1 + max((arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0) % 4), v5), (v4 | v4));
    }
    let v16 = load(p1 + (v1 / (7 * n)), ((arange(0, 256) < n) | (v1 < n)), 3.31);
    store(p0 + (v1 / n), (v6));
}

