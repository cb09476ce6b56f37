// timeout (generated): over 10000 ms
// minimized:
# [ tile_kernel ( num_warps = 1 ) ] fn k ( p0 : Ptr < f32 >, n : i32 , m : i32 ) { let v1 = program_id ( 0 ) * 64 + arange ( 0 , 64 ) ; let v2 = ( program_id ( 1 ) * 64 + arange ( 0 , 64 ) ) . expand_dims ( 1 ) * 64 + arange ( 0 , 64 ) . expand_dims ( 0 ) ; atomic_max ( p0 + v2 , ( min ( full ( [ 64 , 64 ] , 2.12 ) , log2 ( zeros ( [ 64 , 64 ] ) ) ) ) , sem = relaxed ) ; store ( p0 + max ( v1 , arange ( 0 , 64 ) ) , ( max ( select ( ( arange ( 0 , 64 ) < n ) , ( zeros ( [ 64 ] ) ) . cummax ( 0 , reverse = false ) , zeros ( [ 64 ] ) ) , ( full ( [ 64 , 64 ] , 3.9 ) ) . min ( 1 ) ) ) , ( ( v1 < n ) | ( arange ( 0 , 64 ) < n ) ) ) ; let v3 = load ( p0 + ( min ( v2 , arange ( 0 , 64 ) . expand_dims ( 1 ) * 64 + arange ( 0 , 64 ) . expand_dims ( 0 ) ) + n ) ) ; if 2 < 1 { let v4 = ( min ( ( m * n ) , max ( m , n ) ) * min ( m , ( 5 / n ) ) ) ; } let v5 = max ( ( ( v1 * m ) ) . expand_dims ( 1 ) * 64 + ( ( v1 + m ) ) . expand_dims ( 0 ) , min ( ( arange ( 0 , 64 ) . expand_dims ( 1 ) * 64 + arange ( 0 , 64 ) . expand_dims ( 0 ) - n ) , v2 ) ) ; let mut v6 = v3 ; for i in ( 0 .. n ) . step_by ( 1 ) { store ( p0 + ( v1 % ( full ( [ 64 ] , 1.48 ) ) . argmin ( 0 ) ) , ( ( ( full ( [ 64 ] , 1.76 ) ) . roll ( 0 , 0 ) * tanh ( select ( ( n > 0 ) , 0.22 , 2.6 ) ) ) ) , ( v1 >= m ) ) ; v6 = v6 + v3 ; } if 1 < 2 { let v7 = ( ( ( v1 ) . expand_dims ( 1 ) * 64 + ( v1 ) . expand_dims ( 0 ) % n ) * min ( ( full ( [ 64 ] , 1.92 ) ) . argmax ( 0 ) , min ( m , m ) ) ) ; } if 1 < 2 { store ( p0 + ( ( v5 / 3 ) % n ) , ( dot ( v3 , ( v6 ) . cummin ( 0 , reverse = true ) , precision = tf32 ) ) , ( v6 < zeros ( [ 64 , 64 ] ) ) ) ; } } 

// original:
#[tile_kernel(num_warps = 1)]
fn k(p0: Ptr<f32>, n: i32, m: i32) {
    let v1 = program_id(0) * 64 + arange(0, 64);
    let v2 = (program_id(1) * 64 + arange(0, 64)).expand_dims(1) * 64 + arange(0, 64).expand_dims(0);
    atomic_max(p0 + v2, (min(full([64, 64], 2.12), log2(zeros([64, 64])))), sem = relaxed);
    store(p0 + max(v1, arange(0, 64)), (max(select((arange(0, 64) < n), (zeros([64])).cummax(0, reverse = false), zeros([64])), (full([64, 64], 3.9)).min(1))), ((v1 < n) | (arange(0, 64) < n)));
    let v3 = load(p0 + (min(v2, arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0)) + n));
    if 2 < 1 {
        let v4 = (min((m * n), max(m, n)) * min(m, (5 / n)));
    }
    let v5 = max(((v1 * m)).expand_dims(1) * 64 + ((v1 + m)).expand_dims(0), min((arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0) - n), v2));
    let mut v6 = v3;
    for i in (0..n).step_by(1) {
        store(p0 + (v1 % (full([64], 1.48)).argmin(0)), (((full([64], 1.76)).roll(0, 0) * tanh(select((n > 0), 0.22, 2.6)))), (v1 >= m));
        v6 = v6 + v3;
    }
    if 1 < 2 {
        let v7 = (((v1).expand_dims(1) * 64 + (v1).expand_dims(0) % n) * min((full([64], 1.92)).argmax(0), min(m, m)));
    }
    if 1 < 2 {
        store(p0 + ((v5 / 3) % n), (dot(v3, (v6).cummin(0, reverse = true), precision = tf32)), (v6 < zeros([64, 64])));
    }
}

