//! What every tutorial's check shares: reproducible random inputs and an element-wise comparison
//! against a reference that reports the first element outside its tolerance.

/// xorshift64*: reproducible inputs without a dependency.
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value; 0 is fine).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `[0, 1)` (`torch.rand`'s distribution).
    pub fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// A standard normal (`torch.randn`'s distribution), by Box–Muller.
    pub fn normal(&mut self) -> f32 {
        let u1 = 1.0 - f64::from(self.uniform());
        let u2 = f64::from(self.uniform());
        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
    }

    /// `n` values of `f`.
    pub fn vec<T>(&mut self, n: usize, mut f: impl FnMut(&mut Rng) -> T) -> Vec<T> {
        (0..n).map(|_| f(self)).collect()
    }
}

/// Element-wise `|got[i] − want[i]| ≤ tol(i)` (NaN never passes): `Err` names the first element
/// outside and how many are.
pub fn compare(
    what: &str,
    got: &[f64],
    want: &[f64],
    tol: impl Fn(usize) -> f64,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, want {}", got.len(), want.len()));
    }
    let within = |i: usize| (got[i] - want[i]).abs() <= tol(i);
    let mut bad = (0..got.len()).filter(|&i| !within(i));
    match bad.next() {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: element {i} is {}, want {} ± {:e} ({} elements outside)",
            got[i],
            want[i],
            tol(i),
            1 + bad.count()
        )),
    }
}

/// A launch or transfer error as the checks report it.
pub fn err(e: tile::Error) -> String {
    e.to_string()
}
