//! What the database tells the outside world about its work: structured
//! `tracing` events (the library never installs a subscriber), an optional
//! human-readable `LOG` file in the database directory (RocksDB's info
//! LOG), and [`EventListener`] callbacks for programs that react
//! (RocksDB's `EventListener`).
//!
//! Every event goes through [`Events`], so the three always say the same
//! thing. Callbacks run on the thread that did the work (a background
//! thread, a writer, the opener), never with a database lock held: events
//! raised under the database mutex — stall changes, background errors —
//! are queued and delivered by the next thread that leaves it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use lithify_base::SeqNo;
use lithify_version::TableId;
use lithify_vfs::{FileSystem, WritableFile};
use parking_lot::Mutex;

use crate::error::Error;
use crate::recovery::RecoveryReport;
use crate::stall::{StallCause, StallCondition};

/// A flush, as [`EventListener::on_flush_begin`] and
/// [`EventListener::on_flush_completed`] see it (RocksDB's `FlushJobInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushJobInfo {
    /// The table (column family) name.
    pub table: String,
    /// The table id.
    pub table_id: TableId,
    /// Immutable memtables written by the flush.
    pub memtables: usize,
    /// Smallest and largest sequence numbers the memtables hold (0 when
    /// unknown).
    pub smallest_seqno: SeqNo,
    /// See `smallest_seqno`.
    pub largest_seqno: SeqNo,
    /// Where the output went: 0 for a plain L0 flush, the plan's level for
    /// a strategy's flush plan (set when completed).
    pub output_level: usize,
    /// Numbers of the files written (empty when the memtables held only
    /// what a tombstone or snapshot rule dropped; set when completed).
    pub output_files: Vec<u64>,
    /// Bytes written (set when completed).
    pub bytes_written: u64,
    /// Wall-clock microseconds the flush took (set when completed).
    pub micros: u64,
}

/// A compaction, as [`EventListener::on_compaction_begin`] and
/// [`EventListener::on_compaction_completed`] see it (RocksDB's
/// `CompactionJobInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionJobInfo {
    /// The table (column family) name.
    pub table: String,
    /// The table id.
    pub table_id: TableId,
    /// Why it was picked (RocksDB's `CompactionReason` names).
    pub reason: String,
    /// Input files: (level, file numbers) per input level.
    pub inputs: Vec<(usize, Vec<u64>)>,
    /// The output level.
    pub output_level: usize,
    /// A metadata-only move of the inputs.
    pub trivial_move: bool,
    /// Started by `compact_range` (or a scheduled major).
    pub manual: bool,
    /// Numbers of the files written (set when completed).
    pub output_files: Vec<u64>,
    /// Bytes read from the inputs (set when completed).
    pub bytes_read: u64,
    /// Bytes written (set when completed).
    pub bytes_written: u64,
    /// Wall-clock microseconds the job took (set when completed).
    pub micros: u64,
}

/// A change of the write-stall condition (RocksDB's `WriteStallInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteStallInfo {
    /// The condition now.
    pub condition: StallCondition,
    /// The condition before.
    pub previous: StallCondition,
    /// What causes it (`None` when writes are back to normal).
    pub cause: Option<StallCause>,
}

/// A table's compaction strategy changed: set on the live table, or
/// chosen by `Adaptive`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrategySwitchInfo {
    /// The table (column family) name.
    pub table: String,
    /// The strategy in force before.
    pub from: String,
    /// The strategy in force now.
    pub to: String,
    /// Why.
    pub reason: String,
}

