//! `VersionEdit`: one change to the LSM's metadata, and its encoding.
//!
//! An encoded edit is a sequence of **fields**, each
//!
//! ```text
//! +-----------------+--------------------+----------------------+
//! | tag (varint32)  | length (varint32)  | body (length bytes)  |
//! +-----------------+--------------------+----------------------+
//! ```
//!
//! Because every field carries its length, a reader can step over any
//! field. Whether it may is decided by the tag: an unknown tag with
//! [`tag::SAFE_TO_IGNORE`] (bit 13) set is skipped, any other unknown tag is
//! an error — so a newer writer can add optional information without
//! breaking older readers, and information that changes the meaning of the
//! state is never silently dropped. A scalar field may appear at most once
//! per edit; list fields (cursors, deleted and new files) may repeat.
//!
//! A MANIFEST record holds an **edit group**: one or more edits, each
//! preceded by its length as a varint32. A group is applied atomically (it
//! is one checksummed log record), which is how a change spanning several
//! tables stays all-or-nothing.
//!
//! ```
//! use lithify_base::InternalKey;
//! use lithify_version::{FileMetadata, VersionEdit};
//!
//! let mut edit = VersionEdit::new(0);
//! edit.delete_file(1, 7);
//! edit.add_file(2, FileMetadata::new(
//!     12, 4096,
//!     InternalKey::from_text("a#5,SET").unwrap(),
//!     InternalKey::from_text("k#9,DEL").unwrap(),
//! ));
//! edit.next_file_number = Some(13);
//! let bytes = edit.encode();
//! assert_eq!(VersionEdit::decode(&bytes).unwrap(), edit);
//! assert_eq!(edit.to_string(), "edit table=0 next_file=13\n  delete L1 000007\n  add L2 000012:[a#5,SET-k#9,DEL] size=4096\n");
//! ```

use std::fmt;

use lithify_base::coding::{Decoder, put_fixed64, put_length_prefixed, put_varint32, put_varint64};
use lithify_base::{DecodeError, Id, InternalKey, SeqNo};

use crate::blob_file::{BlobFileGarbage, BlobFileMetadata, BlobRef};
use crate::error::{BadEditSnafu, Result};
use crate::file_metadata::FileMetadata;

/// A table (column family) id. The default table is [`DEFAULT_TABLE`].
pub type TableId = u32;

/// The id of the table every database starts with.
pub const DEFAULT_TABLE: TableId = 0;

/// The name of the default table.
pub const DEFAULT_TABLE_NAME: &str = "default";

/// The version of the edit encoding, recorded in the first edit of every
/// MANIFEST.
pub const MANIFEST_FORMAT_VERSION: u32 = 1;

/// Levels are below this bound in any encoded edit.
pub const MAX_LEVELS: usize = 64;

