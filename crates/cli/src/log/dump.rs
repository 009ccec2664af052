//! `lithify log dump PATH`: print log files as Kafka's `kafka-dump-log`
//! does — every batch's header fields and CRC check, with `--records`
//! every record.
//!
//! PATH may be a segment's `.log`, `.index`, `.timeindex` or `.txnindex`,
//! a producer `.snapshot`, a `cleaner-offset-checkpoint`, a log directory
//! (every `.log` in offset order, each followed by its `.txnindex`, then
//! the producer snapshots) or a data directory (its checkpoint, then every
//! log directory). Batches show their producer fields and whether they are
//! transactional or control batches; with `--records`, a control record
//! shows its marker (`endTxnMarker: COMMIT coordinatorEpoch: 0`).
//! `--transaction-index-sanity-check` checks every log directory's
//! `.txnindex` files against its markers (`lithify::log::txn_check`).
//! Files are only read, never repaired. Damage (a batch failing its CRC, a
//! broken header, trailing bytes that are not a batch, base offsets going
//! backwards or repeating) is printed where it is and makes the command
//! fail with an error naming the file and byte offset. A log directory is
//! also checked as a whole by `lithify::log::verify` (what `log
//! check` prints): overlapping segments, a `.log` cut short, leftovers of
//! an interrupted cleaning, offset gaps; its problems make the command
//! fail too, its warnings are printed. While a writer holds a log
//! directory (its `.lock`), dumping it is refused.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use lithify::FileFormat;
use lithify::log::cleaner_checkpoint::FILE_NAME as CLEANER_CHECKPOINT;
use lithify::log::naming::{self, FileKind, Suffix};
use lithify::log::record::{ControlRecordType, EndTransactionMarker, RecordBatch, TimestampType};
use lithify::log::{FileBatches, OffsetOrder};
use lithify::log::{TopicPartition, checkpoint};
use lithify::log::{producer_snapshot, txn_check, txn_index};
use lithify::vfs::{FileSystem, OsFs};
use snafu::ResultExt as _;

use crate::error::{DamagedSnafu, Error, IoSnafu, LogSnafu, Result, UsageSnafu};
use crate::log::check::{fail_on_problems, print_findings};

/// Arguments of `log dump`.
#[derive(Debug, Args)]
pub(crate) struct DumpArgs {
    /// A `.log`, `.index`, `.timeindex`, `.txnindex`, `.snapshot`,
    /// `cleaner-offset-checkpoint`, log directory or data directory.
    pub path: PathBuf,
    /// Print every record of every batch (kafka-dump-log's flag).
    #[arg(long)]
    pub print_data_log: bool,
    /// Check every log directory's `.txnindex` files against its COMMIT
    /// and ABORT markers.
    #[arg(long)]
    pub transaction_index_sanity_check: bool,
}

/// Runs `log dump`.
pub(crate) fn run(a: DumpArgs) -> Result<()> {
    let fs = OsFs;
    crate::dump::refuse_other_format(&a.path, FileFormat::KafkaSegment, false)?;
    if fs.is_dir(&a.path) {
        return dump_dir(
            &fs,
            &a.path,
            a.print_data_log,
            a.transaction_index_sanity_check,
        );
    }
    if a.transaction_index_sanity_check {
        return UsageSnafu {
            message: "--transaction-index-sanity-check checks a log directory or a data directory"
                .to_string(),
        }
        .fail();
    }
    if !fs.exists(&a.path) {
        return UsageSnafu {
            message: format!("{} does not exist", a.path.display()),
        }
        .fail();
    }
    let dir = lithify::vfs::parent_dir(&a.path);
    let _reading = lithify::log::lock_shared(&fs, dir, "log directory").context(LogSnafu)?;
    dump_file(&fs, &a.path, a.print_data_log)
}

