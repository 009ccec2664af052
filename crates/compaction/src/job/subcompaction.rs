//! Splitting a compaction into key-range pieces that run in parallel
//! (RocksDB's `CompactionJob::GenSubcompactionBoundaries`).

use std::sync::Arc;

use lithify_base::{InternalKeyComparator, key::user_key};
use lithify_sstable::SstReader;

use crate::compaction::Compaction;
use crate::compaction_pri::CompactionPri;
use crate::error::{Result, SstSnafu};
use snafu::ResultExt as _;

/// Anchors taken from each input table (RocksDB's 128).
pub(crate) const ANCHORS_PER_FILE: usize = 128;

/// A user key with the approximate input bytes up to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Anchor {
    /// The user key.
    pub user_key: Vec<u8>,
    /// Input bytes from the previous anchor of the same file up to it.
    pub range_size: u64,
}

/// Whether a compaction is split at all: `max_subcompactions > 1`, output
/// above L0, and either out of L0, manual, or round robin.
pub(crate) fn wants_subcompactions(c: &Compaction, pri: CompactionPri) -> bool {
    c.max_subcompactions > 1
        && c.output_level > 0
        && (c.start_level() == 0 || c.manual || pri == CompactionPri::RoundRobin)
}

/// The boundaries (user keys, ascending) cutting `anchors` into at most
/// `planned` pieces of about `max(total / planned, min_piece)` bytes each:
/// walking the sorted, deduplicated anchors, a boundary is placed at each
/// anchor where the running size passes the next multiple of the piece
/// size. No boundaries when one piece would hold everything.
pub(crate) fn boundaries_from_anchors(
    cmp: &InternalKeyComparator,
    mut anchors: Vec<Anchor>,
    total_bytes: u64,
    planned: usize,
    min_piece: u64,
) -> Vec<Vec<u8>> {
    if planned <= 1 || anchors.is_empty() {
        return Vec::new();
    }
    anchors.sort_by(|a, b| cmp.compare_user(&a.user_key, &b.user_key));
    anchors.dedup_by(|a, b| cmp.compare_user(&a.user_key, &b.user_key).is_eq());
    let piece = (total_bytes / planned as u64).max(min_piece).max(1);
    if piece >= total_bytes {
        return Vec::new();
    }
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut cumulative = 0u64;
    let mut next_threshold = piece;
    // The last anchor closes the range: a boundary there would leave an
    // empty last piece.
    let n = anchors.len();
    for a in anchors.into_iter().take(n - 1) {
        cumulative += a.range_size;
        if cumulative > next_threshold {
            out.push(a.user_key);
            next_threshold += piece;
            if out.len() + 1 >= planned {
                break;
            }
        }
    }
    out
}

/// The subcompaction boundaries of `c` over its opened input `tables`.
pub(crate) fn subcompaction_boundaries(
    c: &Compaction,
    pri: CompactionPri,
    tables: &[Arc<SstReader<InternalKeyComparator>>],
    cmp: &InternalKeyComparator,
) -> Result<Vec<Vec<u8>>> {
    if !wants_subcompactions(c, pri) {
        return Ok(Vec::new());
    }
    let mut anchors = Vec::new();
    for t in tables {
        for a in t
            .approximate_key_anchors(ANCHORS_PER_FILE)
            .context(SstSnafu)?
        {
            anchors.push(Anchor {
                user_key: user_key(&a.key).to_vec(),
                range_size: a.range_size,
            });
        }
    }
    let planned = if pri == CompactionPri::RoundRobin {
        c.inputs
            .first()
            .map_or(1, |i| i.files.len())
            .max(1)
            .min(c.max_subcompactions.max(1))
    } else {
        c.max_subcompactions
    };
    Ok(boundaries_from_anchors(
        cmp,
        anchors,
        c.input_bytes(),
        planned,
        c.target_output_file_size,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(k: &str, size: u64) -> Anchor {
        Anchor {
            user_key: k.as_bytes().to_vec(),
            range_size: size,
        }
    }

    #[test]
    fn even_pieces() {
        let cmp = InternalKeyComparator::bytewise();
        let anchors: Vec<Anchor> = (b'a'..=b'j')
            .map(|c| a(&(c as char).to_string(), 10))
            .collect();
        // 100 bytes in 4 pieces of 25: boundaries where the sum passes 25,
        // 50, 75.
        let b = boundaries_from_anchors(&cmp, anchors.clone(), 100, 4, 1);
        assert_eq!(b, [b"c".to_vec(), b"f".to_vec(), b"h".to_vec()]);
        // A large minimum piece means fewer pieces (of 40: past 40 and 80).
        assert_eq!(
            boundaries_from_anchors(&cmp, anchors.clone(), 100, 4, 40),
            [b"e".to_vec(), b"i".to_vec()]
        );
        assert!(boundaries_from_anchors(&cmp, anchors.clone(), 100, 4, 100).is_empty());
        assert!(boundaries_from_anchors(&cmp, anchors, 100, 1, 1).is_empty());
        // Duplicate keys from several files count once.
        let dup = vec![a("b", 70), a("b", 70), a("c", 10), a("z", 60)];
        assert_eq!(
            boundaries_from_anchors(&cmp, dup, 180, 3, 1),
            [b"b".to_vec()]
        );
    }
}
