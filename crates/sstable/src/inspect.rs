//! Inspecting a table the way RocksDB's `sst_dump` does: opening it by the
//! comparator and key schema it records ([`open_recorded`]), and walking
//! every data block the index names, checking each and reporting every
//! problem with its offset instead of stopping at the first
//! ([`SstReader::verify`], [`SstReader::walk`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_base::key::escape;
use lithify_base::{BytewiseComparator, Comparator, InternalKeyComparator, ParsedInternalKey};
use lithify_vfs::RandomAccessFile;

use crate::block::{Block, BlockIter};
use crate::error::{Error, IncompatibleSnafu, Result};
use crate::format::{BLOCK_TYPE_RAW, BlockHandle};
use crate::options::SstOptions;
use crate::properties::Properties;
use crate::reader::{RangeDelEntry, SstReader, read_block};
use crate::schema::{InternalKeys, KeySchema, PlainKeys};

/// The prefix of the name an [`InternalKeyComparator`] records.
const INTERNAL_PREFIX: &str = "lithify.InternalKeyComparator:";

/// A table opened by the names it records ([`open_recorded`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct RecordedSst {
    /// The open table.
    reader: SstReader<Arc<dyn Comparator>>,
    /// Its keys are internal keys (`user_key ++ seqno/kind trailer`): the
    /// engine's tables.
    pub internal_keys: bool,
    /// The recorded comparator is one this crate has (bytewise), so key
    /// order can be checked. Otherwise keys are compared bytewise under the
    /// recorded name: the table opens, but seeks and order checks would be
    /// wrong.
    pub order_known: bool,
}

impl RecordedSst {
    /// The file's path, as given to [`open_recorded`].
    pub fn path(&self) -> &Path {
        self.reader.path()
    }

    /// The properties the table records.
    pub fn properties(&self) -> &Properties {
        self.reader.properties()
    }

    /// The table's range tombstones.
    pub fn range_tombstones(&self) -> &[RangeDelEntry] {
        self.reader.range_tombstones()
    }

    /// Reads every block and entry ([`SstReader::verify`]), checking key
    /// order when the comparator is known here.
    pub fn verify(&self) -> SstCheck {
        self.reader.verify(self.order_known)
    }

    /// [`verify`](Self::verify), showing `visitor` every data block and
    /// entry as it goes ([`SstReader::walk`]).
    pub fn walk(&self, visitor: &mut dyn SstVisitor) -> SstCheck {
        self.reader.walk(self.order_known, visitor)
    }
}

/// Key order for tables whose comparator is not known here: bytewise,
/// under the recorded name.
struct Recorded(String);

impl Comparator for Recorded {
    fn name(&self) -> &str {
        &self.0
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        a.cmp(b)
    }
}

