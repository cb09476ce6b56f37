// timeout (generated): over 10000 ms
// minimized:
# [ tile_kernel ( num_warps = 1 ) ] fn k ( p0 : Ptr < f32 , { n * m } >, p1 : Ptr < f32 , { n * m } >, n : i32 , m : i32 , s : f32 ) { let v1 = program_id ( 0 ) * 32 + arange ( 0 , 32 ) ; let v2 = ( program_id ( 1 ) * 64 + arange ( 0 , 64 ) ) . expand_dims ( 1 ) * 64 + arange ( 0 , 64 ) . expand_dims ( 0 ) ; let mut v3 = min ( zeros ( [ 64 , 64 ] ) , full ( [ 64 , 64 ] , 0.44 ) ) ; for i in ( 0 .. m ) . step_by ( 16 ) { let v4 = ( ( ( n * n ) * max ( n , 3 ) ) - max ( min ( i , n ) , ( 8 + n ) ) ) ; let v5 = load ( p1 + arange ( 0 , 64 ) . expand_dims ( 1 ) * 64 + arange ( 0 , 64 ) . expand_dims ( 0 ) , ( v2 < n ) , 2.19 ) ; v3 = v3 + zeros ( [ 64 , 64 ] ) ; } let v6 = load ( p0 + min ( ( v2 / m ) , max ( v2 , arange ( 0 , 64 ) . expand_dims ( 1 ) * 64 + arange ( 0 , 64 ) . expand_dims ( 0 ) ) ) , ( zeros ( [ 64 , 64 ] ) == v3 ) ) ; let v7 = load ( p1 + v2 , ( v2 < n ) ) ; store ( p1 + ( ( v2 / m ) / max ( n , n ) ) , ( - ( ( ceil ( v3 ) ) . cumprod ( 0 , reverse = false ) ) ) ) ; } 

// original:
#[tile_kernel(num_warps = 1)]
fn k(p0: Ptr<f32, { n * m }>, p1: Ptr<f32, { n * m }>, n: i32, m: i32, s: f32) {
    let v1 = program_id(0) * 32 + arange(0, 32);
    let v2 = (program_id(1) * 64 + arange(0, 64)).expand_dims(1) * 64 + arange(0, 64).expand_dims(0);
    let mut v3 = min(zeros([64, 64]), full([64, 64], 0.44));
    for i in (0..m).step_by(16) {
        let v4 = (((n * n) * max(n, 3)) - max(min(i, n), (8 + n)));
        let v5 = load(p1 + arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0), (v2 < n), 2.19);
        v3 = v3 + zeros([64, 64]);
    }
    let v6 = load(p0 + min((v2 / m), max(v2, arange(0, 64).expand_dims(1) * 64 + arange(0, 64).expand_dims(0))), (zeros([64, 64]) == v3));
    let v7 = load(p1 + v2, (v2 < n));
    store(p1 + ((v2 / m) / max(n, n)), (-((ceil(v3)).cumprod(0, reverse = false))));
}

