//! Kafka's offset checkpoint files (`OffsetCheckpointFile`, version 0): a
//! data directory's `recovery-point-offset-checkpoint`, how far each log
//! was flushed (what [`Log::open`](crate::Log::open) may truncate and what
//! it must refuse), and the log cleaner's `cleaner-offset-checkpoint` (how
//! far each log was cleaned; `lithify-compaction-logclean` reads and
//! writes it with this module).
//!
//! One file of each per data directory (the directory holding the
//! `<topic>-<partition>` log directories), UTF-8 text with `\n` line ends:
//!
//! ```text
//! 0                           <- version, must be 0
//! 2                           <- number of entries
//! orders 0 1500               <- topic, partition, offset
//! orders 1 0
//! ```
//!
//! Reading follows Kafka's `CheckpointFile` exactly: an empty file (or one
//! with only the version line) has no entries; each entry line splits on
//! runs of whitespace into exactly three fields; a later entry for the same
//! partition wins; any other deviation (a version other than 0, a
//! non-numeric field, a count that does not match the entries, bytes that
//! are not UTF-8) is [`Error::CheckpointMalformed`](crate::Error::CheckpointMalformed),
//! which names the file, the line and the byte offset where that line
//! starts. The format is Kafka's, so it carries no checksum of its own: it
//! is only ever replaced whole, by [`lithify_vfs::write_file_atomic`]
//! (write `<name>.tmp`, fsync, rename, fsync the directory), so a crash
//! leaves the old or the new file, never a torn one.
//!
//! We write entries sorted by topic and partition (Kafka writes them in
//! hash-map order; readers accept any order).
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::path::Path;
//! use lithify_vfs::{FileSystem, MemFs};
//! use lithify_kafka_log::{TopicPartition, checkpoint};
//!
//! let fs = MemFs::new();
//! let file = Path::new("/kafka/recovery-point-offset-checkpoint");
//! fs.create_dir_all(Path::new("/kafka")).unwrap();
//! assert!(checkpoint::read_file(&fs, file).unwrap().is_empty()); // no file yet
//! let mut offsets = BTreeMap::new();
//! offsets.insert(TopicPartition::new("log", 0), 999);
//! checkpoint::write_file(&fs, file, &offsets).unwrap();
//! assert_eq!(checkpoint::encode(&offsets), "0\n1\nlog 0 999\n");
//! assert_eq!(checkpoint::read_file(&fs, file).unwrap(), offsets);
//! ```

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use lithify_vfs::FileSystem;
use snafu::ResultExt as _;

use crate::TopicPartition;
use crate::error::{CheckpointMalformedSnafu, IoSnafu, Result};

/// The recovery points' file name inside a data directory (Kafka's
/// `LogManager.RecoveryPointCheckpointFile`): for each log, the offset
/// below which every batch was flushed. Same format as the cleaner's.
pub const RECOVERY_POINT_FILE_NAME: &str = "recovery-point-offset-checkpoint";

/// The log cleaner's file of first dirty offsets in a data directory
/// (Kafka's `LogCleanerManager.offsetCheckpointFile`).
pub const CLEANER_OFFSET_FILE_NAME: &str = "cleaner-offset-checkpoint";

/// The only version of the format (Kafka's `CURRENT_VERSION`).
pub const VERSION: i32 = 0;

/// The file's text for `entries`.
pub fn encode(entries: &BTreeMap<TopicPartition, i64>) -> String {
    let mut out = format!("{VERSION}\n{}\n", entries.len());
    for (tp, offset) in entries {
        out.push_str(&format!("{} {} {offset}\n", tp.topic, tp.partition));
    }
    out
}

/// Whitespace as Java's `\s`.
fn is_java_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0B' | '\x0C' | '\r')
}

/// Java's `line.split("\\s+")`: runs of whitespace separate fields, a
/// leading run yields an empty first field, trailing runs yield nothing.
fn java_split(line: &str) -> Vec<&str> {
    let trimmed = line.trim_end_matches(is_java_space);
    if trimmed.is_empty() {
        return vec![""];
    }
    let mut fields = Vec::new();
    if trimmed.starts_with(is_java_space) {
        fields.push("");
    }
    fields.extend(trimmed.split(is_java_space).filter(|f| !f.is_empty()));
    fields
}

