//! An in-memory file system that simulates power loss.
//!
//! # The crash model
//!
//! [`MemFs`] keeps, for every file, its current bytes and the bytes that a
//! completed `sync_data`/`sync_all` made durable; for every directory, its
//! current entries and the entries that the last `sync_dir` made durable.
//! [`MemFs::crash`] (power loss) keeps only what is durable:
//!
//! 1. **File data**: every byte written after the file's last sync is lost:
//!    the file is back at its synced size, and overwrites and truncations
//!    of synced bytes (including writes into space a synced `set_len`
//!    preallocated) are undone. With torn writes enabled
//!    ([`MemFs::set_torn_tails`]), a disk that wrote some sectors: the
//!    unsynced changes (writes, appends, overwrites, size changes) survive
//!    up to a random one, in the order they were made, that last one
//!    possibly in part.
//!
//!    Space added by `set_len` is held as implicit zeros, so a large
//!    preallocation costs no memory until it is written.
//! 2. **Directory entries**: a create, rename or remove is durable only once
//!    its directory has been synced. An unsynced create disappears, an
//!    unsynced rename reverts (the file is back under its old name), an
//!    unsynced remove is undone (the file is back with its synced data).
//!    A directory created without syncing its parent disappears with
//!    everything in it.
//! 3. **Processes die**: every handle opened before the crash fails from then
//!    on, and every lock is released.
//!
//! Paths are taken lexically: `/a/./b` and `/a/b` name the same file; `..`
//! is refused. The root always exists.
//!
//! ```
//! use std::path::Path;
//! use lithify_vfs::{FileSystem, MemFs};
//!
//! let fs = MemFs::new();
//! let mut f = fs.create(Path::new("/CURRENT.tmp")).unwrap();
//! f.append(b"MANIFEST-000002\n").unwrap();
//! f.sync_all().unwrap();
//! fs.sync_dir(Path::new("/")).unwrap(); // CURRENT.tmp is durable
//! fs.rename(Path::new("/CURRENT.tmp"), Path::new("/CURRENT")).unwrap();
//! // No sync of "/": the rename is not durable.
//! fs.crash();
//! assert!(fs.exists(Path::new("/CURRENT.tmp")));
//! assert!(!fs.exists(Path::new("/CURRENT")));
//! ```

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lithify_base::rand::SplitMix64;
use parking_lot::Mutex;

use crate::{FileLock, FileSystem, RandomAccessFile, WritableFile};

/// An in-memory file system with a power-loss simulation. Cloning shares
/// the same file system.
#[derive(Debug, Clone, Default)]
pub struct MemFs {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    /// Bumped by every crash; handles from an older generation fail.
    generation: AtomicU64,
}

#[derive(Debug)]
struct State {
    /// Every existing directory, by normalized path ("" is the root).
    dirs: HashMap<PathBuf, Dir>,
    /// Directories removed since their parent was last synced, kept so a
    /// crash can bring them back.
    removed_dirs: HashMap<PathBuf, Dir>,
    /// Held locks: path -> the ids of its holders (one exclusive holder,
    /// or any number of shared ones).
    locks: HashMap<PathBuf, Held>,
    next_lock_id: u64,
    /// Torn-tail random state, when enabled.
    torn: Option<SplitMix64>,
}

impl Default for State {
    fn default() -> Self {
        let mut dirs = HashMap::new();
        dirs.insert(PathBuf::new(), Dir::default());
        State {
            dirs,
            removed_dirs: HashMap::new(),
            locks: HashMap::new(),
            next_lock_id: 0,
            torn: None,
        }
    }
}

/// Who holds the lock of a file.
#[derive(Debug)]
enum Held {
    Exclusive(u64),
    Shared(Vec<u64>),
}

#[derive(Debug, Clone, Default)]
struct Dir {
    current: BTreeMap<String, Node>,
    durable: BTreeMap<String, Node>,
}

