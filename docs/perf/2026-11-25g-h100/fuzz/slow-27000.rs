// case 27000 (generated), compiled, 2582 ms
#[tile_kernel]
fn k(p0: Ptr<f16, { n * m }>, p1: Ptr<f16, n>, n: i32, m: i32) {
    let v1 = program_id(0) * 128 + arange(0, 128);
    let v2 = (program_id(1) * 32 + arange(0, 32)).expand_dims(1) * 32 + arange(0, 32).expand_dims(0);
    let v3 = load(p1 + ((arange(0, 128)).expand_dims(1) * 32 + (v1).expand_dims(0) - max(2, m))) as f32;
    let v4 = load(p0 + (v2 - m), (v2 < n)) as f32;
    let v5 = (m - ((full([128], 0.78) * zeros([128]))).argmax(0));
    let v6 = max(((v3 / v3)).argmax(1), max(v1, (v3).argmax(1)));
    let v7 = load(p1 + v2, (v2 < v5), 1.4) as f32;
    store(p0 + min(max(arange(0, 32).expand_dims(1) * 32 + arange(0, 32).expand_dims(0), v2), max(v2, arange(0, 32).expand_dims(1) * 32 + arange(0, 32).expand_dims(0))), (v4) as f16);
    let v8 = (v1 < n);
    store(p0 + (v6 + (n * v5)), (full([128], 2.52)) as f16);
}

