//! The load-factor rule a cleaner applies before every put.
//!
//! Kafka's map does not enforce a load factor; its cleaner does. Before
//! **every** `put` in the offset-map pass, overwrites of a key already in
//! the map included, it checks
//!
//! ```text
//! map.size < floor(map.slots * load_factor)        (Cleaner.buildOffsetMapForSegment)
//! ```
//!
//! and stops mapping (the map is "full") as soon as the check fails. The
//! floor is Java's `(int)` conversion of the `double` product, which for
//! these positive values is the same as `f64::floor`. At construction the
//! cleaner also requires `slots * load_factor > 1` ("offset map is too small
//! to fit in even a single message"). [`LoadFactor`] computes both, so that
//! a cleaner and anything that sizes maps for it agree on them.

use snafu::ensure;

use crate::error::{InvalidLoadFactorSnafu, Result};

/// The share of a map's slots a cleaner may fill: a number in `(0, 1]`.
///
/// Kafka's broker setting is `log.cleaner.io.buffer.load.factor` (default
/// 0.9). Kafka validates nothing; a value above 1 there makes the cleaner
/// fail with "full offset map" once every slot is taken, so this type
/// refuses it up front.
///
/// ```
/// use lithify_offsetmap::LoadFactor;
///
/// let lf = LoadFactor::KAFKA_DEFAULT;
/// assert_eq!(lf.max_entries(5_592_405), 5_033_164);
/// assert!(LoadFactor::new(0.75).is_ok());
/// assert!(LoadFactor::new(1.5).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct LoadFactor(f64);

impl LoadFactor {
    /// Kafka's default, 0.9.
    pub const KAFKA_DEFAULT: LoadFactor = LoadFactor(0.9);

    /// A load factor of `value`, which must be greater than 0 and at most 1.
    pub fn new(value: f64) -> Result<Self> {
        ensure!(
            value.is_finite() && value > 0.0 && value <= 1.0,
            InvalidLoadFactorSnafu { value }
        );
        Ok(LoadFactor(value))
    }

    /// The value, in `(0, 1]`.
    pub const fn value(self) -> f64 {
        self.0
    }

    /// How many keys a map of `slots` slots may hold: `floor(slots *
    /// load_factor)`, computed in `f64` as Kafka computes it in `double`.
    pub fn max_entries(self, slots: usize) -> usize {
        // `as` truncates toward zero (and saturates), like Java's `(int)`.
        (slots as f64 * self.0) as usize
    }

    /// Whether a cleaner with a map of `slots` slots can make progress:
    /// Kafka's exact condition `slots * load_factor > 1`. (Kafka thereby
    /// also rejects a product of exactly 1, which would admit one key.)
    pub fn allows_progress(self, slots: usize) -> bool {
        slots as f64 * self.0 > 1.0
    }
}

impl Default for LoadFactor {
    fn default() -> Self {
        LoadFactor::KAFKA_DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_values_outside_zero_to_one() {
        for bad in [0.0, -0.5, 1.000_001, f64::NAN, f64::INFINITY] {
            let err = LoadFactor::new(bad).expect_err("must be rejected");
            assert!(err.to_string().starts_with("load factor"), "{err}");
        }
        assert_eq!(LoadFactor::new(1.0).map(LoadFactor::value).ok(), Some(1.0));
    }

    #[test]
    fn max_entries_is_the_floor_of_the_product() {
        let lf = LoadFactor::KAFKA_DEFAULT;
        assert_eq!(lf.max_entries(5_592_405), 5_033_164);
        assert_eq!(lf.max_entries(6_710_886), 6_039_797);
        assert_eq!(lf.max_entries(170), 153);
        assert_eq!(lf.max_entries(1), 0);
        let three_quarters = LoadFactor::new(0.75).expect("valid");
        assert_eq!(three_quarters.max_entries(3), 2);
        assert_eq!(LoadFactor::new(1.0).expect("valid").max_entries(170), 170);
    }

    #[test]
    fn progress_needs_a_product_above_one() {
        let lf = LoadFactor::KAFKA_DEFAULT;
        assert!(!lf.allows_progress(1));
        assert!(lf.allows_progress(2));
        let one = LoadFactor::new(1.0).expect("valid");
        assert!(!one.allows_progress(1));
        assert!(one.allows_progress(2));
    }
}
