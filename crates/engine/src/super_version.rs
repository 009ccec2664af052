//! The `SuperVersion`: what a reader pins — the mutable memtable, the
//! immutable memtables and the current `Version` of one table — and the
//! lazily opened SST files of that version.
//!
//! A super version is immutable. Whenever one of its parts changes (a
//! memtable switch, a flush or compaction installed) the engine builds a
//! new one and swaps it in under a short lock; readers take a reference
//! with one `Arc` clone under that lock and never wait for I/O or for
//! writers.

use std::collections::HashMap;
use std::sync::OnceLock;

use lithify_base::SeqNo;
use lithify_base::sync::{Arc, Mutex};
use lithify_memtable::MemTable;
use lithify_version::{FileMetadata, Version};

use crate::error::Result;
use crate::l0_index::L0Index;
use crate::sst_files::{SharedSst, SstFiles};

/// One file of a version and its SST reader, opened on first use.
pub(crate) struct FileHandle {
    pub(crate) meta: std::sync::Arc<FileMetadata>,
    sst: OnceLock<SharedSst>,
    opening: Mutex<()>,
}

impl FileHandle {
    pub(crate) fn new(meta: std::sync::Arc<FileMetadata>) -> Self {
        FileHandle {
            meta,
            sst: OnceLock::new(),
            opening: Mutex::new(()),
        }
    }

    /// The open SST (opening it on first use).
    pub(crate) fn sst(&self, opener: &SstFiles) -> Result<&SharedSst> {
        if let Some(t) = self.sst.get() {
            return Ok(t);
        }
        let _guard = self.opening.lock();
        if let Some(t) = self.sst.get() {
            return Ok(t);
        }
        let t = opener.open(self.meta.number, self.meta.size)?;
        Ok(self.sst.get_or_init(|| t))
    }

    /// The SST if it is open already.
    pub(crate) fn opened(&self) -> Option<&SharedSst> {
        self.sst.get()
    }
}

/// The parts of a table a reader needs, pinned together.
pub(crate) struct SuperVersion {
    /// The memtable receiving writes.
    pub(crate) mem: Arc<MemTable>,
    /// Immutable memtables, newest first.
    pub(crate) imm: Vec<Arc<MemTable>>,
    /// The files.
    pub(crate) version: std::sync::Arc<Version>,
    /// `levels[l][i]` is the handle of `version.files(l)[i]`.
    pub(crate) levels: Vec<Vec<std::sync::Arc<FileHandle>>>,
    /// Which L0 files hold a key, when L0 has enough files to need it
    /// (shared with the previous super version when the version is the
    /// same: a memtable switch does not rebuild it).
    pub(crate) l0_index: Option<std::sync::Arc<L0Index>>,
    /// The largest sequence number of any file (0 without files): a commit
    /// check whose sequence number is at least this reads no file.
    pub(crate) max_file_seqno: SeqNo,
}

impl SuperVersion {
    /// A super version over `version`, reusing the table handles (and open
    /// tables) of `prev` for files both hold.
    pub(crate) fn new(
        mem: Arc<MemTable>,
        imm: Vec<Arc<MemTable>>,
        version: std::sync::Arc<Version>,
        prev: Option<&SuperVersion>,
    ) -> SuperVersion {
        let mut old: HashMap<u64, &std::sync::Arc<FileHandle>> = HashMap::new();
        if let Some(prev) = prev {
            for level in &prev.levels {
                for h in level {
                    old.insert(h.meta.number, h);
                }
            }
        }
        let levels: Vec<Vec<std::sync::Arc<FileHandle>>> = (0..version.num_levels())
            .map(|l| {
                version
                    .files(l)
                    .iter()
                    .map(|f| match old.get(&f.number) {
                        Some(h) if std::sync::Arc::ptr_eq(&h.meta, f) => std::sync::Arc::clone(h),
                        Some(h) => {
                            // Same file under new metadata (a trivial move):
                            // keep the open table, drop the old metadata.
                            let handle = FileHandle::new(std::sync::Arc::clone(f));
                            if let Some(t) = h.opened() {
                                let _ = handle.sst.set(std::sync::Arc::clone(t));
                            }
                            std::sync::Arc::new(handle)
                        }
                        None => std::sync::Arc::new(FileHandle::new(std::sync::Arc::clone(f))),
                    })
                    .collect()
            })
            .collect();
        let l0_index = match prev {
            Some(prev) if std::sync::Arc::ptr_eq(&prev.version, &version) => prev.l0_index.clone(),
            _ => levels
                .first()
                .and_then(|l0| L0Index::build(version.comparator(), l0))
                .map(std::sync::Arc::new),
        };
        let max_file_seqno = (0..version.num_levels())
            .flat_map(|l| version.files(l).iter().map(|f| f.largest_seqno))
            .max()
            .unwrap_or(0);
        SuperVersion {
            mem,
            imm,
            version,
            levels,
            l0_index,
            max_file_seqno,
        }
    }
}

/// A shared value swapped atomically: the current super version of a
/// table. Readers take one `Arc` clone under a short lock; an install
/// never waits for readers (they keep the old value until they drop it).
pub(crate) struct ArcCell<T> {
    current: Mutex<Arc<T>>,
}

impl<T> ArcCell<T> {
    pub(crate) fn new(value: T) -> Self {
        ArcCell {
            current: Mutex::new(Arc::new(value)),
        }
    }

    /// The current value.
    #[inline]
    pub(crate) fn get(&self) -> Arc<T> {
        Arc::clone(&self.current.lock())
    }

    /// Installs `value` and returns it.
    pub(crate) fn install(&self, value: T) -> Arc<T> {
        let new = Arc::new(value);
        let old = std::mem::replace(&mut *self.current.lock(), Arc::clone(&new));
        // The old value is released outside the lock.
        drop(old);
        new
    }
}
