//! Grouping the segments of a round into cleaned segments (Kafka's
//! `Cleaner.groupSegmentsBySize`).
//!
//! Greedy, in offset order: a group starts with the next segment and takes
//! the following segment `s` while all of these hold:
//!
//! * the group's source `.log` bytes plus `s`'s stay within `segment.bytes`;
//! * the group's offset-index bytes plus `s`'s stay within
//!   `segment.index.bytes`, and so do its time-index bytes;
//! * `s` is empty, or its last offset minus the group's **first** base
//!   offset fits in an `i32` (offsets in a segment are stored relative to
//!   its base). `s`'s last offset is estimated as the next segment's base
//!   minus one, or `U - 1` for the last segment of the list.
//!
//! (Kafka builds each group by prepending, so its `group.last` is the
//! group's first segment: the check is against the cleaned segment's base,
//! the offset its relative offsets count from.) Each group becomes one
//! cleaned segment named after its first base offset. Sizes are those of
//! the source segments, before cleaning.

use std::ops::Range;

/// What grouping needs to know of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GroupInput {
    /// Base offset.
    pub(crate) base_offset: i64,
    /// `.log` bytes.
    pub(crate) size: u64,
    /// Offset-index bytes.
    pub(crate) offset_index_bytes: u64,
    /// Time-index bytes.
    pub(crate) time_index_bytes: u64,
}

/// Groups `segments` (in offset order): ranges of indexes into it, in
/// order, covering every segment once.
pub(crate) fn group_segments_by_size(
    segments: &[GroupInput],
    max_size: i32,
    max_index_size: i32,
    first_uncleanable_offset: i64,
) -> Vec<Range<usize>> {
    let max_size = u64::try_from(max_size).unwrap_or(0);
    let max_index = u64::try_from(max_index_size).unwrap_or(0);
    let mut groups = Vec::new();
    let mut start = 0;
    while start < segments.len() {
        let first = segments[start];
        let mut log_size = first.size;
        let mut index_size = first.offset_index_bytes;
        let mut time_size = first.time_index_bytes;
        let mut end = start + 1;
        while let Some(s) = segments.get(end) {
            let last_offset = segments
                .get(end + 1)
                .map_or(first_uncleanable_offset, |n| n.base_offset)
                - 1;
            let fits = log_size + s.size <= max_size
                && index_size + s.offset_index_bytes <= max_index
                && time_size + s.time_index_bytes <= max_index
                && (s.size == 0
                    || last_offset.saturating_sub(first.base_offset) <= i64::from(i32::MAX));
            if !fits {
                break;
            }
            log_size += s.size;
            index_size += s.offset_index_bytes;
            time_size += s.time_index_bytes;
            end += 1;
        }
        groups.push(start..end);
        start = end;
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(base: i64, size: u64, index: u64, time: u64) -> GroupInput {
        GroupInput {
            base_offset: base,
            size,
            offset_index_bytes: index,
            time_index_bytes: time,
        }
    }

    #[test]
    fn groups_fill_up_to_segment_bytes() {
        let seg = |base, size| seg(base, size, 0, 0);
        let segments = [seg(0, 400), seg(10, 400), seg(20, 400), seg(30, 100)];
        assert_eq!(
            group_segments_by_size(&segments, 1000, 1000, 40),
            vec![0..2, 2..4]
        );
    }

    #[test]
    fn each_cap_closes_a_group() {
        // Log bytes: 600 + 400 = 1000 fits, + 1 does not.
        let s = [seg(0, 600, 0, 0), seg(5, 400, 0, 0), seg(9, 1, 0, 0)];
        assert_eq!(group_segments_by_size(&s, 1000, 100, 20), vec![0..2, 2..3]);
        // Offset index bytes: 8 + 8 fit in 16, + 8 does not.
        let s = [seg(0, 1, 8, 0), seg(5, 1, 8, 0), seg(9, 1, 8, 0)];
        assert_eq!(group_segments_by_size(&s, 1000, 16, 20), vec![0..2, 2..3]);
        // Time index bytes: 12 + 12 > 16.
        let s = [seg(0, 1, 0, 12), seg(5, 1, 0, 12)];
        assert_eq!(group_segments_by_size(&s, 1000, 16, 20), vec![0..1, 1..2]);
        // A segment bigger than the cap is a group of its own.
        let s = [seg(0, 5000, 0, 0), seg(5, 1, 0, 0)];
        assert_eq!(group_segments_by_size(&s, 1000, 16, 20), vec![0..1, 1..2]);
    }

    #[test]
    fn the_offset_span_is_checked_against_the_groups_first_base() {
        let max = i64::from(i32::MAX);
        // The second segment ends (next base - 1) exactly 2^31 - 1 after
        // the group's base: it fits. The third would end beyond: new group.
        let s = [
            seg(0, 1, 0, 0),
            seg(10, 1, 0, 0),
            seg(max + 1, 1, 0, 0),
            seg(max + 20, 1, 0, 0),
        ];
        assert_eq!(
            group_segments_by_size(&s, 1000, 1000, max + 30),
            vec![0..2, 2..4]
        );
        // An empty segment skips the check (KAFKA-12889).
        let s = [seg(0, 1, 0, 0), seg(10, 0, 0, 0), seg(3 * max, 1, 0, 0)];
        assert_eq!(
            group_segments_by_size(&s, 1000, 1000, 3 * max + 5),
            vec![0..2, 2..3]
        );
        // The last segment's end is estimated from U.
        let s = [seg(0, 1, 0, 0), seg(10, 1, 0, 0)];
        assert_eq!(
            group_segments_by_size(&s, 1000, 1000, max + 2),
            vec![0..1, 1..2]
        );
        assert_eq!(group_segments_by_size(&s, 1000, 1000, max + 1), vec![0..2]);
        assert!(group_segments_by_size(&[], 1000, 1000, 0).is_empty());
    }
}
