//! The log stress run's expected state: per partition, the end of the
//! acknowledged appends and of the append in flight, and per key its latest
//! acknowledged record and the record in flight.
//!
//! A partition has one producer, so the order of its appends is the order
//! of their offsets, and an append is one batch: after a crash the log ends
//! at some offset `R` between the acknowledged end and the end of the
//! append in flight, and every record below `R` was appended. A key's
//! latest record is then known exactly: the record in flight if the append
//! made it (`R` is its end), else the acknowledged one. In a transactional
//! run (read with `read_committed`) the records of a transaction are in
//! flight with its COMMIT marker, the append that decides them. The check ([`check_partition`])
//! is exact: a live key's latest record is there with its value and offset;
//! a key whose latest record is a tombstone keeps the tombstone or, once
//! the cleaner removed it past the delete horizon, nothing — never an older
//! value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify::vfs::{FileSystem, WritableFile, write_file_atomic};
use snafu::ResultExt as _;

use crate::error::{IoSnafu, Result, UsageSnafu};
pub(crate) use crate::log_state::{Latest, LogKeyState, PartitionState};
use crate::state_file::{
    self, Header, SLOT_PAYLOAD, StateKind, encode_file, encode_slot, slot_offset,
};
use lithify_base::rand::SplitMix64 as Rng;

/// The expected state of every partition of a log stress run.
#[derive(Debug)]
pub(crate) struct LogExpected {
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
    /// Keys per partition.
    pub keys: u64,
    /// The largest value size.
    pub max_value_size: u32,
    /// Per partition.
    pub partitions: Vec<PartitionState>,
}

impl LogExpected {
    /// A new file for `partitions` empty logs of `keys` keys each.
    pub(crate) fn create(
        fs: Arc<dyn FileSystem>,
        path: &Path,
        partitions: usize,
        keys: u64,
        max_value_size: u32,
    ) -> Result<LogExpected> {
        let slots = (partitions as u64).saturating_mul(keys.saturating_add(1));
        if partitions == 0 || keys == 0 || slots > crate::state_file::MAX_SLOTS {
            return UsageSnafu {
                message: format!(
                    "--partitions and --keys must be at least 1 and {partitions} x {keys} keys too \
                     many"
                ),
            }
            .fail();
        }
        crate::values::check_max_value_size(max_value_size)?;
        let state = LogExpected {
            fs,
            path: path.to_path_buf(),
            keys,
            max_value_size,
            partitions: (0..partitions)
                .map(|_| PartitionState {
                    acked_end: 0,
                    pending_end: 0,
                    keys: vec![LogKeyState::default(); keys as usize],
                })
                .collect(),
        };
        state.save()?;
        Ok(state)
    }

    /// Reads the file at `path`.
    pub(crate) fn load(fs: Arc<dyn FileSystem>, path: &Path) -> Result<LogExpected> {
        let (header, payloads) = state_file::read_file(&*fs, path)?;
        let damaged = |offset: u64, message: String| state_file::damaged(path, offset, message);
        let per = header.keys.saturating_add(1);
        if header.kind != StateKind::Log || header.keys == 0 || header.slots % per != 0 {
            return Err(damaged(
                12,
                format!(
                    "it describes a {:?} run of {} keys in {} slots, not a log run",
                    header.kind, header.keys, header.slots
                ),
            ));
        }
        let mut partitions = Vec::new();
        for (p, chunk) in payloads.chunks(per as usize).enumerate() {
            let first = p as u64 * per;
            let mut part = PartitionState::decode_head(&chunk[0], header.keys as usize)
                .ok_or_else(|| {
                    damaged(
                        slot_offset(first),
                        format!("slot {first} holds a partition state no run writes"),
                    )
                })?;
            for (k, payload) in chunk[1..].iter().enumerate() {
                part.keys[k] = LogKeyState::decode(payload).ok_or_else(|| {
                    damaged(
                        slot_offset(first + 1 + k as u64),
                        format!(
                            "slot {} holds a key state no run writes",
                            first + 1 + k as u64
                        ),
                    )
                })?;
            }
            partitions.push(part);
        }
        Ok(LogExpected {
            fs,
            path: path.to_path_buf(),
            keys: header.keys,
            max_value_size: header.max_value_size,
            partitions,
        })
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn header(&self) -> Header {
        Header {
            kind: StateKind::Log,
            slots: self.partitions.len() as u64 * (self.keys + 1),
            keys: self.keys,
            max_value_size: self.max_value_size,
            durable_stamp: 0,
        }
    }

    /// Rewrites the whole file atomically.
    pub(crate) fn save(&self) -> Result<()> {
        let mut payloads = Vec::with_capacity(self.header().slots as usize);
        for part in &self.partitions {
            payloads.push(part.encode_head());
            payloads.extend(part.keys.iter().map(LogKeyState::encode));
        }
        let bytes = encode_file(&self.header(), &payloads);
        write_file_atomic(&*self.fs, &self.path, &bytes).context(IoSnafu {
            action: "write",
            path: &self.path,
        })
    }

    /// A writer for partition `p`'s slots (after the last `save`).
    pub(crate) fn writer(&self, p: usize) -> Result<PartitionWriter> {
        let file = self.fs.open_append(&self.path).context(IoSnafu {
            action: "open",
            path: &self.path,
        })?;
        Ok(PartitionWriter {
            path: self.path.clone(),
            file,
            first_slot: p as u64 * (self.keys + 1),
        })
    }
}

/// One producer's writes of its partition's slots.
pub(crate) struct PartitionWriter {
    path: PathBuf,
    file: Box<dyn WritableFile>,
    first_slot: u64,
}

impl PartitionWriter {
    /// Writes the partition's head slot.
    pub(crate) fn write_head(&mut self, part: &PartitionState) -> Result<()> {
        self.put(self.first_slot, &part.encode_head())
    }

