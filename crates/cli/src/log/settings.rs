//! Kafka settings given on the command line (`--config name=value`) or in
//! properties files (`name=value` lines, `#` comments): each name goes to
//! the log's [`LogConfig`] or to the [`CleanerConfig`].

use std::path::Path;

use lithify::log::CleanerConfig;
use lithify::log::LogConfig;
use lithify::vfs::FileSystem;
use snafu::ResultExt as _;

use crate::error::{CleanerSnafu, IoSnafu, LogSnafu, Result, UsageSnafu};

/// Splits `name=value`.
pub(crate) fn split(setting: &str) -> Result<(&str, &str)> {
    match setting.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => Ok((name.trim(), value.trim())),
        _ => UsageSnafu {
            message: format!("the setting {setting:?} is not of the form name=value"),
        }
        .fail(),
    }
}

/// A log's defaults for these tools: Kafka's, with `cleanup.policy=compact`.
pub(crate) fn default_log_config() -> LogConfig {
    let mut c = LogConfig::default();
    c.cleanup_policy.compact = true;
    c.cleanup_policy.delete = false;
    c
}

/// Applies one setting to whichever config knows its name.
pub(crate) fn apply(
    name: &str,
    value: &str,
    log: &mut LogConfig,
    cleaner: Option<&mut CleanerConfig>,
) -> Result<()> {
    if CleanerConfig::is_cleaner_setting(name) {
        match cleaner {
            Some(c) => {
                c.set(name, value).context(CleanerSnafu)?;
            }
            None => {
                return UsageSnafu {
                    message: format!("{name} is a cleaner setting; it has no effect here"),
                }
                .fail();
            }
        }
        return Ok(());
    }
    log.set(name, value).context(LogSnafu)?;
    Ok(())
}

/// The `name=value` lines of a properties file.
pub(crate) fn read_properties(fs: &dyn FileSystem, path: &Path) -> Result<Vec<(String, String)>> {
    let bytes = lithify::vfs::read_file(fs, path).context(IoSnafu {
        action: "read",
        path,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let Some((name, value)) = line.split_once('=').or_else(|| line.split_once(':')) else {
            return UsageSnafu {
                message: format!(
                    "line {} of {} is not of the form name=value: {line:?}",
                    i + 1,
                    path.display()
                ),
            }
            .fail();
        };
        out.push((name.trim().to_string(), value.trim().to_string()));
    }
    Ok(out)
}
