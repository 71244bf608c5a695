//! Seeded random numbers. Every component gets its own stream derived from
//! the run seed and its instance path, so adding a component never perturbs
//! the random choices of the others.
//!
//! ```
//! use ccsim_kernel::rng::SimRng;
//! let mut a = SimRng::for_path(42, "system.core0");
//! let mut b = SimRng::for_path(42, "system.core0");
//! assert_eq!(a.next_u64(), b.next_u64());
//! assert_ne!(SimRng::for_path(42, "system.core1").next_u64(), SimRng::for_path(42, "system.core0").next_u64());
//! ```

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A deterministic pseudo-random generator (xoshiro256++).
#[derive(Clone, Debug)]
pub struct SimRng(Xoshiro256PlusPlus);

/// FNV-1a over the path, so the stream depends on the instance name only.
fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

impl SimRng {
    /// The stream of `path` under run seed `seed`.
    pub fn for_path(seed: u64, path: &str) -> Self {
        SimRng(Xoshiro256PlusPlus::seed_from_u64(
            seed ^ fnv1a(path).rotate_left(17),
        ))
    }
    /// A uniformly distributed `u64`.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// A uniform integer in `0..n` (n > 0), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0) has no values");
        // Lemire's multiply-shift with rejection.
        loop {
            let x = self.next_u64();
            let m = (x as u128) * (n as u128);
            let low = m as u64;
            if low >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }
    /// A uniform float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// An exponentially distributed value with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = SimRng::for_path(1, "x");
        let mut seen = [false; 7];
        for _ in 0..1000 {
            let v = r.below(7);
            assert!(v < 7);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn unit_mean_is_about_half() {
        let mut r = SimRng::for_path(9, "y");
        let mean: f64 = (0..10_000).map(|_| r.unit()).sum::<f64>() / 10_000.0;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }
}
