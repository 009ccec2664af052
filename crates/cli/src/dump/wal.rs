//! `dump-wal FILE`: the records of a write-ahead log and the writes in
//! them.
//!
//! The log is read with `lithify::inspect::wal::Reader` in a recovery mode of your
//! choice — by default point-in-time recovery, which shows exactly what the
//! engine would replay; `--wal-recovery-mode skip` salvages the
//! records after damage too. Each record is decoded as the engine's WAL
//! payload (a write batch or the predecessor note a log starts with), and
//! every dropped byte range is printed with its offset and reason.
//!
//! Damage — a hole followed by intact records, or a payload that does not
//! decode — fails the command at the end, naming the file and offset; a
//! torn tail, what a crash during the last write leaves, does not. Whether
//! dropped bytes were a tail is the `lithify-wal` reader's call: in skip
//! mode (which drops the rest of a block without looking further) a second
//! pass in `TolerateCorruptedTailRecords` mode decides.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use clap::Args;
use lithify::files::{FileKind, parse_file_name};
use lithify::inspect::manifest::DEFAULT_TABLE;
use lithify::inspect::wal::{DroppedRange, FILE_HEADER_LEN, FileHeader, LogEnd, Reader, WalRecord};
use lithify::vfs::{FileSystem as _, OsFs};
use lithify::{RecoveryMode, ValueKind};
use snafu::ResultExt as _;

use crate::db::RecoveryArgs;
use crate::error::{DamagedSnafu, IoSnafu, Result, WalSnafu};
use crate::text::HexArgs;

/// Arguments of `dump-wal`.
#[derive(Debug, Args)]
pub(crate) struct DumpWalArgs {
    /// The log file (`NNNNNN.log`).
    pub file: PathBuf,
    /// Print every entry: an SST's keys and values (internal keys as
    /// `key#seq,KIND`), a WAL's writes record by record, a blob file's
    /// records (offset, key, size; `--values` adds each value).
    #[arg(long)]
    pub entries: bool,
    #[command(flatten)]
    pub hex: HexArgs,
    #[command(flatten)]
    pub recovery: RecoveryArgs,
}

/// Runs `dump-wal`.
pub(crate) fn run(a: DumpWalArgs) -> Result<()> {
    let enc = a.hex.encoding();
    let path = a.file.as_path();
    super::refuse_other_format(path, lithify::FileFormat::RecordLog, false)?;
    let file = OsFs.open(path).context(IoSnafu {
        action: "open",
        path,
    })?;
    let (log_number, header_problem) = log_number(&*file, path)?;
    println!("log {} (log number {log_number})", path.display());
    let mut damage: Vec<String> = Vec::new();
    if let Some(problem) = header_problem {
        println!("DAMAGED header at offset 0: {problem}; using the log number in the file name");
        damage.push(format!("at offset 0: {problem}"));
    }
    let dropped: Arc<Mutex<Vec<DroppedRange>>> = Arc::default();
    let sink = Arc::clone(&dropped);
    let mut reader = Reader::new(file, path, log_number)
        .context(WalSnafu)?
        .with_mode(a.recovery.wal_recovery_mode)
        .with_reporter(move |d: &DroppedRange| {
            if let Ok(mut v) = sink.lock() {
                v.push(*d);
            }
        });
    if damage.is_empty()
        && let Some(owner) = reader.owner().context(WalSnafu)?
    {
        println!("owner: database {owner}");
    }
    let mut records = 0u64;
    let mut writes = 0u64;
    let mut sequences: Option<(u64, u64)> = None;
    let mut line = String::new();
    let mut printed = 0;
    loop {
        let record = match reader.read_record() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                report_dropped(&dropped, &mut printed);
                return Err(e).context(WalSnafu);
            }
        };
        report_dropped(&dropped, &mut printed);
        records += 1;
        let (offset, len) = (record.offset, record.payload.len());
        match WalRecord::decode(record.payload) {
            Ok(WalRecord::Predecessor(p)) => println!(
                "record at offset {offset}, {len} bytes: predecessor log {} ending at sequence {}",
                p.log_number, p.last_sequence
            ),
            Ok(WalRecord::Batch(batch)) => {
                println!(
                    "record at offset {offset}, {len} bytes: batch at sequence {}, {} writes",
                    batch.sequence, batch.count
                );
                let last = batch.sequence + u64::from(batch.count).saturating_sub(1);
                if batch.count > 0 {
                    sequences = Some(match sequences {
                        None => (batch.sequence, last),
                        Some((lo, hi)) => (lo.min(batch.sequence), hi.max(last)),
                    });
                }
                for (i, entry) in batch.iter().enumerate() {
                    let entry = match entry {
                        Ok(e) => e,
                        Err(m) => {
                            println!("  DAMAGED: {m}");
                            damage.push(format!("in the record at offset {offset}: {m}"));
                            break;
                        }
                    };
                    writes += 1;
                    if !a.entries {
                        continue;
                    }
                    line.clear();
                    line.push_str(&format!("  #{} ", batch.sequence + i as u64));
                    if entry.table != DEFAULT_TABLE {
                        line.push_str(&format!("table {} ", entry.table));
                    }
                    match entry.kind {
                        // A batch never decodes to a blob index (only
                        // SSTs hold them); shown like a value if one did.
                        ValueKind::Put | ValueKind::BlobIndex => {
                            line.push_str("PUT ");
                            enc.write(&mut line, entry.key);
                            line.push_str(" => ");
                            enc.write(&mut line, entry.value);
                        }
                        ValueKind::Merge => {
                            line.push_str("MERGE ");
                            enc.write(&mut line, entry.key);
                            line.push_str(" => ");
                            enc.write(&mut line, entry.value);
                        }
                        ValueKind::Delete => {
                            line.push_str("DELETE ");
                            enc.write(&mut line, entry.key);
                        }
                        ValueKind::SingleDelete => {
                            line.push_str("SINGLE_DELETE ");
                            enc.write(&mut line, entry.key);
                        }
                        ValueKind::RangeDelete => {
                            line.push_str("DELETE_RANGE [");
                            enc.write(&mut line, entry.key);
                            line.push_str(", ");
                            enc.write(&mut line, entry.value);
                            line.push(')');
                        }
                    }
                    println!("{line}");
                }
            }
            Err(m) => {
                println!("record at offset {offset}, {len} bytes: DAMAGED: {m}");
                damage.push(format!("in the record at offset {offset}: {m}"));
            }
        }
    }
    report_dropped(&dropped, &mut printed);
    let stats = reader.stats();
    let end = match reader.end() {
        Some(LogEnd::Clean) | None => "clean".to_string(),
        Some(LogEnd::TornTail { offset, reason }) => {
            format!(
                "torn tail at offset {offset} ({reason}): what a crash during the last write leaves"
            )
        }
        Some(LogEnd::Corruption { offset, reason }) => {
            damage.push(format!(
                "at offset {offset}: {reason}, followed by intact records"
            ));
            format!("stopped at damage at offset {offset} ({reason}); intact records follow it")
        }
        Some(other) => {
            damage.push(format!(
                "the log ended in a way this build does not know: {other:?}"
            ));
            format!("{other:?}")
        }
    };
    if a.recovery.wal_recovery_mode == RecoveryMode::SkipAnyCorruptedRecords
        && stats.dropped_ranges > 0
    {
        // Skip mode drops the rest of a damaged block unseen: let the
        // tail-tolerant mode say whether intact records follow damage.
        if let Some(problem) = hole(path, log_number)? {
            damage.push(problem);
        }
    }
    println!(
        "end: {end}; {records} records, {writes} writes{}, {} bytes dropped",
        sequences.map_or_else(String::new, |(lo, hi)| format!(
            ", sequence numbers {lo}..={hi}"
        )),
        stats.dropped_bytes
    );
    match damage.first() {
        None => Ok(()),
        Some(first) => DamagedSnafu {
            path,
            message: format!("{} problem(s); the first {first}", damage.len()),
        }
        .fail(),
    }
}

