//! `dump-sst FILE`: a table's properties, its blocks and entries, and a
//! verification of every block's checksum, as RocksDB's `sst_dump`.
//!
//! The table is opened with `lithify_sstable::SstReader::open` (footer,
//! metaindex, properties, index, filter and range-deletion blocks, all
//! checksummed); then every data block the index names is read from the
//! file, its trailer verified, decompressed and decoded. A damaged block is
//! reported with its offset and the walk goes on; any damage fails the
//! command at the end, naming the file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use lithify::Bytes;
use lithify_base::coding::Decoder;
use lithify_base::{BytewiseComparator, Comparator, InternalKeyComparator, ParsedInternalKey};
use lithify_sstable::block::{Block, BlockIter};
use lithify_sstable::format::{
    BLOCK_TRAILER_LEN, BLOCK_TYPE_RAW, BLOCK_TYPE_ZSTD, BlockHandle, FOOTER_LEN, Footer,
    verify_trailer,
};
use lithify_sstable::{InternalKeys, MAX_COMPRESSED_BLOCK_LEN, PlainKeys, SstOptions, SstReader};
use lithify_vfs::{FileSystem as _, OsFs, RandomAccessFile};
use snafu::ResultExt as _;

use crate::error::{DamagedSnafu, IoSnafu, Result, TableSnafu, UsageSnafu};
use crate::text::Encoding;

/// Arguments of `dump-sst`.
#[derive(Debug, Args)]
pub(crate) struct DumpSstArgs {
    /// The table file (`NNNNNN.sst`).
    pub file: PathBuf,
    /// List every data block: offset, size, type, entries, key range.
    #[arg(long)]
    pub blocks: bool,
    /// Print every entry (`key => value`; internal keys as `key#seq,KIND`).
    #[arg(long)]
    pub entries: bool,
    /// Print at most this many entries [range: any u64].
    #[arg(long, value_parser = crate::numbers::int::<u64>(0, u64::MAX))]
    pub limit: Option<u64>,
    /// Keys and values in hexadecimal.
    #[arg(long)]
    pub hex: bool,
}

/// Key order for tables whose comparator this tool does not have: bytewise,
/// under the recorded name (so the table opens; only seeks would care).
struct Recorded(String);

impl Comparator for Recorded {
    fn name(&self) -> &str {
        &self.0
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        a.cmp(b)
    }
}

/// An open table and how to read its keys.
struct Opened {
    table: SstReader<Arc<dyn Comparator>>,
    /// Keys are internal keys (`user_key ++ seqno/kind trailer`).
    internal: bool,
    /// The recorded comparator is one this tool knows (bytewise): entry
    /// order can be checked.
    known_order: bool,
}

const INTERNAL_PREFIX: &str = "lithify.InternalKeyComparator:";

/// Opens the table at `path`, learning its key schema and comparator from
/// the names it records (the engine's tables first).
fn open(file: Arc<dyn RandomAccessFile>, path: &Path, size: u64) -> Result<Opened> {
    let mut schema = InternalKeys::NAME.to_string();
    let mut comparator = format!("{INTERNAL_PREFIX}{}", BytewiseComparator::NAME);
    // Each retry learns one name; two suffice.
    for _ in 0..3 {
        let internal = schema == InternalKeys::NAME;
        let user = comparator
            .strip_prefix(INTERNAL_PREFIX)
            .filter(|_| internal)
            .unwrap_or(&comparator);
        let known_order = user == BytewiseComparator::NAME;
        let user_cmp: Arc<dyn Comparator> = if known_order {
            Arc::new(BytewiseComparator)
        } else {
            Arc::new(Recorded(user.to_string()))
        };
        let cmp: Arc<dyn Comparator> = if internal && comparator.starts_with(INTERNAL_PREFIX) {
            Arc::new(InternalKeyComparator::new(user_cmp))
        } else {
            user_cmp
        };
        let key_schema: Arc<dyn lithify_sstable::KeySchema> = if internal {
            Arc::new(InternalKeys)
        } else {
            Arc::new(PlainKeys)
        };
        let options = SstOptions::with_comparator(cmp, key_schema);
        match SstReader::open(file.clone(), path, size, &options, None) {
            Ok(table) => {
                return Ok(Opened {
                    table,
                    internal,
                    known_order,
                });
            }
            Err(lithify_sstable::Error::Incompatible { what, found, .. }) => {
                if what == "key schema" {
                    if found != InternalKeys::NAME && found != PlainKeys::NAME {
                        return UsageSnafu {
                            message: format!(
                                "{} uses key schema {found:?}, which this tool cannot read",
                                path.display()
                            ),
                        }
                        .fail();
                    }
                    schema = found;
                } else {
                    comparator = found;
                }
            }
            Err(e) => return Err(e).context(TableSnafu),
        }
    }
    UsageSnafu {
        message: format!(
            "{} names a comparator or key schema that keeps changing",
            path.display()
        ),
    }
    .fail()
}