/// Field tags of an edit. Frozen: they are part of the MANIFEST format.
/// Numbers follow RocksDB's `VersionEdit` tags where the meaning matches.
pub mod tag {
    /// The user comparator's name (UTF-8 bytes).
    pub const COMPARATOR: u32 = 1;
    /// The table's log number: WALs below it hold nothing unflushed for
    /// this table (varint64).
    pub const LOG_NUMBER: u32 = 2;
    /// The next file number to allocate (varint64).
    pub const NEXT_FILE_NUMBER: u32 = 3;
    /// The last sequence number used (varint64).
    pub const LAST_SEQUENCE: u32 = 4;
    /// Per-level compaction cursor: varint32 level, then the encoded
    /// internal key (rest of the body).
    pub const COMPACT_CURSOR: u32 = 5;
    /// A deleted file: varint32 level, varint64 file number.
    pub const DELETED_FILE: u32 = 6;
    /// A new file: varint32 level, then the file's fields (see
    /// [`file_tag`](super::file_tag)).
    pub const NEW_FILE: u32 = 7;
    /// The encoding version (varint32); required in the first edit of a
    /// MANIFEST.
    pub const MANIFEST_FORMAT: u32 = 100;
    /// The table the edit applies to (varint32; absent means table 0).
    pub const TABLE: u32 = 200;
    /// Creates the table with this name (UTF-8 bytes).
    pub const TABLE_ADD: u32 = 201;
    /// Drops the table (empty body).
    pub const TABLE_DROP: u32 = 202;
    /// The largest table id ever assigned (varint32).
    pub const MAX_TABLE_ID: u32 = 203;
    /// The table's merge operator name (UTF-8 bytes). Not safe to ignore:
    /// a reader that does not know it would read merge operands without
    /// knowing what they mean.
    pub const MERGE_OPERATOR: u32 = 204;
    /// A WAL synced through a size (RocksDB's `WalAddition`): varint64 log
    /// number, varint64 synced size. Safe to ignore: a reader that does not
    /// know it only verifies less.
    pub const WAL_ADDITION: u32 = SAFE_TO_IGNORE | 1;
    /// The database's identity (16 bytes; RocksDB's `kDbId`), in the
    /// snapshot that starts every MANIFEST once the database has one. Safe
    /// to ignore within an edit (such a reader only checks less), though a
    /// MANIFEST that records it is an owned log (version 3, or 4 with
    /// compact framing), which readers from before identities refuse by
    /// its header.
    pub const DB_ID: u32 = SAFE_TO_IGNORE | 2;
    /// A blob file added to the table (RocksDB's `BlobFileAddition`, same
    /// number): varint64 file number, varint64 file size, varint64 value
    /// count, varint64 stored value bytes, a flags byte (bit 0: a fixed64
    /// whole-file xxh3-64 follows; bit 1: the 16-byte unique id follows),
    /// then those. Not safe to ignore: a reader that skipped it would not
    /// know where the table's values are.
    pub const BLOB_FILE_ADDITION: u32 = 400;
    /// Values of a blob file that became garbage (RocksDB's
    /// `BlobFileGarbage`, same number): varint64 file number, varint64
    /// count, varint64 stored bytes. Not safe to ignore.
    pub const BLOB_FILE_GARBAGE: u32 = 401;
    /// Unknown tags with this bit set may be skipped.
    pub const SAFE_TO_IGNORE: u32 = 1 << 13;
}

/// Field tags inside a [`tag::NEW_FILE`] body. Frozen. Tags 1–6 are
/// required; the others default to 0 (or none) when absent.
pub mod file_tag {
    /// File number (varint64).
    pub const NUMBER: u32 = 1;
    /// File size (varint64).
    pub const SIZE: u32 = 2;
    /// Smallest internal key (bytes).
    pub const SMALLEST: u32 = 3;
    /// Largest internal key (bytes).
    pub const LARGEST: u32 = 4;
    /// Smallest sequence number (varint64).
    pub const SMALLEST_SEQNO: u32 = 5;
    /// Largest sequence number (varint64).
    pub const LARGEST_SEQNO: u32 = 6;
    /// Entry count (varint64).
    pub const NUM_ENTRIES: u32 = 7;
    /// Point tombstone count (varint64).
    pub const NUM_DELETIONS: u32 = 8;
    /// Range tombstone count (varint64).
    pub const NUM_RANGE_DELETIONS: u32 = 9;
    /// Creation time, Unix seconds (varint64).
    pub const CREATION_TIME: u32 = 10;
    /// Oldest ancestor time, Unix seconds (varint64).
    pub const OLDEST_ANCESTOR_TIME: u32 = 11;
    /// xxh3-64 of the whole file (fixed64).
    pub const FILE_CHECKSUM: u32 = 12;
    /// The table's references into blob files (key-value separation):
    /// one triple of varint64 blob file number, varint64 count and varint64
    /// stored bytes per blob file, ascending by number. Not safe to ignore:
    /// a reader from before blob files refuses the table instead of reading
    /// blob indexes as values.
    pub const BLOB_REFS: u32 = 13;
    /// The table's unique id (16 bytes, RocksDB's `kUniqueId`): what the
    /// table's own properties must derive, checked when the database
    /// opens. Safe to ignore within an edit (bit 13 of the tag).
    pub const UNIQUE_ID: u32 = super::tag::SAFE_TO_IGNORE | 1;
}

