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
use crate::json::JsonArgs;
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
    #[command(flatten)]
    pub json: JsonArgs,
}

/// Where a dump goes: kafka-dump-log's lines on stdout, or with `--json`
/// one object at the end — `files`, each with its `entries` (a batch with
/// its `records`, an index entry, a checkpoint line), and the directory
/// checks' `problems` and `warnings` — printed even when the dump fails.
#[derive(Default)]
struct Out {
    json: bool,
    files: Vec<serde_json::Value>,
    problems: Vec<serde_json::Value>,
    warnings: Vec<serde_json::Value>,
}

impl Out {
    /// A file starts.
    fn file(&mut self, path: &Path) {
        if self.json {
            self.files.push(serde_json::json!({
                "file": path.display().to_string(),
                "entries": [],
            }));
        } else {
            println!("Dumping {}", path.display());
        }
    }

    /// A check of directory `dir` starts: its lines are its own entry in
    /// `--json`; the text has no heading for it.
    fn check(&mut self, dir: &Path) {
        if self.json {
            self.files.push(serde_json::json!({
                "check": dir.display().to_string(),
                "entries": [],
            }));
        }
    }

    /// One line of the current file: `text`, or `json` among its entries.
    fn line(&mut self, text: String, json: serde_json::Value) {
        if !self.json {
            println!("{text}");
        } else if let Some(entries) = self
            .files
            .last_mut()
            .and_then(|f| f["entries"].as_array_mut())
        {
            entries.push(json);
        }
    }

    /// One record of the batch just printed.
    fn record(&mut self, text: String, json: serde_json::Value) {
        if !self.json {
            println!("{text}");
            return;
        }
        let batch = self
            .files
            .last_mut()
            .and_then(|f| f["entries"].as_array_mut())
            .and_then(|e| e.last_mut());
        if let Some(batch) = batch {
            match batch["records"].as_array_mut() {
                Some(records) => records.push(json),
                None => batch["records"] = serde_json::json!([json]),
            }
        }
    }

    /// A log directory's check, as `log check` reports it.
    fn findings(&mut self, report: &lithify::log::VerifyReport) {
        if !self.json {
            print_findings(report);
            return;
        }
        let finding = |f: &lithify::log::Finding| {
            serde_json::json!({
                "file": f.file.display().to_string(),
                "offset": f.offset,
                "message": f.message,
            })
        };
        self.problems.extend(report.problems.iter().map(finding));
        self.warnings.extend(report.warnings.iter().map(finding));
    }

    /// With `--json`, prints everything gathered.
    fn finish(self) -> Result<()> {
        if !self.json {
            return Ok(());
        }
        crate::json::print(&serde_json::json!({
            "files": self.files,
            "problems": self.problems,
            "warnings": self.warnings,
        }))
    }
}

/// Runs `log dump`.
pub(crate) fn run(a: DumpArgs) -> Result<()> {
    let mut out = Out {
        json: a.json.json,
        ..Out::default()
    };
    let result = dump(&mut out, &a);
    let printed = out.finish();
    result.and(printed)
}

