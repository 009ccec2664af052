//! The engine stress run's expected state: one [`KeyState`] per key, in
//! memory behind a lock per key and in the expected-state file, where a
//! later process finds it after this one is killed.
//!
//! The per-key lock is the one db_stress takes around "mark pending, write
//! to the database, record the acknowledgement", so the order of a key's
//! writes in the database is the order of its history here. Each change of
//! a key's state is written to its slot with one positional write before
//! the lock is released; the file lives in the page cache, which a killed
//! process does not take with it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lithify::vfs::{FileSystem, WritableFile, write_file_atomic};
use lithify_base::sync::{Mutex, MutexGuard};
use snafu::ResultExt as _;

use crate::error::{IoSnafu, Result, UsageSnafu};
use crate::key_state::KeyState;
use crate::state_file::{
    self, HEADER_LEN, Header, SLOT_LEN, StateKind, encode_file, encode_slot, slot_offset,
};
use crate::values::Values;

/// The expected state of every key of an engine stress run.
pub(crate) struct DbExpected {
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
    keys: u64,
    max_value_size: u32,
    slots: Vec<Mutex<KeyState>>,
    /// Writes acknowledged at or below this stamp are durable.
    durable_stamp: AtomicU64,
    /// The acknowledgement counter.
    clock: AtomicU64,
    /// Orders header rewrites so the file's stamp only grows.
    header_lock: Mutex<()>,
}

impl std::fmt::Debug for DbExpected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbExpected")
            .field("path", &self.path)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl DbExpected {
    /// A new file at `path` for `keys` keys, none written yet.
    pub(crate) fn create(
        fs: Arc<dyn FileSystem>,
        path: &Path,
        keys: u64,
        max_value_size: u32,
    ) -> Result<DbExpected> {
        if keys == 0 || keys > state_file::MAX_SLOTS {
            return UsageSnafu {
                message: format!(
                    "--keys must be between 1 and {}, not {keys}",
                    state_file::MAX_SLOTS
                ),
            }
            .fail();
        }
        crate::values::check_max_value_size(max_value_size)?;
        let state = DbExpected {
            fs,
            path: path.to_path_buf(),
            keys,
            max_value_size,
            slots: (0..keys).map(|_| Mutex::new(KeyState::fresh())).collect(),
            durable_stamp: AtomicU64::new(0),
            clock: AtomicU64::new(0),
            header_lock: Mutex::new(()),
        };
        state.save()?;
        Ok(state)
    }

    /// Reads the file at `path`.
    pub(crate) fn load(fs: Arc<dyn FileSystem>, path: &Path) -> Result<DbExpected> {
        let (header, payloads) = state_file::read_file(&*fs, path)?;
        let damaged = |offset: u64, message: String| state_file::damaged(path, offset, message);
        if header.kind != StateKind::Db || header.keys != header.slots {
            return Err(damaged(
                12,
                format!(
                    "it describes a {:?} run of {} keys in {} slots, not an engine run",
                    header.kind, header.keys, header.slots
                ),
            ));
        }
        let mut slots = Vec::with_capacity(payloads.len());
        for (i, p) in payloads.iter().enumerate() {
            let s = KeyState::decode(p).ok_or_else(|| {
                damaged(
                    slot_offset(i as u64),
                    format!("slot {i} holds a key state no run writes"),
                )
            })?;
            slots.push(Mutex::new(s));
        }
        let max_stamp = slots.iter().map(|s| s.lock().ack_stamp).max().unwrap_or(0);
        Ok(DbExpected {
            fs,
            path: path.to_path_buf(),
            keys: header.keys,
            max_value_size: header.max_value_size,
            slots,
            durable_stamp: AtomicU64::new(header.durable_stamp),
            clock: AtomicU64::new(max_stamp.max(header.durable_stamp)),
            header_lock: Mutex::new(()),
        })
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Number of keys.
    pub(crate) fn keys(&self) -> u64 {
        self.keys
    }

    /// The largest value size.
    pub(crate) fn max_value_size(&self) -> u32 {
        self.max_value_size
    }

    /// The run's values.
    pub(crate) fn values(&self) -> Values {
        Values::new(self.max_value_size as usize)
    }

    /// Locks key `k`'s state.
    pub(crate) fn lock(&self, k: u64) -> MutexGuard<'_, KeyState> {
        self.slots[k as usize].lock()
    }

    /// The current durability stamp.
    pub(crate) fn durable_stamp(&self) -> u64 {
        self.durable_stamp.load(Ordering::SeqCst)
    }

    /// Where the ack counter stands: a sync write that starts now makes
    /// durable every write acknowledged at or below it.
    pub(crate) fn now(&self) -> u64 {
        self.clock.load(Ordering::SeqCst)
    }

    /// A new acknowledgement stamp.
    pub(crate) fn next_stamp(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn header(&self, durable_stamp: u64) -> Header {
        Header {
            kind: StateKind::Db,
            slots: self.keys,
            keys: self.keys,
            max_value_size: self.max_value_size,
            durable_stamp,
        }
    }

    /// Rewrites the whole file atomically from memory (temporary file,
    /// fsync, rename): used when no writer is running.
    pub(crate) fn save(&self) -> Result<()> {
        let payloads: Vec<_> = self.slots.iter().map(|s| s.lock().encode()).collect();
        let bytes = encode_file(&self.header(self.durable_stamp()), &payloads);
        write_file_atomic(&*self.fs, &self.path, &bytes).context(IoSnafu {
            action: "write",
            path: &self.path,
        })
    }

    /// Restarts the durability stamp and the ack counter: after a
    /// verification resolved every key, no stamp is meaningful.
    pub(crate) fn reset_stamps(&self) {
        self.durable_stamp.store(0, Ordering::SeqCst);
        self.clock.store(0, Ordering::SeqCst);
    }

    /// A handle for one writer thread's slot updates (opened after the
    /// last [`save`](Self::save), which replaces the file).
    pub(crate) fn writer(&self) -> Result<StateWriter<'_>> {
        let file = self.fs.open_append(&self.path).context(IoSnafu {
            action: "open",
            path: &self.path,
        })?;
        Ok(StateWriter { state: self, file })
    }
}