#[derive(Debug, Clone)]
enum Node {
    File(Arc<Mutex<Inode>>),
    Dir,
}

/// One file: its current contents and what a crash would leave of them.
///
/// The contents are `data` followed by zeros up to `len`: a file extended
/// with `set_len` (a preallocated log) holds its zeros implicitly, so a
/// large preallocation costs no memory until it is written.
#[derive(Debug, Default)]
struct Inode {
    /// The file's bytes, up to the first implicit zero.
    data: Vec<u8>,
    /// The file's size; bytes from `data.len()` to here are zeros.
    len: usize,
    /// Every change since the last sync, oldest first, with what it
    /// overwrote: undone newest first, they give back the synced file.
    changes: Vec<Change>,
}

/// One write or size change, and what it replaced.
#[derive(Debug)]
struct Change {
    /// The file's size before the change.
    len_before: usize,
    kind: ChangeKind,
}

#[derive(Debug)]
enum ChangeKind {
    /// `len` bytes written at `offset`; `old` are the bytes they replaced
    /// (those below `len_before`).
    Write {
        offset: usize,
        len: usize,
        old: OldBytes,
    },
    /// A `set_len`; `old` are the bytes a truncation cut off.
    SetLen { old: OldBytes },
}

#[derive(Debug)]
enum OldBytes {
    /// `n` zero bytes (a write into preallocated space, kept cheaply).
    Zeros(usize),
    Bytes(Vec<u8>),
}

impl OldBytes {
    fn len(&self) -> usize {
        match self {
            OldBytes::Zeros(n) => *n,
            OldBytes::Bytes(b) => b.len(),
        }
    }
}

impl Inode {
    /// The current bytes `offset..end` (`end` at most `len`).
    fn old_bytes(&self, offset: usize, end: usize) -> OldBytes {
        if offset >= end {
            return OldBytes::Zeros(0);
        }
        let stored_end = end.min(self.data.len());
        if offset >= stored_end || self.data[offset..stored_end].iter().all(|&b| b == 0) {
            return OldBytes::Zeros(end - offset);
        }
        let mut bytes = self.data[offset..stored_end].to_vec();
        bytes.resize(end - offset, 0);
        OldBytes::Bytes(bytes)
    }

    fn write_at(&mut self, offset: usize, bytes: &[u8]) {
        let end = offset + bytes.len();
        let len_before = self.len;
        let old = self.old_bytes(offset, end.min(len_before));
        match (self.changes.last_mut(), old) {
            // A write right after a write, both over zeros or past the
            // end (appends, or records written into preallocated space):
            // one change, since a prefix of the pair is a prefix of the
            // first or of the second.
            (
                Some(Change {
                    kind:
                        ChangeKind::Write {
                            offset: o,
                            len,
                            old: OldBytes::Zeros(z),
                        },
                    ..
                }),
                OldBytes::Zeros(more),
            ) if *o + *len == offset => {
                *len += bytes.len();
                *z += more;
            }
            (_, old) => self.changes.push(Change {
                len_before,
                kind: ChangeKind::Write {
                    offset,
                    len: bytes.len(),
                    old,
                },
            }),
        }
        if self.data.len() < end {
            self.data.resize(end, 0);
        }
        self.data[offset..end].copy_from_slice(bytes);
        self.len = self.len.max(end);
    }

    fn set_len(&mut self, len: usize) {
        let old = self.old_bytes(len, self.len);
        self.changes.push(Change {
            len_before: self.len,
            kind: ChangeKind::SetLen { old },
        });
        self.data.truncate(len);
        self.len = len;
    }

    fn sync(&mut self) {
        self.changes.clear();
    }

    /// Copies the bytes at `offset` into `buf`; returns how many there were.
    fn read_at(&self, offset: usize, buf: &mut [u8]) -> usize {
        if offset >= self.len {
            return 0;
        }
        let n = buf.len().min(self.len - offset);
        let stored = self.data.len().saturating_sub(offset).min(n);
        if stored > 0 {
            buf[..stored].copy_from_slice(&self.data[offset..offset + stored]);
        }
        buf[stored..n].fill(0);
        n
    }

