//! Immutable sorted tables (sstables): the files an LSM tree flushes and
//! compacts into.
//!
//! A table is a sequence of prefix-compressed **data blocks**, an **index
//! block** mapping a separator key per data block to its location, a
//! cache-line-blocked **bloom filter**, a **range-deletion block**, a
//! **properties block**, a **metaindex** naming the meta blocks, and a
//! fixed-size **footer** with the magic number and format version. Every
//! block carries a masked xxh3-64 checksum; data blocks may be
//! zstd-compressed. The byte layout is in `docs/FORMATS.md` and in the
//! crate's `format` module.
//!
//! * [`SstBuilder`] writes a table through a [`lithify_vfs::WritableFile`].
//! * [`SstReader`] opens one through a [`lithify_vfs::RandomAccessFile`]: `get`,
//!   the engine's [`SstReader::point_lookup`], [`SstReader::range_tombstones`],
//!   [`SstReader::approximate_offset_of`], and [`SstIter`], an
//!   [`InternalIterator`](lithify_base::InternalIterator).
//! * [`BlockCache`] is a sharded LRU of decoded blocks shared by many tables.
//! * [`SstOptions`] picks the comparator and the [`KeySchema`]
//!   ([`PlainKeys`] for tables used alone, [`InternalKeys`] in the engine,
//!   whose filter is on user keys).
//! * [`ReadStats`] counts the blocks a read touched, for read amplification.
//!
//! Used alone, on plain byte keys:
//!
//! ```
//! use std::path::Path;
//! use std::sync::Arc;
//! use lithify_base::InternalIterator;
//! use lithify_sstable::{Compression, SstReader, SstBuilder, SstOptions};
//! use lithify_vfs::{FileSystem, MemFs};
//!
//! let fs = MemFs::new();
//! let opts = SstOptions::default()
//!     .compression(Compression::zstd());
//! let path = Path::new("/fruit.sst");
//! let mut builder = SstBuilder::new(fs.create(path).unwrap(), path, &opts).unwrap();
//! for i in 0..1000u32 {
//!     builder.add(format!("key{i:05}").as_bytes(), b"value").unwrap();
//! }
//! builder.add_range_tombstone(b"key00100", b"key00200").unwrap();
//! let built = builder.finish().unwrap();
//!
//! let table = Arc::new(SstReader::open(fs.open(path).unwrap(), path, built.file_size, &opts, None).unwrap());
//! assert_eq!(table.get(b"key00042").unwrap().as_deref(), Some(&b"value"[..]));
//! assert_eq!(table.range_tombstones().len(), 1);
//! let mut it = table.iter();
//! it.last().unwrap();
//! assert_eq!(it.key(), b"key00999");
//! ```

mod anchors;
// The block and footer formats are internal; `testing` shows the parts the
// fuzz targets and golden tests drive.
#[allow(unreachable_pub)]
mod block;
mod builder;
mod cache;
mod compression;
mod error;
mod filter;
#[allow(unreachable_pub)]
mod format;
mod index_words;
mod inspect;
mod iter;
mod options;
mod properties;
mod reader;
mod schema;
mod stats;
#[cfg(feature = "testing")]
pub mod testing;
mod verify;

pub use anchors::KeyAnchor;
pub use builder::{BuiltSst, MAX_ENTRY_LEN, SstBuilder};
pub use cache::{BlockCache, CacheStats, ENTRY_OVERHEAD};
pub use compression::{Compression, MAX_COMPRESSED_BLOCK_LEN};
pub use error::{Error, Result};
/// The footer's length and the magic number that ends every table file
/// (what tells a table apart from other files).
pub use format::{FOOTER_LEN, MAGIC};
pub use inspect::{Damage, DataBlockInfo, RecordedSst, SstCheck, SstVisitor, open_recorded};
pub use iter::SstIter;
pub use options::{MAX_BLOCK_SIZE, SstOptions};
pub use properties::Properties;
pub use reader::{RangeDelEntry, SstReader, read_properties};
pub use schema::{InternalKeys, KeySchema, PlainKeys};
pub use stats::ReadStats;
pub use verify::{FileCheck, FileChecksum, file_checksum, verify_file};

/// The README's example, run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
