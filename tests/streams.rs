//! Streams, events, timers, CUDA graphs, preloading and device enumeration: the interpreter's
//! half runs everywhere; the CUDA half says it was skipped where there is no GPU.

use tile::prelude::*;
use tile::Error;

#[tile_kernel]
/// `p += 1` in place.
fn inc(p: Ptr<f32, n>, n: i32, BLOCK: Const<1024>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(p + offs, load(p + offs, mask) + 1.0, mask);
}

#[tile_kernel]
/// `out = 2 x + y`.
fn axpy2(x: Ptr<f32, n>, y: Ptr<f32, n>, out: Ptr<f32, n>, n: i32, BLOCK: Const<256>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(
        out + offs,
        2.0 * load(x + offs, mask) + load(y + offs, mask),
        mask,
    );
}

#[tile_kernel]
/// Two instances, for `preload` of a specialized kernel.
fn scale(p: Ptr<T, n>, n: i32, T: Type<{ [f32, f16] }>, BLOCK: Const<{ [256, 1024] }>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(p + offs, (load(p + offs, mask) as f32 * 2.0) as T, mask);
}

fn cuda() -> Option<Device> {
    match Device::cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            println!("skipped (GPU test): {e}");
            None
        }
    }
}

/// Captures `inc` then `axpy2` (reading what `inc` wrote) and replays `replays` times.
fn graph_of_two(dev: &Device, n: usize, replays: usize) -> (Vec<f32>, Vec<f32>, usize) {
    let mut acc = dev.zeros::<f32>(n).unwrap();
    let y = dev.upload(&vec![0.5f32; n]).unwrap();
    let mut out = dev.upload(&vec![f32::NAN; n]).unwrap();
    let kernels;
    {
        let mut graph = dev
            .capture(|d| {
                inc::launch(d, cdiv(n, 1024), &mut acc, n as i32)?;
                axpy2::launch(d, cdiv(n, 256), &acc, &y, &mut out, n as i32)
            })
            .unwrap();
        kernels = graph.kernels();
        for _ in 0..replays {
            graph.launch().unwrap();
        }
    }
    (
        dev.download(&acc).unwrap(),
        dev.download(&out).unwrap(),
        kernels,
    )
}

#[test]
fn interpreter_graph_runs_its_closure_per_replay() {
    let dev = Device::interpreter();
    let (acc, out, kernels) = graph_of_two(&dev, 3000, 3);
    assert_eq!(kernels, 0, "the interpreter records nothing");
    assert!(acc.iter().all(|&v| v == 3.0), "{:?}", &acc[..4]);
    assert!(out.iter().all(|&v| v == 6.5), "{:?}", &out[..4]);
    // Captured but never replayed: nothing ran.
    let mut p = dev.zeros::<f32>(10).unwrap();
    drop(dev.capture(|d| inc::launch(d, 1, &mut p, 10)).unwrap());
    assert_eq!(dev.download(&p).unwrap(), vec![0.0; 10]);
    // An empty grid inside a capture: nothing runs on replay either.
    let mut g = dev.capture(|d| inc::launch(d, 0, &mut p, 10)).unwrap();
    g.launch().unwrap();
    drop(g);
    assert_eq!(dev.download(&p).unwrap(), vec![0.0; 10]);
}

#[test]
fn interpreter_events_timers_streams_and_preload() {
    let dev = Device::interpreter();
    let timer = dev.timer().unwrap();
    let start = dev.record_event().unwrap();
    let mut p = dev.zeros::<f32>(5000).unwrap();
    inc::launch(&dev, cdiv(5000, 1024), &mut p, 5000).unwrap();
    let end = dev.record_event().unwrap();
    assert!(end.is_complete().unwrap());
    end.synchronize().unwrap();
    let d = start.elapsed(&end).unwrap();
    assert!(timer.elapsed().unwrap() >= d);
    assert!(end.elapsed(&start).is_err(), "reversed events");
    let other = dev.new_stream().unwrap();
    assert!(!other.is_cuda());
    other.wait_event(&end).unwrap();
    inc::preload(&dev).unwrap();
    scale::preload(&dev).unwrap();
}

#[test]
fn enumeration_without_a_driver_is_empty_not_an_error() {
    let n = Device::count();
    let all = Device::all().unwrap();
    assert_eq!(all.len(), n);
    for (i, d) in all.iter().enumerate() {
        assert_eq!(d.ordinal(), Some(i));
    }
    assert_eq!(Device::interpreter().ordinal(), None);
}