/// Runs `dump-sst`.
pub(crate) fn run(a: DumpSstArgs) -> Result<()> {
    let enc = Encoding::new(a.hex);
    let path = a.file.as_path();
    let size = OsFs.file_size(path).context(IoSnafu {
        action: "read the size of",
        path,
    })?;
    let file = OsFs.open(path).context(IoSnafu {
        action: "open",
        path,
    })?;
    // In a database directory the MANIFEST knows the table's size, so a
    // table cut short reads as truncated, not as "not a table".
    let size = match recorded_size(path) {
        Some(recorded) if recorded != size => {
            let opened = open(file.clone(), path, recorded);
            return Err(opened.err().unwrap_or_else(|| {
                damaged(
                    path,
                    size.min(recorded),
                    format!("the MANIFEST records {recorded} bytes, the file has {size}"),
                )
            }));
        }
        _ => size,
    };
    let opened = open(file.clone(), path, size)?;
    let keys = KeyPrinter {
        enc,
        internal: opened.internal,
    };
    print_properties(&opened, size, &keys);
    if a.blocks || a.entries {
        println!("data blocks:");
    }
    let show = Show {
        blocks: a.blocks,
        entries: a.entries,
        limit: a.limit.unwrap_or(u64::MAX),
    };
    let walk = walk(&*file, path, size, &opened, keys, show)?;
    for (offset, message) in &walk.damage {
        println!("damage at offset {offset}: {message}");
    }
    println!(
        "checksums: {} data blocks read, {} entries; {}",
        walk.blocks,
        walk.entries,
        if walk.damage.is_empty() {
            "every block verified".to_string()
        } else {
            format!("{} problems", walk.damage.len())
        }
    );
    match walk.damage.first() {
        None => Ok(()),
        Some((offset, message)) => DamagedSnafu {
            path,
            message: format!(
                "{} problem(s); the first at offset {offset}: {message}",
                walk.damage.len()
            ),
        }
        .fail(),
    }
}

/// The size the MANIFEST of the table's directory records for it, when
/// the table sits in a database directory whose MANIFEST lists it.
fn recorded_size(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let Some(lithify_version::filename::FileKind::Table(number)) =
        lithify_version::filename::parse_file_name(name)
    else {
        return None;
    };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty())?;
    let versions = lithify_version::VersionSet::recover(
        Arc::new(OsFs),
        dir,
        lithify_version::VersionSetOptions::default(),
    )
    .ok()?;
    versions.tables().iter().find_map(|t| {
        versions
            .current(t.id)?
            .all_files()
            .find(|(_, f)| f.number == number)
            .map(|(_, f)| f.size)
    })
}

/// What `lithify check` learns of one table file.
pub(crate) struct TableCheck {
    /// Data blocks read.
    pub blocks: u64,
    /// Entries in them.
    pub entries: u64,
    /// Every problem: (file offset, what is wrong).
    pub damage: Vec<(u64, String)>,
}

