//! A wrapper that injects I/O errors by rule.
//!
//! [`FaultFs`] passes every call to the wrapped file system, counting
//! operations by [`OpKind`], and fails those that a [`FaultRule`] selects:
//!
//! * [`FaultRule::fail_nth`]: the Nth operation of a kind fails (counting
//!   from 1), once;
//! * [`FaultRule::fail_from`]: the Nth and every later operation of a kind
//!   fail (a device that died);
//! * [`FaultRule::no_space_after`]: writes succeed until `n` bytes have been
//!   written in all; the write that crosses the limit writes what fits and
//!   fails with `StorageFull` (ENOSPC), as do all later writes;
//! * [`FaultRule::short_write_nth`]: the Nth write writes only the first half
//!   of its bytes, then fails.
//!
//! A rule can be limited to paths containing a string
//! ([`FaultRule::on_paths_containing`]). Injected errors are ordinary
//! `io::Error`s whose message starts with `injected fault`.
//!
//! A typical crash test runs a workload once to count operations
//! ([`FaultFs::counts`]), then once per operation N with `fail_from(Any, N)`,
//! then crashes the underlying [`MemFs`](crate::MemFs) and checks recovery.
//!
//! ```
//! use std::path::Path;
//! use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};
//!
//! let fs = FaultFs::new(MemFs::new());
//! fs.add_rule(FaultRule::fail_nth(OpKind::Sync, 2));
//! let mut f = fs.create(Path::new("/a")).unwrap();
//! f.sync_data().unwrap();
//! let err = f.sync_data().unwrap_err();
//! assert!(err.to_string().starts_with("injected fault"));
//! f.sync_data().unwrap(); // only the 2nd sync fails
//! assert_eq!(fs.counts().syncs, 3);
//! ```

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::{FileLock, FileSystem, RandomAccessFile, WritableFile};

/// The kinds of operation a rule can target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OpKind {
    /// `append`, `write_at`, `set_len`.
    Write,
    /// `sync_data`, `sync_all`, `sync_dir`.
    Sync,
    /// `rename`.
    Rename,
    /// `create`, `create_new`, `open_append`, `open`, `lock`, `lock_shared`,
    /// `create_dir_all`, `hard_link` (a new name).
    Open,
    /// `remove_file`, `remove_dir`.
    Remove,
    /// `read_at` on an open file.
    Read,
    /// Any operation that changes the file system: everything but `Read`
    /// and `open` for reading.
    Mutation,
}

impl OpKind {
    /// Whether a rule for `self` selects an operation of kind `op`
    /// (`mutating` is false for reads and opens for reading).
    fn matches(self, op: OpKind, mutating: bool) -> bool {
        self == op || (self == OpKind::Mutation && mutating)
    }

    fn name(self) -> &'static str {
        match self {
            OpKind::Write => "write",
            OpKind::Sync => "sync",
            OpKind::Rename => "rename",
            OpKind::Open => "open",
            OpKind::Remove => "remove",
            OpKind::Read => "read",
            OpKind::Mutation => "mutation",
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Trigger {
    Nth(OpKind, u64),
    From(OpKind, u64),
    NoSpaceAfter(u64),
    ShortWriteNth(u64),
}

/// A rule selecting operations to fail. See the module documentation.
#[derive(Debug, Clone)]
pub struct FaultRule {
    trigger: Trigger,
    path_contains: Option<String>,
}

impl FaultRule {
    /// The `n`th operation of kind `op` (counting from 1) fails, once.
    pub fn fail_nth(op: OpKind, n: u64) -> Self {
        Self::new(Trigger::Nth(op, n))
    }

    /// The `n`th operation of kind `op` and every later one fail.
    pub fn fail_from(op: OpKind, n: u64) -> Self {
        Self::new(Trigger::From(op, n))
    }

    /// Writes beyond `bytes` bytes in total fail with `StorageFull`.
    pub fn no_space_after(bytes: u64) -> Self {
        Self::new(Trigger::NoSpaceAfter(bytes))
    }

    /// The `n`th write writes half its bytes, then fails.
    pub fn short_write_nth(n: u64) -> Self {
        Self::new(Trigger::ShortWriteNth(n))
    }

    /// Limits the rule to operations on paths containing `fragment`
    /// (operations on other paths are neither counted nor failed by it).
    pub fn on_paths_containing(mut self, fragment: impl Into<String>) -> Self {
        self.path_contains = Some(fragment.into());
        self
    }

    fn new(trigger: Trigger) -> Self {
        FaultRule {
            trigger,
            path_contains: None,
        }
    }

    fn applies_to(&self, path: &Path) -> bool {
        self.path_contains
            .as_deref()
            .is_none_or(|f| path.to_string_lossy().contains(f))
    }
}

/// How many operations of each kind have been attempted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpCounts {
    /// Writes (`append`, `write_at`, `set_len`).
    pub writes: u64,
    /// Syncs of files and directories.
    pub syncs: u64,
    /// Renames.
    pub renames: u64,
    /// Creates and opens.
    pub opens: u64,
    /// Removes.
    pub removes: u64,
    /// Reads.
    pub reads: u64,
    /// Bytes passed to writes.
    pub bytes_written: u64,
    /// Faults injected so far.
    pub injected: u64,
}

impl OpCounts {
    /// All operations that change the file system.
    pub fn mutations(&self) -> u64 {
        self.writes + self.syncs + self.renames + self.opens + self.removes
    }
}

#[derive(Debug)]
struct RuleState {
    rule: FaultRule,
    seen: u64,
    bytes: u64,
}

#[derive(Debug, Default)]
struct Faults {
    rules: Vec<RuleState>,
    counts: OpCounts,
}

/// What to do with one operation.
enum Decision {
    Proceed,
    Fail(io::Error),
    /// Write this many bytes, then fail.
    Partial(usize, io::Error),
}

impl Faults {
    fn decide(&mut self, op: OpKind, path: &Path, len: usize) -> Decision {
        self.decide_op(op, op != OpKind::Read, path, len)
    }

