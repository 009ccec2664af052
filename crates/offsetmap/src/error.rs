//! The crate's error type.
//!
//! Every error is a caller's mistake or a configuration the map cannot
//! honour, so all of them classify as [`ErrorKind::InvalidArgument`]. A log
//! cleaner avoids the two it could hit while filling a map by asking first:
//! [`OffsetMap::has_room`](crate::OffsetMap::has_room) before every put and
//! [`OffsetMap::can_store`](crate::OffsetMap::can_store) for offsets the
//! compact layout may not reach.

use lithify_base::{Classify, ErrorKind};
use snafu::{Location, Snafu};

/// What went wrong in an offset map.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)))]
#[non_exhaustive]
pub enum Error {
    /// The memory given to a new map does not hold even one slot.
    #[snafu(display(
        "an offset map of {memory} bytes has no room for a single {bytes_per_entry}-byte slot"
    ))]
    MemoryTooSmall {
        /// The memory asked for, in bytes.
        memory: usize,
        /// The size of one slot in the chosen layout.
        bytes_per_entry: usize,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The memory given to a new map makes more slots than Kafka's 32-bit
    /// probe sequence can reach.
    #[snafu(display(
        "an offset map of {memory} bytes would have {slots} slots, more than the {max_slots} that the 32-bit probe sequence can reach"
    ))]
    TooManySlots {
        /// The memory asked for, in bytes.
        memory: usize,
        /// The slots that memory would make.
        slots: usize,
        /// The largest number of slots a map may have.
        max_slots: usize,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A put found every slot taken (Kafka refuses even an overwrite then).
    #[snafu(display(
        "cannot put a key into a full offset map ({entries} entries in {slots} slots)"
    ))]
    Full {
        /// Entries in the map.
        entries: usize,
        /// Slots of the map.
        slots: usize,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// An offset outside Kafka's offset range `0..=i64::MAX`.
    #[snafu(display(
        "offset {offset} is larger than {max}, the largest offset Kafka can store",
        max = i64::MAX
    ))]
    OffsetTooLarge {
        /// The offset given.
        offset: u64,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// An offset the compact layout cannot express as a 32-bit delta from
    /// its base offset.
    #[snafu(display(
        "offset {offset} does not fit the compact layout, which stores offsets {base_offset} to {last_offset} only"
    ))]
    OffsetOutOfRange {
        /// The offset given.
        offset: u64,
        /// The smallest offset the map can store.
        base_offset: u64,
        /// The largest offset the map can store.
        last_offset: u64,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A load factor that is not a number in `(0, 1]`.
    #[snafu(display("load factor {value} is not a number greater than 0 and at most 1"))]
    InvalidLoadFactor {
        /// The value given.
        value: f64,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A map too small for the load factor to admit a key: cleaning with it
    /// would never make progress.
    #[snafu(display(
        "an offset map of {slots} slots at load factor {load_factor} cannot hold a single key, so cleaning would never make progress"
    ))]
    NoProgress {
        /// Slots of the map.
        slots: usize,
        /// The load factor.
        load_factor: f64,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        ErrorKind::InvalidArgument
    }
}

impl From<Error> for lithify_base::Error {
    fn from(err: Error) -> Self {
        lithify_base::Error::external(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_a_sentence_and_kind_survives_conversion() {
        let err = FullSnafu {
            entries: 3usize,
            slots: 3usize,
        }
        .build();
        assert_eq!(
            err.to_string(),
            "cannot put a key into a full offset map (3 entries in 3 slots)"
        );
        let shared: lithify_base::Error = err.into();
        assert_eq!(shared.kind(), ErrorKind::InvalidArgument);
        assert_eq!(
            shared.to_string(),
            "cannot put a key into a full offset map (3 entries in 3 slots)"
        );
    }
}