/// Verifies the table at `path` as `dump-sst` does — footer, meta blocks,
/// every data block's checksum, decoding and key order, the counts against
/// the properties — printing nothing. `expected_size` (the MANIFEST's)
/// makes a cut file read as truncated rather than as not a table. An
/// error means the table cannot be opened at all.
pub(crate) fn verify(path: &Path, expected_size: u64) -> Result<TableCheck> {
    let file = OsFs.open(path).context(IoSnafu {
        action: "open",
        path,
    })?;
    let opened = open(file.clone(), path, expected_size)?;
    let keys = KeyPrinter {
        enc: Encoding::new(false),
        internal: opened.internal,
    };
    let show = Show {
        blocks: false,
        entries: false,
        limit: 0,
    };
    let w = walk(&*file, path, expected_size, &opened, keys, show)?;
    Ok(TableCheck {
        blocks: w.blocks,
        entries: w.entries,
        damage: w.damage,
    })
}

/// What a walk prints.
#[derive(Clone, Copy)]
struct Show {
    blocks: bool,
    entries: bool,
    limit: u64,
}

/// Reads every data block the index names, checking each, and the block
/// and entry counts against the properties.
fn walk(
    file: &dyn RandomAccessFile,
    path: &Path,
    size: u64,
    opened: &Opened,
    keys: KeyPrinter,
    show: Show,
) -> Result<Walk> {
    // The index, read again to walk the data blocks it names.
    let mut raw_footer = [0u8; FOOTER_LEN];
    let footer_at = size - FOOTER_LEN as u64; // SstReader::open checked the size.
    file.read_exact_at(footer_at, &mut raw_footer)
        .context(IoSnafu {
            action: "read the footer of",
            path,
        })?;
    let footer =
        Footer::decode(&raw_footer).map_err(|message| damaged(path, footer_at, message))?;
    let index = read_block(file, footer_at, footer.index)
        .and_then(|(b, _)| Block::new(b).map_err(|e| e.to_string()))
        .map_err(|m| damaged(path, footer.index.offset, format!("index block: {m}")))?;
    let mut index_it = BlockIter::new(index, Vec::new());
    index_it
        .first()
        .map_err(|e| damaged(path, footer.index.offset, format!("index block: {e}")))?;

    let mut walk = Walk {
        keys,
        order: opened
            .known_order
            .then(|| opened.table.comparator().clone()),
        show_blocks: show.blocks,
        show_entries: show.entries,
        limit: show.limit,
        printed: 0,
        entries: 0,
        blocks: 0,
        damage: Vec::new(),
        previous_key: None,
        out: String::new(),
    };
    while index_it.valid() {
        match BlockHandle::decode_exact(index_it.value()) {
            Some(handle) => walk.block(file, footer_at, handle),
            None => walk.damage.push((
                footer.index.offset,
                format!(
                    "index entry at byte {} holds a bad block handle",
                    index_it.entry_offset()
                ),
            )),
        }
        if let Err(e) = index_it.next() {
            walk.damage
                .push((footer.index.offset, format!("index block: {e}")));
            break;
        }
    }
    let props = opened.table.properties();
    if walk.damage.is_empty() && walk.blocks != props.num_data_blocks {
        walk.damage.push((
            footer.index.offset,
            format!(
                "the index names {} data blocks, the properties say {}",
                walk.blocks, props.num_data_blocks
            ),
        ));
    }
    if walk.damage.is_empty() && walk.entries != props.num_entries {
        walk.damage.push((
            0,
            format!(
                "the data blocks hold {} entries, the properties say {}",
                walk.entries, props.num_entries
            ),
        ));
    }
    Ok(walk)
}

fn damaged(path: &Path, offset: u64, message: impl Into<String>) -> crate::error::Error {
    DamagedSnafu {
        path,
        message: format!("at offset {offset}: {}", message.into()),
    }
    .build()
}

/// Prints keys of the table's kind.
#[derive(Clone, Copy)]
struct KeyPrinter {
    enc: Encoding,
    internal: bool,
}

