//! The LSM text form: versions written as text, for tests and tools.
//!
//! Compaction pickers are pure functions of a version, so their tests
//! describe LSM shapes as text (in the spirit of Pebble's `testdata`):
//!
//! ```text
//! # comments and blank lines are ignored
//! L0:
//!   000012:[a#5,SET-c#3,SET] size=1024
//!   000011:[b#4,SET-d#4,DEL] size=512 seqnums=[2-4] entries=10 deletions=2
//! L1: cursor=b#0,SET
//!   000007:[a#1,SET-b#1,SET] size=64K
//!   000008:[c#1,SET-f#1,RANGEDEL] size=1M created=1700000000 ancestor=1690000000
//! ```
//!
//! * A level line is `L<n>:`, optionally followed by `cursor=<key>` (the
//!   level's compaction cursor). Levels without files may be omitted.
//! * A file line (indented) is `<number>:[<smallest>-<largest>]`, keys in
//!   the internal-key text form of `lithify-base` (`user#seqno,KIND`; `#`,
//!   `,` and `\` inside user keys are written `\xNN`, so the line splits
//!   unambiguously), then optional attributes:
//!   * `size=<n>` with an optional `K`, `M` or `G` suffix (powers of 1024);
//!     default 0;
//!   * `seqnums=[<smallest>-<largest>]`; default the range of the two keys'
//!     seqnos;
//!   * `entries=`, `deletions=`, `rangedels=`, `created=`, `ancestor=`
//!     (file counts and times; default 0), `checksum=0x<hex>` (default
//!     none), `id=<unique id>` (default none);
//!   * `blob=<blob file>:<count>/<bytes>`, once per blob file the table
//!     refers to (its [`BlobRef`]s).
//! * After the levels, a `blobs:` line starts the table's blob files, one
//!   per line: `<number>.blob values=<n> bytes=<n> garbage=<count>/<bytes>`.
//!   Each must be referred to by some file, by exactly its values that are
//!   not garbage.
//! * Files may be listed in any order: L0 is sorted newest first, L1+ by
//!   smallest key; the version's invariants are then checked (L1+ files must
//!   not overlap).
//!
//! Printing (the `Display` of [`Version`] and [`FileMetadata`]) writes the
//! canonical form: levels in order, files in level order, sizes in bytes,
//! attributes only when not at their default. Parsing what was printed
//! gives back an equal version.

use std::fmt;
use std::sync::Arc;

use lithify_base::{InternalKey, InternalKeyComparator};

use crate::blob_file::{BlobFileGarbage, BlobFileMetadata, BlobRef};
use crate::builder::VersionBuilder;
use crate::edit::{TableId, VersionEdit};
use crate::error::{Result, TextSnafu};
use crate::file_metadata::FileMetadata;
use crate::version::Version;

/// Writes a file in the text form.
pub(crate) fn write_file(f: &mut fmt::Formatter<'_>, m: &FileMetadata) -> fmt::Result {
    write!(
        f,
        "{:06}:[{}-{}] size={}",
        m.number, m.smallest, m.largest, m.size
    )?;
    let (a, b) = (m.smallest.seqno(), m.largest.seqno());
    if (m.smallest_seqno, m.largest_seqno) != (a.min(b), a.max(b)) {
        write!(f, " seqnums=[{}-{}]", m.smallest_seqno, m.largest_seqno)?;
    }
    for (name, v) in [
        ("entries", m.num_entries),
        ("deletions", m.num_deletions),
        ("rangedels", m.num_range_deletions),
        ("created", m.creation_time),
        ("ancestor", m.oldest_ancestor_time),
    ] {
        if v != 0 {
            write!(f, " {name}={v}")?;
        }
    }
    if let Some(sum) = m.file_checksum {
        write!(f, " checksum={sum:#018x}")?;
    }
    if let Some(id) = &m.unique_id {
        write!(f, " id={id}")?;
    }
    for r in &m.blob_refs {
        write!(f, " blob={:06}:{}/{}", r.file_number, r.count, r.bytes)?;
    }
    Ok(())
}

/// Writes a version in the text form.
pub(crate) fn write_version(f: &mut fmt::Formatter<'_>, v: &Version) -> fmt::Result {
    for level in 0..v.num_levels() {
        let cursor = v.compact_cursor(level);
        if v.num_files(level) == 0 && cursor.is_none() {
            continue;
        }
        write!(f, "L{level}:")?;
        if let Some(c) = cursor {
            write!(f, " cursor={c}")?;
        }
        writeln!(f)?;
        for file in v.files(level) {
            write!(f, "  ")?;
            write_file(f, file)?;
            writeln!(f)?;
        }
    }
    if !v.blob_files().is_empty() {
        writeln!(f, "blobs:")?;
        for blob in v.blob_files().values() {
            writeln!(f, "  {blob}")?;
        }
    }
    Ok(())
}

