//! Which log to clean next, and what happens after a round (Kafka's
//! `LogCleanerManager`).
//!
//! The manager knows every log handed to the cleaner, grouped by data
//! directory (the parent of a log directory), and keeps for each data
//! directory a [`cleaner-offset-checkpoint`](crate::checkpoint). It
//!
//! * **chooses** the dirtiest eligible log ([`grab_filthiest_log`]): for
//!   every log with `cleanup.policy` containing `compact` that has no
//!   cleaning state and is not uncleanable, its sections are computed
//!   ([`LogToClean`]); logs with no bytes are skipped; among the eligible
//!   ones the largest dirty ratio wins and is marked in progress. A log
//!   whose checkpoint is invalid gets it rewritten even when not chosen.
//!   Beyond Kafka, a log that is not dirty enough but whose clean section
//!   holds tombstones past their delete horizon is eligible too, so quiet
//!   logs do not keep their tombstones forever;
//! * **records the end** of a round ([`done_cleaning`]): the checkpoint
//!   advances to the round's end offset only if the round was not aborted;
//! * **quarantines** failures: an unexpected error while choosing or
//!   cleaning a log marks that log uncleanable (it is skipped from then
//!   on, with the error as the reason) without stopping anything else; an
//!   I/O error takes its whole data directory offline, as in Kafka;
//! * **pauses** logs ([`abort_and_pause`], [`resume`]) through the
//!   [`StateBoard`].
//!
//! **Locking.** The manager owns each data directory's checkpoint, so it
//! holds that directory's `.lock` (Kafka's `LogManager` lock file,
//! [`lithify_kafka_log::lock_data_dir`]) from the first log of the
//! directory handed to it until the last is taken away (or
//! [`lock_data_dir`] takes it up front): a second cleaner of the same
//! data directory, in this process or another, is refused before it
//! touches anything. Each log's own `.lock` is held by its `Log`.
//!
//! A checkpoint file that cannot be read (not in Kafka's format, or an I/O
//! error) takes its data directory offline, as Kafka's
//! `CheckpointFileWithFailureHandler` does: it is reported once (in
//! [`Grab::problems`]) naming the file, the line and the byte offset, none
//! of that directory's logs is cleaned, and the file is never overwritten.
//! A missing file (or an empty one) has no entries: each log is cleaned
//! from its start, which loses nothing.
//!
//! [`grab_filthiest_log`]: LogCleanerManager::grab_filthiest_log
//! [`done_cleaning`]: LogCleanerManager::done_cleaning
//! [`abort_and_pause`]: LogCleanerManager::abort_and_pause
//! [`resume`]: LogCleanerManager::resume
//! [`lock_data_dir`]: LogCleanerManager::lock_data_dir

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_base::Classify as _;
use lithify_base::ErrorKind;
use lithify_base::sync::Mutex;
use lithify_vfs::{FileLock, FileSystem, parent_dir};

use crate::checkpoint;
use crate::error::{CleaningAbortedSnafu, Error, InvalidArgumentSnafu, Result};
use crate::states::{CleaningState, StateBoard};
use crate::to_clean::{LogToClean, cleanable_offsets, max_compaction_delay};
use lithify_kafka_log::Clock;
use lithify_kafka_log::TopicPartition;
use lithify_kafka_log::{LogSnapshot, SegmentSnapshot};

use lithify_kafka_log::SharedLog;

#[derive(Debug)]
struct ManagedLog {
    log: SharedLog,
    dir: PathBuf,
    data_dir: PathBuf,
}

/// The clean section of a log as last seen, and its earliest horizon.
type HorizonEntry = (Vec<(i64, u64)>, Option<i64>);

#[derive(Debug, Default)]
struct Registry {
    logs: BTreeMap<TopicPartition, ManagedLog>,
    uncleanable: BTreeMap<TopicPartition, String>,
    offline_dirs: BTreeMap<PathBuf, String>,
    horizons: HashMap<TopicPartition, HorizonEntry>,
    /// The `.lock` of every data directory the manager holds logs of.
    dir_locks: BTreeMap<PathBuf, FileLock>,
}

/// The result of [`LogCleanerManager::grab_filthiest_log`].
#[derive(Debug, Default)]
pub struct Grab {
    /// The log to clean, now marked in progress.
    pub chosen: Option<(LogToClean, SharedLog)>,
    /// Problems met on the way, one sentence each: unreadable checkpoint
    /// files, logs marked uncleanable while computing their sections.
    pub problems: Vec<String>,
}