impl KeyPrinter {
    /// Appends `key` to `out`; `Err` with a phrase when it is no valid
    /// internal key.
    fn write(&self, out: &mut String, key: &[u8]) -> Result<(), String> {
        if !self.internal {
            self.enc.write(out, key);
            return Ok(());
        }
        let parsed = ParsedInternalKey::parse(key).map_err(|e| format!("bad internal key: {e}"))?;
        self.enc.write(out, parsed.user_key);
        out.push_str(&format!("#{},{}", parsed.seqno, parsed.kind.name()));
        Ok(())
    }

    fn show(&self, key: &[u8]) -> String {
        let mut s = String::new();
        if let Err(m) = self.write(&mut s, key) {
            s = format!("<{m}: {}>", self.enc.show(key));
        }
        s
    }
}

fn print_properties(opened: &Opened, size: u64, keys: &KeyPrinter) {
    let t = &opened.table;
    let p = t.properties();
    println!("table {} ({size} bytes)", t.path().display());
    println!("properties:");
    println!("  format version:      {}", p.format_version);
    println!(
        "  comparator:          {}{}",
        p.comparator,
        if opened.known_order {
            ""
        } else {
            " (unknown here: keys are compared bytewise)"
        }
    );
    println!("  key schema:          {}", p.key_schema);
    println!("  compression:         {}", p.compression);
    println!(
        "  entries:             {} ({} deletions)",
        p.num_entries, p.num_deletions
    );
    println!("  range deletions:     {}", p.num_range_deletions);
    println!("  raw key bytes:       {}", p.raw_key_bytes);
    println!("  raw value bytes:     {}", p.raw_value_bytes);
    println!(
        "  data blocks:         {} ({} bytes)",
        p.num_data_blocks, p.data_size
    );
    println!("  index block:         {} bytes", p.index_size);
    println!("  filter block:        {} bytes", p.filter_size);
    println!("  smallest key:        {}", keys.show(&p.smallest_key));
    println!("  largest key:         {}", keys.show(&p.largest_key));
    println!("  sequence numbers:    {}..={}", p.min_seqno, p.max_seqno);
    println!("  creation time:       {} (Unix seconds)", p.creation_time);
    if let (Some(db), Some(session), Some(unique)) = (p.db_id, p.db_session_id, p.unique_id()) {
        println!("  written by:          database {db}, session {session}");
        println!("  original number:     {}", p.orig_file_number);
        println!("  unique id:           {unique}");
    }
    if !t.range_tombstones().is_empty() {
        println!("range tombstones:");
        for r in t.range_tombstones() {
            let end = if keys.internal {
                keys.enc.show(&r.end)
            } else {
                keys.show(&r.end)
            };
            println!("  [{}, {end})", keys.show(&r.start));
        }
    }
}

/// Reads and checks the block at `handle`, which must end before the
/// footer at `limit`; returns its decoded bytes and block type, or a phrase
/// saying what is wrong.
fn read_block(
    file: &dyn RandomAccessFile,
    limit: u64,
    handle: BlockHandle,
) -> Result<(Bytes, u8), String> {
    match handle.end_with_trailer() {
        Some(end) if end <= limit => {}
        _ => {
            return Err(format!(
                "block (offset {}, size {}) runs past the blocks, which end at {limit}",
                handle.offset, handle.size
            ));
        }
    }
    let len = handle.size as usize;
    let mut buf = vec![0u8; len + BLOCK_TRAILER_LEN];
    file.read_exact_at(handle.offset, &mut buf)
        .map_err(|e| format!("cannot read the block: {e}"))?;
    let mut trailer = [0u8; BLOCK_TRAILER_LEN];
    trailer.copy_from_slice(&buf[len..]);
    buf.truncate(len);
    match verify_trailer(&buf, &trailer)? {
        BLOCK_TYPE_RAW => Ok((Bytes::from(buf), BLOCK_TYPE_RAW)),
        BLOCK_TYPE_ZSTD => decompress(&buf).map(|b| (Bytes::from(b), BLOCK_TYPE_ZSTD)),
        other => Err(format!("unknown block type {other}")),
    }
}

