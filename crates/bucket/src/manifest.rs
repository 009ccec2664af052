//! The MANIFEST and CURRENT kept in the bucket: immutable numbered
//! objects written with conditional PUT, and the writer epoch that fences
//! out a writer another one has replaced (`docs/FORMATS.md`, "The MANIFEST
//! in a bucket").
//!
//! * `CURRENT` is a series of objects `<prefix>/CURRENT/<seq>` (20 digits);
//!   the highest is the live one. Each names a MANIFEST and the epoch of
//!   the writer that wrote it, and is created only if absent: of two
//!   writers that both saw `seq`, only one writes `seq + 1`.
//! * A MANIFEST is a series of parts `<prefix>/MANIFEST-NNNNNN/<part>`
//!   (20 digits), each the bytes of one sync, with a header naming the
//!   writer's epoch and a checksum. Parts are created only if absent, so a
//!   writer appends only while nobody else has: a new writer **fences** the
//!   MANIFEST it takes over by writing the next part itself (empty).
//!
//! The engine sees files: reading `CURRENT` gives `MANIFEST-NNNNNN\n`, a
//! MANIFEST reads as its parts' bytes in order, and syncing a MANIFEST
//! writer or renaming `CURRENT.tmp` to `CURRENT` writes the next object.
//! A writer that lost the database to another gets an error naming the
//! object and the epochs, and changes nothing.

use std::io;
use std::sync::Arc;

use bytes::Bytes;
use lithify_vfs::{RandomAccessFile, WritableFile};
use parking_lot::Mutex;

use crate::bucket::Bucket;
use crate::format::{CurrentObject as CurrentRecord, ManifestPart, PART_HEADER};

fn numbered(n: u64) -> String {
    format!("{n:020}")
}

/// How far a database's metadata in a bucket has come: the live CURRENT
/// object, the MANIFEST it names and that MANIFEST's parts. Two equal
/// positions mean nothing was written between them (a replica catches up
/// only when the position moved).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManifestPosition {
    /// The number of the live CURRENT object.
    pub current: u64,
    /// The MANIFEST it names.
    pub manifest: String,
    /// Parts of that MANIFEST.
    pub parts: u64,
    /// The epoch of the writer that wrote the live CURRENT object.
    pub epoch: u64,
}

/// The MANIFEST and CURRENT of one database in a bucket, and this
/// process's claim on them.
#[derive(Debug)]
pub(crate) struct BucketManifest {
    bucket: Bucket,
    /// The database's key prefix (`""` at the bucket's top).
    prefix: String,
    claim: Mutex<Claim>,
}

#[derive(Debug, Default)]
struct Claim {
    /// The epoch this process writes under, once it claimed the database.
    epoch: Option<u64>,
    /// The last CURRENT object this writer wrote or claimed.
    seq: u64,
    /// `CURRENT.tmp`'s bytes, synced but not yet renamed.
    pending_current: Option<Vec<u8>>,
}

impl BucketManifest {
    pub(crate) fn new(bucket: Bucket, prefix: String) -> Self {
        BucketManifest {
            bucket,
            prefix,
            claim: Mutex::new(Claim::default()),
        }
    }

    fn key(&self, rest: &str) -> String {
        if self.prefix.is_empty() {
            rest.to_owned()
        } else {
            format!("{}/{rest}", self.prefix)
        }
    }

    /// The epoch this process writes under, if it claimed the database.
    pub(crate) fn epoch(&self) -> Option<u64> {
        self.claim.lock().epoch
    }

    /// The sequence numbers of the CURRENT objects, ascending.
    fn current_seqs(&self) -> io::Result<Vec<u64>> {
        let mut seqs: Vec<u64> = self
            .bucket
            .list(&self.key("CURRENT"))?
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        seqs.sort_unstable();
        Ok(seqs)
    }

    /// The live CURRENT object and its sequence number, if there is one.
    pub(crate) fn latest_current(&self) -> io::Result<Option<(u64, CurrentRecord)>> {
        let Some(&seq) = self.current_seqs()?.last() else {
            return Ok(None);
        };
        let key = self.key(&format!("CURRENT/{}", numbered(seq)));
        let bytes = self.bucket.get(&key)?;
        Ok(Some((seq, CurrentRecord::decode(&key, &bytes)?)))
    }

    /// Where the database's metadata stands now.
    pub(crate) fn position(&self) -> io::Result<Option<ManifestPosition>> {
        let Some((current, record)) = self.latest_current()? else {
            return Ok(None);
        };
        let parts = self.parts(&record.manifest)?.len() as u64;
        Ok(Some(ManifestPosition {
            current,
            manifest: record.manifest,
            parts,
            epoch: record.epoch,
        }))
    }

