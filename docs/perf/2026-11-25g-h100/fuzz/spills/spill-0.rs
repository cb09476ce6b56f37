// spill (generated): k v0 sm_90a: 128 registers, 488 bytes spilled
// minimized:
# [ tile_kernel ( num_warps = auto ) ] fn k ( p0 : Ptr < f32 , n >, n : i32 , m : i32 ) { let v1 = program_id ( 0 ) * arange ( 0 , 256 ) ; let v2 = ( program_id ( 1 ) * arange ( 0 , 1 ) ) . expand_dims ( 1 ) + arange ( 0 , 1 ) . expand_dims ( 0 ) ; let v3 = max ( 1.56 , ( 0.12 ) ) ; let mut v4 = zeros ( [ 1 , 1 ] ) ; for i in ( 0 .. m ) . step_by ( 1 ) { if 1 < 2 { let v5 = ( n ) ; } sigmoid ( dot ( full ( [ 1 , 1 ] , 3.99 ) as f16 , full ( [ 1 , 1 ] , 1.88 ) as f16 ) ) ; } let v6 = load ( p0 + ( v1 + ( m ) ) ) ; let v7 = ( ( m ) < ( zeros ( [ 256 ] ) ) . argmax ( 0 ) ) ; let mut v8 = v3 ; for i in ( 0 .. 4 ) . step_by ( 16 ) { let mut v9 = ( v2 as f32 ) ; for i in ( 0 .. m ) . step_by ( 64 ) { let v10 = ( ( min ( v1 , arange ( 0 , 256 ) ) ) . expand_dims ( 1 ) * 1 + ( v1 ) . expand_dims ( 0 ) < ( i - ( n - i ) ) ) ; let v11 = ( v1 as f32 ) ; v9 = v9 + min ( - ( v4 ) , min ( full ( [ 1 , 1 ] , 1.17 ) , v4 ) ) ; } v8 = v8 + ( ( 3.45 ) . abs ( ) - v3 ) ; } let v12 = floor ( ( ( v4 ) . argmin ( 0 ) as f32 ) ) ; let v13 = load ( p0 + ( ( arange ( 0 , 256 ) - m ) ) . expand_dims ( 1 ) * 1 + ( ( v1 - m ) ) . expand_dims ( 0 ) , ( v4 >= v4 ) ) ; if 1 < 2 { let v14 = load ( p0 + v1 , v7 ) ; } let v15 = load ( p0 + min ( arange ( 0 , 256 ) , v1 ) , ( v12 < v6 ) ) ; store ( p0 + ( ( v13 / v13 ) ) . argmin ( 0 ) , ( ( ( ( zeros ( [ 256 ] ) ) . cumsum ( 0 , ) as f32 ) ) ) ) ; } 

// original:
#[tile_kernel(num_warps = auto)]
fn k(p0: Ptr<f32, n>, n: i32, m: i32) {
    let v1 = program_id(0) * 256 + arange(0, 256);
    let v2 = (program_id(1) * 1 + arange(0, 1)).expand_dims(1) * 1 + arange(0, 1).expand_dims(0);
    let v3 = max(1.56, (0.12 * 0.20));
    let mut v4 = zeros([1, 1]);
    for i in (0..m).step_by(1) {
        if 1 < 2 {
            let v5 = (v1 < n);
        }
        v4 = v4 + sigmoid(dot(full([1, 1], 3.99) as f16, full([1, 1], 1.88) as f16));
    }
    let v6 = load(p0 + (v1 + (m % m)));
    let v7 = ((v1 % m) < (zeros([256])).argmax(0));
    let mut v8 = v3;
    for i in (0..4).step_by(16) {
        let mut v9 = (v2 as f32);
        for i in (0..m).step_by(64) {
            let v10 = ((min(v1, arange(0, 256))).expand_dims(1) * 1 + (v1).expand_dims(0) < (i - (n - i)));
            let v11 = (v1 as f32);
            v9 = v9 + min(-(v4), min(full([1, 1], 1.17), v4));
        }
        v8 = v8 + ((3.45).abs() - v3);
    }
    let v12 = floor(((v4).argmin(0) as f32));
    let v13 = load(p0 + ((arange(0, 256) - m)).expand_dims(1) * 1 + ((v1 - m)).expand_dims(0), (v4 >= v4));
    if 1 < 2 {
        let v14 = load(p0 + v1, v7);
    }
    let v15 = load(p0 + min(arange(0, 256), v1), (v12 < v6));
    store(p0 + ((v13 / v13)).argmin(0), ((((zeros([256])).cumsum(0, reverse = true)).cummax(0) * ((n * m) as f32))));
}