/// A stored zstd block: `varint32 uncompressed length ++ zstd frame`.
fn decompress(stored: &[u8]) -> Result<Vec<u8>, String> {
    let mut d = Decoder::new(stored);
    let raw_len =
        d.varint32()
            .map_err(|e| format!("bad uncompressed length of a zstd block: {e}"))? as usize;
    if raw_len > MAX_COMPRESSED_BLOCK_LEN {
        return Err(format!(
            "zstd block claims {raw_len} uncompressed bytes, more than a writer compresses"
        ));
    }
    let out = zstd::bulk::decompress(d.remaining(), raw_len)
        .map_err(|e| format!("zstd decompression failed: {e}"))?;
    if out.len() != raw_len {
        return Err(format!(
            "zstd block decompressed to {} bytes, its header says {raw_len}",
            out.len()
        ));
    }
    Ok(out)
}

/// The walk over the data blocks.
struct Walk {
    keys: KeyPrinter,
    /// The comparator, when entry order can be checked.
    order: Option<Arc<dyn Comparator>>,
    show_blocks: bool,
    show_entries: bool,
    limit: u64,
    printed: u64,
    entries: u64,
    blocks: u64,
    damage: Vec<(u64, String)>,
    previous_key: Option<Vec<u8>>,
    out: String,
}

impl Walk {
    fn block(&mut self, file: &dyn RandomAccessFile, limit: u64, handle: BlockHandle) {
        self.blocks += 1;
        let n = self.blocks - 1;
        let (block, block_type) = match read_block(file, limit, handle)
            .and_then(|(b, ty)| Ok((Block::new(b).map_err(|e| e.to_string())?, ty)))
        {
            Ok(b) => b,
            Err(m) => {
                if self.show_blocks {
                    println!("  block {n} at offset {}: DAMAGED: {m}", handle.offset);
                }
                self.damage
                    .push((handle.offset, format!("data block {n}: {m}")));
                return;
            }
        };
        let raw_len = block.data().len();
        let mut it = BlockIter::new(block, Vec::new());
        let mut count = 0u64;
        let mut first = None;
        let mut entries = Vec::new();
        let mut result = it.first();
        while result.is_ok() && it.valid() {
            count += 1;
            let key = it.key();
            if first.is_none() {
                first = Some(key.to_vec());
            }
            if let (Some(cmp), Some(prev)) = (&self.order, &self.previous_key)
                && cmp.compare(prev, key).is_ge()
            {
                self.damage.push((
                    handle.offset,
                    format!(
                        "data block {n}: key {} does not sort after {}",
                        self.keys.show(key),
                        self.keys.show(prev)
                    ),
                ));
            }
            if self.keys.internal
                && let Err(m) = ParsedInternalKey::parse(key)
            {
                self.damage.push((
                    handle.offset,
                    format!("data block {n}: bad internal key: {m}"),
                ));
            }
            self.previous_key = Some(key.to_vec());
            if self.show_entries && self.printed < self.limit {
                self.printed += 1;
                self.out.clear();
                self.out.push_str("    ");
                self.out.push_str(&self.keys.show(key));
                self.out.push_str(" => ");
                self.keys.enc.write(&mut self.out, it.value());
                entries.push(self.out.clone());
            }
            result = it.next();
        }
        self.entries += count;
        if self.show_blocks {
            let kind = if block_type == BLOCK_TYPE_RAW {
                "raw".to_string()
            } else {
                format!("zstd, {raw_len} bytes decoded")
            };
            println!(
                "  block {n} at offset {}: {} bytes ({kind}), {count} entries, checksum ok, keys {} ..= {}",
                handle.offset,
                handle.size,
                first
                    .as_deref()
                    .map_or_else(String::new, |k| self.keys.show(k)),
                self.previous_key
                    .as_deref()
                    .filter(|_| count > 0)
                    .map_or_else(String::new, |k| self.keys.show(k)),
            );
        }
        for line in entries {
            println!("{line}");
        }
        if let Err(e) = result {
            if self.show_blocks {
                println!("  block {n} at offset {}: DAMAGED: {e}", handle.offset);
            }
            self.damage
                .push((handle.offset, format!("data block {n}: {e}")));
        }
    }
}
