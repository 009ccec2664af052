//! The log cleaner service: `log.cleaner.threads` threads, each with its
//! own [`Cleaner`] (offset map and buffers), cleaning the dirtiest log the
//! [manager](LogCleanerManager) hands out, sleeping
//! `log.cleaner.backoff.ms` when there is none (Kafka's `LogCleaner` and
//! `CleanerThread`).
//!
//! A thread never dies of a round's failure: the error marks the log
//! uncleanable (or its data directory offline, for I/O errors) and the
//! thread goes on with other logs. Every round ends in a [`CleanerEvent`]
//! on the [`events`](LogCleaner::events) channel, which carries Kafka's
//! "Cleaner stats" as a [`RoundReport`].
//!
//! A round's replaced segments are closed on one more thread, the
//! *closer*, not on the cleaner thread ([`Cleaner::close_elsewhere`]):
//! the last close of a deleted segment is when the kernel drops its page
//! cache.
//!
//! [`LogCleaner::clean_eligible_once`] runs one round of every eligible log
//! on the calling thread instead (what `lithify log clean` does).

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, bounded};
use lithify_base::sync::{Condvar, Mutex};
use lithify_vfs::FileSystem;
use snafu::ResultExt as _;

use crate::config::CleanerConfig;
use crate::error::{CleaningAbortedSnafu, Error, Result, SpawnSnafu};
use crate::manager::LogCleanerManager;
use crate::read_ahead::Cores;
use crate::round::Cleaner;
use crate::stats::RoundReport;
use crate::throttler::Throttler;
use crate::to_clean::LogToClean;
use lithify_kafka_log::Clock;
use lithify_kafka_log::SharedLog;
use lithify_kafka_log::TopicPartition;

/// Events kept for a reader of [`LogCleaner::events`]; more are dropped.
const EVENT_CAPACITY: usize = 4096;

/// What happened to one log in one round.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CleanerEvent {
    /// A round finished and its checkpoint was written.
    Cleaned(Box<RoundReport>),
    /// A round was stopped (the log was paused, or the cleaner stops).
    Aborted {
        /// The partition.
        topic_partition: TopicPartition,
    },
    /// A round failed; the log is uncleanable, or its data directory
    /// offline after an I/O error.
    Failed {
        /// The partition.
        topic_partition: TopicPartition,
        /// The log directory.
        dir: PathBuf,
        /// The error, as a sentence.
        error: String,
    },
    /// A problem outside a round (an unreadable checkpoint, a log whose
    /// sections could not be computed).
    Problem(String),
}

impl CleanerEvent {
    /// Whether this event reports a failure.
    pub fn is_failure(&self) -> bool {
        matches!(self, CleanerEvent::Failed { .. } | CleanerEvent::Problem(_))
    }
}

impl fmt::Display for CleanerEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CleanerEvent::Cleaned(r) => write!(f, "{r}"),
            CleanerEvent::Aborted { topic_partition } => {
                writeln!(f, "cleaning of log {topic_partition} was aborted")
            }
            CleanerEvent::Failed {
                topic_partition,
                dir,
                error,
            } => writeln!(
                f,
                "failed to clean log {topic_partition} ({}): {error}",
                dir.display()
            ),
            CleanerEvent::Problem(p) => writeln!(f, "problem: {p}"),
        }
    }
}

#[derive(Debug, Default)]
struct Shutdown {
    stop: Mutex<bool>,
    wake: Condvar,
}

impl Shutdown {
    fn is_set(&self) -> bool {
        *self.stop.lock()
    }

    /// Sleeps up to `ms`, or until shutdown; true when shutting down.
    fn sleep(&self, ms: u64) -> bool {
        let mut stop = self.stop.lock();
        if !*stop {
            let (guard, _) = self.wake.wait_timeout(stop, Duration::from_millis(ms));
            stop = guard;
        }
        *stop
    }
}