/// One thread's writes into the expected-state file.
pub(crate) struct StateWriter<'a> {
    state: &'a DbExpected,
    file: Box<dyn WritableFile>,
}

impl StateWriter<'_> {
    /// Writes key `k`'s slot (the caller holds its lock).
    pub(crate) fn write(&mut self, k: u64, s: &KeyState) -> Result<()> {
        let slot = encode_slot(k, &s.encode());
        self.file.write_at(slot_offset(k), &slot).context(IoSnafu {
            action: "write",
            path: &self.state.path,
        })
    }

    /// Writes the slots of keys `first..first + states.len()` with one
    /// positional write (each slot stays whole even if the write is cut at
    /// a page boundary).
    pub(crate) fn write_run(&mut self, first: u64, states: &[&KeyState]) -> Result<()> {
        let mut buf = Vec::with_capacity(states.len() * SLOT_LEN);
        for (i, s) in states.iter().enumerate() {
            buf.extend_from_slice(&encode_slot(first + i as u64, &s.encode()));
        }
        self.file
            .write_at(slot_offset(first), &buf)
            .context(IoSnafu {
                action: "write",
                path: &self.state.path,
            })
    }

    /// A sync write that started when the ack counter stood at `started`
    /// was acknowledged: every write acknowledged before it is durable.
    pub(crate) fn advance_durable(&mut self, started: u64) -> Result<()> {
        let _order = self.state.header_lock.lock();
        let prev = self
            .state
            .durable_stamp
            .fetch_max(started, Ordering::SeqCst);
        if prev >= started {
            return Ok(());
        }
        let header = self.state.header(started).encode();
        debug_assert_eq!(header.len(), HEADER_LEN);
        self.file.write_at(0, &header).context(IoSnafu {
            action: "write",
            path: &self.state.path,
        })
    }
}