    /// Writes key `k`'s slot.
    pub(crate) fn write_key(&mut self, k: u64, s: &LogKeyState) -> Result<()> {
        self.put(self.first_slot + 1 + k, &s.encode())
    }

    fn put(&mut self, slot: u64, payload: &[u8; SLOT_PAYLOAD]) -> Result<()> {
        self.file
            .write_at(slot_offset(slot), &encode_slot(slot, payload))
            .context(IoSnafu {
                action: "write",
                path: &self.path,
            })
    }
}

/// Key `k` of a log run.
pub(crate) fn log_key(k: u64) -> String {
    format!("key-{k:010}")
}

/// The key number of `bytes`.
pub(crate) fn parse_log_key(bytes: &[u8]) -> Option<u64> {
    let digits = bytes.strip_prefix(b"key-")?;
    if digits.len() != 10 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The value of key `k`'s record at `offset`: the offset, `|`, letters
/// seeded by both, 16 to `max` bytes in all.
pub(crate) fn log_value(k: u64, offset: i64, max: usize) -> Vec<u8> {
    let max = max.max(16);
    let mut rng = Rng::new((k << 40) ^ offset as u64 ^ 0x0123_4567_89AB_CDEF);
    let len = 16 + rng.below((max - 16 + 1) as u64) as usize;
    let mut v = format!("{offset}|").into_bytes();
    while v.len() < len {
        let r = rng.next_u64();
        for b in r.to_le_bytes() {
            if v.len() < len {
                v.push(b'a' + b % 26);
            }
        }
    }
    v
}

/// What a recovered log holds: each key's latest record, after checking
/// every record (`records`: offset, key, value) is one the run wrote at
/// that offset, in offset order, below `end`.
pub(crate) fn latest_records(
    records: impl IntoIterator<Item = (i64, Option<Vec<u8>>, Option<Vec<u8>>)>,
    keys: u64,
    max_value_size: usize,
    end: i64,
    failures: &mut Vec<String>,
) -> BTreeMap<u64, (i64, bool)> {
    let mut latest = BTreeMap::new();
    let mut prev: Option<i64> = None;
    for (offset, key, value) in records {
        if prev.is_some_and(|p| offset <= p) || offset >= end || offset < 0 {
            failures.push(format!(
                "a record at offset {offset} is out of order (after {prev:?}) or past the log end \
                 {end}"
            ));
        }
        prev = Some(offset);
        let Some(k) = key.as_deref().and_then(parse_log_key).filter(|&k| k < keys) else {
            failures.push(format!(
                "the record at offset {offset} has key {:?}, which no append of this run used",
                key.as_deref().map(String::from_utf8_lossy)
            ));
            continue;
        };
        if let Some(v) = &value
            && *v != log_value(k, offset, max_value_size)
        {
            failures.push(format!(
                "the record of {} at offset {offset} holds the value {:?}, which is not the one \
                 appended there",
                log_key(k),
                String::from_utf8_lossy(&v[..v.len().min(40)])
            ));
            continue;
        }
        latest.insert(k, (offset, value.is_none()));
    }
    latest
}

/// Checks partition `part` recovered to end offset `end` whose records'
/// latest per key are `found`; pushes each disagreement onto `failures`.
pub(crate) fn check_partition(
    part: &PartitionState,
    end: i64,
    found: &BTreeMap<u64, (i64, bool)>,
    failures: &mut Vec<String>,
) {
    if end < part.acked_end {
        failures.push(format!(
            "the log ends at offset {end} but appends up to {} were acknowledged",
            part.acked_end
        ));
    }
    if end > part.pending_end {
        failures.push(format!(
            "the log ends at offset {end} but no append went past {}",
            part.pending_end
        ));
    }
    for (k, s) in part.keys.iter().enumerate() {
        let k = k as u64;
        let want = s.expected(end, part.pending_end);
        let got = found.get(&k).copied();
        let ok = match want {
            None => got.is_none(),
            Some((_, false)) => got == want,
            Some((_, true)) => got.is_none() || got == want,
        };
        if !ok {
            let show = |l: Latest| match l {
                None => "no record".to_string(),
                Some((o, true)) => format!("a tombstone at offset {o}"),
                Some((o, false)) => format!("a value at offset {o}"),
            };
            failures.push(format!(
                "{}'s latest record is {} but should be {}{}",
                log_key(k),
                show(got),
                show(want),
                if want.is_some_and(|(_, t)| t) {
                    " (or nothing, once the cleaner removed the tombstone)"
                } else {
                    ""
                }
            ));
        }
    }
}

/// After a check passed: the partition restarts from the log's end, every
/// key's latest record known and nothing in flight.
pub(crate) fn resolve_partition(part: &mut PartitionState, end: i64) {
    let pending_end = part.pending_end;
    for s in &mut part.keys {
        s.acked = s.expected(end, pending_end);
        s.pending = None;
    }
    part.acked_end = end;
    part.pending_end = end;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_finds_lost_resurrected_and_invented_records() {
        let part = PartitionState {
            acked_end: 30,
            pending_end: 35,
            keys: vec![
                LogKeyState {
                    acked: Some((5, false)),
                    pending: None,
                },
                LogKeyState {
                    acked: Some((6, true)),
                    pending: None,
                },
                LogKeyState {
                    acked: Some((7, false)),
                    pending: Some((32, false)),
                },
                LogKeyState::default(),
            ],
        };
        let found = |v: &[(u64, i64, bool)]| -> BTreeMap<u64, (i64, bool)> {
            v.iter().map(|&(k, o, t)| (k, (o, t))).collect()
        };
        let mut f = Vec::new();
        // The in-flight append did not make it; the tombstone was cleaned.
        check_partition(&part, 30, &found(&[(0, 5, false), (2, 7, false)]), &mut f);
        assert!(f.is_empty(), "{f:?}");
        // It did make it.
        check_partition(
            &part,
            35,
            &found(&[(0, 5, false), (1, 6, true), (2, 32, false)]),
            &mut f,
        );
        assert!(f.is_empty(), "{f:?}");
        // Lost acknowledged append, a value under a tombstone back, a key
        // never written, a log longer than anything appended.
        check_partition(&part, 29, &found(&[(0, 5, false), (2, 7, false)]), &mut f);
        assert_eq!(f.len(), 1, "{f:?}");
        f.clear();
        check_partition(
            &part,
            30,
            &found(&[(0, 5, false), (1, 3, false), (2, 7, false), (3, 9, false)]),
            &mut f,
        );
        assert_eq!(f.len(), 2, "{f:?}");
        f.clear();
        check_partition(&part, 36, &found(&[(0, 5, false), (2, 32, false)]), &mut f);
        assert_eq!(f.len(), 1, "{f:?}");
    }

    #[test]
    fn records_are_checked_byte_for_byte() {
        let good = |k: u64, o: i64| (o, Some(log_key(k).into_bytes()), Some(log_value(k, o, 40)));
        let mut f = Vec::new();
        let l = latest_records(
            [
                good(1, 0),
                good(1, 3),
                (4, Some(log_key(2).into_bytes()), None),
            ],
            5,
            40,
            10,
            &mut f,
        );
        assert!(f.is_empty(), "{f:?}");
        assert_eq!(l.get(&1), Some(&(3, false)));
        assert_eq!(l.get(&2), Some(&(4, true)));
        let mut bad = good(1, 5);
        bad.2.as_mut().unwrap()[0] ^= 1;
        latest_records(
            [
                good(1, 3),
                good(1, 2),
                bad,
                (6, Some(b"nope".to_vec()), None),
                good(3, 11),
            ],
            5,
            40,
            10,
            &mut f,
        );
        assert_eq!(f.len(), 4, "{f:?}");
    }
}