    /// The file a crash leaves behind: the synced file. With torn writes
    /// (`torn`), a disk that wrote some sectors: the unsynced changes up
    /// to a random one survive, in the order they were made, and that
    /// last one possibly in part.
    fn after_crash(&self, torn: &mut Option<SplitMix64>) -> Inode {
        let mut file = Inode {
            data: self.data.clone(),
            len: self.len,
            changes: Vec::new(),
        };
        let n = self.changes.len();
        let kept = match torn {
            Some(rng) if n > 0 => rng.below(n as u64 + 1) as usize,
            _ => 0,
        };
        for (i, change) in self.changes.iter().enumerate().rev() {
            if i < kept {
                break;
            }
            // The first change undone may keep a prefix of what it wrote.
            let part = match (torn.as_mut(), &change.kind) {
                (Some(rng), ChangeKind::Write { len, .. }) if i == kept => {
                    rng.below(*len as u64 + 1) as usize
                }
                _ => 0,
            };
            file.undo(change, part);
        }
        file
    }

    /// Undoes `change`, keeping the first `part` bytes it wrote.
    fn undo(&mut self, change: &Change, part: usize) {
        let (at, old) = match &change.kind {
            ChangeKind::Write { offset, len, old } => {
                self.len = change.len_before.max(offset + part.min(*len));
                (offset + part, (old, part))
            }
            ChangeKind::SetLen { old } => {
                self.len = change.len_before;
                (self.len - old.len(), (old, 0))
            }
        };
        let (old, skip) = old;
        if old.len() > skip {
            let end = at + old.len() - skip;
            if self.data.len() < end {
                self.data.resize(end, 0);
            }
            match old {
                OldBytes::Zeros(_) => self.data[at..end].fill(0),
                OldBytes::Bytes(b) => self.data[at..end].copy_from_slice(&b[skip..]),
            }
        }
        self.data.truncate(self.len);
    }
}

fn normalize(path: &Path) -> io::Result<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("MemFs does not resolve `..` in {}", path.display()),
                ));
            }
            Component::Normal(name) => out.push(name),
        }
    }
    Ok(out)
}

/// Splits a normalized path into its parent directory and file name.
fn split(path: &Path, original: &Path) -> io::Result<(PathBuf, String)> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", original.display()),
        )
    })?;
    let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((parent, name.to_string_lossy().into_owned()))
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", path.display()),
    )
}

fn stale(path: &Path) -> io::Error {
    io::Error::other(format!(
        "{}: handle opened before a simulated crash",
        path.display()
    ))
}

impl State {
    fn dir(&self, dir: &Path, original: &Path) -> io::Result<&Dir> {
        self.dirs.get(dir).ok_or_else(|| not_found(original))
    }

    fn dir_mut(&mut self, dir: &Path, original: &Path) -> io::Result<&mut Dir> {
        self.dirs.get_mut(dir).ok_or_else(|| not_found(original))
    }