/// Opens the table in `file` of `size` bytes (`path` names it in errors)
/// without knowing how it was written: the key schema and comparator are
/// the ones the table records. The engine's tables (internal keys,
/// bytewise order) open on the first try. A table of a key schema this
/// crate does not have fails with [`Error::Incompatible`] naming it.
///
/// ```
/// use std::path::Path;
/// use lithify_sstable::{SstBuilder, SstOptions, open_recorded};
/// use lithify_vfs::{FileSystem, MemFs};
///
/// let fs = MemFs::new();
/// let path = Path::new("/t.sst");
/// let mut b = SstBuilder::new(fs.create(path).unwrap(), path, &SstOptions::default()).unwrap();
/// b.add(b"k", b"v").unwrap();
/// let size = b.finish().unwrap().file_size;
/// let table = open_recorded(fs.open(path).unwrap(), path, size).unwrap();
/// assert!(!table.internal_keys && table.order_known);
/// assert_eq!(table.verify().entries, 1);
/// ```
pub fn open_recorded(
    file: Arc<dyn RandomAccessFile>,
    path: impl Into<PathBuf>,
    size: u64,
) -> Result<RecordedSst> {
    let path = path.into();
    let mut schema = InternalKeys::NAME.to_string();
    let mut comparator = format!("{INTERNAL_PREFIX}{}", BytewiseComparator::NAME);
    let mut last = None;
    // Each retry learns one name; two suffice.
    for _ in 0..3 {
        let internal = schema == InternalKeys::NAME;
        let user = comparator
            .strip_prefix(INTERNAL_PREFIX)
            .filter(|_| internal)
            .unwrap_or(&comparator);
        let order_known = user == BytewiseComparator::NAME;
        let user_cmp: Arc<dyn Comparator> = if order_known {
            Arc::new(BytewiseComparator)
        } else {
            Arc::new(Recorded(user.to_string()))
        };
        let cmp: Arc<dyn Comparator> = if internal && comparator.starts_with(INTERNAL_PREFIX) {
            Arc::new(InternalKeyComparator::new(user_cmp))
        } else {
            user_cmp
        };
        let key_schema: Arc<dyn KeySchema> = if internal {
            Arc::new(InternalKeys)
        } else {
            Arc::new(PlainKeys)
        };
        let options = SstOptions::with_comparator(cmp, key_schema);
        match SstReader::open(file.clone(), path.clone(), size, &options, None) {
            Ok(reader) => {
                return Ok(RecordedSst {
                    reader,
                    internal_keys: internal,
                    order_known,
                });
            }
            Err(Error::Incompatible { what, found, .. })
                if what == "key schema"
                    && found != InternalKeys::NAME
                    && found != PlainKeys::NAME =>
            {
                return IncompatibleSnafu {
                    path,
                    what,
                    found,
                    expected: format!("{} or {}", InternalKeys::NAME, PlainKeys::NAME),
                }
                .fail();
            }
            Err(e @ Error::Incompatible { .. }) => {
                if let Error::Incompatible { what, found, .. } = &e {
                    if *what == "key schema" {
                        schema = found.clone();
                    } else {
                        comparator = found.clone();
                    }
                }
                last = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.expect("three failed tries each set it"))
}

/// One data block, as a walk found it ([`SstVisitor::block`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DataBlockInfo {
    /// The block's position among the data blocks, from 0.
    pub number: u64,
    /// Its byte offset in the file.
    pub offset: u64,
    /// Its stored size, without the trailer.
    pub size: u64,
    /// Its decoded size when it is stored zstd-compressed.
    pub zstd_decoded: Option<usize>,
    /// Entries read from it.
    pub entries: u64,
    /// Its first key.
    pub first_key: Option<Vec<u8>>,
    /// Its last key.
    pub last_key: Option<Vec<u8>>,
    /// Why the block could not be read (nothing of it was), or why the
    /// walk through its entries stopped early.
    pub damage: Option<String>,
    /// The block could not be read at all.
    pub unreadable: bool,
}

/// One problem a walk found: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Damage {
    /// The byte offset of the damaged block in the file.
    pub offset: u64,
    /// What is wrong.
    pub message: String,
}

/// What [`SstReader::walk`] read and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SstCheck {
    /// Data blocks the index names.
    pub data_blocks: u64,
    /// Entries read from them.
    pub entries: u64,
    /// Every problem, in file order.
    pub damage: Vec<Damage>,
}

/// Sees the data of a table as [`SstReader::walk`] reads it.
pub trait SstVisitor {
    /// One entry, in table order.
    fn entry(&mut self, key: &[u8], value: &[u8]) {
        let _ = (key, value);
    }

    /// One data block, after its entries.
    fn block(&mut self, block: &DataBlockInfo) {
        let _ = block;
    }
}

/// A visitor that looks at nothing.
struct Nothing;

impl SstVisitor for Nothing {}

impl<C: Comparator> SstReader<C> {
    /// Reads every data block the index names — each block's checksum,
    /// decompression and decoding — and checks that its keys are valid
    /// for the key schema, that they are in order when `check_order`
    /// (with this reader's comparator), and that the block and entry
    /// counts match the properties. Every problem is reported with the
    /// offset of its block; the walk goes on past a damaged block.
    ///
    /// ```
    /// use std::path::Path;
    /// use std::sync::Arc;
    /// use lithify_sstable::{SstBuilder, SstOptions, SstReader};
    /// use lithify_vfs::{FileSystem, MemFs};
    ///
    /// let fs = MemFs::new();
    /// let path = Path::new("/t.sst");
    /// let opts = SstOptions::default();
    /// let mut b = SstBuilder::new(fs.create(path).unwrap(), path, &opts).unwrap();
    /// b.add(b"k", b"v").unwrap();
    /// let size = b.finish().unwrap().file_size;
    ///
    /// // One flipped byte in the data block is found and named by offset.
    /// let mut f = fs.open_append(path).unwrap();
    /// f.write_at(1, b"X").unwrap();
    /// let table = SstReader::open(fs.open(path).unwrap(), path, size, &opts, None).unwrap();
    /// let check = table.verify(true);
    /// assert_eq!(check.damage[0].offset, 0);
    /// assert!(check.damage[0].message.contains("checksum mismatch"));
    /// ```
    pub fn verify(&self, check_order: bool) -> SstCheck {
        self.walk(check_order, &mut Nothing)
    }

