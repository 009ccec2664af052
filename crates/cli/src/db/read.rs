//! `get` and `scan`.

use std::io::Write as _;

use clap::Args;
use snafu::ResultExt as _;

use crate::db::{DbArgs, RangeArgs, TableArgs, close};
use crate::error::{DbSnafu, IoSnafu, NotFoundSnafu, Result};
use crate::text::HexArgs;

/// Arguments of `get`.
#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub hex: HexArgs,
    #[command(flatten)]
    pub table: TableArgs,
    /// The key.
    pub key: String,
}

/// Prints the value of a key; a missing key is exit status 1
/// (`exit::NOT_FOUND`).
pub(crate) fn get(a: GetArgs) -> Result<()> {
    let enc = a.hex.encoding();
    let key = enc.parse("key", &a.key)?;
    let db = a.db.open_read_only()?;
    let value = a.table.open(&db, &a.db.db)?.get(&key).context(DbSnafu)?;
    close(db)?;
    match value {
        Some(v) => {
            println!("{}", enc.show(&v));
            Ok(())
        }
        None => NotFoundSnafu {
            key: a.key,
            table: a.table.name().to_owned(),
            dir: a.db.db,
        }
        .fail(),
    }
}

/// Arguments of `scan`.
#[derive(Debug, Args)]
pub(crate) struct ScanArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub hex: HexArgs,
    #[command(flatten)]
    pub table: TableArgs,
    #[command(flatten)]
    pub range: RangeArgs,
    /// Print at most this many entries [range: any u64].
    #[arg(long, value_parser = crate::numbers::int::<u64>(0, u64::MAX))]
    pub limit: Option<u64>,
    /// Print only the keys.
    #[arg(long)]
    pub keys_only: bool,
}

/// Prints `key => value` for every live key in `[from, to)`, in order.
pub(crate) fn scan(a: ScanArgs) -> Result<()> {
    let enc = a.hex.encoding();
    let (from, to) = a.range.parse(enc)?;
    let db = a.db.open_read_only()?;
    let table = a.table.open(&db, &a.db.db)?;
    let range = (
        from.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Included),
        to.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded),
    );
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut line = String::new();
    let limit = a
        .limit
        .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    for item in table.range::<Vec<u8>>(range).context(DbSnafu)?.take(limit) {
        let (key, value) = item.context(DbSnafu)?;
        line.clear();
        enc.write(&mut line, &key);
        if !a.keys_only {
            line.push_str(" => ");
            enc.write(&mut line, &value);
        }
        line.push('\n');
        if let Err(e) = out.write_all(line.as_bytes()) {
            // A closed pipe (`| head`) ends the scan quietly.
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                break;
            }
            return Err(e).context(IoSnafu {
                action: "write to",
                path: "standard output",
            });
        }
    }
    match out.flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            return Err(e).context(IoSnafu {
                action: "write to",
                path: "standard output",
            });
        }
        _ => {}
    }
    drop(out);
    close(db)
}
