//! The vocabulary every lithify crate shares, and nothing else.
//!
//! * [`key`]: user keys, internal keys (`user_key ++ trailer`, trailer =
//!   `seqno << 8 | kind`), [`SeqNo`], [`ValueKind`] and the text form
//!   `a#5,SET` used by tests;
//! * [`comparator`]: the [`Comparator`] trait, the bytewise default and the
//!   internal-key comparator built on a user comparator;
//! * [`coding`]: varints and fixed-width little-endian integers, with a
//!   [`Decoder`] cursor that reports truncated or overlong input;
//! * [`checksum`]: xxh3-64 checksums and their masking;
//! * [`error`]: the [`ErrorKind`]s every crate classifies its errors into and
//!   a shared [`Error`] for code that crosses crates (iterators);
//! * [`iter`]: the [`InternalIterator`] cursor trait, [`MergingIterator`] and
//!   an in-memory [`VecIterator`];
//! * [`merge`]: the [`MergeOperator`] trait that turns a key's merge
//!   operands into a value, and the built-in operators (u64 add, string
//!   append, max);
//! * [`keyspan`]: range tombstones and their fragmentation into
//!   non-overlapping spans, shared by the memtable, compaction and reads;
//! * [`id`]: 128-bit identities of databases, opens and SST files;
//! * [`sync`]: the one switch point between std/parking_lot and loom.
//!
//! ```
//! use lithify_base::{InternalKey, ValueKind, InternalKeyComparator, Comparator};
//!
//! let a = InternalKey::new(b"apple", 7, ValueKind::Put);
//! let b = InternalKey::new(b"apple", 3, ValueKind::Put);
//! // Same user key: the newer version (higher seqno) sorts first.
//! let cmp = InternalKeyComparator::bytewise();
//! assert!(cmp.compare(a.encoded(), b.encoded()).is_lt());
//! assert_eq!(a.to_string(), "apple#7,SET");
//! ```

pub mod checksum;
pub mod clock;
pub mod coding;
pub mod comparator;
pub mod error;
pub mod hint;
pub mod id;
pub mod iter;
pub mod key;
pub mod keyspan;
pub mod merge;
pub mod options;
pub mod rand;
pub mod sync;
#[cfg(feature = "zstd")]
pub mod zstd;

pub use checksum::{mask_checksum, masked_xxh3_64, unmask_checksum, xxh3_64};
pub use clock::{Clock, ManualClock, SystemClock};
pub use coding::{DecodeError, Decoder};
pub use comparator::{BytewiseComparator, Comparator, InternalKeyComparator};
pub use error::{Classify, Error, ErrorKind, Result};
pub use id::Id;
pub use iter::{InternalIterator, MergingIterator, VecIterator};
pub use key::{InternalKey, MAX_SEQNO, ParsedInternalKey, SeqNo, ValueKind};
pub use merge::{MergeFailureScope, MergeOperator};
