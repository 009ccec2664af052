//! The properties block: what a table holds, recorded when it is built.
//!
//! Stored as a block (restart interval 1) of `name -> value` entries sorted
//! by name. Numbers are varint64s; names and keys are raw bytes. Readers
//! ignore names they do not know, so properties can be added without a new
//! format version. The identity properties (`lithify.db_id`,
//! `lithify.db_session_id`, `lithify.orig_file_number`) are optional: a
//! table used alone, or written before they existed, has none.

use bytes::Bytes;
use lithify_base::Id;
use lithify_base::coding::{decode_varint64, put_varint64};

use crate::block::{Block, BlockBuilder, BlockIter};

/// What a table holds. Recorded by the builder, read on open.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Properties {
    /// Table format version.
    pub format_version: u32,
    /// Name of the comparator the keys are ordered by.
    pub comparator: String,
    /// Name of the key schema (`lithify.PlainKeys`, `lithify.InternalKeys`).
    pub key_schema: String,
    /// Configured data-block compression (`none`, `zstd`); blocks that did
    /// not shrink by 1/8 are stored raw regardless.
    pub compression: String,
    /// Point entries (data-block entries).
    pub num_entries: u64,
    /// Point entries that are deletions, `Delete` or `SingleDelete`
    /// (internal keys only).
    pub num_deletions: u64,
    /// Range tombstones (range-deletion block entries).
    pub num_range_deletions: u64,
    /// Sum of point-entry key lengths.
    pub raw_key_bytes: u64,
    /// Sum of point-entry value lengths.
    pub raw_value_bytes: u64,
    /// Number of data blocks.
    pub num_data_blocks: u64,
    /// Bytes of data blocks, trailers included (they start the file).
    pub data_size: u64,
    /// Bytes of the index block, trailer included.
    pub index_size: u64,
    /// Bytes of the filter block, trailer included (0 without a filter).
    pub filter_size: u64,
    /// Smallest point key (empty when there are no point entries).
    pub smallest_key: Vec<u8>,
    /// Largest point key (empty when there are no point entries).
    pub largest_key: Vec<u8>,
    /// Smallest sequence number of any entry or range tombstone (0 when
    /// keys carry none).
    pub min_seqno: u64,
    /// Largest sequence number of any entry or range tombstone.
    pub max_seqno: u64,
    /// When the table was built, in seconds since the Unix epoch.
    pub creation_time: u64,
    /// The identity of the database that wrote the table (RocksDB's
    /// `db_id` property), if it was given one.
    pub db_id: Option<Id>,
    /// The identity of the open of that database that wrote it (RocksDB's
    /// `db_session_id`).
    pub db_session_id: Option<Id>,
    /// The file number the table was written under (RocksDB's
    /// `orig_file_number`; 0 when unknown). It stays when the file is
    /// linked or copied under another name.
    pub orig_file_number: u64,
}

const COMPARATOR: &[u8] = b"lithify.comparator";
const DB_ID: &[u8] = b"lithify.db_id";
const DB_SESSION_ID: &[u8] = b"lithify.db_session_id";
const ORIG_FILE_NUMBER: &[u8] = b"lithify.orig_file_number";
const COMPRESSION: &[u8] = b"lithify.compression";
const CREATION_TIME: &[u8] = b"lithify.creation_time";
const DATA_SIZE: &[u8] = b"lithify.data_size";
const FILTER_SIZE: &[u8] = b"lithify.filter_size";
const FORMAT_VERSION: &[u8] = b"lithify.format_version";
const INDEX_SIZE: &[u8] = b"lithify.index_size";
const KEY_SCHEMA: &[u8] = b"lithify.key_schema";
const LARGEST_KEY: &[u8] = b"lithify.largest_key";
const MAX_SEQNO: &[u8] = b"lithify.max_seqno";
const MIN_SEQNO: &[u8] = b"lithify.min_seqno";
const NUM_DATA_BLOCKS: &[u8] = b"lithify.num_data_blocks";
const NUM_DELETIONS: &[u8] = b"lithify.num_deletions";
const NUM_ENTRIES: &[u8] = b"lithify.num_entries";
const NUM_RANGE_DELETIONS: &[u8] = b"lithify.num_range_deletions";
const RAW_KEY_BYTES: &[u8] = b"lithify.raw_key_bytes";
const RAW_VALUE_BYTES: &[u8] = b"lithify.raw_value_bytes";
const SMALLEST_KEY: &[u8] = b"lithify.smallest_key";

