// spill (generated): k v0 sm_90a: 40 registers, 8 bytes spilled
// minimized:
# [ tile_kernel ( num_stages = 4 ) ] fn k ( p0 : Ptr < bf16 , n >, p1 : Ptr < f16 , n >, p2 : Ptr < bf16 , { n * m } >, n : i32 , m : i32 ) { let v1 = program_id ( 0 ) * 32 + arange ( 0 , 32 ) ; let v2 = ( program_id ( 1 ) * 32 + arange ( 0 , 32 ) ) . expand_dims ( 1 ) * 32 + arange ( 0 , 32 ) . expand_dims ( 0 ) ; let v3 = zeros ( [ 32 , 32 ] ) ; store ( p2 + v2 , ( ( ( ( v2 - m ) as f32 ) * ( zeros ( [ 32 , 32 ] ) ) . roll ( 1 , 1 ) ) ) as bf16 , ( ( arange ( 0 , 32 ) . expand_dims ( 1 ) * 32 + arange ( 0 , 32 ) . expand_dims ( 0 ) < n ) & ( arange ( 0 , 32 ) . expand_dims ( 1 ) * 32 < n ) ) ) ; - ( ( - ( 2.52 ) - ( 0.11 - 0.45 ) ) ) ; atomic_xchg ( p1 + arange ( 0 , 32 ) . expand_dims ( 1 ) * 32 + arange ( 0 , 32 ) . expand_dims ( 0 ) , ( ( ( - ( v3 ) ) . cummin ( 1 ) + v3 ) ) as f16 , ( ( arange ( 0 , 32 ) . expand_dims ( 1 ) * 32 + arange ( 0 , 32 ) . expand_dims ( 0 ) < n ) & ( v2 < n ) ) , sem = acq_rel , ) ; store ( p2 + min ( v2 , arange ( 0 , 32 ) . expand_dims ( 1 ) * 32 + arange ( 0 , 32 ) . expand_dims ( 0 ) ) , ( select ( ( v2 < n ) , exp ( zeros ( [ 32 , 32 ] ) ) , v3 ) ) as bf16 , ! ( ( v2 < n ) ) ) ; } 

// original:
#[tile_kernel(num_stages = 4)]
fn k(p0: Ptr<bf16, n>, p1: Ptr<f16, n>, p2: Ptr<bf16, { n * m }>, n: i32, m: i32) {
    let v1 = program_id(0) * 32 + arange(0, 32);
    let v2 = (program_id(1) * 32 + arange(0, 32)).expand_dims(1) * 32 + arange(0, 32).expand_dims(0);
    let v3 = zeros([32, 32]);
    store(p2 + v2, ((((v2 - m) as f32) * (zeros([32, 32])).roll(1, 1))) as bf16, ((arange(0, 32).expand_dims(1) * 32 + arange(0, 32).expand_dims(0) < n) & (arange(0, 32).expand_dims(1) * 32 + arange(0, 32).expand_dims(0) < n)));
    let v4 = -((-(2.52) - (0.11 - 0.45)));
    atomic_xchg(p1 + arange(0, 32).expand_dims(1) * 32 + arange(0, 32).expand_dims(0), (((-(v3)).cummin(1) + v3)) as f16, ((arange(0, 32).expand_dims(1) * 32 + arange(0, 32).expand_dims(0) < n) & (v2 < n)), sem = acq_rel, scope = sys);
    store(p2 + min(v2, arange(0, 32).expand_dims(1) * 32 + arange(0, 32).expand_dims(0)), (select((v2 < n), exp(zeros([32, 32])), v3)) as bf16, !((v2 < n)));
}