/// One change to the metadata of a table, plus global counters.
///
/// Fields left `None`/empty are not changed. `log_number`, `comparator`,
/// `merge_operator`,
/// cursors and files apply to [`table`](VersionEdit::table);
/// `next_file_number`, `last_sequence` and `max_table_id` are global.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// The table the edit applies to.
    pub table: TableId,
    /// Creates [`table`](VersionEdit::table) with this name.
    pub table_add: Option<String>,
    /// Drops [`table`](VersionEdit::table) and all its files.
    pub table_drop: bool,
    /// The MANIFEST encoding version (set by the snapshot that starts every
    /// MANIFEST).
    pub manifest_format: Option<u32>,
    /// The table's user comparator name.
    pub comparator: Option<String>,
    /// The table's merge operator name, recorded when the table is first
    /// opened with one; it never changes afterwards.
    pub merge_operator: Option<String>,
    /// The table's log number: WALs with smaller numbers hold nothing
    /// unflushed for it.
    pub log_number: Option<u64>,
    /// The next file number to allocate.
    pub next_file_number: Option<u64>,
    /// The last sequence number used.
    pub last_sequence: Option<SeqNo>,
    /// The largest table id ever assigned.
    pub max_table_id: Option<TableId>,
    /// Where the next compaction of a level should start (RocksDB's
    /// round-robin compaction cursor).
    pub compact_cursors: Vec<(usize, InternalKey)>,
    /// Files removed: (level, file number).
    pub deleted_files: Vec<(usize, u64)>,
    /// Files added: (level, metadata).
    pub new_files: Vec<(usize, FileMetadata)>,
    /// WALs known durable through a size (global, not per table).
    pub wal_additions: Vec<WalAddition>,
    /// The database's identity (global; in the snapshot that starts a
    /// MANIFEST).
    pub db_id: Option<Id>,
    /// Blob files added to the table.
    pub blob_file_additions: Vec<BlobFileMetadata>,
    /// Values of the table's blob files that became garbage. The version
    /// set computes these from the files an edit deletes and adds
    /// ([`VersionSet::log_and_apply`](crate::VersionSet::log_and_apply));
    /// edits given to it carry none.
    pub blob_file_garbage: Vec<BlobFileGarbage>,
}

/// A WAL that was synced through `synced_size` bytes (RocksDB's
/// `WalAddition`, tracked as its `track_and_verify_wals_in_manifest`
/// does). Recovery refuses the WAL if it is missing, shorter than that, or
/// damaged below it: only bytes past the last sync may be lost in a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WalAddition {
    /// The WAL's log (file) number.
    pub number: u64,
    /// Bytes of the file known durable.
    pub synced_size: u64,
}

impl VersionEdit {
    /// An empty edit of `table`.
    pub fn new(table: TableId) -> Self {
        VersionEdit {
            table,
            ..VersionEdit::default()
        }
    }

    /// Records that `file` is added at `level`.
    pub fn add_file(&mut self, level: usize, file: FileMetadata) -> &mut Self {
        self.new_files.push((level, file));
        self
    }

    /// Records that file `number` is removed from `level`.
    pub fn delete_file(&mut self, level: usize, number: u64) -> &mut Self {
        self.deleted_files.push((level, number));
        self
    }