    /// The part numbers of MANIFEST `name`, ascending.
    fn parts(&self, name: &str) -> io::Result<Vec<u64>> {
        let mut parts: Vec<u64> = self
            .bucket
            .list(&self.key(name))?
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        parts.sort_unstable();
        Ok(parts)
    }

    /// Makes this process the database's writer: writes the next CURRENT
    /// object (same MANIFEST, the next epoch), then the next part of that
    /// MANIFEST (empty), both only if absent. From then on the writer it
    /// replaced fails at its next MANIFEST sync or CURRENT switch. Returns
    /// the new epoch. Claiming again is a no-op while the claim is the
    /// newest, and claims anew once another writer has fenced this one
    /// out.
    pub(crate) fn claim(&self) -> io::Result<u64> {
        let mut claim = self.claim.lock();
        if let Some(epoch) = claim.epoch {
            match self.latest_current()? {
                // Fenced out since: a new open claims again.
                Some((_, current)) if current.epoch != epoch => claim.epoch = None,
                _ => return Ok(epoch),
            }
        }
        for _ in 0..16 {
            let Some((seq, current)) = self.latest_current()? else {
                // A new database: the first CURRENT the engine writes is
                // created only if absent, which settles a race of two
                // creators.
                claim.epoch = Some(1);
                claim.seq = 0;
                return Ok(1);
            };
            let epoch = current.epoch + 1;
            let record = CurrentRecord {
                manifest: current.manifest.clone(),
                epoch,
            };
            let key = self.key(&format!("CURRENT/{}", numbered(seq + 1)));
            match self.bucket.put(&key, record.encode(), true) {
                Ok(()) => {}
                // Another writer moved CURRENT meanwhile: look again.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
            self.fence(&current.manifest, epoch)?;
            tracing::info!(
                bucket = %self.bucket.name(), prefix = %self.prefix, epoch,
                manifest = %current.manifest, "claimed the database as its writer"
            );
            claim.epoch = Some(epoch);
            claim.seq = seq + 1;
            return Ok(epoch);
        }
        Err(io::Error::other(format!(
            "{}: CURRENT kept moving while claiming the database (another writer?)",
            self.bucket.name()
        )))
    }

    /// Writes an empty part at the end of MANIFEST `name`: a writer still
    /// appending to it fails from then on.
    fn fence(&self, name: &str, epoch: u64) -> io::Result<()> {
        loop {
            let next = self.parts(name)?.last().map_or(0, |p| p + 1);
            let key = self.key(&format!("{name}/{}", numbered(next)));
            match self
                .bucket
                .put(&key, ManifestPart::encode(epoch, &[]), true)
            {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Fails unless this process claimed the database and its claim is
    /// still the newest (one LIST and one GET).
    pub(crate) fn check_owner(&self, what: &str) -> io::Result<()> {
        let Some(epoch) = self.epoch() else {
            return Err(self.not_the_writer(what));
        };
        match self.latest_current()? {
            Some((_, current)) if current.epoch != epoch => Err(self.fenced(what, epoch)),
            _ => Ok(()),
        }
    }

    fn not_the_writer(&self, what: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{what}: this process has not claimed the database in {} (open it as the writer, which locks it, or claim it)",
                self.bucket.name()
            ),
        )
    }

    fn fenced(&self, what: &str, epoch: u64) -> io::Error {
        let newest = self
            .latest_current()
            .ok()
            .flatten()
            .map_or_else(|| "unknown".to_owned(), |(_, c)| c.epoch.to_string());
        tracing::error!(
            bucket = %self.bucket.name(), what, epoch, newest = %newest,
            "fenced out: another writer took over the database"
        );
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "fenced out ({what}): another writer took over; this writer (epoch {epoch}) no longer owns the database in {} (newest epoch {newest})",
                self.bucket.name()
            ),
        )
    }