/// Callbacks for programs that react to what the database does
/// (RocksDB's `EventListener`). Every method has an empty default. They
/// run on the thread that did the work with no database lock held, so
/// they may call back into the database, but a slow callback slows that
/// thread (a flush, a compaction, or a writer).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use std::sync::{Arc, Mutex};
/// use lithify_engine::{Db, EventListener, FlushJobInfo, Options};
///
/// #[derive(Default)]
/// struct Flushes(Mutex<Vec<u64>>);
/// impl EventListener for Flushes {
///     fn on_flush_completed(&self, info: &FlushJobInfo) {
///         self.0.lock().unwrap().push(info.bytes_written);
///     }
/// }
///
/// let flushes = Arc::new(Flushes::default());
/// let options = Options::default()
///     .listeners(vec![flushes.clone()]);
/// let db = Db::open(dir.path(), options).unwrap();
/// db.put(b"k", b"v").unwrap();
/// db.flush().unwrap();
/// db.close().unwrap(); // the background threads have finished
/// assert_eq!(flushes.0.lock().unwrap().len(), 1);
/// ```
pub trait EventListener: Send + Sync {
    /// A flush is about to write its memtables.
    fn on_flush_begin(&self, _info: &FlushJobInfo) {}
    /// A flush's edit is installed: its files are live.
    fn on_flush_completed(&self, _info: &FlushJobInfo) {}
    /// A compaction is about to run.
    fn on_compaction_begin(&self, _info: &CompactionJobInfo) {}
    /// A compaction's edit is installed.
    fn on_compaction_completed(&self, _info: &CompactionJobInfo) {}
    /// A background error made the database read-only (RocksDB's
    /// `OnBackgroundError`).
    fn on_background_error(&self, _error: &Error) {}
    /// Writes were slowed down, stopped, or are back to normal.
    fn on_stall_conditions_changed(&self, _info: &WriteStallInfo) {}
    /// A table's compaction strategy changed.
    fn on_strategy_switched(&self, _info: &StrategySwitchInfo) {}
    /// The open finished recovering: what it replayed, and what it dropped
    /// and where it kept it ([`RecoveryReport::is_clean`] when nothing).
    fn on_recovery_completed(&self, _report: &RecoveryReport) {}
}

/// How important an event is; mapped to `tracing`'s levels and written in
/// the `LOG` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        }
    }
}

/// Something raised under the database mutex, delivered to the listeners
/// later.
enum Pending {
    Stall(WriteStallInfo),
    BackgroundError(Arc<Error>),
}

/// The `LOG` file: one line per event, RocksDB's info LOG layout
/// (`2026/12/01-14:51:08.123456 <thread> LEVEL message`).
struct InfoLog {
    file: Mutex<Box<dyn WritableFile>>,
}

/// The database's event sink: `tracing`, the `LOG` file, the listeners.
pub(crate) struct Events {
    dir: PathBuf,
    listeners: Vec<Arc<dyn EventListener>>,
    log: Option<InfoLog>,
    pending: Mutex<Vec<Pending>>,
    has_pending: AtomicBool,
}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Events")
            .field("dir", &self.dir)
            .field("listeners", &self.listeners.len())
            .field("log", &self.log.is_some())
            .finish()
    }
}

/// The name of the info log in a database directory.
pub const INFO_LOG_FILE: &str = "LOG";

impl Events {
    /// Events of the database in `dir`; `log` writes the `LOG` file there
    /// (the previous one is kept as `LOG.old.<micros>`, at most
    /// `keep_log_file_num` of those).
    pub(crate) fn new(
        fs: &dyn FileSystem,
        dir: &Path,
        listeners: Vec<Arc<dyn EventListener>>,
        log: bool,
        keep_log_file_num: usize,
    ) -> Events {
        let log = if log {
            match open_info_log(fs, dir, keep_log_file_num) {
                Ok(file) => Some(InfoLog {
                    file: Mutex::new(file),
                }),
                Err(e) => {
                    tracing::warn!(
                        target: "lithify::engine",
                        db = %dir.display(),
                        "cannot write the LOG file, events go to tracing only: {e}"
                    );
                    None
                }
            }
        } else {
            None
        };
        Events {
            dir: dir.to_path_buf(),
            listeners,
            log,
            pending: Mutex::new(Vec::new()),
            has_pending: AtomicBool::new(false),
        }
    }

    /// Reports one event: a `tracing` event (target `lithify::engine`,
    /// fields `db` and `event`) and a `LOG` line.
    pub(crate) fn emit(&self, level: Level, kind: &'static str, message: fmt::Arguments<'_>) {
        let db = self.dir.display();
        match level {
            Level::Debug => {
                tracing::debug!(target: "lithify::engine", db = %db, event = kind, "{message}")
            }
            Level::Info => {
                tracing::info!(target: "lithify::engine", db = %db, event = kind, "{message}")
            }
            Level::Warn => {
                tracing::warn!(target: "lithify::engine", db = %db, event = kind, "{message}")
            }
            Level::Error => {
                tracing::error!(target: "lithify::engine", db = %db, event = kind, "{message}")
            }
        }
        if let Some(log) = &self.log {
            let line = format!(
                "{} {:?} {:5} [{kind}] {message}\n",
                timestamp(SystemTime::now()),
                std::thread::current().id(),
                level.name(),
            );
            // The LOG is best effort: a full disk must not fail a flush.
            let _ = log.file.lock().append(line.as_bytes());
        }
    }

