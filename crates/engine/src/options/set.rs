//! `set_options`: changing a table's options while it is open (RocksDB's
//! `SetOptions`, by RocksDB's option names and value spellings).
//!
//! What can change today is key-value separation: every [`BlobOptions`]
//! field. A change applies to the flushes and compactions that start
//! afterwards (new files); files already written keep what they were
//! written with, and a running job finishes with the settings it started
//! with. Like RocksDB's, a change is not written anywhere: the next open
//! takes the options it is given.

use crate::error::{InvalidArgumentSnafu, Result};
use crate::options::BlobOptions;

/// The option names [`apply`] knows, as RocksDB spells them.
pub(crate) const SETTABLE: &[&str] = &[
    "enable_blob_files",
    "min_blob_size",
    "blob_file_size",
    "blob_compression_type",
    "enable_blob_garbage_collection",
    "blob_garbage_collection_age_cutoff",
    "blob_garbage_collection_force_threshold",
    "blob_compaction_readahead_size",
];

/// `blob` with every change of `changes` made, checked as a whole: the
/// first unknown name or value that does not parse, or settings that do
/// not hold together, is the error, and nothing changes.
pub(crate) fn apply(mut blob: BlobOptions, changes: &[(&str, &str)]) -> Result<BlobOptions> {
    for &(name, value) in changes {
        let bad = |what: &str| {
            InvalidArgumentSnafu {
                message: format!("set_options: {name}={value:?} is not {what}"),
            }
            .build()
        };
        let boolean = || match value {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(bad("true or false")),
        };
        let bytes = || value.parse::<u64>().map_err(|_| bad("a number of bytes"));
        let ratio = || value.parse::<f64>().map_err(|_| bad("a number"));
        match name {
            "enable_blob_files" => blob.enable_blob_files = boolean()?,
            "min_blob_size" => blob.min_blob_size = bytes()?,
            "blob_file_size" => blob.blob_file_size = bytes()?,
            "blob_compression_type" => {
                blob.blob_compression = match value {
                    "kNoCompression" => lithify_blob::BlobCompression::None,
                    "kZSTD" => lithify_blob::BlobCompression::zstd(),
                    "kLZ4Compression" => lithify_blob::BlobCompression::Lz4,
                    other => lithify_blob::BlobCompression::from_name(other).ok_or_else(|| {
                        bad("a blob compression (none, zstd, lz4, or RocksDB's kNoCompression, kZSTD, kLZ4Compression)")
                    })?,
                }
            }
            "enable_blob_garbage_collection" => blob.enable_blob_garbage_collection = boolean()?,
            "blob_garbage_collection_age_cutoff" => {
                blob.blob_garbage_collection_age_cutoff = ratio()?;
            }
            "blob_garbage_collection_force_threshold" => {
                blob.blob_garbage_collection_force_threshold = ratio()?;
            }
            "blob_compaction_readahead_size" => blob.blob_compaction_readahead_size = bytes()?,
            _ => {
                return InvalidArgumentSnafu {
                    message: format!(
                        "set_options: {name:?} cannot be changed while the database is open (these can: {})",
                        SETTABLE.join(", ")
                    ),
                }
                .fail();
            }
        }
    }
    blob.validate()?;
    Ok(blob)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_settable_name_parses_and_bad_values_change_nothing() {
        let blob = apply(
            BlobOptions::default(),
            &[
                ("enable_blob_files", "true"),
                ("min_blob_size", "4096"),
                ("blob_file_size", "1048576"),
                ("blob_compression_type", "kZSTD"),
                ("enable_blob_garbage_collection", "1"),
                ("blob_garbage_collection_age_cutoff", "0.5"),
                ("blob_garbage_collection_force_threshold", "0.75"),
                ("blob_compaction_readahead_size", "0"),
            ],
        )
        .unwrap();
        let expected = BlobOptions::enabled(4096)
            .blob_file_size(1 << 20)
            .blob_compression(lithify_blob::BlobCompression::zstd())
            .enable_blob_garbage_collection(true)
            .blob_garbage_collection_age_cutoff(0.5)
            .blob_garbage_collection_force_threshold(0.75)
            .blob_compaction_readahead_size(0);
        assert_eq!(blob, expected);
        assert_eq!(
            apply(blob, &[("blob_compression_type", "lz4")])
                .unwrap()
                .blob_compression,
            lithify_blob::BlobCompression::Lz4
        );

        for (name, value, phrase) in [
            ("enable_blob_files", "yes", "true or false"),
            ("min_blob_size", "-1", "a number of bytes"),
            ("blob_compression_type", "snappy", "a blob compression"),
            (
                "blob_garbage_collection_age_cutoff",
                "1.5",
                "must be in [0, 1]",
            ),
            ("blob_file_size", "0", "must be above 0"),
            ("write_buffer_size", "1", "cannot be changed"),
        ] {
            let err = apply(blob, &[("min_blob_size", "1"), (name, value)]).unwrap_err();
            assert!(err.to_string().contains(phrase), "{name}={value}: {err}");
        }
    }
}