fn list(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<String>> {
    let mut names = fs.list_dir(dir).context(IoSnafu {
        action: "list",
        path: dir,
    })?;
    names.sort();
    Ok(names)
}

fn dump_dir(fs: &dyn FileSystem, dir: &Path, records: bool, check_txns: bool) -> Result<()> {
    let names = list(fs, dir)?;
    let of_kind = |kind: FileKind| -> Vec<&String> {
        names
            .iter()
            .filter(|n| {
                naming::parse(n).is_some_and(|p| p.kind == kind && p.suffix == Suffix::None)
            })
            .collect()
    };
    let logs = of_kind(FileKind::Log);
    if !logs.is_empty() {
        let _reading = lithify::log::lock_shared(fs, dir, "log directory").context(LogSnafu)?;
        let mut first_error = None;
        let mut note = |r: Result<()>| {
            if let Err(e) = r {
                eprintln!("error: {e}");
                first_error.get_or_insert(e);
            }
        };
        for name in logs {
            note(dump_log(fs, &dir.join(name), records));
            if let Some(base) = naming::offset_from_file_name(name) {
                let txn = dir.join(naming::file_name(base, FileKind::TxnIndex, Suffix::None));
                if fs.exists(&txn) {
                    note(dump_txn_index(fs, &txn));
                }
            }
        }
        for name in of_kind(FileKind::Snapshot) {
            note(dump_snapshot(fs, &dir.join(name)));
        }
        if check_txns {
            note(sanity_check(fs, dir));
        }
        // The directory as a whole, as open and the cleaner judge it.
        let shared: Arc<dyn FileSystem> = Arc::new(OsFs);
        match lithify::log::verify(&shared, dir) {
            Ok(report) => {
                print_findings(&report);
                if first_error.is_none() {
                    first_error = fail_on_problems(&report).err();
                }
            }
            Err(e) => note(Err(e).context(LogSnafu)),
        }
        return first_error.map_or(Ok(()), Err);
    }
    // A data directory: the checkpoints, then each log directory.
    let mut first_error = None;
    for file in [CLEANER_CHECKPOINT, checkpoint::RECOVERY_POINT_FILE_NAME] {
        if names.iter().any(|n| n == file)
            && let Err(e) = dump_checkpoint(fs, &dir.join(file))
        {
            eprintln!("error: {e}");
            first_error.get_or_insert(e);
        }
    }
    let mut found = false;
    for name in &names {
        let sub = dir.join(name);
        if fs.is_dir(&sub) && TopicPartition::from_dir_name(name).is_some() {
            found = true;
            if let Err(e) = dump_dir(fs, &sub, records, check_txns) {
                first_error.get_or_insert(e);
            }
        }
    }
    let checkpoints = names
        .iter()
        .any(|n| n == CLEANER_CHECKPOINT || n == checkpoint::RECOVERY_POINT_FILE_NAME);
    if !found && first_error.is_none() && !checkpoints {
        return UsageSnafu {
            message: format!(
                "{} holds no .log files and no <topic>-<partition> log directories",
                dir.display()
            ),
        }
        .fail();
    }
    first_error.map_or(Ok(()), Err)
}

fn dump_file(fs: &dyn FileSystem, path: &Path, records: bool) -> Result<()> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name == CLEANER_CHECKPOINT || name == checkpoint::RECOVERY_POINT_FILE_NAME {
        return dump_checkpoint(fs, path);
    }
    match naming::parse(name).map(|p| p.kind) {
        Some(FileKind::Log) => dump_log(fs, path, records),
        Some(FileKind::Index) => dump_index(fs, path, 8),
        Some(FileKind::TimeIndex) => dump_index(fs, path, 12),
        Some(FileKind::TxnIndex) => dump_txn_index(fs, path),
        Some(FileKind::Snapshot) => dump_snapshot(fs, path),
        _ => UsageSnafu {
            message: format!(
                "{} is not a .log, .index, .timeindex, .txnindex, .snapshot, cleaner-offset-checkpoint or recovery-point-offset-checkpoint file",
                path.display()
            ),
        }
        .fail(),
    }
}

/// A `cleaner-offset-checkpoint` or `recovery-point-offset-checkpoint`.
fn dump_checkpoint(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    println!("Dumping {}", path.display());
    let entries = checkpoint::read_file(fs, path).context(LogSnafu)?;
    let what = if path.file_name().and_then(|n| n.to_str()) == Some(CLEANER_CHECKPOINT) {
        "firstDirtyOffset"
    } else {
        "recoveryPoint"
    };
    for (tp, offset) in entries {
        println!("partition: {tp} {what}: {offset}");
    }
    Ok(())
}

/// A `.txnindex`, as kafka-dump-log prints a `TransactionIndex`.
fn dump_txn_index(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    println!("Dumping {}", path.display());
    let base = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(naming::offset_from_file_name)
        .unwrap_or(0);
    let bytes = lithify::vfs::read_file(fs, path).context(IoSnafu {
        action: "read",
        path,
    })?;
    for t in txn_index::decode(path, base, &bytes).context(LogSnafu)? {
        println!(
            "version: 0 producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
            t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset
        );
    }
    Ok(())
}