/// Chooses logs to clean and keeps their checkpoints and states.
#[derive(Debug)]
pub struct LogCleanerManager {
    fs: Arc<dyn FileSystem>,
    clock: Arc<dyn Clock>,
    registry: Mutex<Registry>,
    board: StateBoard,
    /// Held by a selection from reading the checkpoints to marking its
    /// choice in progress, and by the end of a round from advancing its
    /// checkpoint to clearing its state (Kafka's `LogCleanerManager.lock`):
    /// a selection never sees a round's log free with its old checkpoint,
    /// which would clean the same dirty section twice. Taken before
    /// `registry` and the board.
    selection: Mutex<()>,
}

impl LogCleanerManager {
    /// A manager with no logs. Checkpoints are read and written through
    /// `fs`; `clock` gives the time of selections and rounds.
    pub fn new(fs: Arc<dyn FileSystem>, clock: Arc<dyn Clock>) -> Self {
        LogCleanerManager {
            fs,
            clock,
            registry: Mutex::new(Registry::default()),
            board: StateBoard::new(),
            selection: Mutex::new(()),
        }
    }

    /// The manager's clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Takes the data directory's `.lock` (unless the manager holds it
    /// already), which it then holds until its last log is removed: a
    /// cleaner calls it before opening the directory's logs, so that a
    /// second cleaner is refused before it opens (and recovers) any.
    /// Refused with the log crate's
    /// [`Error::InUse`](lithify_kafka_log::Error::InUse) while another
    /// process (or another manager) holds it.
    ///
    /// ```
    /// use std::path::Path;
    /// use std::sync::Arc;
    /// use lithify_vfs::{FileSystem, MemFs};
    /// use lithify_kafka_log::ManualClock;
    /// use lithify_compaction_logclean::LogCleanerManager;
    ///
    /// let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    /// fs.create_dir_all(Path::new("/data")).unwrap();
    /// let first = LogCleanerManager::new(fs.clone(), Arc::new(ManualClock::at_ms(0)));
    /// first.lock_data_dir(Path::new("/data")).unwrap();
    /// first.lock_data_dir(Path::new("/data")).unwrap(); // held already
    /// let second = LogCleanerManager::new(fs.clone(), Arc::new(ManualClock::at_ms(0)));
    /// let err = second.lock_data_dir(Path::new("/data")).unwrap_err();
    /// assert!(err.to_string().contains("is in use by another process"), "{err}");
    /// ```
    pub fn lock_data_dir(&self, data_dir: &Path) -> Result<()> {
        let mut reg = self.registry.lock();
        Self::hold_dir_lock(&*self.fs, &mut reg, data_dir)
    }

    fn hold_dir_lock(fs: &dyn FileSystem, reg: &mut Registry, data_dir: &Path) -> Result<()> {
        if !reg.dir_locks.contains_key(data_dir) {
            let lock = lithify_kafka_log::lock_data_dir(fs, data_dir)?;
            reg.dir_locks.insert(data_dir.to_path_buf(), lock);
        }
        Ok(())
    }

    /// Hands `log` to the cleaner. Its directory must be named
    /// `<topic>-<partition>`; its data directory is the parent, whose
    /// `.lock` the manager holds from now on (see
    /// [`lock_data_dir`](Self::lock_data_dir)).
    pub fn add_log(&self, log: SharedLog) -> Result<TopicPartition> {
        let dir = log.lock().dir().to_path_buf();
        let Some(tp) = dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(TopicPartition::from_dir_name)
        else {
            return InvalidArgumentSnafu {
                message: format!(
                    "log directory {} is not named <topic>-<partition>",
                    dir.display()
                ),
            }
            .fail();
        };
        let mut reg = self.registry.lock();
        if let Some(existing) = reg.logs.get(&tp) {
            return InvalidArgumentSnafu {
                message: format!(
                    "partition {tp} is already cleaned from {}",
                    existing.dir.display()
                ),
            }
            .fail();
        }
        let data_dir = parent_dir(&dir).to_path_buf();
        Self::hold_dir_lock(&*self.fs, &mut reg, &data_dir)?;
        reg.logs
            .insert(tp.clone(), ManagedLog { log, dir, data_dir });
        Ok(tp)
    }

