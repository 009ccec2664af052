//! The ranges of the command line's numbers, checked where clap parses
//! them.
//!
//! Every numeric option and argument is parsed by one of these parsers
//! (`#[arg(value_parser = numbers::int(1, 1_000_000))]`), so a value out
//! of its range — too small, too large, larger than any `u64`, negative,
//! not a number, NaN or infinite — is a usage error (exit code 2) naming
//! the option (clap's prefix), the value and the range, printed by `main`
//! as one line:
//!
//! ```text
//! error: invalid value '0' for '--batch-size <N>': 0 is not in 1..=1000000
//! ```
//!
//! The option's help text states the same range. A range is what the
//! command can do without overflow, a huge allocation or a hang; a product
//! of two values that is too large (threads x value size, batch x entry)
//! is checked where both are known (the command's `run`).

use std::fmt::Display;

/// A parser of whole numbers in `lo..=hi`.
pub(crate) fn int<T>(lo: T, hi: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync
where
    T: Int,
{
    move |s| parse_int(s, lo, hi).map_err(|()| format!("{} is not in {lo}..={hi}", s.trim()))
}

/// [`int`] for an engine option, whose message also names the option as
/// RocksDB does (`target_file_size_base must be in 1..=N, not 0`).
pub(crate) fn rocksdb<T>(
    name: &'static str,
    lo: T,
    hi: T,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync
where
    T: Int,
{
    move |s| {
        parse_int(s, lo, hi)
            .map_err(|()| format!("{name} must be in {lo}..={hi}, not {}", s.trim()))
    }
}

/// A parser of finite numbers in `lo..=hi`.
pub(crate) fn float(
    lo: f64,
    hi: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |s| match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!("{} is not in {lo}..={hi}", s.trim())),
    }
}

/// A parser of finite numbers above 0 and at most `hi`; the message says
/// what `what` must be (`limits must be positive and at most 1000`).
pub(crate) fn positive(
    what: &'static str,
    hi: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |s| match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= hi => Ok(v),
        _ => Err(format!(
            "{what} must be positive and at most {hi}, not {}",
            s.trim()
        )),
    }
}

/// The integer types the parsers produce.
pub(crate) trait Int:
    Copy + Display + TryFrom<i128> + TryInto<i128> + Send + Sync + 'static
{
}

impl<T> Int for T where T: Copy + Display + TryFrom<i128> + TryInto<i128> + Send + Sync + 'static {}

/// `s` as a `T` in `lo..=hi`. Digits beyond any `i128` are out of range
/// like any other too-large number.
fn parse_int<T: Int>(s: &str, lo: T, hi: T) -> Result<T, ()> {
    let v: i128 = s.trim().parse().map_err(|_| ())?;
    let lo: i128 = lo.try_into().map_err(|_| ())?;
    let hi: i128 = hi.try_into().map_err(|_| ())?;
    if !(lo..=hi).contains(&v) {
        return Err(());
    }
    T::try_from(v).map_err(|_| ())
}

/// Seconds of a `--duration`: at most a year, so that a deadline
/// (`now + duration`) never overflows.
pub(crate) const MAX_DURATION_SECS: f64 = 31_536_000.0;

/// Threads of a command (`--threads`): more than any machine runs usefully,
/// few enough to start.
pub(crate) const MAX_THREADS: usize = 256;

/// Operations or records of a run (`--num`, `--reads`, `--records`,
/// `--ops-per-thread`): 10^12, so that sums and products with thread counts
/// fit in a `u64`.
pub(crate) const MAX_OPS: u64 = 1_000_000_000_000;

/// A time in ms since the epoch (`--now`): up to the end of the year 9999,
/// so that adding retention times never overflows an `i64`.
pub(crate) const MAX_EPOCH_MS: i64 = 253_402_300_799_999;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_in_range_and_every_other_string_refused() {
        let p = int(1usize, 1_000);
        assert_eq!(p("1"), Ok(1));
        assert_eq!(p("1000"), Ok(1000));
        for bad in [
            "0",
            "-1",
            "1001",
            "4294967296",
            "18446744073709551615",
            "9999999999999999999999",
            "999999999999999999999999999999999999999999",
            "1.5",
            "abc",
            "",
        ] {
            let e = p(bad).unwrap_err();
            assert_eq!(e, format!("{} is not in 1..=1000", bad.trim()), "{bad}");
        }
        let full = int(0u64, u64::MAX);
        assert_eq!(full("18446744073709551615"), Ok(u64::MAX));
        assert!(full("18446744073709551616").is_err());
        let signed = int(-5i64, 5);
        assert_eq!(signed("-5"), Ok(-5));
        assert!(signed("-6").is_err());
    }

    #[test]
    fn engine_options_name_rocksdb_s_option() {
        let p = rocksdb("target_file_size_base", 1u64, 1 << 40);
        assert_eq!(
            p("0").unwrap_err(),
            "target_file_size_base must be in 1..=1099511627776, not 0"
        );
        assert_eq!(p("4096"), Ok(4096));
    }

    #[test]
    fn floats_refuse_nan_infinity_and_out_of_range() {
        let p = float(0.0, 1.0);
        assert_eq!(p("0"), Ok(0.0));
        assert_eq!(p("1"), Ok(1.0));
        for bad in ["NaN", "nan", "inf", "-inf", "-0.1", "1.01", "1e400", "x"] {
            assert!(p(bad).is_err(), "{bad}");
        }
        let q = positive("limits", 1000.0);
        assert_eq!(q("0.5"), Ok(0.5));
        assert_eq!(
            q("0").unwrap_err(),
            "limits must be positive and at most 1000, not 0"
        );
        assert!(q("NaN").is_err() && q("inf").is_err() && q("1000.5").is_err());
    }
}
