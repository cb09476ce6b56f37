// timeout (generated): over 10000 ms
// minimized:
# [ tile_kernel ] fn k ( p0 : Ptr < f16 , n >, p1 : Ptr < f16 , n >, n : i32 , m : i32 ) { let v1 = program_id ( 0 ) * 128 + arange ( 0 , 128 ) ; let v2 = ( program_id ( 1 ) * 2 + arange ( 0 , 2 ) ) . expand_dims ( 1 ) * 2 + arange ( 0 , 2 ) . expand_dims ( 0 ) ; let mut v3 = zeros ( [ 128 ] ) ; for i in ( 0 .. 4 ) . step_by ( 64 ) { if 1 < 2 { let v4 = full ( [ 2 , 2 ] , 2.52 ) ; } v3 = v3 + full ( [ 128 ] , 3.80 ) ; } let v5 = load ( p0 + ( max ( v1 , v1 ) ) . expand_dims ( 1 ) * 2 + ( v1 ) . expand_dims ( 0 ) ) as f32 ; store ( p1 + ( v5 ) . argmin ( 1 ) , ( ( min ( ( v3 / 2.72 ) , v3 ) ) . cumprod ( 0 , reverse = false ) ) as f16 , ( v1 < n ) ) ; } 

// original:
#[tile_kernel]
fn k(p0: Ptr<f16, n>, p1: Ptr<f16, n>, n: i32, m: i32) {
    let v1 = program_id(0) * 128 + arange(0, 128);
    let v2 = (program_id(1) * 2 + arange(0, 2)).expand_dims(1) * 2 + arange(0, 2).expand_dims(0);
    let mut v3 = zeros([128]);
    for i in (0..4).step_by(64) {
        if 1 < 2 {
            let v4 = full([2, 2], 2.52);
        }
        v3 = v3 + full([128], 3.80);
    }
    let v5 = load(p0 + (max(v1, v1)).expand_dims(1) * 2 + (v1).expand_dims(0)) as f32;
    store(p1 + (v5).argmin(1), ((min((v3 / 2.72), v3)).cumprod(0, reverse = false)) as f16, (v1 < n));
}