    /// Takes `tp` away from the cleaner, waiting for a round in progress
    /// to stop, and removes its checkpoint entry.
    pub fn remove_log(&self, tp: &TopicPartition) -> Result<Option<SharedLog>> {
        self.board.abort_and_pause(tp);
        let removed = {
            let mut reg = self.registry.lock();
            reg.uncleanable.remove(tp);
            reg.horizons.remove(tp);
            reg.logs.remove(tp)
        };
        self.board.forget(tp);
        if let Some(m) = &removed {
            let updated = self.update_checkpoint(&m.data_dir, None, Some(tp));
            // The directory's last log gone: another cleaner may have it.
            let mut reg = self.registry.lock();
            if !reg.logs.values().any(|other| other.data_dir == m.data_dir) {
                reg.dir_locks.remove(&m.data_dir);
            }
            drop(reg);
            updated?;
        }
        Ok(removed.map(|m| m.log))
    }

    /// The partitions handed to the cleaner.
    pub fn partitions(&self) -> Vec<TopicPartition> {
        self.registry.lock().logs.keys().cloned().collect()
    }

    /// The log of `tp`.
    pub fn log(&self, tp: &TopicPartition) -> Option<SharedLog> {
        self.registry.lock().logs.get(tp).map(|m| m.log.clone())
    }