    /// `CURRENT` as the engine reads it: `MANIFEST-NNNNNN\n`.
    pub(crate) fn read_current(&self) -> io::Result<Arc<dyn RandomAccessFile>> {
        let Some((_, current)) = self.latest_current()? else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "no CURRENT object in {} under {:?}",
                    self.bucket.name(),
                    self.prefix
                ),
            ));
        };
        Ok(Arc::new(InMemory(Bytes::from(format!(
            "{}\n",
            current.manifest
        )))))
    }

    pub(crate) fn current_exists(&self) -> io::Result<bool> {
        Ok(!self.current_seqs()?.is_empty())
    }

    /// Keeps `CURRENT.tmp`'s bytes until the rename.
    pub(crate) fn create_current_tmp(self: &Arc<Self>) -> io::Result<Box<dyn WritableFile>> {
        if self.epoch().is_none() {
            return Err(self.not_the_writer("writing CURRENT"));
        }
        Ok(Box::new(CurrentTmpWriter {
            manifest: self.clone(),
            data: Vec::new(),
        }))
    }

    pub(crate) fn drop_current_tmp(&self) {
        self.claim.lock().pending_current = None;
    }

    /// `rename(CURRENT.tmp, CURRENT)`: writes the next CURRENT object, only
    /// if absent.
    pub(crate) fn switch_current(&self) -> io::Result<()> {
        let mut claim = self.claim.lock();
        let Some(epoch) = claim.epoch else {
            return Err(self.not_the_writer("switching CURRENT"));
        };
        let Some(bytes) = claim.pending_current.take() else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "CURRENT.tmp was not written and synced before the rename",
            ));
        };
        let name = std::str::from_utf8(&bytes)
            .ok()
            .and_then(|t| t.strip_suffix('\n'))
            .filter(|n| n.starts_with("MANIFEST-"))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("CURRENT.tmp does not name a MANIFEST: {bytes:?}"),
                )
            })?;
        let seq = claim.seq + 1;
        let key = self.key(&format!("CURRENT/{}", numbered(seq)));
        let record = CurrentRecord {
            manifest: name.to_owned(),
            epoch,
        };
        match self.bucket.put(&key, record.encode(), true) {
            Ok(()) => {
                // Older CURRENT objects stay: a writer fenced out long ago
                // must still find its next one taken.
                claim.seq = seq;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(self.fenced(&format!("{key} exists"), epoch))
            }
            Err(e) => Err(e),
        }
    }

    /// MANIFEST `name` as one file: its parts' payloads in order.
    pub(crate) fn read_manifest(&self, name: &str) -> io::Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(InMemory(self.manifest_bytes(name)?)))
    }

    fn manifest_bytes(&self, name: &str) -> io::Result<Bytes> {
        let parts = self.parts(name)?;
        if parts.first() != Some(&0) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{name} is not in {}", self.bucket.name()),
            ));
        }
        let keys: Vec<String> = parts
            .iter()
            .map(|&p| self.key(&format!("{name}/{}", numbered(p))))
            .collect();
        // A gap is found before anything is read; its offset is that of
        // the part before it ends, known once those are read.
        let whole = parts
            .iter()
            .enumerate()
            .position(|(i, &p)| p != i as u64)
            .unwrap_or(parts.len());
        // The parts at once: an open reads every part of the live MANIFEST,
        // one object per edit, so one request at a time would make it as
        // slow as the MANIFEST is long.
        let objects = self.bucket.get_many(&keys[..whole])?;
        let mut out = Vec::new();
        for (key, bytes) in keys.iter().zip(&objects) {
            let payload = ManifestPart::decode(name, key, out.len() as u64, bytes)?.payload;
            out.extend_from_slice(&payload);
        }
        if whole < parts.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "corrupt {name} at offset {}: part {whole} is missing (found {})",
                    out.len(),
                    keys[whole]
                ),
            ));
        }
        Ok(Bytes::from(out))
    }

    /// Whether MANIFEST `name` exists (and was not removed: a removed one
    /// loses part 0 first and keeps its empty parts).
    pub(crate) fn manifest_exists(&self, name: &str) -> io::Result<bool> {
        Ok(self.parts(name)?.first() == Some(&0))
    }

    /// The MANIFESTs in the bucket.
    pub(crate) fn manifest_names(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for name in self.bucket.list(&self.prefix)? {
            if name.starts_with("MANIFEST-") && self.manifest_exists(&name)? {
                names.push(name);
            }
        }
        Ok(names)
    }

    pub(crate) fn manifest_size(&self, name: &str) -> io::Result<u64> {
        Ok(self.manifest_bytes(name)?.len() as u64)
    }

    /// A writer of MANIFEST `name`: each sync writes the bytes since the
    /// last one as the next part. `existing` continues a MANIFEST.
    pub(crate) fn manifest_writer(
        self: &Arc<Self>,
        name: &str,
        existing: bool,
    ) -> io::Result<Box<dyn WritableFile>> {
        let Some(epoch) = self.epoch() else {
            return Err(self.not_the_writer(&format!("writing {name}")));
        };
        // A writer fenced out learns it here, before it writes anything.
        self.check_owner(&format!("writing {name}"))?;
        let (data, next_part) = if existing {
            (
                self.manifest_bytes(name)?.to_vec(),
                self.parts(name)?.len() as u64,
            )
        } else {
            let parts = self.parts(name)?;
            if !parts.is_empty() {
                // Leftovers under a number this writer now holds: a creation
                // cut short before its CURRENT, or a fenced-out writer's
                // roll. No CURRENT names them (checked), so they are
                // garbage; a new file replaces them, as `create` truncates.
                if self
                    .latest_current()?
                    .is_some_and(|(_, c)| c.manifest == name)
                {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("{name} is the live MANIFEST: it cannot be created again"),
                    ));
                }
                tracing::warn!(
                    bucket = %self.bucket.name(), manifest = name, parts = parts.len(),
                    "removing the leftover parts of a MANIFEST no CURRENT names"
                );
                for p in parts {
                    self.bucket
                        .delete(&self.key(&format!("{name}/{}", numbered(p))))?;
                }
            }
            (Vec::new(), 0)
        };
        Ok(Box::new(ManifestWriter {
            manifest: self.clone(),
            name: name.to_owned(),
            uploaded: data.len(),
            data,
            next_part,
            epoch,
        }))
    }

    /// Removes MANIFEST `name`: writes an empty part at its end (a
    /// tombstone, which also fences out a writer still appending to it),
    /// then deletes the parts that hold records, part 0 first, so that the
    /// MANIFEST counts as absent from the first delete on.
    ///
    /// The empty parts (fences, the tombstone) stay: a writer fenced out
    /// can only ever write the part right after its own last one, which is
    /// a fence, so keeping them keeps it out; deleting a part with records
    /// frees no slot any writer will try (its writer is past it).
    pub(crate) fn remove_manifest(&self, name: &str) -> io::Result<()> {
        if !self.manifest_exists(name)? {
            return Ok(());
        }
        let Some(epoch) = self.epoch() else {
            return Err(self.not_the_writer(&format!("removing {name}")));
        };
        self.check_owner(&format!("removing {name}"))?;
        self.fence(name, epoch)?;
        for (part, size) in self.bucket.list_sized(&self.key(name))? {
            if size > PART_HEADER as u64 {
                self.bucket.delete(&self.key(&format!("{name}/{part}")))?;
            }
        }
        Ok(())
    }
}