    fn decide_op(&mut self, op: OpKind, mutating: bool, path: &Path, len: usize) -> Decision {
        let c = &mut self.counts;
        match op {
            OpKind::Write => {
                c.writes += 1;
                c.bytes_written += len as u64;
            }
            OpKind::Sync => c.syncs += 1,
            OpKind::Rename => c.renames += 1,
            OpKind::Open => c.opens += 1,
            OpKind::Remove => c.removes += 1,
            OpKind::Read => c.reads += 1,
            OpKind::Mutation => {}
        }
        let mut decision = Decision::Proceed;
        for state in &mut self.rules {
            if !state.rule.applies_to(path) {
                continue;
            }
            let injected = match state.rule.trigger {
                Trigger::Nth(kind, n) | Trigger::From(kind, n) if kind.matches(op, mutating) => {
                    state.seen += 1;
                    let hit = match state.rule.trigger {
                        Trigger::Nth(..) => state.seen == n,
                        _ => state.seen >= n,
                    };
                    hit.then(|| {
                        Decision::Fail(injected(format_args!(
                            "{} #{} ({}) on {}",
                            kind.name(),
                            state.seen,
                            op.name(),
                            path.display()
                        )))
                    })
                }
                Trigger::NoSpaceAfter(limit) if op == OpKind::Write => {
                    let room = limit.saturating_sub(state.bytes);
                    let fits = (len as u64).min(room) as usize;
                    state.bytes += fits as u64;
                    (fits < len).then(|| {
                        let err = io::Error::new(
                            io::ErrorKind::StorageFull,
                            format!(
                                "injected fault: no space left after {limit} bytes, writing {}",
                                path.display()
                            ),
                        );
                        Decision::Partial(fits, err)
                    })
                }
                Trigger::ShortWriteNth(n) if op == OpKind::Write => {
                    state.seen += 1;
                    (state.seen == n).then(|| {
                        Decision::Partial(
                            len / 2,
                            injected(format_args!(
                                "short write #{n} ({} of {len} bytes) on {}",
                                len / 2,
                                path.display()
                            )),
                        )
                    })
                }
                _ => None,
            };
            // The first rule that fires decides; later rules still count.
            if let Some(d) = injected
                && matches!(decision, Decision::Proceed)
            {
                decision = d;
            }
        }
        if !matches!(decision, Decision::Proceed) {
            self.counts.injected += 1;
        }
        decision
    }
}

fn injected(what: fmt::Arguments<'_>) -> io::Error {
    io::Error::other(format!("injected fault: {what}"))
}

/// A file system that fails operations by rule. Cloning shares the rules
/// and counters.
#[derive(Debug, Clone)]
pub struct FaultFs<F> {
    inner: F,
    faults: Arc<Mutex<Faults>>,
}

impl<F: FileSystem> FaultFs<F> {
    /// Wraps `inner` with no rules.
    pub fn new(inner: F) -> Self {
        FaultFs {
            inner,
            faults: Arc::new(Mutex::new(Faults::default())),
        }
    }

    /// The wrapped file system.
    pub fn inner(&self) -> &F {
        &self.inner
    }