    /// Whether the edit changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == VersionEdit::new(self.table)
    }

    /// Encodes the edit.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// Appends the encoded edit to `dst`.
    pub fn encode_into(&self, dst: &mut Vec<u8>) {
        let mut body = Vec::new();
        let mut field = |dst: &mut Vec<u8>, tag: u32, fill: &dyn Fn(&mut Vec<u8>)| {
            body.clear();
            fill(&mut body);
            put_varint32(dst, tag);
            put_length_prefixed(dst, &body);
        };
        if let Some(v) = self.manifest_format {
            field(dst, tag::MANIFEST_FORMAT, &|b| put_varint32(b, v));
        }
        if let Some(id) = &self.db_id {
            field(dst, tag::DB_ID, &|b| b.extend_from_slice(id.as_bytes()));
        }
        if self.table != DEFAULT_TABLE {
            field(dst, tag::TABLE, &|b| put_varint32(b, self.table));
        }
        if let Some(name) = &self.table_add {
            field(dst, tag::TABLE_ADD, &|b| {
                b.extend_from_slice(name.as_bytes())
            });
        }
        if self.table_drop {
            field(dst, tag::TABLE_DROP, &|_| {});
        }
        if let Some(name) = &self.comparator {
            field(dst, tag::COMPARATOR, &|b| {
                b.extend_from_slice(name.as_bytes())
            });
        }
        if let Some(name) = &self.merge_operator {
            field(dst, tag::MERGE_OPERATOR, &|b| {
                b.extend_from_slice(name.as_bytes())
            });
        }
        if let Some(v) = self.log_number {
            field(dst, tag::LOG_NUMBER, &|b| put_varint64(b, v));
        }
        if let Some(v) = self.next_file_number {
            field(dst, tag::NEXT_FILE_NUMBER, &|b| put_varint64(b, v));
        }
        if let Some(v) = self.last_sequence {
            field(dst, tag::LAST_SEQUENCE, &|b| put_varint64(b, v));
        }
        if let Some(v) = self.max_table_id {
            field(dst, tag::MAX_TABLE_ID, &|b| put_varint32(b, v));
        }
        for (level, key) in &self.compact_cursors {
            field(dst, tag::COMPACT_CURSOR, &|b| {
                put_varint32(b, *level as u32);
                b.extend_from_slice(key.encoded());
            });
        }
        for &(level, number) in &self.deleted_files {
            field(dst, tag::DELETED_FILE, &|b| {
                put_varint32(b, level as u32);
                put_varint64(b, number);
            });
        }
        for (level, file) in &self.new_files {
            field(dst, tag::NEW_FILE, &|b| {
                put_varint32(b, *level as u32);
                encode_file(b, file);
            });
        }
        for wal in &self.wal_additions {
            field(dst, tag::WAL_ADDITION, &|b| {
                put_varint64(b, wal.number);
                put_varint64(b, wal.synced_size);
            });
        }
        for blob in &self.blob_file_additions {
            field(dst, tag::BLOB_FILE_ADDITION, &|b| encode_blob_file(b, blob));
        }
        for g in &self.blob_file_garbage {
            field(dst, tag::BLOB_FILE_GARBAGE, &|b| {
                put_varint64(b, g.number);
                put_varint64(b, g.count);
                put_varint64(b, g.bytes);
            });
        }
    }

    /// Decodes an encoded edit.
    pub fn decode(bytes: &[u8]) -> Result<VersionEdit> {
        let mut edit = VersionEdit::default();
        let mut seen: Vec<u32> = Vec::new();
        let mut d = Decoder::new(bytes);
        while !d.is_empty() {
            let start = d.position();
            let tag = d.varint32().map_err(bad)?;
            let body = d.length_prefixed().map_err(bad)?;
            let base = d.position() - body.len();
            let is_list = matches!(
                tag,
                tag::COMPACT_CURSOR
                    | tag::DELETED_FILE
                    | tag::NEW_FILE
                    | tag::WAL_ADDITION
                    | tag::BLOB_FILE_ADDITION
                    | tag::BLOB_FILE_GARBAGE
            );
            let known = is_list
                || matches!(
                    tag,
                    tag::MANIFEST_FORMAT
                        | tag::TABLE
                        | tag::TABLE_ADD
                        | tag::TABLE_DROP
                        | tag::COMPARATOR
                        | tag::MERGE_OPERATOR
                        | tag::LOG_NUMBER
                        | tag::NEXT_FILE_NUMBER
                        | tag::LAST_SEQUENCE
                        | tag::MAX_TABLE_ID
                        | tag::DB_ID
                );
            if !known {
                if tag & tag::SAFE_TO_IGNORE != 0 {
                    continue;
                }
                return BadEditSnafu {
                    position: start,
                    message: format!(
                        "unknown tag {tag} that is not marked safe to ignore: the MANIFEST was written by a newer lithify, with a feature this one does not have"
                    ),
                }
                .fail();
            }
            if !is_list {
                if seen.contains(&tag) {
                    return BadEditSnafu {
                        position: start,
                        message: format!("tag {tag} appears twice"),
                    }
                    .fail();
                }
                seen.push(tag);
            }
            let mut b = Decoder::new(body);
            let shift = |e: DecodeError| bad(e.shifted(base));
            match tag {
                tag::MANIFEST_FORMAT => edit.manifest_format = Some(b.varint32().map_err(shift)?),
                tag::TABLE => edit.table = b.varint32().map_err(shift)?,
                tag::TABLE_ADD => {
                    edit.table_add = Some(utf8(body, base, "table name")?);
                    b = Decoder::new(&[]);
                }
                tag::TABLE_DROP => edit.table_drop = true,
                tag::COMPARATOR => {
                    edit.comparator = Some(utf8(body, base, "comparator name")?);
                    b = Decoder::new(&[]);
                }
                tag::MERGE_OPERATOR => {
                    edit.merge_operator = Some(utf8(body, base, "merge operator name")?);
                    b = Decoder::new(&[]);
                }
                tag::LOG_NUMBER => edit.log_number = Some(b.varint64().map_err(shift)?),
                tag::NEXT_FILE_NUMBER => edit.next_file_number = Some(b.varint64().map_err(shift)?),
                tag::LAST_SEQUENCE => edit.last_sequence = Some(b.varint64().map_err(shift)?),
                tag::MAX_TABLE_ID => edit.max_table_id = Some(b.varint32().map_err(shift)?),
                tag::DB_ID => {
                    edit.db_id = Some(id_of(body, base, "database identity")?);
                    b = Decoder::new(&[]);
                }
                tag::COMPACT_CURSOR => {
                    let level = level(&mut b, base)?;
                    let key = internal_key(b.remaining(), base + b.position())?;
                    b = Decoder::new(&[]);
                    edit.compact_cursors.push((level, key));
                }
                tag::DELETED_FILE => {
                    let level = level(&mut b, base)?;
                    let number = b.varint64().map_err(shift)?;
                    edit.deleted_files.push((level, number));
                }
                tag::NEW_FILE => {
                    let level = level(&mut b, base)?;
                    let file = decode_file(b.remaining(), base + b.position())?;
                    b = Decoder::new(&[]);
                    edit.new_files.push((level, file));
                }
                tag::WAL_ADDITION => {
                    let number = b.varint64().map_err(shift)?;
                    let synced_size = b.varint64().map_err(shift)?;
                    edit.wal_additions.push(WalAddition {
                        number,
                        synced_size,
                    });
                }
                tag::BLOB_FILE_ADDITION => {
                    edit.blob_file_additions
                        .push(decode_blob_file(&mut b, base)?);
                }
                tag::BLOB_FILE_GARBAGE => {
                    let number = b.varint64().map_err(shift)?;
                    let count = b.varint64().map_err(shift)?;
                    let bytes = b.varint64().map_err(shift)?;
                    edit.blob_file_garbage.push(BlobFileGarbage {
                        number,
                        count,
                        bytes,
                    });
                }
                _ => unreachable!("known tags are matched above"),
            }
            if !b.is_empty() {
                return BadEditSnafu {
                    position: base + b.position(),
                    message: format!(
                        "{} unexpected bytes at the end of tag {tag}",
                        b.remaining().len()
                    ),
                }
                .fail();
            }
        }
        Ok(edit)
    }
}