/// A producer `.snapshot`, as kafka-dump-log prints one.
fn dump_snapshot(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    println!("Dumping {}", path.display());
    let bytes = lithify::vfs::read_file(fs, path).context(IoSnafu {
        action: "read",
        path,
    })?;
    for e in producer_snapshot::decode(path, &bytes).context(LogSnafu)? {
        let txn = e
            .current_txn_first_offset
            .map_or("None".to_string(), |o| format!("Some({o})"));
        let batch = e.last_batch.map_or(String::new(), |b| {
            format!(
                " lastSequence: {} lastOffset: {} offsetDelta: {}",
                b.last_sequence, b.last_offset, b.offset_delta
            )
        });
        println!(
            "producerId: {} producerEpoch: {} coordinatorEpoch: {} currentTxnFirstOffset: {txn} lastTimestamp: {}{batch}",
            e.producer_id, e.producer_epoch, e.coordinator_epoch, e.last_timestamp
        );
    }
    Ok(())
}

/// `--transaction-index-sanity-check` of one log directory.
fn sanity_check(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let check = txn_check::check_dir(fs, dir).context(LogSnafu)?;
    for p in &check.problems {
        println!("{p}");
    }
    println!(
        "Transaction index sanity check of {}: {} entries, {} aborted transactions with data, {} problems",
        dir.display(),
        check.entries,
        check.aborted_with_data,
        check.problems.len()
    );
    if let Some(first) = check.problems.first() {
        return DamagedSnafu {
            path: dir,
            message: format!(
                "its transaction indexes disagree with its markers in {} places, the first: {first}",
                check.problems.len()
            ),
        }
        .fail();
    }
    Ok(())
}

fn dump_index(fs: &dyn FileSystem, path: &Path, entry: usize) -> Result<()> {
    println!("Dumping {}", path.display());
    let base = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(naming::offset_from_file_name)
        .unwrap_or(0);
    let bytes = lithify::vfs::read_file(fs, path).context(IoSnafu {
        action: "read",
        path,
    })?;
    if bytes.len() % entry != 0 {
        return DamagedSnafu {
            path,
            message: format!("its size {} is not a multiple of {entry}", bytes.len()),
        }
        .fail();
    }
    for (i, e) in bytes.chunks_exact(entry).enumerate() {
        let be32 = |at: usize| u32::from_be_bytes([e[at], e[at + 1], e[at + 2], e[at + 3]]);
        let (relative, line) = if entry == 8 {
            let rel = be32(0);
            (
                rel,
                format!("offset: {} position: {}", base + i64::from(rel), be32(4)),
            )
        } else {
            let mut ts = [0u8; 8];
            ts.copy_from_slice(&e[..8]);
            let rel = be32(8);
            (
                rel,
                format!(
                    "timestamp: {} offset: {}",
                    i64::from_be_bytes(ts),
                    base + i64::from(rel)
                ),
            )
        };
        if i > 0 && relative == 0 {
            // The preallocated, unused tail of an active segment's index.
            let rest = bytes.len() / entry - i;
            println!("({rest} unused preallocated entries follow)");
            break;
        }
        println!("{line}");
    }
    Ok(())
}

fn dump_log(fs: &dyn FileSystem, path: &Path, records: bool) -> Result<()> {
    println!("Dumping {}", path.display());
    let base = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(naming::offset_from_file_name)
        .unwrap_or(0);
    println!("Log starting offset: {base}");
    let file = fs.open(path).context(IoSnafu {
        action: "open",
        path,
    })?;
    let size = file.size().context(IoSnafu {
        action: "stat",
        path,
    })?;
    let mut batches = FileBatches::new(file, Arc::new(path.to_path_buf()), 0, size);
    let mut invalid: Vec<u64> = Vec::new();
    let mut count = 0u64;
    // Base offsets are outside the CRC: the library's order check.
    let mut order = OffsetOrder::new(base, i64::MAX);
    let mut disordered = None;
    for batch in &mut batches {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                println!("{e}");
                return Err(e).context(LogSnafu);
            }
        };
        count += 1;
        let valid = batch.ensure_valid().is_ok();
        if !valid {
            invalid.push(batch.position());
        }
        if let Err(e) = order.check(&batch) {
            println!("{e}");
            disordered.get_or_insert(e);
        }
        println!("{}", batch_line(&batch, valid));
        if records && valid {
            print_records(&batch)?;
        }
    }
    let end = batches.position();
    if end < size {
        println!(
            "Found {} invalid bytes at the end of {} (byte offset {end})",
            size - end,
            path.display()
        );
        return DamagedSnafu {
            path,
            message: format!(
                "the last {} bytes, from byte offset {end}, are not a complete batch",
                size - end
            ),
        }
        .fail();
    }
    if let Some(e) = disordered {
        return Err(e).context(LogSnafu);
    }
    if let Some(first) = invalid.first() {
        return DamagedSnafu {
            path,
            message: format!(
                "{} of its {count} batches fail their CRC check, the first at byte offset {first}",
                invalid.len()
            ),
        }
        .fail();
    }
    Ok(())
}

