//! `dump-blob FILE`: a blob file's header, its records and footer, and a
//! verification of every record, as RocksDB's `blob_dump` tool.
//!
//! The file is read through `lithify::inspect::blob::BlobFileReader`:
//! `records` walks it front to back for `--entries`, and `verify` checks
//! every record's header and value checksums, decompresses each value,
//! and checks the count and value bytes against the footer. The first
//! damage fails the command, naming the file and the record's offset.
//! This command only prints.

use std::path::PathBuf;

use clap::Args;
use lithify::inspect::blob::BlobFileReader;
use lithify::vfs::{FileSystem as _, OsFs};
use snafu::ResultExt as _;

use crate::error::{DamagedSnafu, IoSnafu, Result};
use crate::text::HexArgs;

/// Arguments of `dump-blob`.
#[derive(Debug, Args)]
pub(crate) struct DumpBlobArgs {
    /// The blob file (`NNNNNN.blob`).
    pub file: PathBuf,
    /// Print every entry: an SST's keys and values (internal keys as
    /// `key#seq,KIND`), a WAL's writes record by record, a blob file's
    /// records (offset, key, size; `--values` adds each value).
    #[arg(long)]
    pub entries: bool,
    /// With `--entries`, print each value too (decompressed).
    #[arg(long)]
    pub values: bool,
    /// Print at most this many entries [range: any u64].
    #[arg(long, value_parser = crate::numbers::int::<u64>(0, u64::MAX))]
    pub limit: Option<u64>,
    #[command(flatten)]
    pub hex: HexArgs,
}

/// Runs `dump-blob`.
pub(crate) fn run(a: DumpBlobArgs) -> Result<()> {
    let enc = a.hex.encoding();
    let path = a.file.as_path();
    super::refuse_other_format(path, lithify::FileFormat::Blob, false)?;
    let file = OsFs.open(path).context(IoSnafu {
        action: "open",
        path,
    })?;
    let damaged = |e: lithify::error::BlobError| {
        DamagedSnafu {
            path,
            message: e.to_string(),
        }
        .build()
    };
    let reader = BlobFileReader::open(file, path).map_err(damaged)?;
    let h = reader.header();
    println!(
        "blob file {} ({} bytes)",
        path.display(),
        reader.file_size()
    );
    println!("header:");
    println!("  file number:         {}", h.file_number);
    println!("  table id:            {}", h.table_id);
    println!("  compression:         {}", h.compression.name());
    println!(
        "  written by:          database {}, session {}",
        h.db_id, h.session_id
    );
    println!("  unique id:           {}", h.unique_id());
    let f = reader.footer();
    println!(
        "footer:                {} values, {} stored value bytes",
        f.blob_count, f.blob_bytes
    );
    if a.entries {
        println!("records:");
        let limit = a.limit.unwrap_or(u64::MAX);
        for record in reader
            .records()
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
        {
            let record = record.map_err(damaged)?;
            let mut line = format!("  {}: ", record.index);
            enc.write(&mut line, &record.key);
            if a.values {
                line.push_str(" => ");
                enc.write(&mut line, &record.value);
            } else {
                line.push_str(&format!(" ({} bytes)", record.value.len()));
            }
            println!("{line}");
        }
    }
    // Every record read and checked, the count and bytes against the
    // footer, and the whole file's checksum.
    let summary = reader.verify().map_err(damaged)?;
    println!(
        "checksums: {} records read, every record verified; file checksum {:016x}",
        summary.blob_count, summary.file_checksum
    );
    Ok(())
}