    /// The data directories of the logs.
    pub fn data_dirs(&self) -> Vec<PathBuf> {
        let reg = self.registry.lock();
        let mut dirs: Vec<PathBuf> = reg.logs.values().map(|m| m.data_dir.clone()).collect();
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// Every checkpointed offset of every data directory that is not
    /// offline. A directory whose checkpoint file cannot be read (malformed,
    /// or an I/O error) is taken offline, as Kafka's
    /// `CheckpointFileWithFailureHandler` does: its logs are not cleaned
    /// and the file is left as it is, for someone to look at. One sentence
    /// per directory taken offline is returned with the offsets.
    pub fn all_cleaner_checkpoints(&self) -> (BTreeMap<TopicPartition, i64>, Vec<String>) {
        let mut all = BTreeMap::new();
        let mut problems = Vec::new();
        for dir in self.data_dirs() {
            if self.registry.lock().offline_dirs.contains_key(&dir) {
                continue;
            }
            match checkpoint::read(&*self.fs, &dir) {
                Ok(entries) => all.extend(entries),
                Err(e) => {
                    let reason = format!(
                        "{e}; the logs of {} are not cleaned until the file is repaired or removed (a removed checkpoint makes the next round clean each log from its start, which loses nothing)",
                        dir.display()
                    );
                    tracing::error!(
                        data_dir = %dir.display(),
                        error = %e,
                        "data directory taken offline for cleaning: its cleaner-offset-checkpoint cannot be read"
                    );
                    self.registry
                        .lock()
                        .offline_dirs
                        .insert(dir.clone(), reason.clone());
                    problems.push(format!(
                        "data directory {} is offline: {reason}",
                        dir.display()
                    ));
                }
            }
        }
        (all, problems)
    }

    /// Reads, changes and rewrites the checkpoint of `data_dir`, keeping
    /// only partitions of logs in that directory. A file that cannot be
    /// read is an error, never overwritten.
    fn update_checkpoint(
        &self,
        data_dir: &Path,
        set: Option<(&TopicPartition, i64)>,
        remove: Option<&TopicPartition>,
    ) -> Result<()> {
        let reg = self.registry.lock();
        let mut entries = checkpoint::read(&*self.fs, data_dir)?;
        entries.retain(|tp, _| reg.logs.get(tp).is_some_and(|m| m.data_dir == data_dir));
        if let Some(tp) = remove {
            entries.remove(tp);
        }
        if let Some((tp, offset)) = set {
            entries.insert(tp.clone(), offset);
        }
        checkpoint::write(&*self.fs, data_dir, &entries)
    }

    /// Chooses the dirtiest eligible log, marks it in progress and returns
    /// it, skipping the partitions in `exclude`.
    pub fn grab_filthiest_log(&self, exclude: &HashSet<TopicPartition>) -> Grab {
        let _selection = self.selection.lock();
        let now = self.clock.now_ms();
        let (checkpoints, mut problems) = self.all_cleaner_checkpoints();
        let candidates: Vec<(TopicPartition, SharedLog, PathBuf)> = {
            let reg = self.registry.lock();
            reg.logs
                .iter()
                .filter(|(tp, m)| {
                    !exclude.contains(*tp)
                        && !reg.uncleanable.contains_key(*tp)
                        && !reg.offline_dirs.contains_key(&m.data_dir)
                        && !self.board.is_busy(tp)
                })
                .map(|(tp, m)| (tp.clone(), m.log.clone(), m.data_dir.clone()))
                .collect()
        };
        let mut eligible: Vec<(LogToClean, SharedLog)> = Vec::new();
        for (tp, log, data_dir) in candidates {
            let snap = {
                let log = log.lock();
                if !log.config().cleanup_policy.compact {
                    continue;
                }
                log.snapshot(0)
            };
            match self.sections(&tp, &snap, checkpoints.get(&tp).copied(), &data_dir, now) {
                Ok(Some(ltc)) => eligible.push((ltc, log)),
                Ok(None) => {}
                Err(e) => {
                    let reason = format!("computing its dirty sections failed: {e}");
                    problems.push(format!("log {tp} is now uncleanable: {reason}"));
                    self.mark_failed(&tp, &data_dir, &e, reason);
                }
            }
        }
        eligible.sort_by(|a, b| b.0.cleanable_ratio.total_cmp(&a.0.cleanable_ratio));
        let chosen = eligible
            .into_iter()
            .find(|(ltc, _)| self.board.try_begin(&ltc.topic_partition));
        Grab { chosen, problems }
    }

    /// The sections of one log, `None` if it is not eligible.
    fn sections(
        &self,
        tp: &TopicPartition,
        snap: &LogSnapshot,
        checkpointed: Option<i64>,
        data_dir: &Path,
        now: i64,
    ) -> Result<Option<LogToClean>> {
        let offsets = cleanable_offsets(snap, checkpointed, now);
        if offsets.force_update_checkpoint {
            self.update_checkpoint(data_dir, Some((tp, offsets.first_dirty_offset)), None)?;
        }
        let delay = max_compaction_delay(snap, offsets.first_dirty_offset, now)?;
        let ltc = LogToClean::new(tp.clone(), snap, offsets, delay, None);
        if ltc.is_eligible() || ltc.total_bytes == 0 {
            return Ok(ltc.is_eligible().then_some(ltc));
        }
        let horizon = self.clean_section_horizon(tp, snap, offsets.first_dirty_offset)?;
        let expired = horizon.filter(|h| *h <= now);
        let ltc = LogToClean::new(tp.clone(), snap, offsets, delay, expired);
        Ok(ltc.is_eligible().then_some(ltc))
    }

    /// The earliest delete horizon below `first_dirty`, from the cache when
    /// the clean section has not changed since it was computed.
    fn clean_section_horizon(
        &self,
        tp: &TopicPartition,
        snap: &LogSnapshot,
        first_dirty: i64,
    ) -> Result<Option<i64>> {
        let clean = snap.overlapping(-1, first_dirty);
        let fingerprint: Vec<(i64, u64)> = clean.iter().map(|s| (s.base_offset, s.size)).collect();
        if let Some((fp, horizon)) = self.registry.lock().horizons.get(tp)
            && *fp == fingerprint
        {
            return Ok(*horizon);
        }
        let horizon = earliest_delete_horizon(clean)?;
        self.registry
            .lock()
            .horizons
            .insert(tp.clone(), (fingerprint, horizon));
        Ok(horizon)
    }

    /// Ends a round of `tp` that reached `end_offset`: unless the round was
    /// aborted, the checkpoint advances. `clean_section` (the cleaned
    /// segments and their earliest delete horizon) primes the tombstone
    /// check of later selections.
    pub fn done_cleaning(
        &self,
        tp: &TopicPartition,
        end_offset: i64,
        clean_section: Option<HorizonEntry>,
    ) -> Result<bool> {
        let data_dir = self.data_dir_of(tp)?;
        if let Some(entry) = clean_section {
            self.registry.lock().horizons.insert(tp.clone(), entry);
        }
        let _selection = self.selection.lock();
        if self.board.done(tp)? {
            self.update_checkpoint(&data_dir, Some((tp, end_offset)), None)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Ends a round of `tp` that failed with `error`: the state is cleared
    /// (or becomes paused if the round was aborted) and, unless the error
    /// is an abort, the log is quarantined: an I/O error takes its data
    /// directory offline, anything else marks the log uncleanable.
    pub fn failed_cleaning(&self, tp: &TopicPartition, error: &Error) -> Result<()> {
        let data_dir = self.data_dir_of(tp)?;
        self.board.done(tp)?;
        if !matches!(error, Error::CleaningAborted { .. }) {
            self.mark_failed(tp, &data_dir, error, error.to_string());
        }
        Ok(())
    }

    /// Quarantines `tp` after `error` outside a round's own failure path.
    pub(crate) fn quarantine(&self, tp: &TopicPartition, error: &Error, reason: String) {
        if let Ok(data_dir) = self.data_dir_of(tp) {
            self.mark_failed(tp, &data_dir, error, reason);
        }
    }

    fn mark_failed(&self, tp: &TopicPartition, data_dir: &Path, error: &Error, reason: String) {
        let mut reg = self.registry.lock();
        if matches!(error.kind(), ErrorKind::Io | ErrorKind::NoSpace) && error.is_io() {
            tracing::error!(
                data_dir = %data_dir.display(),
                partition = %tp,
                error = %error,
                "data directory taken offline for cleaning after an I/O error"
            );
            reg.offline_dirs.insert(
                data_dir.to_path_buf(),
                format!("{reason} (while cleaning {tp})"),
            );
        } else {
            tracing::warn!(
                partition = %tp,
                error = %error,
                "log marked uncleanable"
            );
            reg.uncleanable.insert(tp.clone(), reason);
        }
    }

    fn data_dir_of(&self, tp: &TopicPartition) -> Result<PathBuf> {
        match self.registry.lock().logs.get(tp) {
            Some(m) => Ok(m.data_dir.clone()),
            None => InvalidArgumentSnafu {
                message: format!("partition {tp} is not handed to the cleaner"),
            }
            .fail(),
        }
    }

    /// Marks `tp` uncleanable with `reason`.
    pub fn mark_uncleanable(&self, tp: &TopicPartition, reason: impl Into<String>) {
        self.registry
            .lock()
            .uncleanable
            .insert(tp.clone(), reason.into());
    }

    /// Lets an uncleanable partition be cleaned again (Kafka only forgets
    /// on restart), returning its reason.
    pub fn clear_uncleanable(&self, tp: &TopicPartition) -> Option<String> {
        self.registry.lock().uncleanable.remove(tp)
    }

    /// The uncleanable partitions and why.
    pub fn uncleanable_partitions(&self) -> BTreeMap<TopicPartition, String> {
        self.registry.lock().uncleanable.clone()
    }

    /// The data directories taken offline (by I/O errors, or a
    /// `cleaner-offset-checkpoint` that cannot be read), and why.
    pub fn offline_dirs(&self) -> BTreeMap<PathBuf, String> {
        self.registry.lock().offline_dirs.clone()
    }

    /// Lets the logs of an offline data directory be cleaned again (Kafka
    /// only forgets on restart), returning why it was offline.
    pub fn clear_offline_dir(&self, data_dir: &Path) -> Option<String> {
        self.registry.lock().offline_dirs.remove(data_dir)
    }

    /// Drops uncleanable entries of partitions no longer handed to the
    /// cleaner (Kafka's `maintainUncleanablePartitions`).
    pub fn maintain_uncleanable_partitions(&self) {
        let mut reg = self.registry.lock();
        let Registry {
            logs, uncleanable, ..
        } = &mut *reg;
        uncleanable.retain(|tp, _| logs.contains_key(tp));
    }

    /// Pauses cleaning of `tp`, waiting for a round in progress to stop.
    pub fn abort_and_pause(&self, tp: &TopicPartition) {
        self.board.abort_and_pause(tp);
    }

    /// Undoes one pause of `tp`.
    pub fn resume(&self, tp: &TopicPartition) -> Result<()> {
        self.board.resume(tp)
    }

    /// Stops a round of `tp` in progress, without pausing it.
    pub fn abort(&self, tp: &TopicPartition) -> Result<()> {
        self.board.abort(tp)
    }

    /// The cleaning state of `tp`.
    pub fn cleaning_state(&self, tp: &TopicPartition) -> Option<CleaningState> {
        self.board.state(tp)
    }

    /// What a cleaner calls between chunks: an error if the round of `tp`
    /// was aborted.
    pub fn check_cleaning_aborted(&self, tp: &TopicPartition) -> Result<()> {
        if self.board.check_aborted(tp) {
            let dir = self
                .registry
                .lock()
                .logs
                .get(tp)
                .map(|m| m.dir.clone())
                .unwrap_or_default();
            return CleaningAbortedSnafu {
                dir,
                reason: "its cleaning was paused",
            }
            .fail();
        }
        Ok(())
    }
}

/// The earliest delete horizon among the batches of `segments`.
fn earliest_delete_horizon(segments: &[SegmentSnapshot]) -> Result<Option<i64>> {
    let mut earliest: Option<i64> = None;
    for seg in segments {
        for h in seg.headers() {
            if let Some(horizon) = h?.delete_horizon_ms() {
                earliest = Some(earliest.map_or(horizon, |e| e.min(horizon)));
            }
        }
    }
    Ok(earliest)
}