    fn file(&self, path: &Path) -> io::Result<Arc<Mutex<Inode>>> {
        let norm = normalize(path)?;
        let (parent, name) = split(&norm, path)?;
        match self.dir(&parent, path)?.current.get(&name) {
            Some(Node::File(inode)) => Ok(inode.clone()),
            Some(Node::Dir) => Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{} is a directory", path.display()),
            )),
            None => Err(not_found(path)),
        }
    }

    /// Creates a file entry (or truncates an existing file) at `path`.
    fn create(&mut self, path: &Path, exclusive: bool) -> io::Result<Arc<Mutex<Inode>>> {
        let norm = normalize(path)?;
        let (parent, name) = split(&norm, path)?;
        let dir = self.dir_mut(&parent, path)?;
        match dir.current.get(&name) {
            Some(_) if exclusive => Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already exists", path.display()),
            )),
            Some(Node::File(inode)) => {
                inode.lock().set_len(0);
                Ok(inode.clone())
            }
            Some(Node::Dir) => Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{} is a directory", path.display()),
            )),
            None => {
                let inode = Arc::new(Mutex::new(Inode::default()));
                dir.current.insert(name, Node::File(inode.clone()));
                Ok(inode)
            }
        }
    }

    /// The state a power loss leaves behind.
    fn after_crash(&mut self) -> State {
        let mut torn = self.torn.clone();
        let mut dirs = HashMap::new();
        let mut copies: HashMap<*const Mutex<Inode>, Arc<Mutex<Inode>>> = HashMap::new();
        let mut stack = vec![PathBuf::new()];
        while let Some(path) = stack.pop() {
            let Some(dir) = self
                .dirs
                .get(&path)
                .or_else(|| self.removed_dirs.get(&path))
            else {
                // A durable entry of a directory we no longer know: empty.
                dirs.insert(path, Dir::default());
                continue;
            };
            let mut entries = BTreeMap::new();
            for (name, node) in &dir.durable {
                let node = match node {
                    Node::File(inode) => {
                        let copy = copies.entry(Arc::as_ptr(inode)).or_insert_with(|| {
                            Arc::new(Mutex::new(inode.lock().after_crash(&mut torn)))
                        });
                        Node::File(copy.clone())
                    }
                    Node::Dir => {
                        stack.push(path.join(name));
                        Node::Dir
                    }
                };
                entries.insert(name.clone(), node);
            }
            dirs.insert(
                path,
                Dir {
                    current: entries.clone(),
                    durable: entries,
                },
            );
        }
        self.torn = torn.clone();
        State {
            dirs,
            removed_dirs: HashMap::new(),
            locks: HashMap::new(),
            next_lock_id: self.next_lock_id,
            torn,
        }
    }
}

impl MemFs {
    /// An empty file system (only the root directory).
    pub fn new() -> Self {
        MemFs::default()
    }

    /// Enables torn tails on crash with the given seed (deterministic), or
    /// disables them with `None`.
    pub fn set_torn_tails(&self, seed: Option<u64>) {
        self.shared.state.lock().torn = seed.map(SplitMix64::new);
    }

    /// Simulates power loss in place: see the module documentation. Handles
    /// opened before the crash fail afterwards.
    pub fn crash(&self) {
        let mut state = self.shared.state.lock();
        let after = state.after_crash();
        *state = after;
        self.shared.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// A new, independent file system holding what a power loss now would
    /// leave behind; `self` is unchanged (Pebble's `CrashClone`).
    pub fn crash_clone(&self) -> MemFs {
        let after = self.shared.state.lock().after_crash();
        MemFs {
            shared: Arc::new(Shared {
                state: Mutex::new(after),
                generation: AtomicU64::new(0),
            }),
        }
    }

    /// Total bytes held in current file contents (for tests and tools).
    pub fn total_file_bytes(&self) -> u64 {
        let state = self.shared.state.lock();
        let mut seen = std::collections::HashSet::new();
        let mut total = 0;
        for dir in state.dirs.values() {
            for node in dir.current.values() {
                if let Node::File(inode) = node
                    && seen.insert(Arc::as_ptr(inode))
                {
                    total += inode.lock().len as u64;
                }
            }
        }
        total
    }

    fn handle(&self, inode: Arc<Mutex<Inode>>, path: &Path) -> MemHandle {
        MemHandle {
            inode,
            shared: self.shared.clone(),
            generation: self.shared.generation.load(Ordering::SeqCst),
            path: path.to_path_buf(),
        }
    }
}

/// A MemFs file handle, for writing or reading.
#[derive(Debug)]
struct MemHandle {
    inode: Arc<Mutex<Inode>>,
    shared: Arc<Shared>,
    generation: u64,
    path: PathBuf,
}

impl MemHandle {
    fn check(&self) -> io::Result<()> {
        if self.shared.generation.load(Ordering::SeqCst) == self.generation {
            Ok(())
        } else {
            Err(stale(&self.path))
        }
    }

