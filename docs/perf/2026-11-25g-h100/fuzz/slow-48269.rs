// case 48269 (generated), compiled, 2166 ms
#[tile_kernel(num_warps = 1)]
fn k(p0: Ptr<bf16, n>, p1: Ptr<f32, n>, p2: Ptr<f32>, n: i32, m: i32) {
    let v1 = program_id(0) * 1 + arange(0, 1);
    let v2 = (program_id(1) * 64 + arange(0, 64)).expand_dims(1) * 64 + arange(0, 64).expand_dims(0);
    store(p2 + v1, (-(-((zeros([1]) * full([1], 0.62))))));
    if 1 < 2 {
        store(p1 + (v2 * n), (dot(-((full([64, 64], 2.35) + 0.48)), full([64, 64], 2.10), precision = tf32)), (v2 < n));
    }
    let v3 = load(p1 + (max(arange(0, 1), v1) + m), (v1 < n));
    store(p1 + arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0), ((-(dot(zeros([64, 64]), zeros([64, 64]), precision = tf32))).cumprod(1)), ((v2 < n) | (arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0) < n)));
}

