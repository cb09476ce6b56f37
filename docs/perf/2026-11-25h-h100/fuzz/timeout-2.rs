// timeout (generated): over 10000 ms
// minimized:
# [ tile_kernel ] fn k ( p0 : Ptr < f16 , n >, n : i32 , m : i32 ) { let v1 = program_id ( 0 ) * 128 + arange ( 0 , 128 ) ; let v2 = ( program_id ( 1 ) * 2 + arange ( 0 , 2 ) ) . expand_dims ( 1 ) * 2 + arange ( 0 , 2 ) . expand_dims ( 0 ) ; let v3 = 0.33 ; let v4 = load ( p0 + ( ( v1 / n ) ) . expand_dims ( 1 ) * 2 + ( ( v1 * m ) ) . expand_dims ( 0 ) ) as f32 ; if 2 < 1 { atomic_or ( p0 + ( ( v4 - 2.89 ) ) . argmin ( 1 ) , ( zeros ( [ 128 ] ) ) as f16 , ! ( ( v1 < n ) ) , scope = cta ) ; } let v5 = load ( p0 + ( max ( v1 , v1 ) / ( m + m ) ) , ( arange ( 0 , 128 ) < n ) ) as f32 ; let v6 = atomic_add ( p0 + ( v1 - n ) , ( ( select ( ( v1 < n ) , ( v4 ) . sum ( 1 ) , ( v5 / v5 ) ) / ( v3 * max ( v3 , 0.15 ) ) ) ) as f16 , ( v1 < n ) , sem = relaxed ) as f32 ; } 

// original:
#[tile_kernel]
fn k(p0: Ptr<f16, n>, n: i32, m: i32) {
    let v1 = program_id(0) * 128 + arange(0, 128);
    let v2 = (program_id(1) * 2 + arange(0, 2)).expand_dims(1) * 2 + arange(0, 2).expand_dims(0);
    let v3 = 0.33;
    let v4 = load(p0 + ((v1 / n)).expand_dims(1) * 2 + ((v1 * m)).expand_dims(0)) as f32;
    if 2 < 1 {
        atomic_or(p0 + ((v4 - 2.89)).argmin(1), (zeros([128])) as f16, !((v1 < n)), scope = cta);
    }
    let v5 = load(p0 + (max(v1, v1) / (m + m)), (arange(0, 128) < n)) as f32;
    let v6 = atomic_add(p0 + (v1 - n), ((select((v1 < n), (v4).sum(1), (v5 / v5)) / (v3 * max(v3, 0.15)))) as f16, (v1 < n), sem = relaxed) as f32;
}

