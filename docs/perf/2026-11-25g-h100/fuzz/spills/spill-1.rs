// spill (generated): k v1 sm_90a: 96 registers, 24 bytes spilled
// minimized:
# [ tile_kernel ] fn k ( p0 : Ptr < bf16 , { n * m } >, p1 : Ptr < f16 >, p2 : Ptr < f32 , n >, n : i32 , m : i32 ) { let v1 = program_id ( 0 ) * 4 + arange ( 0 , 4 ) ; let v2 = ( program_id ( 1 ) * 64 + arange ( 0 , 64 ) ) . expand_dims ( 1 ) ; let v3 = load ( p1 + ( max ( v2 , arange ( 0 , 64 ) . expand_dims ( 1 ) * 64 + arange ( 0 , 64 ) . expand_dims ( 0 ) ) / m ) , ( arange ( 0 , 64 ) . expand_dims ( 1 ) * 64 + arange ( 0 , 64 ) . expand_dims ( 0 ) < n ) ) as f32 ; let v4 = load ( p2 + ( arange ( 0 , 4 ) - n ) , ! ( ( v1 < n ) ) ) ; - ( select ( ( v4 == v4 ) , ( full ( [ 4 ] , 0.9 ) ) . sqrt ( ) , ( v4 - 0.74 ) ) ) ; let mut v6 = zeros ( [ 64 , 64 ] ) ; for i in ( 0 .. 4 ) . step_by ( 64 ) { if 1 < 2 { let v7 = ( ( v3 ) . argmax ( 0 ) >= i ) ; } store ( p0 + max ( arange ( 0 , 64 ) . expand_dims ( 1 ) , max ( v2 , arange ( 0 , 64 ) . expand_dims ( 1 ) * 64 + arange ( 0 , 64 ) . expand_dims ( 0 ) ) ) , ( ( max ( - ( full ( [ 64 , 64 ] , 2.6 ) ) , ( v3 - 2.49 ) ) * ( 0.87 ) . tanh ( ) ) ) as bf16 , ( v2 < n ) ) ; let v8 = ! ( ( v1 < n ) ) ; v6 = v6 + v3 ; } load ( p1 + arange ( 0 , 64 ) . expand_dims ( 1 ) * 64 + arange ( 0 , 64 ) . expand_dims ( 0 ) , ( v6 <= v3 ) ) as f32 ; } 

// original:
#[tile_kernel]
fn k(p0: Ptr<bf16, { n * m }>, p1: Ptr<f16>, p2: Ptr<f32, n>, n: i32, m: i32) {
    let v1 = program_id(0) * 4 + arange(0, 4);
    let v2 = (program_id(1) * 64 + arange(0, 64)).expand_dims(1) * 64 + arange(0, 64).expand_dims(0);
    let v3 = load(p1 + (max(v2, arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0)) / m), (arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0) < n)) as f32;
    let v4 = load(p2 + (arange(0, 4) - n), !((v1 < n)));
    let v5 = -(select((v4 == v4), (full([4], 0.9)).sqrt(), (v4 - 0.74)));
    let mut v6 = zeros([64, 64]);
    for i in (0..4).step_by(64) {
        if 1 < 2 {
            let v7 = ((v3).argmax(0) >= i);
        }
        store(p0 + max(arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0), max(v2, arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0))), ((max(-(full([64, 64], 2.6)), (v3 - 2.49)) * (0.87).tanh())) as bf16, (v2 < n));
        let v8 = !((v1 < n));
        v6 = v6 + v3;
    }
    let v9 = load(p1 + arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0), (v6 <= v3)) as f32;
}