fn bad(e: DecodeError) -> crate::Error {
    BadEditSnafu {
        position: e.position(),
        message: e.to_string(),
    }
    .build()
}

fn id_of(bytes: &[u8], at: usize, what: &str) -> Result<Id> {
    match <[u8; 16]>::try_from(bytes) {
        Ok(b) => Ok(Id::from_bytes(b)),
        Err(_) => BadEditSnafu {
            position: at,
            message: format!("the {what} has {} bytes, not 16", bytes.len()),
        }
        .fail(),
    }
}

fn utf8(bytes: &[u8], at: usize, what: &str) -> Result<String> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_owned()),
        Err(_) => BadEditSnafu {
            position: at,
            message: format!("the {what} is not UTF-8"),
        }
        .fail(),
    }
}

fn level(b: &mut Decoder<'_>, base: usize) -> Result<usize> {
    let at = base + b.position();
    let level = b.varint32().map_err(|e| bad(e.shifted(base)))? as usize;
    if level >= MAX_LEVELS {
        return BadEditSnafu {
            position: at,
            message: format!("level {level} is not below {MAX_LEVELS}"),
        }
        .fail();
    }
    Ok(level)
}

fn internal_key(bytes: &[u8], at: usize) -> Result<InternalKey> {
    InternalKey::from_encoded(bytes.to_vec()).map_err(|e| bad(e.shifted(at)))
}

