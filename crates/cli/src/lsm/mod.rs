//! `lithify lsm`: a picture of the LSM tree, now and over time
//! (`lithify_bench::lsm`), from a read-only open and the MANIFEST.

use std::path::PathBuf;

use clap::Args;
use lithify_bench::lsm::Picture;

use crate::db::{DbArgs, close};
use crate::error::Result;
use crate::text::HexArgs;

/// Arguments of `lsm`.
#[derive(Debug, Args)]
pub(crate) struct LsmArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub hex: HexArgs,
    /// Write one self-contained HTML page (inline SVG, no network) to this
    /// file: `lsm` draws the tree now and over time; `bench` throughput and
    /// amplification over the run (sampled every 250 ms), or with
    /// `--strategies-report` or `--workload` the strategies' results as bar
    /// charts.
    #[arg(long, value_name = "OUT.html")]
    pub html: PathBuf,
    /// Steps of history to draw (the newest ones) [range: 0..=1000000].
    #[arg(long, default_value_t = 200, value_parser = crate::numbers::int::<usize>(0, 1_000_000))]
    pub max_steps: usize,
}

/// Writes the picture of the database.
pub(crate) fn run(a: LsmArgs) -> Result<()> {
    crate::output::check(&a.html)?;
    let db = a.db.open_read_only()?;
    let picture = Picture::read(&db);
    close(db)?;
    let picture = picture?;
    let encoding = a.hex.encoding();
    let page = picture.page(&a.db.db, a.max_steps, &|key| encoding.show(key));
    crate::output::write(&a.html, page.as_bytes())?;
    let files: usize = picture.current.tables.iter().map(|t| t.files.len()).sum();
    let steps = picture.steps.len();
    let shown = steps.min(a.max_steps);
    println!(
        "wrote {}: {} table(s), {files} live file(s); {steps} step(s) of history from {}{}",
        a.html.display(),
        picture.current.tables.len(),
        picture.manifest,
        if shown < steps {
            format!(" (the newest {shown} drawn)")
        } else {
            String::new()
        }
    );
    Ok(())
}