fn dump(out: &mut Out, a: &DumpArgs) -> Result<()> {
    let fs = OsFs;
    crate::dump::refuse_other_format(&a.path, FileFormat::KafkaSegment, false)?;
    if fs.is_dir(&a.path) {
        return dump_dir(
            out,
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
    dump_file(out, &fs, &a.path, a.print_data_log)
}

fn list(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<String>> {
    let mut names = fs.list_dir(dir).context(IoSnafu {
        action: "list",
        path: dir,
    })?;
    names.sort();
    Ok(names)
}

fn dump_dir(
    out: &mut Out,
    fs: &dyn FileSystem,
    dir: &Path,
    records: bool,
    check_txns: bool,
) -> Result<()> {
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
            note(dump_log(out, fs, &dir.join(name), records));
            if let Some(base) = naming::offset_from_file_name(name) {
                let txn = dir.join(naming::file_name(base, FileKind::TxnIndex, Suffix::None));
                if fs.exists(&txn) {
                    note(dump_txn_index(out, fs, &txn));
                }
            }
        }
        for name in of_kind(FileKind::Snapshot) {
            note(dump_snapshot(out, fs, &dir.join(name)));
        }
        if check_txns {
            note(sanity_check(out, fs, dir));
        }
        // The directory as a whole, as open and the cleaner judge it.
        let shared: Arc<dyn FileSystem> = Arc::new(OsFs);
        match lithify::log::verify(&shared, dir) {
            Ok(report) => {
                out.findings(&report);
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
            && let Err(e) = dump_checkpoint(out, fs, &dir.join(file))
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
            if let Err(e) = dump_dir(out, fs, &sub, records, check_txns) {
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

fn dump_file(out: &mut Out, fs: &dyn FileSystem, path: &Path, records: bool) -> Result<()> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name == CLEANER_CHECKPOINT || name == checkpoint::RECOVERY_POINT_FILE_NAME {
        return dump_checkpoint(out, fs, path);
    }
    match naming::parse(name).map(|p| p.kind) {
        Some(FileKind::Log) => dump_log(out, fs, path, records),
        Some(FileKind::Index) => dump_index(out, fs, path, 8),
        Some(FileKind::TimeIndex) => dump_index(out, fs, path, 12),
        Some(FileKind::TxnIndex) => dump_txn_index(out, fs, path),
        Some(FileKind::Snapshot) => dump_snapshot(out, fs, path),
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
fn dump_checkpoint(out: &mut Out, fs: &dyn FileSystem, path: &Path) -> Result<()> {
    out.file(path);
    let entries = checkpoint::read_file(fs, path).context(LogSnafu)?;
    let what = if path.file_name().and_then(|n| n.to_str()) == Some(CLEANER_CHECKPOINT) {
        "firstDirtyOffset"
    } else {
        "recoveryPoint"
    };
    for (tp, offset) in entries {
        out.line(
            format!("partition: {tp} {what}: {offset}"),
            serde_json::json!({"partition": tp.to_string(), what: offset}),
        );
    }
    Ok(())
}

/// A `.txnindex`, as kafka-dump-log prints a `TransactionIndex`.
fn dump_txn_index(out: &mut Out, fs: &dyn FileSystem, path: &Path) -> Result<()> {
    out.file(path);
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
        out.line(
            format!(
                "version: 0 producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
                t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset
            ),
            serde_json::json!({
                "producerId": t.producer_id, "firstOffset": t.first_offset,
                "lastOffset": t.last_offset, "lastStableOffset": t.last_stable_offset,
            }),
        );
    }
    Ok(())
}

/// A producer `.snapshot`, as kafka-dump-log prints one.
fn dump_snapshot(out: &mut Out, fs: &dyn FileSystem, path: &Path) -> Result<()> {
    out.file(path);
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
        out.line(
            format!(
                "producerId: {} producerEpoch: {} coordinatorEpoch: {} currentTxnFirstOffset: {txn} lastTimestamp: {}{batch}",
                e.producer_id, e.producer_epoch, e.coordinator_epoch, e.last_timestamp
            ),
            serde_json::json!({
                "producerId": e.producer_id, "producerEpoch": e.producer_epoch,
                "coordinatorEpoch": e.coordinator_epoch,
                "currentTxnFirstOffset": e.current_txn_first_offset,
                "lastTimestamp": e.last_timestamp,
                "lastSequence": e.last_batch.map(|b| b.last_sequence),
                "lastOffset": e.last_batch.map(|b| b.last_offset),
                "offsetDelta": e.last_batch.map(|b| b.offset_delta),
            }),
        );
    }
    Ok(())
}

/// `--transaction-index-sanity-check` of one log directory.
fn sanity_check(out: &mut Out, fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let check = txn_check::check_dir(fs, dir).context(LogSnafu)?;
    out.check(dir);
    for p in &check.problems {
        out.line(p.to_string(), serde_json::json!({"problem": p.to_string()}));
    }
    out.line(
        format!(
            "Transaction index sanity check of {}: {} entries, {} aborted transactions with data, {} problems",
            dir.display(),
            check.entries,
            check.aborted_with_data,
            check.problems.len()
        ),
        serde_json::json!({"sanityCheck": {
            "dir": dir.display().to_string(), "entries": check.entries,
            "abortedWithData": check.aborted_with_data, "problems": check.problems.len(),
        }}),
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

fn dump_index(out: &mut Out, fs: &dyn FileSystem, path: &Path, entry: usize) -> Result<()> {
    out.file(path);
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
        let (relative, line, json) = if entry == 8 {
            let rel = be32(0);
            let offset = base + i64::from(rel);
            (
                rel,
                format!("offset: {offset} position: {}", be32(4)),
                serde_json::json!({"offset": offset, "position": be32(4)}),
            )
        } else {
            let mut ts = [0u8; 8];
            ts.copy_from_slice(&e[..8]);
            let rel = be32(8);
            let (timestamp, offset) = (i64::from_be_bytes(ts), base + i64::from(rel));
            (
                rel,
                format!("timestamp: {timestamp} offset: {offset}"),
                serde_json::json!({"timestamp": timestamp, "offset": offset}),
            )
        };
        if i > 0 && relative == 0 {
            // The preallocated, unused tail of an active segment's index.
            let rest = bytes.len() / entry - i;
            out.line(
                format!("({rest} unused preallocated entries follow)"),
                serde_json::json!({"unusedPreallocatedEntries": rest}),
            );
            break;
        }
        out.line(line, json);
    }
    Ok(())
}

fn dump_log(out: &mut Out, fs: &dyn FileSystem, path: &Path, records: bool) -> Result<()> {
    out.file(path);
    let base = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(naming::offset_from_file_name)
        .unwrap_or(0);
    out.line(
        format!("Log starting offset: {base}"),
        serde_json::json!({"logStartingOffset": base}),
    );
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
                out.line(e.to_string(), serde_json::json!({"error": e.to_string()}));
                return Err(e).context(LogSnafu);
            }
        };
        count += 1;
        let valid = batch.ensure_valid().is_ok();
        if !valid {
            invalid.push(batch.position());
        }
        if let Err(e) = order.check(&batch) {
            out.line(e.to_string(), serde_json::json!({"error": e.to_string()}));
            disordered.get_or_insert(e);
        }
        out.line(batch_line(&batch, valid), batch_json(&batch, valid));
        if records && valid {
            print_records(out, &batch)?;
        }
    }
    let end = batches.position();
    if end < size {
        out.line(
            format!(
                "Found {} invalid bytes at the end of {} (byte offset {end})",
                size - end,
                path.display()
            ),
            serde_json::json!({"invalidBytes": size - end, "position": end}),
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

/// The sequence number of a batch's last record (-1 without a producer
/// sequence), as kafka-dump-log prints it.
fn last_sequence(b: &RecordBatch) -> i32 {
    if b.base_sequence() < 0 {
        -1
    } else {
        b.base_sequence().wrapping_add(b.last_offset_delta())
    }
}

/// kafka-dump-log's name of a batch's compression codec.
fn codec_name(b: &RecordBatch) -> String {
    b.compression().map_or_else(
        |_| format!("unknown({})", b.compression_id()),
        |c| c.name().to_string(),
    )
}

/// kafka-dump-log's name of a batch's timestamp type.
fn timestamp_kind(b: &RecordBatch) -> &'static str {
    match b.timestamp_type() {
        TimestampType::CreateTime => "CreateTime",
        TimestampType::LogAppendTime => "LogAppendTime",
    }
}

/// A batch's fields in `--json`, by kafka-dump-log's names.
fn batch_json(b: &RecordBatch, valid: bool) -> serde_json::Value {
    let last_sequence = last_sequence(b);
    let ts_kind = timestamp_kind(b);
    serde_json::json!({
        "baseOffset": b.base_offset(),
        "lastOffset": b.last_offset(),
        "count": b.records_count(),
        "baseSequence": b.base_sequence(),
        "lastSequence": last_sequence,
        "producerId": b.producer_id(),
        "producerEpoch": b.producer_epoch(),
        "partitionLeaderEpoch": b.partition_leader_epoch(),
        "isTransactional": b.is_transactional(),
        "isControl": b.is_control(),
        "deleteHorizonMs": b.delete_horizon_ms(),
        "position": b.position(),
        ts_kind: b.max_timestamp(),
        "size": b.size_in_bytes(),
        "magic": b.magic(),
        "compresscodec": codec_name(b),
        "crc": b.checksum(),
        "isvalid": valid,
    })
}

fn batch_line(b: &RecordBatch, valid: bool) -> String {
    let last_sequence = last_sequence(b);
    let ts_kind = timestamp_kind(b);
    let codec = codec_name(b);
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

fn print_records(out: &mut Out, b: &RecordBatch) -> Result<(), Error> {
    let ts_kind = timestamp_kind(b);
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
            out.record(
                format!(
                    "| offset: {} {ts_kind}: {} keySize: {} valueSize: {} sequence: -1 headerKeys: [] {what}",
                    r.offset,
                    r.timestamp,
                    key.len(),
                    r.value.as_ref().map_or(-1, |v| v.len() as i64)
                ),
                serde_json::json!({
                    "offset": r.offset, ts_kind: r.timestamp, "keySize": key.len(),
                    "valueSize": r.value.as_ref().map_or(-1, |v| v.len() as i64),
                    "control": what,
                }),
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
        out.record(
            format!(
                "| offset: {} {ts_kind}: {} keySize: {} valueSize: {} sequence: {sequence} headerKeys: [{}] key: {} payload: {}",
                r.offset,
                r.timestamp,
                r.key.as_ref().map_or(-1, |k| k.len() as i64),
                r.value.as_ref().map_or(-1, |v| v.len() as i64),
                header_keys.join(","),
                text(r.key.as_deref()),
                text(r.value.as_deref())
            ),
            serde_json::json!({
                "offset": r.offset, ts_kind: r.timestamp,
                "keySize": r.key.as_ref().map_or(-1, |k| k.len() as i64),
                "valueSize": r.value.as_ref().map_or(-1, |v| v.len() as i64),
                "sequence": sequence, "headerKeys": header_keys,
                "key": r.key.as_deref().map(|k| String::from_utf8_lossy(k).into_owned()),
                "payload": r.value.as_deref().map(|v| String::from_utf8_lossy(v).into_owned()),
            }),
        );
    }
    Ok(())
}