/// The log cleaner: threads, the manager, the shared throttler.
///
/// ```
/// use std::path::Path;
/// use std::sync::Arc;
/// use lithify_base::sync::Mutex;
/// use lithify_vfs::MemFs;
/// use lithify_kafka_log::{Log, LogConfig, ManualClock, SimpleRecord};
/// use lithify_compaction_logclean::{CleanerConfig, CleanerEvent, LogCleaner};
///
/// let fs = Arc::new(MemFs::new());
/// let config = LogConfig::from_properties([("cleanup.policy", "compact"), ("segment.bytes", "300")]).unwrap();
/// let mut log = Log::open(fs.clone(), Path::new("/kafka/users-0"), config).unwrap();
/// for i in 0..30 {
///     log.append(&[SimpleRecord::new(i, format!("user-{}", i % 3), format!("v{i}"))]).unwrap();
/// }
/// let cleaner = LogCleaner::new(CleanerConfig::default(), fs.clone(), Arc::new(ManualClock::at_ms(1_000)));
/// cleaner.add_log(Arc::new(Mutex::new(log))).unwrap();
/// let events = cleaner.clean_eligible_once().unwrap();
/// let CleanerEvent::Cleaned(report) = &events[0] else { panic!("{events:?}") };
/// assert!(report.stats.messages_written < report.stats.messages_read);
/// ```
#[derive(Debug)]
pub struct LogCleaner {
    config: CleanerConfig,
    manager: Arc<LogCleanerManager>,
    throttler: Arc<Throttler>,
    shutdown: Arc<Shutdown>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    events: (Sender<CleanerEvent>, Receiver<CleanerEvent>),
}

impl LogCleaner {
    /// A cleaner (not started) over logs whose checkpoints live on `fs`.
    pub fn new(config: CleanerConfig, fs: Arc<dyn FileSystem>, clock: Arc<dyn Clock>) -> Self {
        let throttler = Arc::new(Throttler::new(
            config.max_io_bytes_per_second,
            Arc::new(lithify_kafka_log::SystemClock),
        ));
        Self::with_throttler(config, fs, clock, throttler)
    }

    /// Like [`new`](Self::new) with a given throttler.
    pub fn with_throttler(
        config: CleanerConfig,
        fs: Arc<dyn FileSystem>,
        clock: Arc<dyn Clock>,
        throttler: Arc<Throttler>,
    ) -> Self {
        LogCleaner {
            config,
            manager: Arc::new(LogCleanerManager::new(fs, clock)),
            throttler,
            shutdown: Arc::new(Shutdown::default()),
            threads: Mutex::new(Vec::new()),
            events: bounded(EVENT_CAPACITY),
        }
    }

    /// The manager (log registry, states, checkpoints).
    pub fn manager(&self) -> &Arc<LogCleanerManager> {
        &self.manager
    }

    /// The settings.
    pub fn config(&self) -> &CleanerConfig {
        &self.config
    }

    /// Hands a log to the cleaner.
    pub fn add_log(&self, log: SharedLog) -> Result<TopicPartition> {
        self.manager.add_log(log)
    }

    /// Takes a log back, waiting for a round in progress to stop.
    pub fn remove_log(&self, tp: &TopicPartition) -> Result<Option<SharedLog>> {
        self.manager.remove_log(tp)
    }

    /// The events of every round since the start (up to 4096 unread).
    pub fn events(&self) -> Receiver<CleanerEvent> {
        self.events.1.clone()
    }

    /// Starts `log.cleaner.threads` threads, and the closer thread that
    /// closes the segments their rounds replaced. Fails (starting none) if
    /// the offset maps cannot be created.
    pub fn startup(&self) -> Result<()> {
        let mut threads = self.threads.lock();
        if !threads.is_empty() {
            return Ok(());
        }
        *self.shutdown.stop.lock() = false;
        let mut cleaners = Vec::with_capacity(self.config.threads);
        for id in 0..self.config.threads {
            cleaners.push(Cleaner::new(id, &self.config, self.throttler.clone())?);
        }
        // The closer ends when every cleaner (each holding a sender) has.
        // A few rounds' snapshots at most: a closer that falls behind must
        // not keep many unlinked segments (and their disk space) alive.
        let (closer, retired) = bounded(2 * self.config.threads.max(1));
        let spawned = std::thread::Builder::new()
            .name("lithify-log-cleaner-closer".to_string())
            .spawn(move || {
                for snapshot in retired {
                    let started = std::time::Instant::now();
                    drop(snapshot);
                    tracing::debug!(
                        micros = started.elapsed().as_micros() as u64,
                        "replaced segments closed"
                    );
                }
            });
        match spawned {
            Ok(h) => threads.push(h),
            Err(e) => {
                return Err(e).context(SpawnSnafu {
                    name: "lithify-log-cleaner-closer",
                });
            }
        }
        // The threads share the machine's cores with their rounds'
        // read-ahead threads: a thread counts busy while awake (cleaning,
        // or looking for a log), so read-ahead only takes the cores of
        // threads asleep for lack of work.
        let cores = Cores::of_machine();
        for mut cleaner in cleaners {
            cleaner.close_elsewhere(closer.clone());
            cleaner.share_cores(cores.clone());
            let cores = cores.clone();
            let manager = self.manager.clone();
            let shutdown = self.shutdown.clone();
            let events = self.events.0.clone();
            let backoff = self.config.backoff_ms;
            let handle = std::thread::Builder::new()
                .name(format!("lithify-log-cleaner-thread-{}", cleaner.id()))
                .spawn(move || {
                    let mut awake = Some(cores.awake());
                    while !shutdown.is_set() {
                        let mut cleaned = false;
                        let grab = manager.grab_filthiest_log(&HashSet::new());
                        for p in grab.problems {
                            let _ = events.try_send(CleanerEvent::Problem(p));
                        }
                        if let Some((ltc, log)) = grab.chosen {
                            let event = run_round(&manager, &mut cleaner, &ltc, &log, &shutdown);
                            cleaned = matches!(event, CleanerEvent::Cleaned(_));
                            let _ = events.try_send(event);
                        }
                        if !cleaned {
                            drop(awake.take());
                            let stop = shutdown.sleep(backoff);
                            awake.replace(cores.awake());
                            if stop {
                                break;
                            }
                        }
                        manager.maintain_uncleanable_partitions();
                    }
                });
            match handle {
                Ok(h) => threads.push(h),
                Err(e) => {
                    drop(threads);
                    drop(closer);
                    self.shutdown();
                    return Err(e).context(SpawnSnafu {
                        name: "lithify-log-cleaner-thread",
                    });
                }
            }
        }
        Ok(())
    }