fn encode_file(b: &mut Vec<u8>, f: &FileMetadata) {
    let mut sub = |tag: u32, value: &[u8]| {
        put_varint32(b, tag);
        put_length_prefixed(b, value);
    };
    let mut v = Vec::new();
    let mut varint = |tag: u32, x: u64, sub: &mut dyn FnMut(u32, &[u8])| {
        v.clear();
        put_varint64(&mut v, x);
        sub(tag, &v);
    };
    varint(file_tag::NUMBER, f.number, &mut sub);
    varint(file_tag::SIZE, f.size, &mut sub);
    sub(file_tag::SMALLEST, f.smallest.encoded());
    sub(file_tag::LARGEST, f.largest.encoded());
    varint(file_tag::SMALLEST_SEQNO, f.smallest_seqno, &mut sub);
    varint(file_tag::LARGEST_SEQNO, f.largest_seqno, &mut sub);
    for (tag, x) in [
        (file_tag::NUM_ENTRIES, f.num_entries),
        (file_tag::NUM_DELETIONS, f.num_deletions),
        (file_tag::NUM_RANGE_DELETIONS, f.num_range_deletions),
        (file_tag::CREATION_TIME, f.creation_time),
        (file_tag::OLDEST_ANCESTOR_TIME, f.oldest_ancestor_time),
    ] {
        if x != 0 {
            varint(tag, x, &mut sub);
        }
    }
    if let Some(sum) = f.file_checksum {
        let mut fixed = Vec::with_capacity(8);
        put_fixed64(&mut fixed, sum);
        sub(file_tag::FILE_CHECKSUM, &fixed);
    }
    if let Some(id) = &f.unique_id {
        sub(file_tag::UNIQUE_ID, id.as_bytes());
    }
    if !f.blob_refs.is_empty() {
        let mut refs = Vec::with_capacity(f.blob_refs.len() * 8);
        for r in &f.blob_refs {
            put_varint64(&mut refs, r.file_number);
            put_varint64(&mut refs, r.count);
            put_varint64(&mut refs, r.bytes);
        }
        sub(file_tag::BLOB_REFS, &refs);
    }
}

/// The body of a [`tag::BLOB_FILE_ADDITION`] field.
fn encode_blob_file(b: &mut Vec<u8>, blob: &BlobFileMetadata) {
    put_varint64(b, blob.number);
    put_varint64(b, blob.file_size);
    put_varint64(b, blob.blob_count);
    put_varint64(b, blob.blob_bytes);
    let flags = u8::from(blob.file_checksum.is_some()) | (u8::from(blob.unique_id.is_some()) << 1);
    b.push(flags);
    if let Some(sum) = blob.file_checksum {
        put_fixed64(b, sum);
    }
    if let Some(id) = &blob.unique_id {
        b.extend_from_slice(id.as_bytes());
    }
}

/// Decodes the body of a [`tag::BLOB_FILE_ADDITION`] field (`base` is the
/// body's position, for errors).
fn decode_blob_file(b: &mut Decoder<'_>, base: usize) -> Result<BlobFileMetadata> {
    let shift = |e: DecodeError| bad(e.shifted(base));
    let number = b.varint64().map_err(shift)?;
    let file_size = b.varint64().map_err(shift)?;
    let blob_count = b.varint64().map_err(shift)?;
    let blob_bytes = b.varint64().map_err(shift)?;
    let flags_at = base + b.position();
    let flags = b.u8().map_err(shift)?;
    if flags & !0b11 != 0 {
        return BadEditSnafu {
            position: flags_at,
            message: format!("blob file {number:06} has unknown flags {flags:#04x}"),
        }
        .fail();
    }
    let file_checksum = if flags & 1 != 0 {
        Some(b.fixed64().map_err(shift)?)
    } else {
        None
    };
    let unique_id = if flags & 2 != 0 {
        let at = base + b.position();
        let bytes = b.bytes(16, "blob file unique id").map_err(shift)?;
        Some(id_of(bytes, at, "blob file's unique id")?)
    } else {
        None
    };
    Ok(BlobFileMetadata {
        number,
        file_size,
        blob_count,
        blob_bytes,
        file_checksum,
        unique_id,
    })
}

