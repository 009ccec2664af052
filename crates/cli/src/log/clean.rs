//! `lithify log clean DATA_DIR`: one cleaning round for each eligible log
//! of a data directory, dirtiest first, printing each round's report.
//!
//! It holds the data directory's `.lock` for the whole run and each log's
//! `.lock` while that log is open: a second `log clean` of the directory
//! is refused, and so is `log produce` to one of its logs (a log another
//! process holds is reported as not opened, and the run fails).
//!
//! Settings, later ones winning: Kafka's defaults (with
//! `cleanup.policy=compact`); every `--config name=value` (a log setting
//! such as `segment.bytes` or `delete.retention.ms`, or a cleaner setting
//! such as `log.cleaner.dedupe.buffer.size`); for one log, the file
//! `DATA_DIR/<topic>-<partition>.properties` if present, then every
//! `--log-config <topic>-<partition>:name=value`. `--now` fixes the clock
//! (selection, delete horizons, producer expiry), so runs are
//! reproducible.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use lithify::log::TopicPartition;
use lithify::log::{CleanerConfig, CleanerEvent, LogCleaner};
use lithify::log::{LogConfig, LogDir, OpenOptions};
use lithify::vfs::{FaultFs, FileSystem, OsFs};
use lithify::{Clock, ManualClock, SystemClock};
use snafu::ResultExt as _;

use crate::error::{CleanerSnafu, FailuresSnafu, LogSnafu, Result, UsageSnafu};
use crate::log::settings::{apply, default_log_config, read_properties, split};
use crate::log::warn_recovery;
use crate::numbers;

/// Arguments of `log clean`.
#[derive(Debug, Args)]
pub(crate) struct CleanArgs {
    /// The data directory holding `<topic>-<partition>` log directories and
    /// `cleaner-offset-checkpoint`.
    pub data_dir: PathBuf,
    /// The current time in ms since the epoch (default: the system clock):
    /// `log produce` stamps its first record with it, `log clean` judges
    /// retention by it [range: 0..=253402300799999, the end of year 9999]
    #[arg(long, value_parser = numbers::int::<i64>(0, numbers::MAX_EPOCH_MS))]
    pub now: Option<i64>,
    /// A setting by its Kafka name, `NAME=VALUE` (repeatable): a log
    /// setting (`segment.bytes=1048576`), or a cleaner setting where a
    /// cleaner runs (`log.cleaner.threads=2`); `log clean` applies it to
    /// every log, `stress log` over its own defaults (small segments, a
    /// busy cleaner).
    #[arg(long = "config", value_name = "NAME=VALUE")]
    pub config: Vec<String>,
    /// A setting for one log (repeatable), e.g.
    /// `--log-config orders-0:min.cleanable.dirty.ratio=0.1`.
    #[arg(long = "log-config", value_name = "TOPIC-PARTITION:NAME=VALUE")]
    pub log_config: Vec<String>,
    /// Offset map memory (`log.cleaner.dedupe.buffer.size`), in bytes; each
    /// cleaner thread's map gets its share, at most 2 GiB as in Kafka
    /// [range: 1..=1099511627776].
    #[arg(long, value_parser = numbers::int::<u64>(1, 1 << 40))]
    pub map_memory: Option<u64>,
    /// Offset map load factor (`log.cleaner.io.buffer.load.factor`)
    /// [range: above 0, at most 1].
    #[arg(long, value_parser = numbers::positive("the load factor", 1.0))]
    pub load_factor: Option<f64>,
}

