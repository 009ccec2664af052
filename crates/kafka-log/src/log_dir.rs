//! A data directory of logs (one entry of Kafka's `log.dirs`), opened and
//! closed as Kafka's `LogManager` does: every `<topic>-<partition>`
//! subdirectory is a log; one being deleted (`-delete`) is not.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_base::sync::Mutex;
use lithify_vfs::FileSystem;
use snafu::ResultExt as _;

use crate::TopicPartition;
use crate::config::LogConfig;
use crate::error::{Error, IoSnafu, Result};
use crate::log::{Log, OpenOptions};

/// A log shared between its owner (who appends) and others, such as the
/// cleaner.
pub type SharedLog = Arc<Mutex<Log>>;

/// Wraps `log` for sharing.
pub fn shared_log(log: Log) -> SharedLog {
    Arc::new(Mutex::new(log))
}

/// The log directories of the data directory `data_dir`, in name order:
/// each subdirectory named `<topic>-<partition>`, except those Kafka is
/// deleting (`<topic>-<partition>.<id>-delete`).
///
/// ```
/// use std::path::Path;
/// use lithify_kafka_log::partition_dirs;
/// use lithify_vfs::{FileSystem, MemFs};
/// let fs = MemFs::new();
/// for d in ["/data/orders-1", "/data/orders-0", "/data/x.abc-delete", "/data/notes"] {
///     fs.create_dir_all(Path::new(d)).unwrap();
/// }
/// let dirs = partition_dirs(&fs, Path::new("/data")).unwrap();
/// let names: Vec<String> = dirs.iter().map(|(tp, _)| tp.to_string()).collect();
/// assert_eq!(names, ["orders-0", "orders-1"]);
/// ```
pub fn partition_dirs(
    fs: &dyn FileSystem,
    data_dir: &Path,
) -> Result<Vec<(TopicPartition, PathBuf)>> {
    let mut names = fs.list_dir(data_dir).context(IoSnafu {
        action: "list",
        path: data_dir,
    })?;
    names.sort();
    Ok(names
        .into_iter()
        .filter(|name| !name.ends_with("-delete"))
        .filter_map(|name| {
            let dir = data_dir.join(&name);
            let tp = TopicPartition::from_dir_name(&name)?;
            fs.is_dir(&dir).then_some((tp, dir))
        })
        .collect())
}

/// A log of a data directory that could not be opened.
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenFailure {
    /// Its settings are invalid.
    Config {
        /// The log.
        topic_partition: TopicPartition,
        /// What is wrong with them.
        message: String,
    },
    /// Opening (recovering) it failed.
    Open {
        /// The log.
        topic_partition: TopicPartition,
        /// Why.
        error: Error,
    },
}

impl fmt::Display for OpenFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenFailure::Config { message, .. } => f.write_str(message),
            OpenFailure::Open {
                topic_partition,
                error,
            } => write!(f, "log {topic_partition} could not be opened: {error}"),
        }
    }
}

/// The logs of one data directory, open: what Kafka's `LogManager` loads
/// at startup and closes at a clean shutdown.
///
/// ```
/// use std::path::Path;
/// use std::sync::Arc;
/// use lithify_kafka_log::{Log, LogConfig, LogDir, OpenOptions, SimpleRecord};
/// use lithify_vfs::MemFs;
///
/// let fs = Arc::new(MemFs::new());
/// let mut log = Log::open(fs.clone(), Path::new("/data/orders-0"), LogConfig::default()).unwrap();
/// log.append(&[SimpleRecord::new(1, "k", "v")]).unwrap();
/// log.close().unwrap();
///
/// let dir = LogDir::open(fs, Path::new("/data"), |_| Ok::<_, String>(LogConfig::default()), OpenOptions::default()).unwrap();
/// assert_eq!(dir.logs().len(), 1);
/// assert_eq!(dir.logs()[0].1.lock().log_end_offset(), 1);
/// assert!(dir.close().is_empty());
/// ```
#[derive(Debug)]
pub struct LogDir {
    path: PathBuf,
    logs: Vec<(TopicPartition, SharedLog)>,
    failures: Vec<OpenFailure>,
}

impl LogDir {
    /// Opens every log of the data directory `path` ([`partition_dirs`]),
    /// each with the settings `config_for` gives it and `options`. A log
    /// that cannot be opened is kept in [`failures`](Self::failures) and
    /// the others open; only a directory that cannot be listed fails.
    pub fn open<E: fmt::Display>(
        fs: Arc<dyn FileSystem>,
        path: &Path,
        mut config_for: impl FnMut(&TopicPartition) -> std::result::Result<LogConfig, E>,
        options: OpenOptions,
    ) -> Result<LogDir> {
        let mut dir = LogDir {
            path: path.to_path_buf(),
            logs: Vec::new(),
            failures: Vec::new(),
        };
        for (tp, log_dir) in partition_dirs(&*fs, path)? {
            let config = match config_for(&tp) {
                Ok(c) => c,
                Err(e) => {
                    dir.failures.push(OpenFailure::Config {
                        topic_partition: tp,
                        message: e.to_string(),
                    });
                    continue;
                }
            };
            match Log::open_with(fs.clone(), &log_dir, config, options.clone()) {
                Ok(log) => dir.logs.push((tp, shared_log(log))),
                Err(error) => dir.failures.push(OpenFailure::Open {
                    topic_partition: tp,
                    error,
                }),
            }
        }
        Ok(dir)
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The logs that opened, in name order.
    pub fn logs(&self) -> &[(TopicPartition, SharedLog)] {
        &self.logs
    }

    /// The logs that did not open.
    pub fn failures(&self) -> &[OpenFailure] {
        &self.failures
    }

    /// Closes every log as Kafka does at a clean shutdown
    /// ([`Log::close`]); a log still shared elsewhere is flushed instead
    /// (made durable, its recovery point checkpointed). Returns the logs
    /// that failed, with why.
    pub fn close(self) -> Vec<(TopicPartition, Error)> {
        let mut failed = Vec::new();
        for (tp, log) in self.logs {
            let closed = match Arc::try_unwrap(log) {
                Ok(log) => log.into_inner().close(),
                Err(shared) => shared.lock().flush(),
            };
            if let Err(e) = closed {
                failed.push((tp, e));
            }
        }
        failed
    }
}