    /// Adds a rule; its counters start now.
    pub fn add_rule(&self, rule: FaultRule) {
        self.faults.lock().rules.push(RuleState {
            rule,
            seen: 0,
            bytes: 0,
        });
    }

    /// Removes every rule (counters of operations are kept).
    pub fn clear_rules(&self) {
        self.faults.lock().rules.clear();
    }

    /// Operations attempted so far, and faults injected.
    pub fn counts(&self) -> OpCounts {
        self.faults.lock().counts
    }

    /// Resets the operation counters to zero.
    pub fn reset_counts(&self) {
        self.faults.lock().counts = OpCounts::default();
    }

    fn check(&self, op: OpKind, path: &Path) -> io::Result<()> {
        check(&self.faults, op, path)
    }
}

fn check(faults: &Mutex<Faults>, op: OpKind, path: &Path) -> io::Result<()> {
    match faults.lock().decide(op, path, 0) {
        Decision::Proceed => Ok(()),
        Decision::Fail(e) | Decision::Partial(_, e) => Err(e),
    }
}

#[derive(Debug)]
struct FaultWritable {
    inner: Box<dyn WritableFile>,
    faults: Arc<Mutex<Faults>>,
    path: PathBuf,
}

impl FaultWritable {
    /// Runs `write` on the part of `data` the rules let through.
    fn write(
        &mut self,
        data: &[u8],
        write: impl FnOnce(&mut dyn WritableFile, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let decision = self
            .faults
            .lock()
            .decide(OpKind::Write, &self.path, data.len());
        match decision {
            Decision::Proceed => write(self.inner.as_mut(), data),
            Decision::Fail(e) => Err(e),
            Decision::Partial(n, e) => {
                if n > 0 {
                    write(self.inner.as_mut(), &data[..n])?;
                }
                Err(e)
            }
        }
    }
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.write(data, |f, d| f.append(d))
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.write(data, |f, d| f.write_at(offset, d))
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        check(&self.faults, OpKind::Write, &self.path)?;
        self.inner.set_len(len)
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn sync_data(&mut self) -> io::Result<()> {
        check(&self.faults, OpKind::Sync, &self.path)?;
        self.inner.sync_data()
    }

    fn sync_all(&mut self) -> io::Result<()> {
        check(&self.faults, OpKind::Sync, &self.path)?;
        self.inner.sync_all()
    }
}

#[derive(Debug)]
struct FaultReadable {
    inner: Arc<dyn RandomAccessFile>,
    faults: Arc<Mutex<Faults>>,
    path: PathBuf,
}

impl RandomAccessFile for FaultReadable {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        check(&self.faults, OpKind::Read, &self.path)?;
        self.inner.read_at(offset, buf)
    }

    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }
}

impl<F: FileSystem> FaultFs<F> {
    fn wrap(&self, inner: Box<dyn WritableFile>, path: &Path) -> Box<dyn WritableFile> {
        Box::new(FaultWritable {
            inner,
            faults: self.faults.clone(),
            path: path.to_path_buf(),
        })
    }
}

impl<F: FileSystem> FileSystem for FaultFs<F> {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.check(OpKind::Open, path)?;
        Ok(self.wrap(self.inner.create(path)?, path))
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.check(OpKind::Open, path)?;
        Ok(self.wrap(self.inner.create_new(path)?, path))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.check(OpKind::Open, path)?;
        Ok(self.wrap(self.inner.open_append(path)?, path))
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        match self.faults.lock().decide_op(OpKind::Open, false, path, 0) {
            Decision::Proceed => {}
            Decision::Fail(e) | Decision::Partial(_, e) => return Err(e),
        }
        Ok(Arc::new(FaultReadable {
            inner: self.inner.open(path)?,
            faults: self.faults.clone(),
            path: path.to_path_buf(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.check(OpKind::Rename, to)?;
        self.inner.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.check(OpKind::Remove, path)?;
        self.inner.remove_file(path)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.check(OpKind::Open, to)?;
        self.inner.hard_link(from, to)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.check(OpKind::Remove, path)?;
        self.inner.remove_dir(path)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.check(OpKind::Open, dir)?;
        self.inner.create_dir_all(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn try_exists(&self, path: &Path) -> io::Result<bool> {
        self.inner.try_exists(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.inner.file_size(path)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.inner.canonicalize(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.check(OpKind::Sync, dir)?;
        self.inner.sync_dir(dir)
    }

    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        self.check(OpKind::Open, path)?;
        self.inner.lock(path)
    }

    fn lock_shared(&self, path: &Path) -> io::Result<FileLock> {
        self.check(OpKind::Open, path)?;
        self.inner.lock_shared(path)
    }
}