    fn each(&self, f: impl Fn(&dyn EventListener)) {
        if self.listeners.is_empty() {
            return;
        }
        let _inside = InListener::enter();
        for l in &self.listeners {
            f(&**l);
        }
    }

    pub(crate) fn flush_begin(&self, info: &FlushJobInfo) {
        self.emit(
            Level::Debug,
            "flush_begin",
            format_args!(
                "table {:?}: flushing {} memtable(s), sequence numbers {}..={}",
                info.table, info.memtables, info.smallest_seqno, info.largest_seqno
            ),
        );
        self.each(|l| l.on_flush_begin(info));
    }

    pub(crate) fn flush_completed(&self, info: &FlushJobInfo) {
        self.emit(
            Level::Info,
            "flush_completed",
            format_args!(
                "table {:?}: flushed {} memtable(s) to L{} files {:?}, {} bytes in {} us",
                info.table,
                info.memtables,
                info.output_level,
                info.output_files,
                info.bytes_written,
                info.micros
            ),
        );
        self.each(|l| l.on_flush_completed(info));
    }

    pub(crate) fn compaction_begin(&self, info: &CompactionJobInfo) {
        self.emit(
            Level::Debug,
            "compaction_begin",
            format_args!(
                "table {:?}: compaction ({}) of {} to L{}{}",
                info.table,
                info.reason,
                inputs_text(&info.inputs),
                info.output_level,
                if info.trivial_move {
                    ", a trivial move"
                } else {
                    ""
                }
            ),
        );
        self.each(|l| l.on_compaction_begin(info));
    }

    pub(crate) fn compaction_completed(&self, info: &CompactionJobInfo) {
        self.emit(
            Level::Info,
            "compaction_completed",
            format_args!(
                "table {:?}: compacted ({}) {} to L{} files {:?}: read {} bytes, wrote {} bytes in {} us",
                info.table,
                info.reason,
                inputs_text(&info.inputs),
                info.output_level,
                info.output_files,
                info.bytes_read,
                info.bytes_written,
                info.micros
            ),
        );
        self.each(|l| l.on_compaction_completed(info));
    }

    pub(crate) fn strategy_switched(&self, info: &StrategySwitchInfo) {
        self.emit(
            Level::Info,
            "strategy_switched",
            format_args!(
                "table {:?}: compaction strategy {} -> {} ({})",
                info.table, info.from, info.to, info.reason
            ),
        );
        self.each(|l| l.on_strategy_switched(info));
    }

    pub(crate) fn recovery_completed(&self, report: &RecoveryReport) {
        if report.is_clean() {
            self.emit(
                Level::Info,
                "recovery",
                format_args!(
                    "recovered to sequence {} ({} WAL(s) replayed, nothing dropped)",
                    report.last_sequence,
                    report.wals_replayed.len()
                ),
            );
        } else {
            for d in &report.dropped {
                self.emit(Level::Warn, "recovery_dropped", format_args!("{d}"));
            }
            self.emit(Level::Warn, "recovery", format_args!("{report}"));
        }
        self.each(|l| l.on_recovery_completed(report));
    }

    /// A stall change, seen under the database mutex: logged now, handed
    /// to the listeners by [`deliver`](Events::deliver).
    pub(crate) fn stall_changed(&self, info: WriteStallInfo) {
        let level = if info.condition == StallCondition::Normal {
            Level::Info
        } else {
            Level::Warn
        };
        self.emit(
            level,
            "stall",
            format_args!(
                "write stall {:?} -> {:?}{}",
                info.previous,
                info.condition,
                match info.cause {
                    Some(c) => format!(" ({c:?})"),
                    None => String::new(),
                }
            ),
        );
        self.queue(Pending::Stall(info));
    }