/// Decodes the body of a [`file_tag::BLOB_REFS`] field: ascending blob
/// file numbers, each with a count above 0.
fn decode_blob_refs(body: &[u8], at: usize) -> Result<Vec<BlobRef>> {
    let mut d = Decoder::new(body);
    let mut refs: Vec<BlobRef> = Vec::new();
    while !d.is_empty() {
        let start = at + d.position();
        let shift = |e: DecodeError| bad(e.shifted(at));
        let r = BlobRef {
            file_number: d.varint64().map_err(shift)?,
            count: d.varint64().map_err(shift)?,
            bytes: d.varint64().map_err(shift)?,
        };
        if r.count == 0 || refs.last().is_some_and(|p| p.file_number >= r.file_number) {
            return BadEditSnafu {
                position: start,
                message: format!(
                    "blob reference to {:06} with {} values: references must ascend by blob file and count at least one value",
                    r.file_number, r.count
                ),
            }
            .fail();
        }
        refs.push(r);
    }
    Ok(refs)
}

fn decode_file(bytes: &[u8], base: usize) -> Result<FileMetadata> {
    let mut number = None;
    let mut size = None;
    let mut smallest = None;
    let mut largest = None;
    let mut smallest_seqno = None;
    let mut largest_seqno = None;
    let mut counts = [0u64; 5];
    let mut checksum = None;
    let mut unique_id = None;
    let mut blob_refs = Vec::new();
    let mut seen: Vec<u32> = Vec::new();
    let mut d = Decoder::new(bytes);
    while !d.is_empty() {
        let start = base + d.position();
        let tag = d.varint32().map_err(|e| bad(e.shifted(base)))?;
        let body = d.length_prefixed().map_err(|e| bad(e.shifted(base)))?;
        let at = base + d.position() - body.len();
        if tag == file_tag::UNIQUE_ID {
            if unique_id.is_some() {
                return BadEditSnafu {
                    position: start,
                    message: "the file's unique id appears twice".to_owned(),
                }
                .fail();
            }
            unique_id = Some(id_of(body, at, "file's unique id")?);
            continue;
        }
        if tag > file_tag::BLOB_REFS || tag == 0 {
            if tag & tag::SAFE_TO_IGNORE != 0 {
                continue;
            }
            return BadEditSnafu {
                position: start,
                message: format!(
                    "unknown file field {tag} that is not marked safe to ignore: the file was added by a newer lithify, with a feature this one does not have"
                ),
            }
            .fail();
        }
        if seen.contains(&tag) {
            return BadEditSnafu {
                position: start,
                message: format!("file field {tag} appears twice"),
            }
            .fail();
        }
        seen.push(tag);
        let whole_varint = |body: &[u8]| -> Result<u64> {
            let mut b = Decoder::new(body);
            let v = b.varint64().map_err(|e| bad(e.shifted(at)))?;
            if !b.is_empty() {
                return BadEditSnafu {
                    position: at + b.position(),
                    message: format!("unexpected bytes after file field {tag}"),
                }
                .fail();
            }
            Ok(v)
        };
        match tag {
            file_tag::NUMBER => number = Some(whole_varint(body)?),
            file_tag::SIZE => size = Some(whole_varint(body)?),
            file_tag::SMALLEST => smallest = Some(internal_key(body, at)?),
            file_tag::LARGEST => largest = Some(internal_key(body, at)?),
            file_tag::SMALLEST_SEQNO => smallest_seqno = Some(whole_varint(body)?),
            file_tag::LARGEST_SEQNO => largest_seqno = Some(whole_varint(body)?),
            file_tag::BLOB_REFS => blob_refs = decode_blob_refs(body, at)?,
            file_tag::FILE_CHECKSUM => {
                let mut b = Decoder::new(body);
                checksum = Some(b.fixed64().map_err(|e| bad(e.shifted(at)))?);
                if !b.is_empty() {
                    return BadEditSnafu {
                        position: at + 8,
                        message: "unexpected bytes after the file checksum".to_owned(),
                    }
                    .fail();
                }
            }
            t => counts[(t - file_tag::NUM_ENTRIES) as usize] = whole_varint(body)?,
        }
    }
    let missing = |what: &str| {
        BadEditSnafu {
            position: base,
            message: format!("new file without its {what}"),
        }
        .build()
    };
    let mut file = FileMetadata::new(
        number.ok_or_else(|| missing("number"))?,
        size.ok_or_else(|| missing("size"))?,
        smallest.ok_or_else(|| missing("smallest key"))?,
        largest.ok_or_else(|| missing("largest key"))?,
    );
    file.smallest_seqno = smallest_seqno.ok_or_else(|| missing("smallest seqno"))?;
    file.largest_seqno = largest_seqno.ok_or_else(|| missing("largest seqno"))?;
    [
        file.num_entries,
        file.num_deletions,
        file.num_range_deletions,
        file.creation_time,
        file.oldest_ancestor_time,
    ] = counts;
    file.file_checksum = checksum;
    file.unique_id = unique_id;
    file.blob_refs = blob_refs;
    Ok(file)
}

