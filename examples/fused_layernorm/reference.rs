//! The f64 reference of layer norm, shared by the example, the tests and tile-bench.

/// `(x − mean) / sqrt(var + eps) · w + b` per row of `n` (biased variance), in f64, of the
/// (already rounded) inputs.
pub fn layernorm(x: &[f32], w: &[f32], b: &[f32], n: usize, eps: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(n) {
        let mean = row.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n as f64;
        let rstd = 1.0 / (var + eps).sqrt();
        out.extend(
            row.iter()
                .enumerate()
                .map(|(j, &v)| (v as f64 - mean) * rstd * w[j] as f64 + b[j] as f64),
        );
    }
    out
}