/// A file read whole into memory (CURRENT, a MANIFEST).
#[derive(Debug)]
struct InMemory(Bytes);

impl RandomAccessFile for InMemory {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let Ok(start) = usize::try_from(offset) else {
            return Ok(0);
        };
        if start >= self.0.len() {
            return Ok(0);
        }
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.0.len() as u64)
    }
}

#[derive(Debug)]
struct CurrentTmpWriter {
    manifest: Arc<BucketManifest>,
    data: Vec<u8>,
}

impl WritableFile for CurrentTmpWriter {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.data.extend_from_slice(data);
        Ok(())
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let start = offset as usize;
        if self.data.len() < start + data.len() {
            self.data.resize(start + data.len(), 0);
        }
        self.data[start..start + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.data.resize(len as usize, 0);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.data.len() as u64
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.manifest.claim.lock().pending_current = Some(self.data.clone());
        Ok(())
    }
    fn sync_all(&mut self) -> io::Result<()> {
        self.sync_data()
    }
}

#[derive(Debug)]
struct ManifestWriter {
    manifest: Arc<BucketManifest>,
    name: String,
    data: Vec<u8>,
    /// Bytes already in parts: fixed from then on.
    uploaded: usize,
    next_part: u64,
    epoch: u64,
}

impl ManifestWriter {
    fn fixed(&self, what: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{} in a bucket is append-only: cannot {what} its first {} bytes, already written",
                self.name, self.uploaded
            ),
        )
    }
}

impl WritableFile for ManifestWriter {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.data.extend_from_slice(data);
        Ok(())
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let start = offset as usize;
        if start < self.uploaded {
            return Err(self.fixed("overwrite"));
        }
        if self.data.len() < start + data.len() {
            self.data.resize(start + data.len(), 0);
        }
        self.data[start..start + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        if (len as usize) < self.uploaded {
            return Err(self.fixed("truncate"));
        }
        self.data.resize(len as usize, 0);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.data.len() as u64
    }
    fn sync_data(&mut self) -> io::Result<()> {
        if self.data.len() == self.uploaded {
            return Ok(());
        }
        let m = &self.manifest;
        let key = m.key(&format!("{}/{}", self.name, numbered(self.next_part)));
        let part = ManifestPart::encode(self.epoch, &self.data[self.uploaded..]);
        match m.bucket.put(&key, part, true) {
            Ok(()) => {
                self.uploaded = self.data.len();
                self.next_part += 1;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(m.fenced(&format!("{key} exists"), self.epoch))
            }
            Err(e) => Err(e),
        }
    }
    fn sync_all(&mut self) -> io::Result<()> {
        self.sync_data()
    }
}
