//! Synthetic key streams for the simulator.

/// How keys are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyDistribution {
    /// Uniformly from the key space, with repetition (db_bench's
    /// `fillrandom`).
    Uniform,
    /// Zipfian with exponent `theta` (YCSB's generator, 0.99 by default),
    /// hot keys scattered over the key space by a hash.
    Zipfian {
        /// The skew; YCSB uses 0.99.
        theta: f64,
    },
    /// 0, 1, 2, ... (db_bench's `fillseq`).
    Sequential,
}

impl KeyDistribution {
    /// Parses `uniform`, `zipfian[:theta]`, `sequential`.
    pub fn parse(s: &str) -> Option<KeyDistribution> {
        match s.split_once(':') {
            None => match s {
                "uniform" | "random" => Some(KeyDistribution::Uniform),
                "zipfian" => Some(KeyDistribution::Zipfian { theta: 0.99 }),
                "sequential" | "seq" => Some(KeyDistribution::Sequential),
                _ => None,
            },
            Some(("zipfian", theta)) => {
                let theta: f64 = theta.parse().ok()?;
                (theta > 0.0 && theta < 1.0).then_some(KeyDistribution::Zipfian { theta })
            }
            Some(_) => None,
        }
    }

    /// The name as [`parse`](Self::parse) reads it.
    pub fn name(&self) -> String {
        match self {
            KeyDistribution::Uniform => "uniform".to_owned(),
            KeyDistribution::Zipfian { theta } => format!("zipfian:{theta}"),
            KeyDistribution::Sequential => "sequential".to_owned(),
        }
    }
}

pub(crate) use lithify_base::rand::SplitMix64;

/// `sum_{i=1..n} i^-theta`, exact for the first million terms and by the
/// Euler-Maclaurin integral beyond (error far below what matters here).
fn zeta(n: u64, theta: f64) -> f64 {
    const EXACT: u64 = 1_000_000;
    let m = n.min(EXACT);
    let mut sum: f64 = (1..=m).map(|i| (i as f64).powf(-theta)).sum();
    if n > m {
        let f = |x: f64| x.powf(1.0 - theta) / (1.0 - theta);
        let (a, b) = (m as f64, n as f64);
        sum += f(b) - f(a) + 0.5 * (b.powf(-theta) - a.powf(-theta));
    }
    sum
}

/// Draws keys in `[0, key_space)`.
#[derive(Debug, Clone)]
pub struct KeyGenerator {
    distribution: KeyDistribution,
    key_space: u64,
    rng: SplitMix64,
    next_sequential: u64,
    zipf: Option<Zipf>,
}

#[derive(Debug, Clone)]
struct Zipf {
    zeta_n: f64,
    alpha: f64,
    eta: f64,
    half_pow_theta: f64,
}

impl KeyGenerator {
    /// A generator over `key_space` keys.
    pub fn new(distribution: KeyDistribution, key_space: u64, seed: u64) -> Self {
        let key_space = key_space.max(1);
        let zipf = match distribution {
            KeyDistribution::Zipfian { theta } => {
                let zeta_n = zeta(key_space, theta);
                let zeta_2 = zeta(2, theta);
                Some(Zipf {
                    zeta_n,
                    alpha: 1.0 / (1.0 - theta),
                    eta: (1.0 - (2.0 / key_space as f64).powf(1.0 - theta))
                        / (1.0 - zeta_2 / zeta_n),
                    half_pow_theta: 0.5f64.powf(theta),
                })
            }
            _ => None,
        };
        KeyGenerator {
            distribution,
            key_space,
            rng: SplitMix64::new(seed),
            next_sequential: 0,
            zipf,
        }
    }

    /// The next key.
    pub fn next_key(&mut self) -> u64 {
        match self.distribution {
            KeyDistribution::Uniform => self.rng.uniform(self.key_space),
            KeyDistribution::Sequential => {
                let k = self.next_sequential % self.key_space;
                self.next_sequential += 1;
                k
            }
            KeyDistribution::Zipfian { .. } => {
                let z = self.zipf.as_ref().expect("zipf parameters");
                let u = self.rng.next_f64();
                let uz = u * z.zeta_n;
                let rank = if uz < 1.0 {
                    0
                } else if uz < 1.0 + z.half_pow_theta {
                    1
                } else {
                    let r = self.key_space as f64 * (z.eta * u - z.eta + 1.0).powf(z.alpha);
                    (r as u64).min(self.key_space - 1)
                };
                // Scatter ranks over the key space (YCSB's scrambled
                // zipfian): FNV-1a of the rank.
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                for b in rank.to_le_bytes() {
                    h ^= b as u64;
                    h = h.wrapping_mul(0x0000_0100_0000_01b3);
                }
                h % self.key_space
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_stay_in_range_and_skew() {
        for d in [
            KeyDistribution::Uniform,
            KeyDistribution::Sequential,
            KeyDistribution::Zipfian { theta: 0.99 },
        ] {
            let mut g = KeyGenerator::new(d, 1000, 7);
            assert!((0..10_000).all(|_| g.next_key() < 1000), "{d:?}");
        }
        let mut g = KeyGenerator::new(KeyDistribution::Sequential, 10, 0);
        assert_eq!(
            (0..12).map(|_| g.next_key()).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]
        );
        // Zipfian 0.99: the hottest key takes a large share; uniform does
        // not.
        let hottest = |d| {
            let mut g = KeyGenerator::new(d, 100_000, 1);
            let mut counts = std::collections::HashMap::new();
            for _ in 0..100_000 {
                *counts.entry(g.next_key()).or_insert(0u32) += 1;
            }
            counts.values().copied().max().unwrap_or(0)
        };
        assert!(hottest(KeyDistribution::Zipfian { theta: 0.99 }) > 5_000);
        assert!(hottest(KeyDistribution::Uniform) < 20);
        assert_eq!(
            KeyDistribution::parse("zipfian:0.8"),
            Some(KeyDistribution::Zipfian { theta: 0.8 })
        );
        assert_eq!(KeyDistribution::parse("bogus"), None);
        // The integral tail of zeta agrees with the exact sum.
        let exact: f64 = (1..=3_000_000u64).map(|i| (i as f64).powf(-0.99)).sum();
        assert!((zeta(3_000_000, 0.99) - exact).abs() / exact < 1e-6);
    }
}
