//! `rand`, `randint` and `umulhi` on the interpreter against `tile_core::random` (Triton's Philox
//! stream, checked there against Random123's known answers and Triton's own values), bit for bit,
//! for seeds and offsets at the edges of their types.

use tile_tests as common;

use tile::prelude::*;

#[test]
fn philox_matches_the_reference() {
    common::check_philox(&Device::interpreter());
}

/// `rand > p` on the interpreter is `tile::random`'s compare for probabilities at every edge (the
/// GPU test runs the same check on the back end's integer form of it).
#[test]
fn rand_above_p_matches_the_reference() {
    common::check_rand_above(&Device::interpreter());
}

/// `randn` on the interpreter is `tile::random::randn` bit for bit, and its samples look standard
/// normal (mean and variance within 5 standard errors over 2^16 samples).
#[test]
fn randn_matches_the_reference_and_is_normal() {
    let dev = Device::interpreter();
    for (seed, base) in [
        (0i64, 0i64),
        (42, (1 << 32) - 100),
        (-1, -5000),
        (i64::MIN + 3, 7),
    ] {
        let n = 3000;
        let z = common::randn_on(&dev, n, seed, base);
        for (i, v) in z.iter().enumerate() {
            let want = tile::random::randn(seed as u64, (base + i as i64) as u64);
            assert_eq!(
                v.to_bits(),
                want.to_bits(),
                "seed {seed}, offset {base} + {i}"
            );
        }
    }
    let n = 1 << 16;
    let z = common::randn_on(&dev, n, 1234, 0);
    let mean = z.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
    let var = z
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n as f64;
    let se = 1.0 / (n as f64).sqrt();
    assert!(mean.abs() < 5.0 * se, "mean {mean}");
    assert!((var - 1.0).abs() < 5.0 * se * 2f64.sqrt(), "variance {var}");
    assert!(z.iter().all(|v| v.is_finite() && v.abs() < 6.0));
}

/// The four `randint4x`/`rand4x` words of one seed and offsets come from one Philox evaluation:
/// the optimized IR holds one chain of 10 rounds (at most 20 `umulhi`), not four.
#[test]
fn four_words_share_one_evaluation() {
    let ir = common::philox_words::KERNEL.ir;
    let n = ir.matches(" umulhi ").count();
    assert!((1..=20).contains(&n), "{n} umulhi in\n{ir}");
}