/// Every property, in the order written (sorted by name).
const ALL: [&[u8]; 18] = [
    COMPARATOR,
    COMPRESSION,
    CREATION_TIME,
    DATA_SIZE,
    FILTER_SIZE,
    FORMAT_VERSION,
    INDEX_SIZE,
    KEY_SCHEMA,
    LARGEST_KEY,
    MAX_SEQNO,
    MIN_SEQNO,
    NUM_DATA_BLOCKS,
    NUM_DELETIONS,
    NUM_ENTRIES,
    NUM_RANGE_DELETIONS,
    RAW_KEY_BYTES,
    RAW_VALUE_BYTES,
    SMALLEST_KEY,
];

impl Properties {
    /// The table's unique id (RocksDB's unique SST id): derived from the
    /// database, session and original file number that wrote it, so it
    /// follows the file through links and copies, and no table written
    /// elsewhere has it (copies of one file share it). `None` for a table
    /// written without an identity.
    ///
    /// ```
    /// use lithify_base::Id;
    /// use lithify_sstable::Properties;
    ///
    /// let mut p = Properties::default();
    /// assert_eq!(p.unique_id(), None);
    /// p.db_id = Some(Id::from_bytes([1; 16]));
    /// p.db_session_id = Some(Id::from_bytes([2; 16]));
    /// p.orig_file_number = 7;
    /// let id = p.unique_id().unwrap();
    /// p.orig_file_number = 8;
    /// assert_ne!(p.unique_id(), Some(id));
    /// ```
    pub fn unique_id(&self) -> Option<Id> {
        let (db, session) = (self.db_id?, self.db_session_id?);
        Some(Id::derive(&[
            db.as_bytes(),
            session.as_bytes(),
            &self.orig_file_number.to_le_bytes(),
        ]))
    }

    /// Writes the properties block into `block` (reset first).
    pub(crate) fn encode_into(&self, block: &mut BlockBuilder) {
        block.reset();
        let mut num = Vec::with_capacity(10);
        // The identity first (its names sort before the rest), when given.
        let mut names: Vec<&[u8]> = ALL.to_vec();
        if self.db_id.is_some() {
            names.extend([DB_ID, DB_SESSION_ID, ORIG_FILE_NUMBER]);
            names.sort_unstable();
        }
        for name in names {
            let text: &[u8] = match name {
                COMPARATOR => self.comparator.as_bytes(),
                COMPRESSION => self.compression.as_bytes(),
                KEY_SCHEMA => self.key_schema.as_bytes(),
                LARGEST_KEY => &self.largest_key,
                SMALLEST_KEY => &self.smallest_key,
                DB_ID => self.db_id.as_ref().map_or(&[][..], |i| i.as_bytes()),
                DB_SESSION_ID => self
                    .db_session_id
                    .as_ref()
                    .map_or(&[][..], |i| i.as_bytes()),
                _ => {
                    num.clear();
                    put_varint64(&mut num, self.number(name));
                    &num
                }
            };
            block.add(name, text);
        }
    }

    fn number(&self, name: &[u8]) -> u64 {
        match name {
            CREATION_TIME => self.creation_time,
            DATA_SIZE => self.data_size,
            FILTER_SIZE => self.filter_size,
            FORMAT_VERSION => u64::from(self.format_version),
            INDEX_SIZE => self.index_size,
            MAX_SEQNO => self.max_seqno,
            MIN_SEQNO => self.min_seqno,
            NUM_DATA_BLOCKS => self.num_data_blocks,
            NUM_DELETIONS => self.num_deletions,
            NUM_ENTRIES => self.num_entries,
            NUM_RANGE_DELETIONS => self.num_range_deletions,
            RAW_KEY_BYTES => self.raw_key_bytes,
            RAW_VALUE_BYTES => self.raw_value_bytes,
            ORIG_FILE_NUMBER => self.orig_file_number,
            _ => 0,
        }
    }