    /// [`verify`](Self::verify), showing `visitor` every entry and every
    /// data block on the way (what `sst_dump` prints).
    pub fn walk(&self, check_order: bool, visitor: &mut dyn SstVisitor) -> SstCheck {
        let index_at = self.footer().index.offset;
        let mut walk = Walk {
            path: self.path(),
            internal: self.key_schema().name() == InternalKeys::NAME,
            order: check_order.then_some(self.comparator() as &dyn Comparator),
            check: SstCheck::default(),
            previous_key: None,
        };
        let mut index = BlockIter::new(self.index_block().clone(), Vec::new());
        let mut step = index.first();
        while step.is_ok() && index.valid() {
            match BlockHandle::decode_exact(index.value()) {
                Some(handle) => walk.block(&**self.file(), self.footer_at(), handle, visitor),
                None => walk.check.damage.push(Damage {
                    offset: index_at,
                    message: format!(
                        "index entry at byte {} holds a bad block handle",
                        index.entry_offset()
                    ),
                }),
            }
            step = index.next();
        }
        if let Err(e) = step {
            walk.check.damage.push(Damage {
                offset: index_at,
                message: format!("index block: {e}"),
            });
        }
        let mut check = walk.check;
        let props = self.properties();
        if check.damage.is_empty() && check.data_blocks != props.num_data_blocks {
            check.damage.push(Damage {
                offset: index_at,
                message: format!(
                    "the index names {} data blocks, the properties say {}",
                    check.data_blocks, props.num_data_blocks
                ),
            });
        }
        if check.damage.is_empty() && check.entries != props.num_entries {
            check.damage.push(Damage {
                offset: 0,
                message: format!(
                    "the data blocks hold {} entries, the properties say {}",
                    check.entries, props.num_entries
                ),
            });
        }
        check
    }
}

/// The state of a walk over the data blocks.
struct Walk<'a> {
    path: &'a Path,
    internal: bool,
    order: Option<&'a dyn Comparator>,
    check: SstCheck,
    previous_key: Option<Vec<u8>>,
}

impl Walk<'_> {
    fn damage(&mut self, offset: u64, message: String) {
        self.check.damage.push(Damage { offset, message });
    }

    fn block(
        &mut self,
        file: &dyn RandomAccessFile,
        limit: u64,
        handle: BlockHandle,
        visitor: &mut dyn SstVisitor,
    ) {
        let n = self.check.data_blocks;
        self.check.data_blocks += 1;
        let mut info = DataBlockInfo {
            number: n,
            offset: handle.offset,
            size: handle.size,
            zstd_decoded: None,
            entries: 0,
            first_key: None,
            last_key: None,
            damage: None,
            unreadable: false,
        };
        let read = read_block(file, self.path, limit, true, handle)
            .map_err(|e| match e {
                Error::Corruption { message, .. } => message,
                other => format!("cannot read the block: {other}"),
            })
            .and_then(|(contents, _, block_type)| {
                Block::new(contents)
                    .map(|b| (b, block_type))
                    .map_err(|e| e.to_string())
            });
        let (block, block_type) = match read {
            Ok(b) => b,
            Err(m) => {
                self.damage(handle.offset, format!("data block {n}: {m}"));
                info.damage = Some(m);
                info.unreadable = true;
                visitor.block(&info);
                return;
            }
        };
        if block_type != BLOCK_TYPE_RAW {
            info.zstd_decoded = Some(block.data().len());
        }
        let mut it = BlockIter::new(block, Vec::new());
        let mut step = it.first();
        while step.is_ok() && it.valid() {
            info.entries += 1;
            let key = it.key();
            if info.first_key.is_none() {
                info.first_key = Some(key.to_vec());
            }
            if let (Some(cmp), Some(prev)) = (self.order, &self.previous_key)
                && cmp.compare(prev, key).is_ge()
            {
                let message = format!(
                    "data block {n}: key {} does not sort after {}",
                    show_key(self.internal, key),
                    show_key(self.internal, prev)
                );
                self.damage(handle.offset, message);
            }
            if self.internal
                && let Err(m) = ParsedInternalKey::parse(key)
            {
                self.damage(
                    handle.offset,
                    format!("data block {n}: bad internal key: {m}"),
                );
            }
            visitor.entry(key, it.value());
            self.previous_key = Some(key.to_vec());
            step = it.next();
        }
        self.check.entries += info.entries;
        if info.entries > 0 {
            info.last_key = self.previous_key.clone();
        }
        if let Err(e) = step {
            self.damage(handle.offset, format!("data block {n}: {e}"));
            info.damage = Some(e.to_string());
        }
        visitor.block(&info);
    }
}

/// A key in a problem's message, in lithify's escaped text form
/// (`lithify_base::key::escape`); internal keys as `user_key#seq,KIND`,
/// one that does not parse as `<bad internal key: ...>`.
fn show_key(internal: bool, key: &[u8]) -> String {
    if !internal {
        return escape(key);
    }
    match ParsedInternalKey::parse(key) {
        Ok(p) => format!("{}#{},{}", escape(p.user_key), p.seqno, p.kind.name()),
        Err(e) => format!("<bad internal key: {e}: {}>", escape(key)),
    }
}