    /// Stops the threads: rounds in progress abort (nothing is swapped in
    /// by an aborted round) and every thread is joined, the closer once it
    /// has closed every replaced segment.
    pub fn shutdown(&self) {
        *self.shutdown.stop.lock() = true;
        self.shutdown.wake.notify_all();
        let threads = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
    }

    /// One round of each eligible log, dirtiest first, on the calling
    /// thread; returns every event.
    pub fn clean_eligible_once(&self) -> Result<Vec<CleanerEvent>> {
        let mut cleaner = Cleaner::new(0, &self.config, self.throttler.clone())?;
        let mut done = HashSet::new();
        let mut seen_problems = HashSet::new();
        let mut out = Vec::new();
        loop {
            let grab = self.manager.grab_filthiest_log(&done);
            for p in grab.problems {
                if seen_problems.insert(p.clone()) {
                    out.push(CleanerEvent::Problem(p));
                }
            }
            let Some((ltc, log)) = grab.chosen else {
                break;
            };
            done.insert(ltc.topic_partition.clone());
            out.push(run_round(
                &self.manager,
                &mut cleaner,
                &ltc,
                &log,
                &self.shutdown,
            ));
        }
        Ok(out)
    }
}

impl Drop for LogCleaner {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Runs one round and records its end with the manager.
fn run_round(
    manager: &LogCleanerManager,
    cleaner: &mut Cleaner,
    ltc: &LogToClean,
    log: &SharedLog,
    shutdown: &Shutdown,
) -> CleanerEvent {
    let tp = &ltc.topic_partition;
    let dir = log.lock().dir().to_path_buf();
    let check_done = || -> Result<()> {
        if shutdown.is_set() {
            return CleaningAbortedSnafu {
                dir: dir.clone(),
                reason: "the cleaner is shutting down",
            }
            .fail();
        }
        manager.check_cleaning_aborted(tp)
    };
    let now = manager.clock().now_ms();
    let result = cleaner.clean(log, ltc, now, &check_done);
    let failed = |error: &Error| {
        // The state must be released even if recording the failure fails.
        let _ = manager.failed_cleaning(tp, error);
        match error {
            Error::CleaningAborted { .. } => CleanerEvent::Aborted {
                topic_partition: tp.clone(),
            },
            e => CleanerEvent::Failed {
                topic_partition: tp.clone(),
                dir: dir.clone(),
                error: e.to_string(),
            },
        }
    };
    match result {
        Ok(outcome) => {
            let end = outcome.report.end_offset;
            match manager.done_cleaning(tp, end, Some(outcome.clean_section)) {
                Ok(true) => CleanerEvent::Cleaned(Box::new(outcome.report)),
                Ok(false) => CleanerEvent::Aborted {
                    topic_partition: tp.clone(),
                },
                Err(e) => {
                    // The state is already released; quarantine the log
                    // (an I/O error takes its data directory offline).
                    manager.quarantine(tp, &e, format!("writing its checkpoint failed: {e}"));
                    CleanerEvent::Failed {
                        topic_partition: tp.clone(),
                        dir: dir.clone(),
                        error: format!(
                            "the round finished but its checkpoint was not written: {e}"
                        ),
                    }
                }
            }
        }
        Err(e) => failed(&e),
    }
}