/// Runs `log clean`.
pub(crate) fn run(a: CleanArgs) -> Result<()> {
    // Counts the bytes the cleaner writes, for the progress bar (no
    // faults are ever injected).
    let counted = Arc::new(FaultFs::new(OsFs));
    let fs: Arc<dyn FileSystem> = counted.clone();
    if !fs.is_dir(&a.data_dir) {
        return UsageSnafu {
            message: format!("{} is not a directory", a.data_dir.display()),
        }
        .fail();
    }
    let mut base = default_log_config();
    let mut cleaner_config = CleanerConfig::default();
    for s in &a.config {
        let (name, value) = split(s)?;
        apply(name, value, &mut base, Some(&mut cleaner_config))?;
    }
    if let Some(m) = a.map_memory {
        cleaner_config
            .set("log.cleaner.dedupe.buffer.size", &m.to_string())
            .context(CleanerSnafu)?;
    }
    if let Some(lf) = a.load_factor {
        cleaner_config
            .set("log.cleaner.io.buffer.load.factor", &lf.to_string())
            .context(CleanerSnafu)?;
    }
    let mut per_log: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for s in &a.log_config {
        let Some((tp, setting)) = s.split_once(':') else {
            return UsageSnafu {
                message: format!(
                    "--log-config {s:?} is not of the form <topic>-<partition>:name=value"
                ),
            }
            .fail();
        };
        let (name, value) = split(setting)?;
        per_log
            .entry(tp.to_string())
            .or_default()
            .push((name.to_string(), value.to_string()));
    }

    let clock: Arc<dyn Clock> = match a.now {
        Some(now) => Arc::new(ManualClock::at_ms(now)),
        None => Arc::new(SystemClock),
    };
    let svc = LogCleaner::new(cleaner_config, fs.clone(), clock.clone());
    // One cleaner per data directory: a second `log clean` is refused here,
    // before it opens (and recovers) a single log. Each log's own `.lock`
    // then keeps `log produce` out of the logs being cleaned.
    svc.manager()
        .lock_data_dir(&a.data_dir)
        .context(CleanerSnafu)?;
    let options = OpenOptions::default()
        .recovery_point(None)
        .clock(clock.clone());
    let logs = LogDir::open(
        fs.clone(),
        &a.data_dir,
        |tp| log_config(&*fs, &a.data_dir, tp, &base, &per_log),
        options,
    )
    .context(LogSnafu)?;
    for f in logs.failures() {
        eprintln!("error: {f}");
    }
    let open_failures = logs.failures().len();
    for (_, log) in logs.logs() {
        warn_recovery(&log.lock());
        svc.add_log(log.clone()).context(CleanerSnafu)?;
    }
    let opened = logs.logs();
    if opened.is_empty() && open_failures == 0 {
        return UsageSnafu {
            message: format!(
                "{} holds no <topic>-<partition> log directories",
                a.data_dir.display()
            ),
        }
        .fail();
    }
    let before = counted.counts().bytes_written;
    let events = crate::progress::watch(
        &format!("cleaning {} logs", opened.len()),
        || (counted.counts().bytes_written.saturating_sub(before), None),
        || svc.clean_eligible_once(),
    )
    .context(CleanerSnafu)?;
    for e in &events {
        match e {
            // Failures and problems are errors: one sentence each on
            // stderr, naming the file and byte offset of any damage.
            CleanerEvent::Problem(p) => eprintln!("error: {p}"),
            _ if e.is_failure() => eprint!("error: {e}"),
            _ => print!("{e}"),
        }
    }

    // One outcome per log, so the counts add up to the logs found.
    let uncleanable = svc.manager().uncleanable_partitions();
    let offline = svc.manager().offline_dirs();
    let (mut cleaned, mut failed, mut not_eligible) = (0, open_failures, 0);
    for (tp, _) in opened {
        let is = |f: &dyn Fn(&CleanerEvent) -> bool| events.iter().any(f);
        if is(&|e| matches!(e, CleanerEvent::Cleaned(r) if &r.topic_partition == tp)) {
            cleaned += 1;
        } else if uncleanable.contains_key(tp)
            || offline.contains_key(&a.data_dir)
            || is(&|e| {
                matches!(e, CleanerEvent::Failed { topic_partition, .. }
                    | CleanerEvent::Aborted { topic_partition } if topic_partition == tp)
            })
        {
            failed += 1;
        } else {
            not_eligible += 1;
        }
    }
    let total = opened.len() + open_failures;
    println!("{cleaned} of {total} logs cleaned, {not_eligible} not eligible, {failed} failed");

    // Close every log as Kafka does at a clean shutdown: synced, the
    // recovery point checkpointed, the active segment's indexes trimmed.
    drop(svc);
    for (tp, e) in logs.close() {
        eprintln!("error: log {tp} could not be closed: {e}");
        failed += 1;
    }
    if failed > 0 {
        return FailuresSnafu {
            message: format!(
                "{failed} of the logs in {} could not be cleaned (see above)",
                a.data_dir.display()
            ),
        }
        .fail();
    }
    Ok(())
}

/// One log's settings: the base, its properties file, its `--log-config`s.
fn log_config(
    fs: &dyn FileSystem,
    data_dir: &std::path::Path,
    tp: &TopicPartition,
    base: &LogConfig,
    per_log: &BTreeMap<String, Vec<(String, String)>>,
) -> Result<LogConfig> {
    let mut config = base.clone();
    let props = data_dir.join(format!("{tp}.properties"));
    if fs.exists(&props) {
        for (name, value) in read_properties(fs, &props)? {
            apply(&name, &value, &mut config, None).map_err(|e| {
                UsageSnafu {
                    message: format!("in {}: {e}", props.display()),
                }
                .build()
            })?;
        }
    }
    for (name, value) in per_log.get(&tp.to_string()).into_iter().flatten() {
        apply(name, value, &mut config, None)?;
    }
    config.validate().context(LogSnafu)?;
    Ok(config)
}
