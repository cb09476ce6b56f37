//! What runs without a GPU in a build with another crate's cudarc features: the interpreter, and
//! a missing driver reported as an `Err` (not a panic in cudarc's loader).

#[test]
fn interpreter_runs_beside_foreign_cudarc_features() {
    let x: Vec<f32> = (0..3000).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..3000).map(|i| 1.0 - i as f32).collect();
    let out = tile_coexist::axpy_host(2.0, &x, &y).unwrap();
    for i in 0..3000 {
        assert_eq!(out[i], 2.0 * x[i] + y[i], "element {i}");
    }
}

#[test]
fn no_driver_is_an_err_or_a_device() {
    match tile::Device::cuda(0) {
        Ok(dev) => {
            // A GPU machine: run the cudarc-slice path once.
            let stream = dev.stream().unwrap().clone();
            let x = stream.clone_htod(&[1.0f32, 2.0, 3.0]).unwrap();
            let y = stream.clone_htod(&[10.0f32, 20.0, 30.0]).unwrap();
            let mut out = stream.alloc_zeros::<f32>(3).unwrap();
            tile_coexist::axpy_on(&stream, 2.0, &x, &y, &mut out).unwrap();
            assert_eq!(stream.clone_dtoh(&out).unwrap(), vec![12.0, 24.0, 36.0]);
        }
        Err(e) => {
            eprintln!("no CUDA device (skipping the device half): {e}");
            assert!(matches!(e, tile::Error::NoDevice(_)), "{e:?}");
        }
    }
}
