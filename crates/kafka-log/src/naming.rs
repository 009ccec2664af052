//! Names of the files in a partition directory (Kafka's `LogFileUtils`).
//!
//! A segment with base offset `B` is the files `<B>.log`, `<B>.index`,
//! `<B>.timeindex` and, when it has entries, `<B>.txnindex`, where `<B>` is
//! the offset zero-padded to 20 decimal digits; `<B>.snapshot` is the
//! producer state as of offset `B`. While the cleaner replaces
//! segments a temporary suffix follows: `.cleaned` (being written), `.swap`
//! (complete, about to replace older segments), `.deleted` (replaced, to be
//! removed). The offset is read from the text before the first `.`.
//!
//! ```
//! use lithify_kafka_log::naming::{self, FileKind, Suffix};
//!
//! assert_eq!(naming::file_name(7206178, FileKind::Index, Suffix::Swap),
//!            "00000000000007206178.index.swap");
//! let parsed = naming::parse("00000000002147483649.log.deleted").unwrap();
//! assert_eq!((parsed.base_offset, parsed.kind, parsed.suffix),
//!            (2147483649, FileKind::Log, Suffix::Deleted));
//! assert_eq!(naming::parse_partition_dir("orders-3"), Some(("orders".to_string(), 3)));
//! ```

/// What Kafka log files directory `dir` holds, in a few words: segment
/// files (a partition directory), the offset checkpoints (a data
/// directory), a writer's `.lock`; `None` when it holds none. Tools use it
/// to refuse writing their outputs among a log's files.
///
/// ```
/// use std::path::Path;
/// use std::sync::Arc;
/// use lithify_kafka_log::{Log, LogConfig, SimpleRecord, naming::holds_log_data};
/// use lithify_vfs::{FileSystem, MemFs};
///
/// let fs = Arc::new(MemFs::new());
/// let mut log = Log::open(fs.clone(), Path::new("/data/t-0"), LogConfig::default()).unwrap();
/// log.append(&[SimpleRecord::new(1, "k", "v")]).unwrap();
/// assert!(holds_log_data(&*fs, Path::new("/data/t-0")).unwrap().contains("segment"));
/// assert_eq!(holds_log_data(&*fs, Path::new("/")), None);
/// ```
pub fn holds_log_data(fs: &dyn lithify_vfs::FileSystem, dir: &std::path::Path) -> Option<String> {
    let names = fs.list_dir(dir).ok()?;
    let segments = names
        .iter()
        .filter(|n| parse(n).is_some_and(|p| p.kind != FileKind::Other))
        .count();
    let mut found = Vec::new();
    if segments > 0 {
        found.push(format!("{segments} segment file(s)"));
    }
    for special in [
        crate::checkpoint::RECOVERY_POINT_FILE_NAME,
        crate::checkpoint::CLEANER_OFFSET_FILE_NAME,
        crate::LOCK_FILE_NAME,
    ] {
        if names.iter().any(|n| n == special) {
            found.push(special.to_owned());
        }
    }
    (!found.is_empty()).then(|| found.join(", "))
}

/// What a segment file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileKind {
    /// `.log`: the record batches.
    Log,
    /// `.index`: the offset index.
    Index,
    /// `.timeindex`: the time index.
    TimeIndex,
    /// `.txnindex`: the aborted-transaction index.
    TxnIndex,
    /// `.snapshot`: a producer state snapshot.
    Snapshot,
    /// Any other file named after an offset.
    Other,
}

impl FileKind {
    /// The extension, with its dot (empty for `Other`).
    pub fn extension(self) -> &'static str {
        match self {
            FileKind::Log => ".log",
            FileKind::Index => ".index",
            FileKind::TimeIndex => ".timeindex",
            FileKind::TxnIndex => ".txnindex",
            FileKind::Snapshot => ".snapshot",
            FileKind::Other => "",
        }
    }

    /// The files of one segment, in the order Kafka renames them.
    pub const SEGMENT_FILES: [FileKind; 4] = [
        FileKind::Log,
        FileKind::Index,
        FileKind::TimeIndex,
        FileKind::TxnIndex,
    ];

    /// Whether this is one of the index files.
    pub fn is_index(self) -> bool {
        matches!(
            self,
            FileKind::Index | FileKind::TimeIndex | FileKind::TxnIndex
        )
    }
}

/// The temporary suffix of a segment file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Suffix {
    /// A live segment file.
    None,
    /// `.cleaned`: a cleaner output being written.
    Cleaned,
    /// `.swap`: a complete replacement not yet renamed into place.
    Swap,
    /// `.deleted`: a replaced file waiting for removal.
    Deleted,
}

