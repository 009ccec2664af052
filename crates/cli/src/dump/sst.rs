//! `dump-sst FILE`: a table's properties, its blocks and entries, and a
//! verification of every block's checksum, as RocksDB's `sst_dump`.
//!
//! The table is opened by the names it records
//! (`lithify::inspect::sst::open_recorded`) and walked
//! (`SstReader::walk`): every data block the index names is read, its
//! checksum verified, decompressed and decoded. A damaged block is
//! reported with its offset and the walk goes on; any damage fails the
//! command at the end, naming the file. This command only prints.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use lithify::compaction::ParsedInternalKey;
use lithify::inspect::sst::{DataBlockInfo, RecordedSst, SstVisitor, open_recorded};
use lithify::vfs::{FileSystem as _, OsFs, RandomAccessFile};
use snafu::ResultExt as _;

use crate::error::{DamagedSnafu, IoSnafu, Result, TableSnafu, UsageSnafu};
use crate::text::{Encoding, HexArgs};

/// Arguments of `dump-sst`.
#[derive(Debug, Args)]
pub(crate) struct DumpSstArgs {
    /// The SST file (`NNNNNN.sst`).
    pub file: PathBuf,
    /// List every data block: offset, size, type, entries, key range.
    #[arg(long)]
    pub blocks: bool,
    /// Print every entry: an SST's keys and values (internal keys as
    /// `key#seq,KIND`), a WAL's writes record by record, a blob file's
    /// records (offset, key, size; `--values` adds each value).
    #[arg(long)]
    pub entries: bool,
    /// Print at most this many entries [range: any u64].
    #[arg(long, value_parser = crate::numbers::int::<u64>(0, u64::MAX))]
    pub limit: Option<u64>,
    #[command(flatten)]
    pub hex: HexArgs,
}

/// Opens the table at `path` by the names it records.
fn open(file: Arc<dyn RandomAccessFile>, path: &Path, size: u64) -> Result<RecordedSst> {
    match open_recorded(file, path, size) {
        Err(lithify::error::SstError::Incompatible {
            what: "key schema",
            found,
            ..
        }) => UsageSnafu {
            message: format!(
                "{} uses key schema {found:?}, which this tool cannot read",
                path.display()
            ),
        }
        .fail(),
        other => other.context(TableSnafu),
    }
}

/// Runs `dump-sst`.
pub(crate) fn run(a: DumpSstArgs) -> Result<()> {
    let enc = a.hex.encoding();
    let path = a.file.as_path();
    super::refuse_other_format(path, lithify::FileFormat::Table, false)?;
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
        internal: opened.internal_keys,
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
    let mut printer = Printer {
        keys,
        show,
        printed: 0,
        entries: Vec::new(),
    };
    let walk = opened.walk(&mut printer);
    for d in &walk.damage {
        println!("damage at offset {}: {}", d.offset, d.message);
    }
    println!(
        "checksums: {} data blocks read, {} entries; {}",
        walk.data_blocks,
        walk.entries,
        if walk.damage.is_empty() {
            "every block verified".to_string()
        } else {
            format!("{} problems", walk.damage.len())
        }
    );
    match walk.damage.first() {
        None => Ok(()),
        Some(first) => DamagedSnafu {
            path,
            message: format!(
                "{} problem(s); the first at offset {}: {}",
                walk.damage.len(),
                first.offset,
                first.message
            ),
        }
        .fail(),
    }
}

/// The size the MANIFEST of the table's directory records for it, when
/// the table sits in a database directory whose MANIFEST lists it.
fn recorded_size(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let Some(lithify::files::FileKind::Sst(number)) = lithify::files::parse_file_name(name) else {
        return None;
    };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty())?;
    lithify::inspect::manifest::recorded_sst_size(Arc::new(OsFs), dir, number)
        .ok()
        .flatten()
}

/// What a walk prints.
#[derive(Clone, Copy)]
struct Show {
    blocks: bool,
    entries: bool,
    limit: u64,
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

fn print_properties(opened: &RecordedSst, size: u64, keys: &KeyPrinter) {
    let t = opened;
    let p = t.properties();
    println!("SST {} ({size} bytes)", t.path().display());
    println!("properties:");
    println!("  format version:      {}", p.format_version);
    println!(
        "  comparator:          {}{}",
        p.comparator,
        if opened.order_known {
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

/// Prints data blocks and entries as the walk reaches them.
struct Printer {
    keys: KeyPrinter,
    show: Show,
    printed: u64,
    /// The entries of the block being walked, printed after its line.
    entries: Vec<String>,
}

impl SstVisitor for Printer {
    fn entry(&mut self, key: &[u8], value: &[u8]) {
        if self.show.entries && self.printed < self.show.limit {
            self.printed += 1;
            let mut line = String::from("    ");
            line.push_str(&self.keys.show(key));
            line.push_str(" => ");
            let blob_index = self.keys.internal
                && ParsedInternalKey::parse(key)
                    .is_ok_and(|k| k.kind == lithify::ValueKind::BlobIndex);
            match blob_index.then(|| lithify::inspect::blob::BlobIndex::decode(value)) {
                // A separated value: where it is (`dump-blob` prints it).
                Some(Ok(index)) => line.push_str(&index.to_string()),
                Some(Err(e)) => line.push_str(&format!("<bad blob index: {e}>")),
                None => self.keys.enc.write(&mut line, value),
            }
            self.entries.push(line);
        }
    }

    fn block(&mut self, b: &DataBlockInfo) {
        let n = b.number;
        if b.unreadable {
            if self.show.blocks {
                let m = b.damage.as_deref().unwrap_or_default();
                println!("  block {n} at offset {}: DAMAGED: {m}", b.offset);
            }
            return;
        }
        if self.show.blocks {
            let kind = match b.zstd_decoded {
                None => "raw".to_string(),
                Some(len) => format!("zstd, {len} bytes decoded"),
            };
            let key =
                |k: &Option<Vec<u8>>| k.as_deref().map_or_else(String::new, |k| self.keys.show(k));
            println!(
                "  block {n} at offset {}: {} bytes ({kind}), {} entries, checksum ok, keys {} ..= {}",
                b.offset,
                b.size,
                b.entries,
                key(&b.first_key),
                key(&b.last_key),
            );
        }
        for line in self.entries.drain(..) {
            println!("{line}");
        }
        if let Some(e) = &b.damage
            && self.show.blocks
        {
            println!("  block {n} at offset {}: DAMAGED: {e}", b.offset);
        }
    }
}
