// timeout (generated): over 10000 ms
// minimized:
# [ tile_kernel ] fn k ( p0 : Ptr < f32 , { n * m } >, p1 : Ptr < f16 , n >, n : i32 , m : i32 ) { let v1 = program_id ( 0 ) * 128 + arange ( 0 , 128 ) ; let v2 = ( program_id ( 1 ) * 32 + arange ( 0 , 32 ) ) . expand_dims ( 1 ) * 32 + arange ( 0 , 32 ) . expand_dims ( 0 ) ; let v3 = load ( p0 + max ( ( v2 / 6 ) , v2 ) , ! ( ( v2 < n ) ) ) ; let v4 = ! ( ( ( full ( [ 32 , 32 ] , 2.22 ) ) . roll ( 2 , 1 ) <= ( v2 as f32 ) ) ) ; let v5 = ( v3 < select ( ( arange ( 0 , 32 ) . expand_dims ( 1 ) * 32 + arange ( 0 , 32 ) . expand_dims ( 0 ) < n ) , ( v3 / zeros ( [ 32 , 32 ] ) ) , min ( v3 , v3 ) ) ) ; if 1 < 2 { store ( p0 + ( v1 + max ( n , n ) ) , ( ( v1 as f32 ) ) , ( v1 < n ) ) ; } let v6 = ( ( v1 < n ) | ( zeros ( [ 128 ] ) != zeros ( [ 128 ] ) ) ) ; let v7 = load ( p0 + ( max ( v2 , v2 ) % max ( 1 , m ) ) , v5 , 1.43 ) ; let v8 = load ( p0 + ( min ( v1 , v1 ) ) . expand_dims ( 1 ) * 32 + ( v1 ) . expand_dims ( 0 ) ) ; let v9 = ( ( n > 0 ) & ( ( ( n > 0 ) & ( n > 0 ) ) & ( ( n > 0 ) | ( n > 0 ) ) ) ) ; store ( p1 + min ( v1 , ( v1 - m ) ) , ( select ( ( ( v8 ) . argmin ( 1 ) < m ) , - ( ( full ( [ 128 ] , 0.13 ) / zeros ( [ 128 ] ) ) ) , full ( [ 128 ] , 1.26 ) ) ) as f16 , ( v6 & v6 ) ) ; } 

// original:
#[tile_kernel]
fn k(p0: Ptr<f32, { n * m }>, p1: Ptr<f16, n>, n: i32, m: i32) {
    let v1 = program_id(0) * 128 + arange(0, 128);
    let v2 = (program_id(1) * 32 + arange(0, 32)).expand_dims(1) * 32 + arange(0, 32).expand_dims(0);
    let v3 = load(p0 + max((v2 / 6), v2), !((v2 < n)));
    let v4 = !(((full([32, 32], 2.22)).roll(2, 1) <= (v2 as f32)));
    let v5 = (v3 < select((arange(0, 32).expand_dims(1) * 32 + arange(0, 32).expand_dims(0) < n), (v3 / zeros([32, 32])), min(v3, v3)));
    if 1 < 2 {
        store(p0 + (v1 + max(n, n)), ((v1 as f32)), (v1 < n));
    }
    let v6 = ((v1 < n) | (zeros([128]) != zeros([128])));
    let v7 = load(p0 + (max(v2, v2) % max(1, m)), v5, 1.43);
    let v8 = load(p0 + (min(v1, v1)).expand_dims(1) * 32 + (v1).expand_dims(0));
    let v9 = ((n > 0) & (((n > 0) & (n > 0)) & ((n > 0) | (n > 0))));
    store(p1 + min(v1, (v1 - m)), (select(((v8).argmin(1) < m), -((full([128], 0.13) / zeros([128]))), full([128], 1.26))) as f16, (v6 & v6));
}

