//! Names of the files in a database directory.
//!
//! | file | name |
//! |---|---|
//! | sstable | `NNNNNN.sst` |
//! | blob file (separated values) | `NNNNNN.blob` |
//! | write-ahead log | `NNNNNN.log` |
//! | MANIFEST | `MANIFEST-NNNNNN` |
//! | the live MANIFEST's name | `CURRENT` |
//! | CURRENT being replaced | `CURRENT.tmp` |
//!
//! Numbers are written with at least six digits and all come from one
//! counter ([`VersionSet::new_file_number`](crate::VersionSet::new_file_number)),
//! so a number names one file for the life of the database.
//!
//! ```
//! use lithify_version::filename::{FileKind, parse_file_name, sst_file_name};
//!
//! assert_eq!(sst_file_name(12), "000012.sst");
//! assert_eq!(parse_file_name("MANIFEST-000003"), Some(FileKind::Manifest(3)));
//! assert_eq!(parse_file_name("1234567.log"), Some(FileKind::Log(1234567)));
//! assert_eq!(parse_file_name("000009.blob"), Some(FileKind::Blob(9)));
//! assert_eq!(parse_file_name("notes.txt"), None);
//! ```

/// The name of the file that names the live MANIFEST.
pub const CURRENT: &str = "CURRENT";

/// The temporary name CURRENT is written under before the rename.
pub const CURRENT_TMP: &str = "CURRENT.tmp";

/// What a file in the database directory is.
///
/// Exhaustive on purpose: purge, checkpoints and backups decide for every
/// kind of file, so a new kind must stop their build until they do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// An SST (sorted string table).
    Sst(u64),
    /// A blob file: values kept out of the SSTs (key-value separation).
    Blob(u64),
    /// A write-ahead log.
    Log(u64),
    /// A MANIFEST.
    Manifest(u64),
    /// `CURRENT`.
    Current,
    /// `CURRENT.tmp`, left by a crash while replacing CURRENT.
    CurrentTmp,
}

/// `NNNNNN.sst`.
pub fn sst_file_name(number: u64) -> String {
    format!("{number:06}.sst")
}

/// `NNNNNN.blob`.
pub fn blob_file_name(number: u64) -> String {
    format!("{number:06}.blob")
}

/// `NNNNNN.log`.
pub fn log_file_name(number: u64) -> String {
    format!("{number:06}.log")
}

/// `MANIFEST-NNNNNN`.
pub fn manifest_file_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// What `name` is, if it is a lithify file.
pub fn parse_file_name(name: &str) -> Option<FileKind> {
    fn number(digits: &str) -> Option<u64> {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    }
    match name {
        CURRENT => return Some(FileKind::Current),
        CURRENT_TMP => return Some(FileKind::CurrentTmp),
        _ => {}
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return number(n).map(FileKind::Manifest);
    }
    if let Some(n) = name.strip_suffix(".sst") {
        return number(n).map(FileKind::Sst);
    }
    if let Some(n) = name.strip_suffix(".blob") {
        return number(n).map(FileKind::Blob);
    }
    if let Some(n) = name.strip_suffix(".log") {
        return number(n).map(FileKind::Log);
    }
    None
}
