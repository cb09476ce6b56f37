//! `while` loops and `debug_barrier`: a loop over a carried offset, a loop whose condition is a
//! reduction across the program nested in a `for`, and a spin lock taken with `atomic_cas` in the
//! condition (Triton's layer-norm backward's), each with a Rust reference. The interpreter runs
//! them in `tests/loops.rs`, the GPU (where programs really contend for the lock) in
//! `tests/gpu.rs`.

use tile::prelude::*;

use crate::Rng;

/// One program writes `2 · i` to every element `i < n`, a tile at a time, by a `while` over a
/// carried offset; `steps` receives the number of iterations (`⌈n / BLOCK⌉`).
#[tile_kernel(num_warps = 4)]
pub fn while_fill(x: Ptr<i32, n>, steps: Ptr<i32, 1>, n: i32, BLOCK: Const<128>) {
    let offs = arange(0, BLOCK);
    let mut start = 0;
    let mut count = 0;
    while start < n {
        store(x + start + offs, (start + offs) * 2, start + offs < n);
        start += BLOCK;
        count += 1;
    }
    store(steps, count);
}

/// Collatz step counts: each program takes four tiles in a `for` loop, and runs the Collatz map
/// on a tile while its largest element exceeds 1 (the condition a reduction across warps, the
/// tile and a step count carried). `steps[i]` is the number of steps element `i` takes to reach
/// 1; `rounds[pid]` the iterations the program's four `while` loops ran in all (the sum of the
/// longest count of each tile).
#[tile_kernel(num_warps = 4)]
pub fn collatz(
    x: Ptr<i32, n>,
    steps: Ptr<i32, n>,
    rounds: Ptr<i32, g>,
    n: i32,
    g: i32,
    BLOCK: Const<256>,
) {
    let pid = program_id(0);
    let mut total = 0;
    for t in 0..4 {
        let offs = (pid * 4 + t) * BLOCK + arange(0, BLOCK);
        let mask = offs < n;
        let mut v = load(x + offs, mask, 1);
        let mut s = full([BLOCK], 0);
        while v.max() > 1 {
            let live = v > 1;
            let next = select((v & 1) == 1, v * 3 + 1, v / 2);
            v = select(live, next, v);
            s = s + select(live, 1, 0);
            total += 1;
        }
        store(steps + offs, s, mask);
    }
    store(rounds + pid, total);
}

/// Every program adds its tile of `x` into `acc` with a plain load and store, and its count into
/// `count`, under a spin lock: `while atomic_cas(lock, 0, 1) == 1 {}` takes it, `debug_barrier()`
/// and `atomic_xchg(lock, 0)` release it once the program's stores are done. Without the lock
/// the read-modify-writes of contending programs would lose updates. (A scalar is read by every
/// thread and written by one, hence the barrier between the count's load and store.)
#[tile_kernel(num_warps = 4)]
pub fn locked_sum(
    x: Ptr<i32, n>,
    lock: Ptr<i32, 1>,
    count: Ptr<i32, 1>,
    acc: Ptr<i32, 256>,
    n: i32,
    BLOCK: Const<256>,
) {
    let pid = program_id(0);
    let offs = arange(0, BLOCK);
    let v = load(x + pid * BLOCK + offs, pid * BLOCK + offs < n, 0);
    while atomic_cas(lock, 0, 1) == 1 {}
    // Every thread reads the count before one of them writes it.
    let c = load(count);
    debug_barrier();
    store(count, c + 1);
    store(acc + offs, load(acc + offs) + v);
    debug_barrier();
    atomic_xchg(lock, 0);
}

/// Runs the three kernels on `dev` at awkward sizes and compares with their references exactly.
pub fn check_while_loops(dev: &Device, sizes: &[usize]) {
    for &n in sizes {
        let mut x = dev.zeros::<i32>(n.max(1)).unwrap();
        let mut steps = dev.upload(&[-1i32]).unwrap();
        while_fill::launch(dev, Grid::x(1), &mut x, &mut steps, n as i32).unwrap();
        let want: Vec<i32> = (0..n.max(1) as i32)
            .map(|i| if (i as usize) < n { 2 * i } else { 0 })
            .collect();
        assert_eq!(dev.download(&x).unwrap(), want, "while_fill n = {n}");
        assert_eq!(
            dev.download(&steps).unwrap(),
            vec![n.div_ceil(128) as i32],
            "while_fill steps, n = {n}"
        );
    }
    for &n in sizes {
        let mut r = Rng(n as u64 + 7);
        let start: Vec<i32> = (0..n).map(|_| 1 + (r.next() % 9999) as i32).collect();
        let g = n.div_ceil(1024);
        let xb = dev.upload(&start).unwrap();
        let mut steps = dev.upload(&vec![-1i32; n]).unwrap();
        let mut rounds = dev.upload(&vec![-1i32; g]).unwrap();
        collatz::launch(
            dev,
            Grid::x(g as u32),
            &xb,
            &mut steps,
            &mut rounds,
            n as i32,
            g as i32,
        )
        .unwrap();
        let count = |mut v: i64| {
            let mut s = 0;
            while v > 1 {
                v = if v % 2 == 1 { 3 * v + 1 } else { v / 2 };
                s += 1;
            }
            s
        };
        let want: Vec<i32> = start.iter().map(|&v| count(i64::from(v))).collect();
        assert_eq!(dev.download(&steps).unwrap(), want, "collatz n = {n}");
        let want_rounds: Vec<i32> = (0..g)
            .map(|p| {
                (0..4)
                    .map(|t| {
                        let lo = ((p * 4 + t) * 256).min(n);
                        let hi = ((p * 4 + t + 1) * 256).min(n);
                        want[lo..hi].iter().copied().max().unwrap_or(0)
                    })
                    .sum()
            })
            .collect();
        assert_eq!(
            dev.download(&rounds).unwrap(),
            want_rounds,
            "collatz rounds n = {n}"
        );
    }
    for &n in sizes {
        let mut r = Rng(n as u64 + 11);
        let xs: Vec<i32> = (0..n).map(|_| (r.next() % 2001) as i32 - 1000).collect();
        let g = n.div_ceil(256);
        let xb = dev.upload(&xs).unwrap();
        let mut lock = dev.upload(&[0i32]).unwrap();
        let mut count = dev.upload(&[0i32]).unwrap();
        let mut acc = dev.upload(&[0i32; 256]).unwrap();
        locked_sum::launch(
            dev,
            Grid::x(g as u32),
            &xb,
            &mut lock,
            &mut count,
            &mut acc,
            n as i32,
        )
        .unwrap();
        let mut want = [0i32; 256];
        for (i, &v) in xs.iter().enumerate() {
            want[i % 256] += v;
        }
        assert_eq!(dev.download(&acc).unwrap(), want, "locked_sum n = {n}");
        assert_eq!(dev.download(&count).unwrap(), vec![g as i32], "count");
        assert_eq!(dev.download(&lock).unwrap(), vec![0], "lock released");
    }
}
