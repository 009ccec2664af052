//! What an open recovered and what it dropped: the [`RecoveryReport`], and
//! the `lost/` directory where damaged files are kept instead of deleted.
//!
//! Recovery may drop bytes only by a documented rule (see
//! `docs/ARCHITECTURE.md`, "What lithify does with damage"): a WAL tail
//! past its last sync that a crash cut short or that point-in-time
//! recovery stops at, WALs after such a stop, a MANIFEST record a crash
//! cut short. Each dropped range is reported here, in an event, and in
//! [`DbStats::recovery`](crate::DbStats::recovery); the file it came from
//! is moved into `lost/` under the database directory (RocksDB repair's
//! convention) rather than deleted, so the evidence stays. A read-only
//! open reports the same ranges and leaves every file where it is.

use std::fmt;
use std::path::{Path, PathBuf};

use lithify_base::SeqNo;
use lithify_wal::RecoveryMode;

/// The directory, under the database directory, where recovery keeps the
/// files it dropped bytes from (named by [`lithify_vfs::lost`]'s rule).
pub use lithify_vfs::lost::LOST_DIR;

/// One byte range an open dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedBytes {
    /// The file the bytes were in, as the open found it.
    pub file: PathBuf,
    /// Offset of the first dropped byte (the start of the damaged record).
    pub offset: u64,
    /// Bytes dropped, to the end of the file.
    pub len: u64,
    /// Why, as a sentence.
    pub reason: String,
    /// Where the whole file is kept now (in `lost/`); `None` when it was
    /// left in place (a read-only open changes nothing).
    pub kept: Option<PathBuf>,
}

impl fmt::Display for DroppedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "dropped {} bytes of {} from offset {}: {}",
            self.len,
            self.file.display(),
            self.offset,
            self.reason
        )?;
        match &self.kept {
            Some(p) => write!(f, "; the file is kept as {}", p.display()),
            None => write!(f, "; the file is left in place"),
        }
    }
}

/// What an open recovered and dropped (RocksDB reports the same through
/// its info LOG; here it is also a value): see
/// [`Db::recovery_report`](crate::Db::recovery_report) and
/// [`DbStats::recovery`](crate::DbStats::recovery).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecoveryReport {
    /// The WAL recovery mode of the open.
    pub mode: RecoveryMode,
    /// Whether the open was read-only (nothing written, nothing moved).
    pub read_only: bool,
    /// WALs read, in order.
    pub wals_replayed: Vec<u64>,
    /// The last sequence number recovered.
    pub last_sequence: SeqNo,
    /// Every byte range dropped, in the order found.
    pub dropped: Vec<DroppedBytes>,
}

impl RecoveryReport {
    /// Whether nothing was dropped.
    pub fn is_clean(&self) -> bool {
        self.dropped.is_empty()
    }

    /// Bytes dropped in all.
    pub fn bytes_dropped(&self) -> u64 {
        self.dropped.iter().map(|d| d.len).sum()
    }
}

impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match self.mode {
            RecoveryMode::TolerateCorruptedTailRecords => "tolerate-corrupted-tail-records",
            RecoveryMode::AbsoluteConsistency => "absolute-consistency",
            RecoveryMode::PointInTimeRecovery => "point-in-time",
            RecoveryMode::SkipAnyCorruptedRecords => "skip-any-corrupted-records",
        };
        if self.is_clean() {
            return write!(
                f,
                "recovery ({mode}): {} WAL(s) replayed to sequence {}, nothing dropped",
                self.wals_replayed.len(),
                self.last_sequence
            );
        }
        let files: std::collections::BTreeSet<&Path> =
            self.dropped.iter().map(|d| d.file.as_path()).collect();
        write!(
            f,
            "recovery ({mode}) dropped {} bytes in {} file(s) and recovered to sequence {}",
            self.bytes_dropped(),
            files.len(),
            self.last_sequence
        )?;
        if self.read_only {
            write!(f, " (read-only open: the files are left in place)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_read_as_sentences() {
        let mut r = RecoveryReport {
            mode: RecoveryMode::PointInTimeRecovery,
            wals_replayed: vec![4, 5],
            last_sequence: 90,
            ..RecoveryReport::default()
        };
        assert_eq!(
            r.to_string(),
            "recovery (point-in-time): 2 WAL(s) replayed to sequence 90, nothing dropped"
        );
        r.dropped.push(DroppedBytes {
            file: "/db/000005.log".into(),
            offset: 2769,
            len: 1000,
            reason: "checksum mismatch, followed by intact records".into(),
            kept: Some("/db/lost/000005.log".into()),
        });
        assert!(!r.is_clean());
        assert_eq!(r.bytes_dropped(), 1000);
        assert_eq!(
            r.to_string(),
            "recovery (point-in-time) dropped 1000 bytes in 1 file(s) and recovered to sequence 90"
        );
        assert_eq!(
            r.dropped[0].to_string(),
            "dropped 1000 bytes of /db/000005.log from offset 2769: checksum mismatch, \
             followed by intact records; the file is kept as /db/lost/000005.log"
        );
    }
}
