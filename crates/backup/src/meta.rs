//! A backup's metadata file, `meta/<id>`: text, one fact per line, ending
//! with the masked xxh3-64 of everything before it (as every lithify
//! checksum is stored), so a damaged metadata file is refused rather than
//! misread.
//!
//! ```text
//! lithify-backup 1
//! id 3
//! timestamp 1764590000
//! sequence 120345
//! current MANIFEST-000042
//! file table 000031.sst 67108863 8c1f0e4d2a9b7c55 shared/000031_8c1f0e4d2a9b7c55_67108863.sst
//! file manifest MANIFEST-000042 2817 1b2c3d4e5f607182 private/3/MANIFEST-000042
//! file wal 000043.log 120 0a0b0c0d0e0f1011 private/3/000043.log
//! checksum 5d41402abc4b2a76
//! ```
//!
//! Each `file` line: the kind, the name in the database directory, the
//! size, the xxh3-64 of the bytes, and where the bytes are, relative to the
//! backup directory.

use std::path::Path;

use lithify_engine::{LiveFileKind, SeqNo};

use crate::error::{CorruptSnafu, Result};

const MAGIC: &str = "lithify-backup 1";

/// One file of a backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupFile {
    /// What it is.
    pub kind: LiveFileKind,
    /// Its name in a restored database directory.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// The xxh3-64 of its bytes.
    pub checksum: u64,
    /// Where its bytes are, relative to the backup directory.
    pub stored: String,
}

/// A backup's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// The backup's id.
    pub id: u32,
    /// Seconds since the Unix epoch when it was made.
    pub timestamp: u64,
    /// It holds exactly the writes up to this sequence number.
    pub sequence: SeqNo,
    /// What `CURRENT` holds in a restored directory (the MANIFEST's name).
    pub current: String,
    /// Its files: tables, the MANIFEST, WALs.
    pub files: Vec<BackupFile>,
}

fn kind_name(kind: LiveFileKind) -> &'static str {
    match kind {
        LiveFileKind::Sst => "table",
        LiveFileKind::Blob => "blob",
        LiveFileKind::Manifest => "manifest",
        LiveFileKind::Wal => "wal",
    }
}

impl Meta {
    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut s = format!(
            "{MAGIC}\nid {}\ntimestamp {}\nsequence {}\ncurrent {}\n",
            self.id, self.timestamp, self.sequence, self.current
        );
        for f in &self.files {
            s.push_str(&format!(
                "file {} {} {} {:016x} {}\n",
                kind_name(f.kind),
                f.name,
                f.size,
                f.checksum,
                f.stored
            ));
        }
        let sum = lithify_base::checksum::masked_xxh3_64(&[s.as_bytes()]);
        s.push_str(&format!("checksum {sum:016x}\n"));
        s.into_bytes()
    }

    /// Parses a metadata file read from `path` (named in errors).
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Meta> {
        let bad = |message: String| {
            CorruptSnafu {
                path: path.to_path_buf(),
                message,
            }
            .build()
        };
        let text = std::str::from_utf8(bytes).map_err(|e| bad(format!("not text: {e}")))?;
        let cut_short = || bad("the last line is not its checksum (cut short?)".to_owned());
        let text = text.strip_suffix('\n').ok_or_else(cut_short)?;
        let body_end = text.rfind('\n').map(|i| i + 1).ok_or_else(cut_short)?;
        let (body, last) = text.split_at(body_end);
        let stored = last
            .strip_prefix("checksum ")
            .filter(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .ok_or_else(cut_short)?;
        let computed = lithify_base::checksum::masked_xxh3_64(&[body.as_bytes()]);
        if stored != computed {
            return Err(bad(format!(
                "checksum mismatch: stored {stored:016x}, computed {computed:016x}"
            )));
        }
        let mut lines = body.lines();
        if lines.next() != Some(MAGIC) {
            return Err(bad(format!("does not start with {MAGIC:?}")));
        }
        let mut field = |name: &str| -> Result<String> {
            lines
                .next()
                .and_then(|l| l.strip_prefix(name))
                .and_then(|l| l.strip_prefix(' '))
                .map(str::to_owned)
                .ok_or_else(|| bad(format!("missing the {name} line")))
        };
        let number = |name: &str, v: String| -> Result<u64> {
            v.parse()
                .map_err(|_| bad(format!("{name} {v:?} is not a number")))
        };
        let id = number("id", field("id")?)? as u32;
        let timestamp = number("timestamp", field("timestamp")?)?;
        let sequence = number("sequence", field("sequence")?)?;
        let current = field("current")?;
        let mut files = Vec::new();
        for line in lines {
            let parts: Vec<&str> = line.split(' ').collect();
            let [tag, kind, name, size, checksum, stored] = parts[..] else {
                return Err(bad(format!("not a file line: {line:?}")));
            };
            let kind = match kind {
                "table" => LiveFileKind::Sst,
                "blob" => LiveFileKind::Blob,
                "manifest" => LiveFileKind::Manifest,
                "wal" => LiveFileKind::Wal,
                other => return Err(bad(format!("unknown file kind {other:?}"))),
            };
            if tag != "file" || stored.contains("..") || stored.starts_with('/') {
                return Err(bad(format!("not a file line: {line:?}")));
            }
            files.push(BackupFile {
                kind,
                name: name.to_owned(),
                size: number("size", size.to_owned())?,
                checksum: u64::from_str_radix(checksum, 16)
                    .map_err(|_| bad(format!("checksum {checksum:?} is not hexadecimal")))?,
                stored: stored.to_owned(),
            });
        }
        Ok(Meta {
            id,
            timestamp,
            sequence,
            current,
            files,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Meta {
        Meta {
            id: 3,
            timestamp: 1_764_590_000,
            sequence: 120_345,
            current: "MANIFEST-000042".to_owned(),
            files: vec![
                BackupFile {
                    kind: LiveFileKind::Sst,
                    name: "000031.sst".to_owned(),
                    size: 4096,
                    checksum: 0x8c1f_0e4d_2a9b_7c55,
                    stored: "shared/000031_8c1f0e4d2a9b7c55_4096.sst".to_owned(),
                },
                BackupFile {
                    kind: LiveFileKind::Wal,
                    name: "000043.log".to_owned(),
                    size: 120,
                    checksum: 7,
                    stored: "private/3/000043.log".to_owned(),
                },
            ],
        }
    }

    #[test]
    fn round_trips() {
        let m = sample();
        assert_eq!(Meta::decode(&m.encode(), Path::new("meta/3")).unwrap(), m);
    }

    #[test]
    fn every_flipped_byte_and_every_cut_is_refused() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x01;
            assert!(Meta::decode(&b, Path::new("m")).is_err(), "flip at {i}");
            assert!(
                Meta::decode(&bytes[..i], Path::new("m")).is_err(),
                "cut at {i}"
            );
        }
    }

    #[test]
    fn paths_leaving_the_backup_directory_are_refused() {
        let mut m = sample();
        m.files[0].stored = "../../etc/passwd".to_owned();
        let err = Meta::decode(&m.encode(), Path::new("meta/3")).unwrap_err();
        assert!(err.to_string().contains("meta/3"), "{err}");
    }
}