/// Java's `BufferedReader.readLine` over the whole text: lines end at
/// `\n`, `\r` or `\r\n`; a final line without an end still counts. Each
/// line comes with the byte offset where it starts.
fn java_lines(text: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push((start, &text[start..i]));
                i += 1;
                start = i;
            }
            b'\r' => {
                lines.push((start, &text[start..i]));
                i += 1;
                if bytes.get(i) == Some(&b'\n') {
                    i += 1;
                }
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < bytes.len() {
        lines.push((start, &text[start..]));
    }
    lines
}

/// Parses a checkpoint's bytes (`path` only names the file in errors).
pub fn decode(path: &Path, bytes: &[u8]) -> Result<BTreeMap<TopicPartition, i64>> {
    let malformed = |line: usize, offset: usize, message: String| {
        CheckpointMalformedSnafu {
            path,
            line,
            offset: offset as u64,
            message,
        }
        .build()
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let bad = e.valid_up_to();
        let line = bytes[..bad].iter().filter(|b| **b == b'\n').count() + 1;
        malformed(line, bad, format!("byte {bad} is not valid UTF-8"))
    })?;
    let lines = java_lines(text);
    let mut entries = BTreeMap::new();
    let Some(&(at, version)) = lines.first() else {
        return Ok(entries);
    };
    let version: i32 = version
        .parse()
        .map_err(|_| malformed(1, at, format!("the version {version:?} is not a number")))?;
    if version != VERSION {
        return Err(malformed(
            1,
            at,
            format!("unrecognised version {version}, expected {VERSION}"),
        ));
    }
    let Some(&(at, count)) = lines.get(1) else {
        return Ok(entries);
    };
    let expected: i32 = count
        .parse()
        .map_err(|_| malformed(2, at, format!("the entry count {count:?} is not a number")))?;
    if expected < 0 {
        return Err(malformed(2, at, format!("negative entry count {expected}")));
    }
    let mut found = 0usize;
    for (i, &(at, line)) in lines.iter().enumerate().skip(2) {
        let number = i + 1;
        let fields = java_split(line);
        let [topic, partition, offset] = fields[..] else {
            return Err(malformed(
                number,
                at,
                format!(
                    "{line:?} has {} fields, expected \"<topic> <partition> <offset>\"",
                    fields.len()
                ),
            ));
        };
        let partition: i32 = partition.parse().map_err(|_| {
            malformed(
                number,
                at,
                format!("partition {partition:?} is not a number"),
            )
        })?;
        let offset: i64 = offset
            .parse()
            .map_err(|_| malformed(number, at, format!("offset {offset:?} is not a number")))?;
        entries.insert(TopicPartition::new(topic, partition), offset);
        found += 1;
    }
    if found != expected as usize {
        return Err(malformed(
            lines.len(),
            bytes.len(),
            format!("the file declares {expected} entries but holds {found}"),
        ));
    }
    Ok(entries)
}