/// Parses a version of `table` in the text form.
pub fn parse_version(
    text: &str,
    table: TableId,
    cmp: InternalKeyComparator,
    num_levels: usize,
) -> Result<Version> {
    let mut edit = VersionEdit::new(table);
    let mut level: Option<usize> = None;
    let mut in_blobs = false;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let err = |message: String| TextSnafu {
            message: format!("line {line_no}: {message}"),
        };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line == "blobs:" {
            in_blobs = true;
            continue;
        }
        if in_blobs {
            let (meta, garbage) = parse_blob_file(line).map_err(|m| err(m).build())?;
            if garbage.count != 0 || garbage.bytes != 0 {
                edit.blob_file_garbage.push(garbage);
            }
            edit.blob_file_additions.push(meta);
            continue;
        }
        if let Some(rest) = line.strip_prefix('L')
            && let Some((n, tail)) = rest.split_once(':')
            && let Ok(n) = n.parse::<usize>()
        {
            if n >= num_levels {
                return err(format!("level L{n} does not exist ({num_levels} levels)")).fail();
            }
            level = Some(n);
            let tail = tail.trim();
            if let Some(key) = tail.strip_prefix("cursor=") {
                let key = InternalKey::from_text(key).map_err(|e| err(e.to_string()).build())?;
                edit.compact_cursors.push((n, key));
            } else if !tail.is_empty() {
                return err(format!("unexpected `{tail}` after the level")).fail();
            }
            continue;
        }
        let Some(level) = level else {
            return err("a file line before any level line".to_owned()).fail();
        };
        let file = parse_file(line).map_err(|m| err(m).build())?;
        edit.add_file(level, file);
    }
    let base = Arc::new(Version::new(table, cmp, num_levels));
    let mut builder = VersionBuilder::new(base);
    builder
        .apply(&edit)
        .map_err(|message| TextSnafu { message }.build())?;
    let built = builder
        .build()
        .map_err(|message| TextSnafu { message }.build())?;
    Ok(built.version)
}

/// Parses one file line: `000012:[a#5,SET-c#3,SET] size=1024 ...`.
pub fn parse_file(line: &str) -> std::result::Result<FileMetadata, String> {
    let (number, rest) = line
        .split_once(":[")
        .ok_or_else(|| format!("`{line}` is not of the form NUMBER:[SMALLEST-LARGEST]"))?;
    let number: u64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{number}` is not a file number"))?;
    let (smallest, rest) = split_key(rest, '-')?;
    let (largest, rest) = split_key(rest, ']')?;
    let mut file = FileMetadata::new(number, 0, smallest, largest);
    for attr in rest.split_whitespace() {
        let (name, value) = attr
            .split_once('=')
            .ok_or_else(|| format!("attribute `{attr}` is not NAME=VALUE"))?;
        let int = || -> std::result::Result<u64, String> {
            value
                .parse()
                .map_err(|_| format!("`{value}` is not a number in `{attr}`"))
        };
        match name {
            "size" => file.size = parse_size(value)?,
            "seqnums" => {
                let inner = value
                    .strip_prefix('[')
                    .and_then(|v| v.strip_suffix(']'))
                    .and_then(|v| v.split_once('-'))
                    .ok_or_else(|| format!("`{attr}` is not seqnums=[A-B]"))?;
                let p = |s: &str| s.parse().map_err(|_| format!("`{s}` is not a seqno"));
                file.smallest_seqno = p(inner.0)?;
                file.largest_seqno = p(inner.1)?;
            }
            "entries" => file.num_entries = int()?,
            "deletions" => file.num_deletions = int()?,
            "rangedels" => file.num_range_deletions = int()?,
            "created" => file.creation_time = int()?,
            "ancestor" => file.oldest_ancestor_time = int()?,
            "checksum" => {
                let hex = value.strip_prefix("0x").unwrap_or(value);
                file.file_checksum = Some(
                    u64::from_str_radix(hex, 16)
                        .map_err(|_| format!("`{value}` is not a hex checksum"))?,
                );
            }
            "id" => {
                file.unique_id = Some(
                    lithify_base::Id::parse(value)
                        .ok_or_else(|| format!("`{value}` is not a unique id"))?,
                );
            }
            "blob" => {
                let bad = || format!("`{attr}` is not blob=FILE:COUNT/BYTES");
                let (number, counts) = value.split_once(':').ok_or_else(bad)?;
                let (count, bytes) = counts.split_once('/').ok_or_else(bad)?;
                let p = |s: &str| s.parse::<u64>().map_err(|_| bad());
                file.blob_refs.push(BlobRef {
                    file_number: p(number)?,
                    count: p(count)?,
                    bytes: p(bytes)?,
                });
                file.blob_refs.sort();
            }
            _ => return Err(format!("unknown attribute `{name}`")),
        }
    }
    Ok(file)
}

/// Parses one blob file line: `000012.blob values=10 bytes=10240
/// garbage=2/2048`.
fn parse_blob_file(line: &str) -> std::result::Result<(BlobFileMetadata, BlobFileGarbage), String> {
    let mut words = line.split_whitespace();
    let name = words.next().unwrap_or_default();
    let number: u64 = name
        .strip_suffix(".blob")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("`{name}` is not NUMBER.blob"))?;
    let mut meta = BlobFileMetadata {
        number,
        file_size: 0,
        blob_count: 0,
        blob_bytes: 0,
        file_checksum: None,
        unique_id: None,
    };
    let mut garbage = BlobFileGarbage {
        number,
        count: 0,
        bytes: 0,
    };
    for attr in words {
        let (name, value) = attr
            .split_once('=')
            .ok_or_else(|| format!("attribute `{attr}` is not NAME=VALUE"))?;
        let p = |s: &str| {
            s.parse::<u64>()
                .map_err(|_| format!("`{s}` is not a number in `{attr}`"))
        };
        match name {
            "values" => meta.blob_count = p(value)?,
            "bytes" => meta.blob_bytes = p(value)?,
            "size" => meta.file_size = parse_size(value)?,
            "garbage" => {
                let (c, b) = value
                    .split_once('/')
                    .ok_or_else(|| format!("`{attr}` is not garbage=COUNT/BYTES"))?;
                garbage.count = p(c)?;
                garbage.bytes = p(b)?;
            }
            _ => return Err(format!("unknown blob file attribute `{name}`")),
        }
    }
    Ok((meta, garbage))
}