/// Reads the log in `TolerateCorruptedTailRecords` mode: the damage it
/// refuses (a hole followed by intact records), if any.
fn hole(path: &Path, log_number: u64) -> Result<Option<String>> {
    let file = OsFs.open(path).context(IoSnafu {
        action: "open",
        path,
    })?;
    let mut reader = Reader::new(file, path, log_number)
        .context(WalSnafu)?
        .with_mode(RecoveryMode::TolerateCorruptedTailRecords);
    loop {
        match reader.read_record() {
            Ok(Some(_)) => {}
            Ok(None) => return Ok(None),
            Err(lithify::error::WalError::Corruption {
                offset,
                record_offset,
                reason,
                ..
            }) => {
                return Ok(Some(format!(
                    "at offset {record_offset}: {reason} (found at {offset}), followed by intact records"
                )));
            }
            Err(e) => return Err(e).context(WalSnafu),
        }
    }
}

/// Prints the ranges dropped since the last call (`printed` of them were
/// printed before).
fn report_dropped(dropped: &Mutex<Vec<DroppedRange>>, printed: &mut usize) {
    if let Ok(v) = dropped.lock() {
        for d in v.iter().skip(*printed) {
            println!("{d}");
        }
        *printed = v.len();
    }
}

/// The log number: the file header's, or when the header is damaged the
/// one in the file name (`NNNNNN.log`) together with the damage.
fn log_number(
    file: &dyn lithify::vfs::RandomAccessFile,
    path: &Path,
) -> Result<(u64, Option<String>)> {
    let mut raw = [0u8; FILE_HEADER_LEN];
    let problem = match file.read_exact_at(0, &mut raw) {
        Err(e) => format!("cannot read the {FILE_HEADER_LEN}-byte log header: {e}"),
        Ok(()) => match FileHeader::decode(&raw) {
            Ok(h) => return Ok((h.log_number, None)),
            Err(e) => e.to_string(),
        },
    };
    let from_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_file_name);
    match from_name {
        Some(FileKind::Log(n) | FileKind::Manifest(n)) => Ok((n, Some(problem))),
        _ => DamagedSnafu {
            path,
            message: format!("at offset 0: {problem}"),
        }
        .fail(),
    }
}