    fn offset(&self, offset: u64) -> io::Result<usize> {
        usize::try_from(offset).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("offset {offset} too large in {}", self.path.display()),
            )
        })
    }
}

impl WritableFile for MemHandle {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.check()?;
        let mut inode = self.inode.lock();
        let end = inode.len;
        inode.write_at(end, data);
        Ok(())
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.check()?;
        let offset = self.offset(offset)?;
        self.inode.lock().write_at(offset, data);
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.check()?;
        let len = self.offset(len)?;
        self.inode.lock().set_len(len);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.inode.lock().len as u64
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.check()?;
        self.inode.lock().sync();
        Ok(())
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.sync_data()
    }
}

impl RandomAccessFile for MemHandle {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.check()?;
        let Ok(start) = usize::try_from(offset) else {
            return Ok(0);
        };
        Ok(self.inode.lock().read_at(start, buf))
    }

    fn size(&self) -> io::Result<u64> {
        self.check()?;
        Ok(self.inode.lock().len as u64)
    }
}

struct MemLock {
    shared: Arc<Shared>,
    path: PathBuf,
    id: u64,
}

impl Drop for MemLock {
    fn drop(&mut self) {
        let mut state = self.shared.state.lock();
        // A lock of a crashed "process" is gone already; ids are never
        // reused, so it cannot release a lock taken after the crash.
        let release = match state.locks.get_mut(&self.path) {
            Some(Held::Exclusive(id)) => *id == self.id,
            Some(Held::Shared(ids)) => {
                ids.retain(|id| *id != self.id);
                ids.is_empty()
            }
            None => false,
        };
        if release {
            state.locks.remove(&self.path);
        }
    }
}