#[test]
fn gpu_graph_replays_in_order() {
    let Some(dev) = cuda() else { return };
    for n in [1usize, 1000, 1 << 20] {
        let (acc, out, kernels) = graph_of_two(&dev, n, 5);
        assert_eq!(kernels, 2);
        assert!(acc.iter().all(|&v| v == 5.0), "n = {n}: {:?}", &acc[..1]);
        assert!(out.iter().all(|&v| v == 10.5), "n = {n}: {:?}", &out[..1]);
    }
    // The same graph on a second stream, with buffers allocated on the first (cudarc orders
    // them across the two streams).
    let s2 = dev.new_stream().unwrap();
    let mut acc = dev.zeros::<f32>(4096).unwrap();
    {
        let mut g = s2.capture(|d| inc::launch(d, 4, &mut acc, 4096)).unwrap();
        for _ in 0..7 {
            g.launch().unwrap();
        }
    }
    assert_eq!(dev.download(&acc).unwrap(), vec![7.0; 4096]);
}

#[test]
fn gpu_capture_refuses_what_it_cannot_record() {
    let Some(dev) = cuda() else { return };
    let e = dev.capture(|d| d.zeros::<f32>(4).map(drop)).unwrap_err();
    assert!(matches!(e, Error::Capture(_)), "{e}");
    assert!(e.to_string().contains("Device::zeros"), "{e}");
    let e = dev.capture(|d| d.synchronize()).unwrap_err();
    assert!(matches!(e, Error::Capture(_)), "{e}");
    let e = dev
        .capture(|d| {
            assert!(d.stream().is_none(), "no raw stream inside a capture");
            Ok(())
        })
        .map(|g| g.kernels());
    assert_eq!(e.unwrap(), 0);
    // A launch error inside the capture is the capture's error.
    let mut short = dev.zeros::<f32>(10).unwrap();
    let e = dev
        .capture(|d| inc::launch(d, 1, &mut short, 11))
        .unwrap_err();
    assert!(matches!(e, Error::Length { .. }), "{e}");
    // An empty grid records nothing, and its arguments are still checked.
    let mut other = dev.zeros::<f32>(10).unwrap();
    let g = dev
        .capture(|d| {
            inc::launch(d, cdiv(0, 1024), &mut other, 0)?;
            inc::launch(d, 1, &mut short, 10)
        })
        .unwrap();
    assert_eq!(g.kernels(), 1);
    drop(g);
    let e = dev
        .capture(|d| inc::launch(d, 0, &mut short, 11))
        .unwrap_err();
    assert!(matches!(e, Error::Length { .. }), "{e}");
    // A copy of the capturing device kept past the capture cannot record, nor launch an empty
    // grid.
    let mut kept = None;
    let mut p = dev.zeros::<f32>(10).unwrap();
    drop(
        dev.capture(|d| {
            kept = Some(d.clone());
            Ok(())
        })
        .unwrap(),
    );
    let e = inc::launch(kept.as_ref().unwrap(), 1, &mut p, 10).unwrap_err();
    assert!(matches!(e, Error::Capture(_)), "{e}");
    let e = inc::launch(kept.as_ref().unwrap(), 0, &mut p, 10).unwrap_err();
    assert!(matches!(e, Error::Capture(_)), "{e}");
}

#[test]
fn gpu_events_order_two_streams_and_time_work() {
    let Some(dev) = cuda() else { return };
    let n = 1 << 24;
    let s2 = dev.new_stream().unwrap();
    let mut a = dev.zeros::<f32>(n).unwrap();
    let timer = dev.timer().unwrap();
    for _ in 0..10 {
        inc::launch(&dev, cdiv(n, 1024), &mut a, n as i32).unwrap();
    }
    let done = dev.record_event().unwrap();
    let t = timer.elapsed().unwrap();
    assert!(t.as_secs_f64() > 0.0, "{t:?}");
    s2.wait_event(&done).unwrap();
    let y = s2.zeros::<f32>(n).unwrap();
    let mut out = s2.zeros::<f32>(n).unwrap();
    axpy2::launch(&s2, cdiv(n, 256), &a, &y, &mut out, n as i32).unwrap();
    let host = s2.download(&out).unwrap();
    assert!(host.iter().all(|&v| v == 20.0), "{:?}", &host[..2]);
    println!("10 × inc over 2^24 f32: {:.3} ms", t.as_secs_f64() * 1e3);
}

#[test]
fn gpu_preload_and_enumeration() {
    let Some(dev) = cuda() else { return };
    inc::preload(&dev).unwrap();
    scale::preload(&dev).unwrap();
    let mut p = dev.upload(&vec![f16::from_f32(1.5); 300]).unwrap();
    scale::launch(&dev, cdiv(300, 256), &mut p, 300, 256).unwrap();
    assert!(dev.download(&p).unwrap().iter().all(|v| v.to_f32() == 3.0));
    let all = Device::all().unwrap();
    assert!(!all.is_empty());
    assert_eq!(all[0].ordinal(), Some(0));
}