fn batch_line(b: &RecordBatch, valid: bool) -> String {
    let last_sequence = if b.base_sequence() < 0 {
        -1
    } else {
        b.base_sequence().wrapping_add(b.last_offset_delta())
    };
    let ts_kind = match b.timestamp_type() {
        TimestampType::CreateTime => "CreateTime",
        TimestampType::LogAppendTime => "LogAppendTime",
    };
    let codec = b.compression().map_or_else(
        |_| format!("unknown({})", b.compression_id()),
        |c| c.name().to_string(),
    );
    format!(
        "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} producerId: {} producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} isControl: {} deleteHorizonMs: {} position: {} {ts_kind}: {} size: {} magic: {} compresscodec: {codec} crc: {} isvalid: {valid}",
        b.base_offset(),
        b.last_offset(),
        b.records_count(),
        b.base_sequence(),
        last_sequence,
        b.producer_id(),
        b.producer_epoch(),
        b.partition_leader_epoch(),
        b.is_transactional(),
        b.is_control(),
        b.delete_horizon_ms()
            .map_or("none".to_string(), |h| h.to_string()),
        b.position(),
        b.max_timestamp(),
        b.size_in_bytes(),
        b.magic(),
        b.checksum()
    )
}

fn text(b: Option<&[u8]>) -> String {
    match b {
        None => "null".to_string(),
        Some(b) => String::from_utf8_lossy(b).into_owned(),
    }
}

fn print_records(b: &RecordBatch) -> Result<(), Error> {
    let ts_kind = match b.timestamp_type() {
        TimestampType::CreateTime => "CreateTime",
        TimestampType::LogAppendTime => "LogAppendTime",
    };
    for r in b
        .records()
        .map_err(lithify::log::Error::from)
        .context(LogSnafu)?
    {
        if b.is_control() {
            let key = r.key.as_deref().unwrap_or_default();
            let value = r.value.as_deref().unwrap_or_default();
            let what = match ControlRecordType::parse_key(key) {
                Ok(t @ (ControlRecordType::Abort | ControlRecordType::Commit)) => {
                    match EndTransactionMarker::parse(value) {
                        Ok(m) => format!(
                            "endTxnMarker: {} coordinatorEpoch: {}",
                            if t == ControlRecordType::Abort {
                                "ABORT"
                            } else {
                                "COMMIT"
                            },
                            m.coordinator_epoch
                        ),
                        Err(e) => format!("endTxnMarker: unreadable ({e})"),
                    }
                }
                Ok(t) => format!("controlType: {t:?}({})", t.id()),
                Err(e) => format!("controlType: unreadable ({e})"),
            };
            println!(
                "| offset: {} {ts_kind}: {} keySize: {} valueSize: {} sequence: -1 headerKeys: [] {what}",
                r.offset,
                r.timestamp,
                key.len(),
                r.value.as_ref().map_or(-1, |v| v.len() as i64)
            );
            continue;
        }
        let sequence = if b.base_sequence() < 0 {
            -1
        } else {
            b.base_sequence()
                .wrapping_add((r.offset - b.base_offset()) as i32)
        };
        let header_keys: Vec<String> = r
            .headers
            .iter()
            .map(|h| String::from_utf8_lossy(&h.key).into_owned())
            .collect();
        println!(
            "| offset: {} {ts_kind}: {} keySize: {} valueSize: {} sequence: {sequence} headerKeys: [{}] key: {} payload: {}",
            r.offset,
            r.timestamp,
            r.key.as_ref().map_or(-1, |k| k.len() as i64),
            r.value.as_ref().map_or(-1, |v| v.len() as i64),
            header_keys.join(","),
            text(r.key.as_deref()),
            text(r.value.as_deref())
        );
    }
    Ok(())
}