/// Encodes an edit group (the payload of one MANIFEST record).
pub fn encode_group(edits: &[VersionEdit]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut one = Vec::new();
    for edit in edits {
        one.clear();
        edit.encode_into(&mut one);
        put_length_prefixed(&mut out, &one);
    }
    out
}

/// Decodes an edit group; positions in errors are relative to `bytes`.
pub fn decode_group(bytes: &[u8]) -> Result<Vec<VersionEdit>> {
    let mut d = Decoder::new(bytes);
    let mut edits = Vec::new();
    while !d.is_empty() {
        let one = d.length_prefixed().map_err(bad)?;
        let base = d.position() - one.len();
        let edit = VersionEdit::decode(one).map_err(|e| match e {
            crate::Error::BadEdit {
                position, message, ..
            } => BadEditSnafu {
                position: position + base,
                message,
            }
            .build(),
            other => other,
        })?;
        edits.push(edit);
    }
    if edits.is_empty() {
        return BadEditSnafu {
            position: 0usize,
            message: "an edit group holds no edit".to_owned(),
        }
        .fail();
    }
    Ok(edits)
}

impl fmt::Display for VersionEdit {
    /// One header line `edit table=N ...` with the scalar fields, then one
    /// indented line per deleted file, new file and cursor.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "edit table={}", self.table)?;
        if let Some(v) = self.manifest_format {
            write!(f, " format={v}")?;
        }
        if let Some(id) = &self.db_id {
            write!(f, " db_id={id}")?;
        }
        if let Some(name) = &self.table_add {
            write!(f, " add={name:?}")?;
        }
        if self.table_drop {
            write!(f, " drop")?;
        }
        if let Some(name) = &self.comparator {
            write!(f, " comparator={name}")?;
        }
        if let Some(name) = &self.merge_operator {
            write!(f, " merge_operator={name}")?;
        }
        if let Some(v) = self.log_number {
            write!(f, " log={v}")?;
        }
        if let Some(v) = self.next_file_number {
            write!(f, " next_file={v}")?;
        }
        if let Some(v) = self.last_sequence {
            write!(f, " last_seq={v}")?;
        }
        if let Some(v) = self.max_table_id {
            write!(f, " max_table={v}")?;
        }
        writeln!(f)?;
        for (level, number) in &self.deleted_files {
            writeln!(f, "  delete L{level} {number:06}")?;
        }
        for (level, file) in &self.new_files {
            writeln!(f, "  add L{level} {file}")?;
        }
        for (level, key) in &self.compact_cursors {
            writeln!(f, "  cursor L{level} {key}")?;
        }
        for wal in &self.wal_additions {
            writeln!(f, "  wal {:06} synced={}", wal.number, wal.synced_size)?;
        }
        for blob in &self.blob_file_additions {
            write!(
                f,
                "  add blob {:06} values={} bytes={} size={}",
                blob.number, blob.blob_count, blob.blob_bytes, blob.file_size
            )?;
            if let Some(sum) = blob.file_checksum {
                write!(f, " checksum={sum:#018x}")?;
            }
            if let Some(id) = &blob.unique_id {
                write!(f, " id={id}")?;
            }
            writeln!(f)?;
        }
        for g in &self.blob_file_garbage {
            writeln!(
                f,
                "  garbage blob {:06} values={} bytes={}",
                g.number, g.count, g.bytes
            )?;
        }
        Ok(())
    }
}
