// timeout (generated): over 10000 ms
// minimized:
# [ tile_kernel ( num_warps = 1 ) ] fn k ( p0 : Ptr < f32 , { n * m } >, p1 : Ptr < f16 , n >, p2 : Ptr < f32 >, n : i32 , m : i32 ) { let v1 = program_id ( 0 ) * 1024 + arange ( 0 , 1024 ) ; let v2 = ( program_id ( 1 ) * 1 + arange ( 0 , 1 ) ) . expand_dims ( 1 ) * 1 + arange ( 0 , 1 ) . expand_dims ( 0 ) ; let v3 = ceil ( zeros ( [ 1 , 1 ] ) ) ; store ( p0 + ( ( v3 ) . argmin ( 0 ) ) . expand_dims ( 1 ) * 1 + ( ( v1 / n ) ) . expand_dims ( 0 ) , ( v3 ) , ( v2 < n ) ) ; if 1 < 2 { store ( p0 + v2 , ( v3 ) , ( v2 >= m ) ) ; } let v4 = ( 2 / ( 2 % max ( m , m ) ) ) ; let v5 = load ( p1 + ( v3 ) . argmax ( 1 ) ) as f32 ; store ( p2 + v2 , ( ( ( max ( full ( [ 1 , 1 ] , 3.0 ) , v3 ) ) . cummin ( 1 ) / 2.4 ) ) , ( v3 == full ( [ 1 , 1 ] , 2.93 ) ) ) ; let v6 = ( ( min ( 1 , m ) - m ) == ( ( v5 ) . cummax ( 0 , reverse = true ) ) . argmin ( 0 ) ) ; store ( p1 + ( ( arange ( 0 , 1024 ) % v4 ) ) . expand_dims ( 1 ) * 1 + ( ( v3 ) . argmin ( 0 ) ) . expand_dims ( 0 ) , ( min ( ( ( zeros ( [ 1 , 1 ] ) * 3.22 ) ) . roll ( 1 , 0 ) , v3 ) ) as f16 ) ; } 

// original:
#[tile_kernel(num_warps = 1)]
fn k(p0: Ptr<f32, { n * m }>, p1: Ptr<f16, n>, p2: Ptr<f32>, n: i32, m: i32) {
    let v1 = program_id(0) * 1024 + arange(0, 1024);
    let v2 = (program_id(1) * 1 + arange(0, 1)).expand_dims(1) * 1 + arange(0, 1).expand_dims(0);
    let v3 = ceil(zeros([1, 1]));
    store(p0 + ((v3).argmin(0)).expand_dims(1) * 1 + ((v1 / n)).expand_dims(0), (v3), (v2 < n));
    if 1 < 2 {
        store(p0 + v2, (v3), (v2 >= m));
    }
    let v4 = (2 / (2 % max(m, m)));
    let v5 = load(p1 + (v3).argmax(1)) as f32;
    store(p2 + v2, (((max(full([1, 1], 3.0), v3)).cummin(1) / 2.4)), (v3 == full([1, 1], 2.93)));
    let v6 = ((min(1, m) - m) == ((v5).cummax(0, reverse = true)).argmin(0));
    store(p1 + ((arange(0, 1024) % v4)).expand_dims(1) * 1 + ((v3).argmin(0)).expand_dims(0), (min(((zeros([1, 1]) * 3.22)).roll(1, 0), v3)) as f16);
}