/// Splits `text` at the end of an internal key's text form followed by
/// `sep`: the key is everything up to the first `#`, its seqno, `,` and the
/// upper-case kind name (user keys never hold a raw `#` or `,`).
fn split_key(text: &str, sep: char) -> std::result::Result<(InternalKey, &str), String> {
    let hash = text
        .find('#')
        .ok_or_else(|| format!("no internal key in `{text}`"))?;
    let comma = text[hash..]
        .find(',')
        .map(|c| c + hash)
        .ok_or_else(|| format!("no `,KIND` in `{text}`"))?;
    let kind_len = text[comma + 1..]
        .find(|c: char| !(c.is_ascii_uppercase() || c == '_'))
        .unwrap_or(text.len() - comma - 1);
    let end = comma + 1 + kind_len;
    let key = InternalKey::from_text(&text[..end]).map_err(|e| e.to_string())?;
    let rest = text[end..]
        .strip_prefix(sep)
        .ok_or_else(|| format!("expected `{sep}` after key `{}`", &text[..end]))?;
    Ok((key, rest))
}

fn parse_size(value: &str) -> std::result::Result<u64, String> {
    let (digits, mult) = match value.as_bytes().last() {
        Some(b'K') => (&value[..value.len() - 1], 1u64 << 10),
        Some(b'M') => (&value[..value.len() - 1], 1 << 20),
        Some(b'G') => (&value[..value.len() - 1], 1 << 30),
        _ => (value, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("`{value}` is not a size"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_line_round_trip() {
        let line = "000012:[a#5,SET-c#3,SET] size=1024";
        let f = parse_file(line).unwrap();
        assert_eq!(f.to_string(), line);
        assert_eq!((f.smallest_seqno, f.largest_seqno), (3, 5));
        let line = "000011:[b\\x23-x#4,SET-d]#MAX,RANGEDEL] size=65536 seqnums=[2-9] entries=10 deletions=2 rangedels=1 created=7 ancestor=6 checksum=0x00000000deadbeef";
        let f = parse_file(line).unwrap();
        assert_eq!(f.smallest.user_key(), b"b#-x");
        assert_eq!(f.largest.user_key(), b"d]");
        assert_eq!(f.to_string(), line);
        assert_eq!(
            parse_file("7:[a#1,SET-b#1,SET] size=64K").unwrap().size,
            65536
        );
    }

    #[test]
    fn bad_lines_are_errors() {
        for line in [
            "x:[a#1,SET-b#1,SET]",
            "7:[a#1,SET b#1,SET]",
            "7:[a#1,SET-b#1,SET] size=big",
            "7:[a#1,SET-b#1,SET] colour=red",
            "7:[a#1,SET-b#1,SET] seqnums=4",
            "7:[a#1,PUT-b#1,SET]",
        ] {
            assert!(parse_file(line).is_err(), "{line}");
        }
        let err =
            Version::from_text("L1:\n 1:[a#1,SET-c#1,SET]\n 2:[b#1,SET-d#1,SET]\n").unwrap_err();
        assert!(err.to_string().contains("overlap"), "{err}");
        assert!(Version::from_text("  1:[a#1,SET-c#1,SET]").is_err());
        assert!(Version::from_text("L9:").is_err());
    }
}
