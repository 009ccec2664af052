//! `--json`: machine-readable output, on every command that prints a
//! report (`bench`, `log bench`, `stats`, `check`, `live-files`, `backup
//! list`, `log check`, `log dump`).

use serde::Serialize;
use snafu::ResultExt as _;

use crate::error::{JsonSnafu, Result};

/// `--json`, defined once for every command that has it.
#[derive(Debug, clap::Args)]
pub(crate) struct JsonArgs {
    /// Print JSON on stdout instead of text: `bench` one object per
    /// benchmark, one per line; `live-files` and `stats --list-properties`
    /// an array; the others one object (`stats`: the engine figures `bench
    /// --json` reports under `engine`).
    #[arg(long)]
    pub json: bool,
}

/// Prints `value` as one line of JSON on stdout.
pub(crate) fn print(value: &impl Serialize) -> Result<()> {
    println!("{}", serde_json::to_string(value).context(JsonSnafu)?);
    Ok(())
}
