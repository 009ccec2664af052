//! The cleaner's checkpoint: `cleaner-offset-checkpoint` in each data
//! directory (the directory holding the `<topic>-<partition>` log
//! directories), how far the cleaner has cleaned each of its logs: the
//! first dirty offset of the next round.
//!
//! The file is one of Kafka's offset checkpoint files, in their format
//! ([`lithify_kafka_log::checkpoint`]: version 0, an entry count, one
//! `<topic> <partition> <offset>` line per log), replaced whole and
//! crash-safely. Kafka takes a data directory offline when the file cannot
//! be read (`CheckpointFileWithFailureHandler`); so does the
//! [`LogCleanerManager`](crate::LogCleanerManager), which names the file,
//! the line and the byte offset and never overwrites it.
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::path::Path;
//! use lithify_vfs::{FileSystem, MemFs};
//! use lithify_kafka_log::{TopicPartition, checkpoint as format};
//! use lithify_compaction_logclean::checkpoint;
//!
//! let fs = MemFs::new();
//! let dir = Path::new("/kafka");
//! fs.create_dir_all(dir).unwrap();
//! assert!(checkpoint::read(&fs, dir).unwrap().is_empty()); // no file yet
//! let mut offsets = BTreeMap::new();
//! offsets.insert(TopicPartition::new("log", 0), 999);
//! checkpoint::write(&fs, dir, &offsets).unwrap();
//! assert_eq!(format::encode(&offsets), "0\n1\nlog 0 999\n");
//! assert_eq!(checkpoint::read(&fs, dir).unwrap(), offsets);
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lithify_kafka_log::TopicPartition;
use lithify_kafka_log::checkpoint::{read_file, write_file};
use lithify_vfs::FileSystem;

use crate::error::Result;

/// The cleaner's checkpoint file name inside a data directory.
pub const FILE_NAME: &str = lithify_kafka_log::checkpoint::CLEANER_OFFSET_FILE_NAME;

/// The checkpoint file of `data_dir`.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE_NAME)
}

/// Reads the cleaner's checkpoint of `data_dir`; a missing file has no
/// entries.
pub fn read(fs: &dyn FileSystem, data_dir: &Path) -> Result<BTreeMap<TopicPartition, i64>> {
    Ok(read_file(fs, &path(data_dir))?)
}

/// Replaces the cleaner's checkpoint of `data_dir` with `entries`,
/// crash-safely.
pub fn write(
    fs: &dyn FileSystem,
    data_dir: &Path,
    entries: &BTreeMap<TopicPartition, i64>,
) -> Result<()> {
    Ok(write_file(fs, &path(data_dir), entries)?)
}
