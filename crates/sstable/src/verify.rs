//! Checking every block of an SST file without its comparator: what a
//! backup or a copy checks before it trusts a file (RocksDB's
//! `VerifyChecksum`).

use std::path::Path;

use lithify_vfs::RandomAccessFile;

use crate::block::{Block, BlockIter};
use snafu::ResultExt;

use crate::error::{CorruptionSnafu, IoSnafu, Result};
use crate::format::BlockHandle;
use crate::reader::{Layout, read_block};

/// What [`verify_file`] read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileCheck {
    /// Data blocks read, each with its checksum verified.
    pub data_blocks: u64,
    /// Bytes of the file read.
    pub bytes: u64,
}

/// Reads every block of the table in `file` (`size` bytes; `path` names
/// it in errors) — footer, metaindex, properties, index, filter,
/// range-deletion block and every data block the index names — and
/// verifies each block's checksum and layout. The first damage is an error
/// naming the file and the block's offset. The comparator is not needed:
/// keys are not compared.
///
/// ```
/// use std::path::Path;
/// use lithify_sstable::{SstBuilder, SstOptions, verify_file};
/// use lithify_vfs::{FileSystem, MemFs};
///
/// let fs = MemFs::new();
/// let path = Path::new("/t.sst");
/// let mut b = SstBuilder::new(fs.create(path).unwrap(), path, &SstOptions::default()).unwrap();
/// b.add(b"k", b"v").unwrap();
/// let size = b.finish().unwrap().file_size;
/// let check = verify_file(&*fs.open(path).unwrap(), path, size).unwrap();
/// assert_eq!(check.data_blocks, 1);
///
/// // One flipped bit in the data block is found.
/// let mut f = fs.open_append(path).unwrap();
/// f.write_at(1, b"X").unwrap();
/// let err = verify_file(&*fs.open(path).unwrap(), path, size).unwrap_err();
/// assert!(err.to_string().contains("offset 0"), "{err}");
/// ```
pub fn verify_file(file: &dyn RandomAccessFile, path: &Path, size: u64) -> Result<FileCheck> {
    let layout = Layout::read(file, path, size, true)?;
    let mut check = FileCheck {
        data_blocks: 0,
        bytes: size,
    };
    let corrupt = |offset: u64, message: String| {
        CorruptionSnafu {
            path: path.to_path_buf(),
            offset,
            message,
        }
        .build()
    };
    let index_at = layout.footer.index.offset;
    let mut it = BlockIter::new(layout.index.clone(), Vec::new());
    it.first().map_err(|e| corrupt(index_at, e.to_string()))?;
    while it.valid() {
        let handle = BlockHandle::decode_exact(it.value())
            .ok_or_else(|| corrupt(index_at, "bad block handle in the index".to_owned()))?;
        let (contents, _, _) = read_block(file, path, layout.footer_at, true, handle)?;
        Block::new(contents).map_err(|e| corrupt(handle.offset, e.to_string()))?;
        check.data_blocks += 1;
        it.next().map_err(|e| corrupt(index_at, e.to_string()))?;
    }
    Ok(check)
}

/// The whole-file checksum of the first `size` bytes of `file` (`path`
/// names it in errors): the xxh3-64 of its bytes, what
/// [`BuiltSst::file_checksum`](crate::BuiltSst::file_checksum) records as
/// a builder writes and a MANIFEST keeps for each file it names.
///
/// ```
/// use std::path::Path;
/// use lithify_sstable::{SstBuilder, SstOptions, file_checksum};
/// use lithify_vfs::{FileSystem, MemFs};
///
/// let fs = MemFs::new();
/// let path = Path::new("/t.sst");
/// let mut b = SstBuilder::new(fs.create(path).unwrap(), path, &SstOptions::default()).unwrap();
/// b.add(b"k", b"v").unwrap();
/// let built = b.finish().unwrap();
/// let sum = file_checksum(&*fs.open(path).unwrap(), path, built.file_size).unwrap();
/// assert_eq!(sum, built.file_checksum);
/// ```
pub fn file_checksum(file: &dyn RandomAccessFile, path: &Path, size: u64) -> Result<u64> {
    const CHUNK: u64 = 1 << 20;
    let mut hasher = FileChecksum::new();
    let mut buf = vec![0u8; CHUNK.min(size) as usize];
    let mut offset = 0;
    while offset < size {
        let n = (size - offset).min(CHUNK) as usize;
        file.read_exact_at(offset, &mut buf[..n]).context(IoSnafu {
            path: path.to_path_buf(),
            offset,
        })?;
        hasher.update(&buf[..n]);
        offset += n as u64;
    }
    Ok(hasher.digest())
}

/// The whole-file checksum computed as the bytes go by (what a builder
/// does as it writes, and a copy as it copies): feed every byte of the
/// file in order, then [`digest`](Self::digest).
///
/// ```
/// use lithify_sstable::FileChecksum;
///
/// let mut whole = FileChecksum::new();
/// whole.update(b"one two");
/// let mut parts = FileChecksum::new();
/// parts.update(b"one ");
/// parts.update(b"two");
/// assert_eq!(whole.digest(), parts.digest());
/// ```
#[derive(Clone, Default)]
pub struct FileChecksum(xxhash_rust::xxh3::Xxh3);

impl FileChecksum {
    /// A checksum of no bytes yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next bytes of the file.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The checksum of every byte added.
    pub fn digest(&self) -> u64 {
        self.0.digest()
    }
}

impl std::fmt::Debug for FileChecksum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("FileChecksum").field(&self.digest()).finish()
    }
}