    /// Decodes a properties block; the error is a phrase.
    pub(crate) fn decode(data: Bytes) -> Result<Properties, String> {
        let block = Block::new(data).map_err(|e| e.to_string())?;
        let mut it = BlockIter::new(block, Vec::new());
        let mut p = Properties::default();
        let mut seen = [false; ALL.len()];
        it.first().map_err(|e| e.to_string())?;
        while it.valid() {
            let name = it.key();
            let value = it.value();
            let id = || -> Result<Id, String> {
                let bytes: [u8; 16] = value.try_into().map_err(|_| {
                    format!(
                        "property {} is not a 16-byte identity",
                        String::from_utf8_lossy(name)
                    )
                })?;
                Ok(Id::from_bytes(bytes))
            };
            match name {
                DB_ID => p.db_id = Some(id()?),
                DB_SESSION_ID => p.db_session_id = Some(id()?),
                ORIG_FILE_NUMBER => match decode_varint64(value) {
                    Ok((v, n)) if n == value.len() => p.orig_file_number = v,
                    _ => return Err("property lithify.orig_file_number is not a varint".into()),
                },
                _ => {}
            }
            if let Some(i) = ALL.iter().position(|n| *n == name) {
                if seen[i] {
                    return Err(format!(
                        "property {} appears twice",
                        String::from_utf8_lossy(name)
                    ));
                }
                seen[i] = true;
                let text = || {
                    String::from_utf8(value.to_vec()).map_err(|_| {
                        format!("property {} is not UTF-8", String::from_utf8_lossy(name))
                    })
                };
                let number = || match decode_varint64(value) {
                    Ok((v, n)) if n == value.len() => Ok(v),
                    _ => Err(format!(
                        "property {} is not a varint",
                        String::from_utf8_lossy(name)
                    )),
                };
                match ALL[i] {
                    COMPARATOR => p.comparator = text()?,
                    COMPRESSION => p.compression = text()?,
                    KEY_SCHEMA => p.key_schema = text()?,
                    LARGEST_KEY => p.largest_key = value.to_vec(),
                    SMALLEST_KEY => p.smallest_key = value.to_vec(),
                    FORMAT_VERSION => {
                        p.format_version = u32::try_from(number()?)
                            .map_err(|_| "format version property too large".to_string())?;
                    }
                    CREATION_TIME => p.creation_time = number()?,
                    DATA_SIZE => p.data_size = number()?,
                    FILTER_SIZE => p.filter_size = number()?,
                    INDEX_SIZE => p.index_size = number()?,
                    MAX_SEQNO => p.max_seqno = number()?,
                    MIN_SEQNO => p.min_seqno = number()?,
                    NUM_DATA_BLOCKS => p.num_data_blocks = number()?,
                    NUM_DELETIONS => p.num_deletions = number()?,
                    NUM_ENTRIES => p.num_entries = number()?,
                    NUM_RANGE_DELETIONS => p.num_range_deletions = number()?,
                    RAW_KEY_BYTES => p.raw_key_bytes = number()?,
                    RAW_VALUE_BYTES => p.raw_value_bytes = number()?,
                    _ => {}
                }
            }
            it.next().map_err(|e| e.to_string())?;
        }
        if let Some(i) = seen.iter().position(|s| !s) {
            return Err(format!(
                "property {} is missing",
                String::from_utf8_lossy(ALL[i])
            ));
        }
        if p.db_id.is_some() != p.db_session_id.is_some() {
            return Err(
                "one of the properties lithify.db_id and lithify.db_session_id is missing".into(),
            );
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_are_sorted() {
        assert!(ALL.windows(2).all(|w| w[0] < w[1]));
    }

    proptest! {
        #[test]
        fn round_trip(n in proptest::collection::vec(any::<u64>(), 13),
                      small in proptest::collection::vec(any::<u8>(), 0..20),
                      large in proptest::collection::vec(any::<u8>(), 0..20),
                      version: u32) {
            let p = Properties {
                format_version: version,
                comparator: "lithify.BytewiseComparator".into(),
                key_schema: "lithify.PlainKeys".into(),
                compression: "zstd".into(),
                num_entries: n[0], num_deletions: n[1], num_range_deletions: n[2],
                raw_key_bytes: n[3], raw_value_bytes: n[4], num_data_blocks: n[5],
                data_size: n[6], index_size: n[7], filter_size: n[8],
                smallest_key: small, largest_key: large,
                min_seqno: n[9], max_seqno: n[10], creation_time: n[11],
                ..Properties::default()
            };
            let mut b = BlockBuilder::new(1);
            p.encode_into(&mut b);
            let data = Bytes::copy_from_slice(b.finish());
            prop_assert_eq!(Properties::decode(data.clone()).unwrap(), p);
        }
    }

    proptest! {
        #[test]
        fn identity_round_trips(db: [u8; 16], session: [u8; 16], number: u64) {
            let p = Properties {
                comparator: "c".into(),
                key_schema: "k".into(),
                compression: "none".into(),
                db_id: Some(Id::from_bytes(db)),
                db_session_id: Some(Id::from_bytes(session)),
                orig_file_number: number,
                ..Properties::default()
            };
            let mut b = BlockBuilder::new(1);
            p.encode_into(&mut b);
            let back = Properties::decode(Bytes::copy_from_slice(b.finish())).unwrap();
            prop_assert_eq!(back.unique_id(), p.unique_id());
            prop_assert_eq!(back, p);
        }
    }

    #[test]
    fn missing_and_unknown_properties() {
        let mut b = BlockBuilder::new(1);
        b.add(b"lithify.comparator", b"x");
        b.add(b"zzz.unknown", b"ignored");
        let err = Properties::decode(Bytes::copy_from_slice(b.finish())).unwrap_err();
        assert_eq!(err, "property lithify.compression is missing");
    }
}