/// Reads the offset checkpoint file at `path` (any of Kafka's
/// `OffsetCheckpointFile`s); a missing file has no entries.
pub fn read_file(fs: &dyn FileSystem, path: &Path) -> Result<BTreeMap<TopicPartition, i64>> {
    match lithify_vfs::read_file(fs, path) {
        Ok(bytes) => decode(path, &bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(e).context(IoSnafu {
            action: "read",
            path,
        }),
    }
}

/// Replaces the offset checkpoint file at `path` with `entries`,
/// crash-safely (`.tmp`, fsync, rename, directory fsync).
pub fn write_file(
    fs: &dyn FileSystem,
    path: &Path,
    entries: &BTreeMap<TopicPartition, i64>,
) -> Result<()> {
    lithify_vfs::write_file_atomic(fs, path, encode(entries).as_bytes()).context(IoSnafu {
        action: "write",
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<BTreeMap<TopicPartition, i64>> {
        decode(Path::new("/d/cleaner-offset-checkpoint"), text.as_bytes())
    }

    #[test]
    fn kafka_reader_edge_cases() {
        assert!(parse("").unwrap().is_empty());
        assert!(parse("0").unwrap().is_empty());
        assert!(parse("0\n").unwrap().is_empty());
        assert!(parse("0\n0\n").unwrap().is_empty());
        let m = parse("0\r\n2\r\na 1 5\r\nb\t2   -7").unwrap();
        assert_eq!(m[&TopicPartition::new("a", 1)], 5);
        assert_eq!(m[&TopicPartition::new("b", 2)], -7);
        // The last entry for a partition wins, as in Kafka's HashMap.
        let m = parse("0\n2\na 1 5\na 1 9\n").unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[&TopicPartition::new("a", 1)], 9);
        // Trailing whitespace is dropped by Java's split.
        assert_eq!(parse("0\n1\na 1 5  \n").unwrap().len(), 1);
        assert_eq!(
            parse("0\n1\na +1 +5\n").unwrap()[&TopicPartition::new("a", 1)],
            5
        );
    }

    #[test]
    fn golden_bytes_of_the_formats_worked_example() {
        let entries = BTreeMap::from([
            (TopicPartition::new("orders", 3), 52),
            (TopicPartition::new("log", 0), 999),
        ]);
        let text = encode(&entries);
        assert_eq!(
            text.as_bytes(),
            b"\x30\x0a\x32\x0a\x6c\x6f\x67\x20\x30\x20\x39\x39\x39\x0a\
              \x6f\x72\x64\x65\x72\x73\x20\x33\x20\x35\x32\x0a"
        );
        assert_eq!(parse(&text).unwrap(), entries);
    }

    proptest::proptest! {
        #[test]
        fn encode_then_decode_round_trips(
            entries in proptest::collection::btree_map(
                ("[a-zA-Z0-9._-]{1,20}", proptest::num::i32::ANY),
                proptest::num::i64::ANY,
                0..20,
            )
        ) {
            let entries: BTreeMap<TopicPartition, i64> = entries
                .into_iter()
                .map(|((t, p), o)| (TopicPartition::new(t, p), o))
                .collect();
            proptest::prop_assert_eq!(parse(&encode(&entries)).unwrap(), entries);
        }
    }

    #[test]
    fn malformed_files_name_the_file_and_line() {
        for (text, line, what) in [
            ("1\n0\n", 1, "unrecognised version 1"),
            ("x\n", 1, "version \"x\""),
            ("0\nx\n", 2, "count \"x\""),
            ("0\n-1\n", 2, "negative"),
            ("0\n1\na 1\n", 3, "has 2 fields"),
            ("0\n1\n a 1 2\n", 3, "has 4 fields"),
            ("0\n1\n\n", 3, "has 1 fields"),
            ("0\n1\na b 2\n", 3, "partition \"b\""),
            ("0\n1\na 1 99999999999999999999\n", 3, "offset"),
            ("0\n2\na 1 2\n", 3, "declares 2 entries but holds 1"),
            ("0\n0\na 1 2\n", 3, "declares 0 entries but holds 1"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(
                err.contains("/d/cleaner-offset-checkpoint")
                    && err.contains(&format!("line {line}"))
                    && err.contains(what),
                "{text:?}: {err}"
            );
        }
        let err = decode(Path::new("/c"), b"0\n1\n\xff 1 2\n").unwrap_err();
        assert!(err.to_string().contains("line 3"), "{err}");
        assert_eq!(err.file_offset(), Some((Path::new("/c"), 4)));
        // The byte offset is where the bad line starts.
        let err = parse("0\n1\na b 2\n").unwrap_err();
        assert!(err.to_string().contains("byte offset 4"), "{err}");
        let err = parse("0\n2\na 1 2\n").unwrap_err();
        assert!(err.to_string().contains("byte offset 10"), "{err}");
        assert!(err.is_corruption());
    }
}
