//! lithify's append-only record log, used for the write-ahead log of
//! memtables and for the MANIFEST.
//!
//! A log is a file of 32 KiB blocks holding checksummed **fragments**; a
//! record of any size (including zero bytes) is one fragment or a
//! `First`/`Middle`.../`Last` chain spanning blocks. The file starts with a
//! header naming the format and the log number. Every fragment of a
//! tagged log carries the log number too, so stale bytes of a reused file
//! are never taken for records of this log; a compact log
//! ([`format::Framing::Compact`]) leaves it out, 4 bytes less per
//! fragment, and is only written into new files. The byte-by-byte format
//! is in [`format`](mod@format) and in `docs/FORMATS.md`.
//!
//! * [`Writer`] appends records to a new file through any
//!   [`lithify_vfs::WritableFile`], buffering them (no system call per small
//!   record) until [`Writer::flush`] or [`Writer::sync`], optionally into
//!   space it sized up front so that a sync rarely changes the file's size;
//!   a failed write or sync poisons it.
//! * [`Reader`] returns the records in order and handles damage according
//!   to a [`RecoveryMode`] (RocksDB's four `WALRecoveryMode`s), passing every
//!   dropped byte range to a [`Reporter`].
//!
//! ```
//! use std::path::Path;
//! use lithify_vfs::{FileSystem, MemFs};
//! use lithify_wal::{LogEnd, Reader, Writer};
//!
//! let fs = MemFs::new();
//! let path = Path::new("/000001.log");
//! let mut w = Writer::new(fs.create(path).unwrap(), path, 1).unwrap();
//! w.add_record(b"durable").unwrap();
//! w.sync().unwrap();
//! w.add_record(&vec![1; 100_000]).unwrap(); // spans four blocks, never synced
//! fs.sync_dir(Path::new("/")).unwrap();
//! drop(w);
//! fs.crash();
//!
//! let mut r = Reader::new(fs.open(path).unwrap(), path, 1).unwrap();
//! assert_eq!(r.read_record().unwrap().unwrap().payload, b"durable");
//! assert!(r.read_record().unwrap().is_none());
//! assert_eq!(r.end(), Some(LogEnd::Clean)); // the unsynced record left no bytes
//! ```
//!
//! # Damage and recovery modes
//!
//! The reader walks the file fragment by fragment. Anything it cannot
//! return as an intact record is a **problem** with a [`DropReason`]: a torn
//! header or payload at the end of the file, a checksum mismatch, a length
//! running past its block, a zero-filled header, a fragment of another log,
//! a middle or last fragment without a first, a record whose last fragment
//! never came, an unknown fragment type. The bytes of the record the
//! problem belongs to (from its first fragment on) are **dropped**.
//!
//! In a log written by a preallocating writer
//! ([`WriterOptions::preallocate`], which says so in a `Preallocated`
//! fragment), zeros from where the next fragment would start to the end of
//! the file are not a problem: they are the log's **zero tail**, space not
//! written yet, its clean end in every mode ([`Reader::zero_tail`] says
//! where they begin). A recycled log's older bytes after its records are
//! its **stale tail**, a clean end too ([`Reader::stale_tail`]). A file of
//! zeros only is an empty log.
//!
//! A problem is at the **tail** if no valid fragment of this log (checksum
//! correct, this log's number) starts after it: what a crash in the middle
//! of a write leaves behind. Otherwise it is a **hole**: valid data follows
//! damaged data.
//!
//! What happens next depends on the [`RecoveryMode`]:
//!
//! | mode | tail problem | hole |
//! |---|---|---|
//! | `TolerateCorruptedTailRecords` | drop the rest, end normally | error |
//! | `AbsoluteConsistency` | error | error |
//! | `PointInTimeRecovery` (default) | drop the rest, end normally | drop the rest, end normally ([`LogEnd::Corruption`]) |
//! | `SkipAnyCorruptedRecords` | drop the damaged bytes, go on | drop the damaged bytes, go on |
//!
//! "Drop the rest" drops everything from the start of the damaged record to
//! the end of the file. In skip mode the reader resumes after the problem
//! fragment when its header is known to be intact (its checksum matched: a
//! fragment of another log, an orphan middle or last fragment, an unknown
//! type); after a checksum mismatch, a bad length or a zeroed header it
//! cannot trust the length, so it drops the rest of the block and resumes
//! at the next block start (as RocksDB does). Every dropped range is passed to the
//! [`Reporter`] — in every mode, including the tolerated torn tail — as
//! `(offset, length, reason)`; ranges arrive in file order and never
//! overlap (in skip mode adjacent ranges are merged into one).
//!
//! Errors on reading the file itself are returned as they are in every mode:
//! they say nothing about the data.

mod error;
pub mod format;
mod reader;
mod writer;

pub use error::{Error, Result};
pub use reader::{
    DropReason, DroppedRange, LogEnd, OwnedRecord, ReadStats, Reader, Record, Records,
    RecoveryMode, Reporter,
};
pub use writer::{RecordCompression, Writer, WriterOptions};
