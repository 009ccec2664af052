//! The LSM's metadata, durable and crash-safe.
//!
//! * [`FileMetadata`]: what the LSM knows about one sstable (number, size,
//!   key and seqno range, counts, times, optional checksum, references
//!   into blob files).
//! * [`BlobFile`]: a blob file of separated values, with its garbage
//!   ([`blob_file`]).
//! * [`VersionEdit`]: one change — files added and deleted per level,
//!   per-table log number and compaction cursors, tables added and dropped,
//!   global counters — with a tagged, forward-compatible encoding
//!   ([`edit`]).
//! * [`Version`]: an immutable, shareable snapshot of one table's levels,
//!   with the lookups compaction and reads need ([`Version::overlapping_files`]
//!   with RocksDB's L0 expansion, [`Version::file_for_key`], level sizes).
//! * [`VersionSet`]: the current version of every table; `log_and_apply`
//!   makes an edit group durable in the MANIFEST before installing it,
//!   rolls the MANIFEST over when it grows, and `recover` rebuilds
//!   everything from `CURRENT`. It also allocates file numbers, tracks the
//!   last sequence number, and tells the engine which file numbers no live
//!   version references any more ([`VersionSet::obsolete_files`]).
//! * [`text`]: versions written as text (`L0:` / `  000012:[a#5,SET-c#3,SET]
//!   size=1024`) with a parser, for picker tests and tools; [`manifest::dump`]
//!   prints a MANIFEST.
//! * [`filename`]: the names of the files in a database directory.
//!
//! This crate does not depend on `lithify-sstable`: it only knows file
//! metadata, so compaction pickers can be tested on LSM shapes written as
//! text.
//!
//! ```
//! use lithify_version::Version;
//!
//! let v = Version::from_text("
//! L0:
//!   000012:[a#5,SET-c#3,SET] size=1K
//! L1:
//!   000007:[a#1,SET-b#1,SET] size=64K
//!   000008:[c#1,SET-f#1,SET] size=64K
//! ").unwrap();
//! assert_eq!(v.level_bytes(1), 128 * 1024);
//! let hit = v.file_for_key(1, lithify_base::InternalKey::seek(b"d", 100).encoded());
//! assert_eq!(hit.map(|f| f.number), Some(8));
//! assert_eq!(v.to_string(), "L0:\n  000012:[a#5,SET-c#3,SET] size=1024\nL1:\n  000007:[a#1,SET-b#1,SET] size=65536\n  000008:[c#1,SET-f#1,SET] size=65536\n");
//! ```

pub mod blob_file;
mod builder;
pub mod edit;
mod error;
mod file_metadata;
pub mod filename;
pub mod history;
pub mod manifest;
pub mod text;
mod version;
pub mod version_set;

pub use blob_file::{BlobFile, BlobFileGarbage, BlobFileMetadata, BlobRef};
pub use edit::{DEFAULT_TABLE, DEFAULT_TABLE_NAME, TableId, VersionEdit, WalAddition};
pub use error::{Error, Result};
pub use file_metadata::FileMetadata;
pub use version::{DEFAULT_NUM_LEVELS, Version};
pub use version_set::{ManifestCut, ObsoleteFiles, TableInfo, VersionSet, VersionSetOptions};
