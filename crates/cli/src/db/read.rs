//! `get` and `scan`.

use std::io::Write as _;

use clap::Args;
use snafu::ResultExt as _;

use crate::db::{DbArgs, check_range, close};
use crate::error::{DbSnafu, IoSnafu, NotFoundSnafu, Result};

/// Arguments of `get`.
#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The key.
    pub key: String,
}

/// Prints the value of a key; a missing key is an error (exit code 1).
pub(crate) fn get(a: GetArgs) -> Result<()> {
    let enc = a.db.encoding();
    let key = enc.parse("key", &a.key)?;
    let db = a.db.open_read_only()?;
    let value = db.get(&key).context(DbSnafu)?;
    close(db)?;
    match value {
        Some(v) => {
            println!("{}", enc.show(&v));
            Ok(())
        }
        None => NotFoundSnafu {
            key: a.key,
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
    /// First key (inclusive; default: the smallest).
    #[arg(long)]
    pub from: Option<String>,
    /// Last key (exclusive; default: past the largest).
    #[arg(long)]
    pub to: Option<String>,
    /// Print at most this many entries [range: any u64].
    #[arg(long, value_parser = crate::numbers::int::<u64>(0, u64::MAX))]
    pub limit: Option<u64>,
    /// Print only the keys.
    #[arg(long)]
    pub keys_only: bool,
}

/// Prints `key => value` for every live key in `[from, to)`, in order.
pub(crate) fn scan(a: ScanArgs) -> Result<()> {
    let enc = a.db.encoding();
    let from = a
        .from
        .as_deref()
        .map(|k| enc.parse("--from", k))
        .transpose()?;
    let to = a.to.as_deref().map(|k| enc.parse("--to", k)).transpose()?;
    check_range(from.as_deref(), to.as_deref(), "--to")?;
    let db = a.db.open_read_only()?;
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
    for item in db.range::<Vec<u8>>(range).take(limit) {
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
