// case 42894 (generated), compiled, 2839 ms
#[tile_kernel(num_warps = 1)]
fn k(p0: Ptr<bf16, n>, n: i32, m: i32) {
    let v1 = program_id(0) * 1024 + arange(0, 1024);
    let v2 = (program_id(1) * 64 + arange(0, 64)).expand_dims(1) * 64 + arange(0, 64).expand_dims(0);
    let v3 = load(p0 + ((full([64, 64], 0.54)).tanh()).argmax(1)) as f32;
    let v4 = max(1.55, 3.44);
    store(p0 + (max(v2, v2) % m), ((min(zeros([64, 64]), associative_scan(zeros([64, 64]), 0, |a, b| b * a, reverse = false))).cummax(0, reverse = false)) as bf16);
    let v5 = ((zeros([64, 64])).roll(3, 1)).cumprod(0);
    store(p0 + ((v1 - m) - max(m, n)), ((((v1 % m) - (m - 4)) as f32)) as bf16);
}