    /// A background error, seen under the database mutex.
    pub(crate) fn background_error(&self, error: Arc<Error>) {
        self.emit(
            Level::Error,
            "background_error",
            format_args!("the database is read-only from now on: {error}"),
        );
        self.queue(Pending::BackgroundError(error));
    }

    fn queue(&self, p: Pending) {
        if self.listeners.is_empty() {
            return;
        }
        self.pending.lock().push(p);
        self.has_pending.store(true, Ordering::Release);
    }

    /// Hands queued events to the listeners (call with no database lock
    /// held; one relaxed load when there is nothing).
    #[inline]
    pub(crate) fn deliver(&self) {
        if self.has_pending.load(Ordering::Acquire) {
            self.deliver_slow();
        }
    }

    #[cold]
    fn deliver_slow(&self) {
        let pending = {
            let mut p = self.pending.lock();
            self.has_pending.store(false, Ordering::Release);
            std::mem::take(&mut *p)
        };
        for p in pending {
            match p {
                Pending::Stall(info) => self.each(|l| l.on_stall_conditions_changed(&info)),
                Pending::BackgroundError(e) => self.each(|l| l.on_background_error(&e)),
            }
        }
    }
}

fn inputs_text(inputs: &[(usize, Vec<u64>)]) -> String {
    inputs
        .iter()
        .map(|(level, files)| format!("L{level} {files:?}"))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Opens a fresh `LOG` in `dir`, keeping the previous one as
/// `LOG.old.<micros>` and at most `keep` of those.
fn open_info_log(
    fs: &dyn FileSystem,
    dir: &Path,
    keep: usize,
) -> std::io::Result<Box<dyn WritableFile>> {
    let path = dir.join(INFO_LOG_FILE);
    if fs.exists(&path) {
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros());
        fs.rename(&path, &dir.join(format!("{INFO_LOG_FILE}.old.{micros}")))?;
        let prefix = format!("{INFO_LOG_FILE}.old.");
        let mut old: Vec<(u128, String)> = fs
            .list_dir(dir)?
            .into_iter()
            .filter_map(|n| {
                let t = n.strip_prefix(&prefix)?.parse().ok()?;
                Some((t, n))
            })
            .collect();
        old.sort_unstable();
        let excess = old.len().saturating_sub(keep);
        for (_, name) in old.into_iter().take(excess) {
            let _ = fs.remove_file(&dir.join(name));
        }
    }
    fs.create(&path)
}

/// `YYYY/MM/DD-HH:MM:SS.micros` in UTC, as RocksDB's LOG lines start.
fn timestamp(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(days as i64);
    format!(
        "{y:04}/{m:02}/{day:02}-{:02}:{:02}:{:02}.{:06}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_micros()
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        let at = |secs: u64, micros: u32| {
            timestamp(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros.into()))
        };
        assert_eq!(at(0, 0), "1970/01/01-00:00:00.000000");
        // 2000-02-29 (a leap day of a century leap year) 12:34:56.
        assert_eq!(at(951_827_696, 7), "2000/02/29-12:34:56.000007");
        // 2026-12-01 14:51:08.
        assert_eq!(at(1_796_136_668, 123_456), "2026/12/01-14:51:08.123456");
        assert_eq!(at(1_709_251_199, 0), "2024/02/29-23:59:59.000000");
    }
}

thread_local! {
    /// This thread runs a listener callback now.
    static IN_LISTENER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is inside a listener callback: callbacks may write
/// to the database, and such a write must not wait for what the thread
/// that runs the callback holds (an ingestion's write stop).
pub(crate) fn in_listener() -> bool {
    IN_LISTENER.with(std::cell::Cell::get)
}

/// Runs `f` as a listener callback would run (for tests).
#[cfg(test)]
pub(crate) fn as_listener<T>(f: impl FnOnce() -> T) -> T {
    let _inside = InListener::enter();
    f()
}

/// Marks this thread as inside a listener callback while it lives.
struct InListener(bool);

impl InListener {
    fn enter() -> InListener {
        InListener(IN_LISTENER.with(|c| c.replace(true)))
    }
}

impl Drop for InListener {
    fn drop(&mut self) {
        IN_LISTENER.with(|c| c.set(self.0));
    }
}