impl Suffix {
    /// The suffix text, with its dot (empty for `None`).
    pub fn as_str(self) -> &'static str {
        match self {
            Suffix::None => "",
            Suffix::Cleaned => ".cleaned",
            Suffix::Swap => ".swap",
            Suffix::Deleted => ".deleted",
        }
    }
}

/// A parsed segment file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedName {
    /// The offset in the name.
    pub base_offset: i64,
    /// What the file holds.
    pub kind: FileKind,
    /// Its temporary suffix.
    pub suffix: Suffix,
}

/// The name of a segment file: `<base, 20 digits><extension><suffix>`.
pub fn file_name(base_offset: i64, kind: FileKind, suffix: Suffix) -> String {
    format!("{base_offset:020}{}{}", kind.extension(), suffix.as_str())
}

/// The offset a file name starts with (the digits before the first `.`).
pub fn offset_from_file_name(name: &str) -> Option<i64> {
    let digits = name.split('.').next()?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Parses a file name named after an offset.
pub fn parse(name: &str) -> Option<ParsedName> {
    let base_offset = offset_from_file_name(name)?;
    let (rest, suffix) = [Suffix::Cleaned, Suffix::Swap, Suffix::Deleted]
        .into_iter()
        .find_map(|s| name.strip_suffix(s.as_str()).map(|r| (r, s)))
        .unwrap_or((name, Suffix::None));
    let kind = [
        FileKind::Log,
        FileKind::Index,
        FileKind::TimeIndex,
        FileKind::TxnIndex,
        FileKind::Snapshot,
    ]
    .into_iter()
    .find(|k| {
        rest.strip_suffix(k.extension())
            .is_some_and(|stem| !stem.contains('.'))
    })
    .unwrap_or(FileKind::Other);
    Some(ParsedName {
        base_offset,
        kind,
        suffix,
    })
}

/// The live files of a partition directory, by kind (names with a
/// `.deleted`, `.cleaned` or `.swap` suffix and unknown names are left out).
#[derive(Debug, Default)]
pub(crate) struct LiveFiles {
    /// Base offsets of the `.log` files, ascending.
    pub(crate) logs: Vec<i64>,
    /// Index files (`.index`, `.timeindex`, `.txnindex`): base offset, name.
    pub(crate) indexes: Vec<(i64, String)>,
    /// Producer `.snapshot` files: offset, name.
    pub(crate) snapshots: Vec<(i64, String)>,
}

/// Sorts the names of a partition directory into its [`LiveFiles`].
pub(crate) fn live_files(names: &[String]) -> LiveFiles {
    let mut files = LiveFiles::default();
    for name in names {
        let Some(p) = parse(name) else {
            continue;
        };
        if p.suffix != Suffix::None {
            continue;
        }
        match p.kind {
            FileKind::Log => files.logs.push(p.base_offset),
            FileKind::Snapshot => files.snapshots.push((p.base_offset, name.clone())),
            kind if kind.is_index() => files.indexes.push((p.base_offset, name.clone())),
            _ => {}
        }
    }
    files.logs.sort_unstable();
    files
}

/// Splits a partition directory name `<topic>-<partition>`.
pub fn parse_partition_dir(name: &str) -> Option<(String, i32)> {
    let (topic, partition) = name.rsplit_once('-')?;
    if topic.is_empty() {
        return None;
    }
    let partition: i32 = partition.parse().ok()?;
    (partition >= 0).then(|| (topic.to_string(), partition))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in FileKind::SEGMENT_FILES {
            for suffix in [Suffix::None, Suffix::Cleaned, Suffix::Swap, Suffix::Deleted] {
                let name = file_name(12345, kind, suffix);
                assert_eq!(
                    name.len(),
                    20 + kind.extension().len() + suffix.as_str().len()
                );
                let p = parse(&name).unwrap();
                assert_eq!((p.base_offset, p.kind, p.suffix), (12345, kind, suffix));
            }
        }
        let p = parse("00000000000000000100.snapshot").unwrap();
        assert_eq!((p.base_offset, p.kind), (100, FileKind::Snapshot));
        let p = parse("00000000000000000100.leader-epoch").unwrap();
        assert_eq!((p.base_offset, p.kind), (100, FileKind::Other));
        assert_eq!(parse("leader-epoch-checkpoint"), None);
        // The lock file is never a segment, index, snapshot or partition.
        assert_eq!(parse(crate::LOCK_FILE_NAME), None);
        assert_eq!(offset_from_file_name(crate::LOCK_FILE_NAME), None);
        assert_eq!(parse_partition_dir(crate::LOCK_FILE_NAME), None);
        assert_eq!(parse(".log"), None);
        assert_eq!(
            parse_partition_dir("my-topic-12"),
            Some(("my-topic".into(), 12))
        );
        assert_eq!(parse_partition_dir("topic"), None);
        assert_eq!(parse_partition_dir("-1"), None);
    }
}
