//! The f64 reference of softmax regression, shared by the example, the tests and tile-bench.

/// `softmax(x @ w)` over the classes, in f64, for `x` (`b × d`) and `w` (`d × c`), row-major.
pub fn softmax_regression(x: &[f32], w: &[f32], (b, d, c): (usize, usize, usize)) -> Vec<f64> {
    let mut out = Vec::with_capacity(b * c);
    for i in 0..b {
        let z: Vec<f64> = (0..c)
            .map(|j| {
                (0..d)
                    .map(|k| x[i * d + k] as f64 * w[k * c + j] as f64)
                    .sum()
            })
            .collect();
        let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = z.iter().map(|v| (v - m).exp()).sum();
        out.extend(z.iter().map(|v| (v - m).exp() / s));
    }
    out
}