impl FileSystem for MemFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let inode = self.shared.state.lock().create(path, false)?;
        Ok(Box::new(self.handle(inode, path)))
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let inode = self.shared.state.lock().create(path, true)?;
        Ok(Box::new(self.handle(inode, path)))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let inode = self.shared.state.lock().file(path)?;
        Ok(Box::new(self.handle(inode, path)))
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let inode = self.shared.state.lock().file(path)?;
        Ok(Arc::new(self.handle(inode, path)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.shared.state.lock();
        let (from_dir, from_name) = split(&normalize(from)?, from)?;
        let (to_dir, to_name) = split(&normalize(to)?, to)?;
        state.dir(&to_dir, to)?;
        if let Some(Node::Dir) = state.dir(&to_dir, to)?.current.get(&to_name) {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("cannot rename over directory {}", to.display()),
            ));
        }
        let source = state.dir_mut(&from_dir, from)?;
        let node = match source.current.get(&from_name) {
            Some(Node::File(_)) => source.current.remove(&from_name),
            Some(Node::Dir) => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!(
                        "MemFs renames files only; {} is a directory",
                        from.display()
                    ),
                ));
            }
            None => None,
        }
        .ok_or_else(|| not_found(from))?;
        state.dir_mut(&to_dir, to)?.current.insert(to_name, node);
        Ok(())
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.shared.state.lock();
        let inode = state.file(from)?;
        let (to_dir, to_name) = split(&normalize(to)?, to)?;
        let dir = state.dir_mut(&to_dir, to)?;
        if dir.current.contains_key(&to_name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already exists", to.display()),
            ));
        }
        dir.current.insert(to_name, Node::File(inode));
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut state = self.shared.state.lock();
        let (parent, name) = split(&normalize(path)?, path)?;
        let dir = state.dir_mut(&parent, path)?;
        match dir.current.get(&name) {
            Some(Node::File(_)) => {
                dir.current.remove(&name);
                Ok(())
            }
            Some(Node::Dir) => Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{} is a directory", path.display()),
            )),
            None => Err(not_found(path)),
        }
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let mut state = self.shared.state.lock();
        let norm = normalize(path)?;
        let (parent, name) = split(&norm, path)?;
        match state.dirs.get(&norm) {
            None => return Err(not_found(path)),
            Some(dir) if !dir.current.is_empty() => {
                return Err(io::Error::new(
                    io::ErrorKind::DirectoryNotEmpty,
                    format!("{} is not empty", path.display()),
                ));
            }
            Some(_) => {}
        }
        state.dir_mut(&parent, path)?.current.remove(&name);
        if let Some(dir) = state.dirs.remove(&norm) {
            state.removed_dirs.insert(norm, dir);
        }
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let state = self.shared.state.lock();
        let norm = normalize(dir)?;
        Ok(state.dir(&norm, dir)?.current.keys().cloned().collect())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.shared.state.lock();
        let norm = normalize(dir)?;
        let mut path = PathBuf::new();
        for component in norm.components() {
            let name = component.as_os_str().to_string_lossy().into_owned();
            let child = path.join(&name);
            let parent = state.dir_mut(&path, dir)?;
            match parent.current.get(&name) {
                Some(Node::Dir) => {}
                Some(Node::File(_)) => {
                    return Err(io::Error::new(
                        io::ErrorKind::NotADirectory,
                        format!("{} is a file", child.display()),
                    ));
                }
                None => {
                    parent.current.insert(name, Node::Dir);
                    state.removed_dirs.remove(&child);
                    state.dirs.insert(child.clone(), Dir::default());
                }
            }
            path = child;
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let Ok(norm) = normalize(path) else {
            return false;
        };
        let state = self.shared.state.lock();
        if state.dirs.contains_key(&norm) {
            return true;
        }
        let Ok((parent, name)) = split(&norm, path) else {
            return false;
        };
        state
            .dirs
            .get(&parent)
            .is_some_and(|d| d.current.contains_key(&name))
    }

    fn is_dir(&self, path: &Path) -> bool {
        normalize(path).is_ok_and(|norm| self.shared.state.lock().dirs.contains_key(&norm))
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        let inode = self.shared.state.lock().file(path)?;
        let len = inode.lock().len as u64;
        Ok(len)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.shared.state.lock();
        let norm = normalize(dir)?;
        let d = state.dir_mut(&norm, dir)?;
        d.durable = d.current.clone();
        // Removed subdirectories whose removal is now durable are gone.
        let removed: Vec<PathBuf> = state
            .removed_dirs
            .keys()
            .filter(|p| p.parent().unwrap_or(Path::new("")) == norm)
            .cloned()
            .collect();
        for p in removed {
            state.removed_dirs.remove(&p);
        }
        Ok(())
    }

    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        let mut state = self.shared.state.lock();
        let norm = normalize(path)?;
        if state.locks.contains_key(&norm) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked by another handle", path.display()),
            ));
        }
        if state.file(path).is_err() {
            state.create(path, true)?;
        }
        let id = state.next_lock_id;
        state.next_lock_id += 1;
        state.locks.insert(norm.clone(), Held::Exclusive(id));
        Ok(FileLock::new(
            path,
            Box::new(MemLock {
                shared: self.shared.clone(),
                path: norm,
                id,
            }),
        ))
    }

    fn lock_shared(&self, path: &Path) -> io::Result<FileLock> {
        let mut state = self.shared.state.lock();
        let norm = normalize(path)?;
        // Never created: a reader changes nothing.
        state.file(path)?;
        let id = state.next_lock_id;
        match state.locks.get_mut(&norm) {
            Some(Held::Exclusive(_)) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("{} is locked exclusively by another handle", path.display()),
                ));
            }
            Some(Held::Shared(ids)) => ids.push(id),
            None => {
                state.locks.insert(norm.clone(), Held::Shared(vec![id]));
            }
        }
        state.next_lock_id += 1;
        Ok(FileLock::new(
            path,
            Box::new(MemLock {
                shared: self.shared.clone(),
                path: norm,
                id,
            }),
        ))
    }
}
