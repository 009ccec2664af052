//! Kafka's vectors and tests, golden buffers, and the edge cases of the map.
//!
//! The golden buffer checksums come from an independent model of
//! `SkimpyOffsetMap` written in Python from Kafka's Java source (hashlib MD5,
//! the `xxhash` package for XXH3), which filled a 4096-byte map with the
//! keys "37", "38", ... as Kafka's `OffsetMapTest.testGetWhenFull` does.

use std::num::NonZeroU32;

use lithify_base::{Classify, ErrorKind, xxh3_64};

use crate::layout::{KafkaSlot, SlotFormat};
use crate::{
    DigestKind, Error, KeyDigest, Layout, LoadFactor, MAX_OFFSET, MAX_SLOTS, OffsetMap,
    probe_sequence,
};

fn kafka_map(memory: usize) -> OffsetMap {
    OffsetMap::new(memory).expect("valid memory")
}

fn key(i: u64) -> Vec<u8> {
    i.to_string().into_bytes()
}

fn md5(key: &[u8]) -> [u8; 16] {
    *KeyDigest::compute(DigestKind::Md5, key).as_bytes()
}

#[test]
fn kafka_vector_collision_of_5_and_26() {
    let mut map = kafka_map(4096);
    assert_eq!(map.slots(), 170);
    map.put(b"5", 10).expect("room");
    map.put(b"26", 11).expect("room");

    // "5" took its first slot, 49; "26" also starts at 49 and moved on to
    // its second, 108.
    let bytes = map.as_bytes();
    assert_eq!(bytes.len(), 170 * 24);
    assert_eq!(bytes[49 * 24..49 * 24 + 16], md5(b"5"));
    assert_eq!(bytes[49 * 24 + 16..50 * 24], 10i64.to_be_bytes());
    assert_eq!(bytes[108 * 24..108 * 24 + 16], md5(b"26"));
    assert_eq!(bytes[108 * 24 + 16..109 * 24], 11i64.to_be_bytes());
    let occupied = bytes
        .chunks(24)
        .filter(|slot| slot.iter().any(|&b| b != 0))
        .count();
    assert_eq!(occupied, 2);
    assert_eq!((map.lookups(), map.probes()), (2, 3));
    assert_eq!(map.collision_rate(), Some(0.5));

    assert_eq!(map.get(b"5"), Some(10));
    assert_eq!(map.get(b"26"), Some(11));
    assert_eq!(map.get(b"nope"), None);
    assert_eq!(map.size(), 2);
    assert_eq!(map.latest_offset(), Some(11));
}

#[test]
fn kafka_vector_slot_counts() {
    assert_eq!(kafka_map(72).slots(), 3);
    assert_eq!(kafka_map(4096).slots(), 170);
    assert_eq!(kafka_map(4096).as_bytes().len(), 4080);
    let err = OffsetMap::new(23).expect_err("no slot fits");
    assert!(matches!(err, Error::MemoryTooSmall { memory: 23, .. }));
    assert_eq!(
        err.to_string(),
        "an offset map of 23 bytes has no room for a single 24-byte slot"
    );
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = OffsetMap::with_layout(19, Layout::Compact, DigestKind::Md5).expect_err("too small");
    assert!(matches!(err, Error::MemoryTooSmall { .. }));
}

#[test]
fn too_many_slots_fails_before_allocating() {
    let memory = (MAX_SLOTS + 1) * 24;
    let err = OffsetMap::new(memory).expect_err("beyond 32-bit probes");
    assert!(matches!(err, Error::TooManySlots { .. }), "{err}");
}

struct Golden {
    layout: Layout,
    digest: DigestKind,
    base: u64,
    entries: usize,
    lookups: u64,
    probes: u64,
    buffer_xxh3: u64,
}

/// Fills a 4096-byte map with "37", "38", ... (offset `base + i`) until it
/// is full, then looks up "37", "100", the last key and two absent keys.
#[test]
fn golden_buffers_match_an_independent_model() {
    let cases = [
        Golden {
            layout: Layout::Kafka,
            digest: DigestKind::Md5,
            base: 0,
            entries: 170,
            lookups: 175,
            probes: 1208,
            buffer_xxh3: 0x5c19_589d_9f89_6adb,
        },
        Golden {
            layout: Layout::Compact,
            digest: DigestKind::Md5,
            base: 1000,
            entries: 204,
            lookups: 209,
            probes: 1624,
            buffer_xxh3: 0xd862_abe0_0291_873e,
        },
        Golden {
            layout: Layout::Kafka,
            digest: DigestKind::Xxh3_128,
            base: 0,
            entries: 170,
            lookups: 175,
            probes: 1316,
            buffer_xxh3: 0x74a6_4c11_f320_1343,
        },
        Golden {
            layout: Layout::Compact,
            digest: DigestKind::Xxh3_128,
            base: 1000,
            entries: 204,
            lookups: 209,
            probes: 1468,
            buffer_xxh3: 0x384f_ef37_7957_2f90,
        },
    ];
    for g in cases {
        let mut map = OffsetMap::with_layout(4096, g.layout, g.digest).expect("valid");
        map.reset(g.base).expect("valid base");
        let mut i = 37;
        while map.size() < map.slots() {
            map.put(&key(i), g.base + i).expect("room");
            i += 1;
        }
        let last = i - 1;
        assert_eq!(map.size(), g.entries, "{:?}/{:?}", g.layout, g.digest);
        assert_eq!(map.get(&key(37)), Some(g.base + 37));
        assert_eq!(map.get(&key(100)), Some(g.base + 100));
        assert_eq!(map.get(&key(last)), Some(g.base + last));
        assert_eq!(map.get(&key(i)), None);
        assert_eq!(map.get(&key(i + 1)), None);
        assert_eq!(
            xxh3_64(map.as_bytes()),
            g.buffer_xxh3,
            "{:?}/{:?}",
            g.layout,
            g.digest
        );
        assert_eq!((map.lookups(), map.probes()), (g.lookups, g.probes));
    }
}

#[test]
fn golden_buffer_with_overwrites() {
    let mut map = kafka_map(4096);
    for j in 0..100u64 {
        map.put(&key(j % 60), j).expect("room");
    }
    assert_eq!(map.size(), 60);
    assert_eq!((map.lookups(), map.probes()), (100, 110));
    assert_eq!(xxh3_64(map.as_bytes()), 0xc56f_d8d1_7631_37e5);
    for j in 0..60 {
        let expected = if j < 40 { j + 60 } else { j };
        assert_eq!(map.get(&key(j)), Some(expected));
    }
}

/// Kafka's `OffsetMapTest.testBasicValidation`.
#[test]
fn kafka_test_basic_validation() {
    for items in [10u64, 100, 1000, 5000] {
        let mut map = kafka_map(items as usize * 48);
        for i in 0..items {
            map.put(&key(i), i).expect("half full at most");
        }
        for i in 0..items {
            assert_eq!(map.get(&key(i)), Some(i));
        }
    }
}

/// Kafka's `OffsetMapTest.testClear`.
#[test]
fn kafka_test_clear() {
    let mut map = kafka_map(4096);
    for i in 0..10 {
        map.put(&key(i), i).expect("room");
    }
    for i in 0..10 {
        assert_eq!(map.get(&key(i)), Some(i));
    }
    let before = map.as_bytes().as_ptr();
    map.clear();
    for i in 0..10 {
        assert_eq!(map.get(&key(i)), None);
    }
    // Same memory, all zero again; statistics and latest offset reset.
    assert_eq!(map.as_bytes().as_ptr(), before);
    assert!(map.as_bytes().iter().all(|&b| b == 0));
    assert_eq!(map.size(), 0);
    assert_eq!(map.latest_offset(), None);
    assert_eq!(map.lookups(), 10);
    map.clear();
    assert_eq!(map.collision_rate(), None);
}

fn filled_from_37() -> (OffsetMap, u64) {
    let mut map = kafka_map(4096);
    let mut i = 37;
    while map.size() < map.slots() {
        map.put(&key(i), i).expect("room");
        i += 1;
    }
    (map, i)
}

/// Kafka's `OffsetMapTest.testGetWhenFull`, `testUpdateLatestOffset` and
/// `testLatestOffset`.
#[test]
fn kafka_tests_on_a_full_map() {
    let (mut map, i) = filled_from_37();
    assert_eq!(map.get(&key(i)), None);
    assert_eq!(map.get(&key(i - 1)), Some(i - 1));
    assert_eq!(map.latest_offset(), Some(i - 1));
    map.update_latest_offset(40);
    assert_eq!(map.latest_offset(), Some(40));
    assert_eq!(map.get(&key(40)), Some(40));
    assert_eq!(map.utilization(), 1.0);
}

#[test]
fn put_into_a_full_map_fails_even_for_a_present_key() {
    let (mut map, i) = filled_from_37();
    let before = map.as_bytes().to_vec();
    for k in [key(37), key(i)] {
        let err = map.put(&k, 999).expect_err("full");
        assert!(matches!(
            err,
            Error::Full {
                entries: 170,
                slots: 170,
                ..
            }
        ));
    }
    assert_eq!(map.as_bytes(), &before[..]);
    assert_eq!(map.get(&key(37)), Some(37));
    assert_eq!(map.latest_offset(), Some(i - 1));
}

#[test]
fn offsets_beyond_kafka_range_are_rejected() {
    let mut map = kafka_map(4096);
    map.put(b"max", MAX_OFFSET).expect("i64::MAX is an offset");
    assert_eq!(map.get(b"max"), Some(MAX_OFFSET));
    let err = map.put(b"over", MAX_OFFSET + 1).expect_err("beyond i64");
    assert!(matches!(err, Error::OffsetTooLarge { .. }));
    assert_eq!(
        err.to_string(),
        "offset 9223372036854775808 is larger than 9223372036854775807, the largest offset Kafka can store"
    );
    assert!(map.reset(MAX_OFFSET + 1).is_err());
    assert_eq!(map.offset_range(), 0..=MAX_OFFSET);
    assert!(map.can_store(0) && !map.can_store(u64::MAX));
    assert_eq!(map.size(), 1, "failed puts and resets change nothing");
}

#[test]
fn compact_layout_stores_32_bit_deltas_from_its_base() {
    let mut map = OffsetMap::with_layout(4096, Layout::Compact, DigestKind::Md5).expect("valid");
    assert_eq!(map.slots(), 204);
    map.reset(5_000_000_000).expect("valid base");
    let last = 5_000_000_000 + u64::from(u32::MAX);
    assert_eq!(map.offset_range(), 5_000_000_000..=last);
    map.put(b"first", 5_000_000_000).expect("base fits");
    map.put(b"last", last).expect("base + u32::MAX fits");
    for offset in [4_999_999_999, last + 1] {
        let err = map.put(b"out", offset).expect_err("out of reach");
        assert!(matches!(err, Error::OffsetOutOfRange { .. }), "{err}");
        assert!(!map.can_store(offset));
    }
    assert_eq!(map.get(b"first"), Some(5_000_000_000));
    assert_eq!(map.get(b"last"), Some(last));
    assert_eq!(map.get(b"out"), None);
    assert_eq!(map.latest_offset(), Some(last));

    // The slot of "last" ends with the delta u32::MAX.
    let pos = map
        .as_bytes()
        .chunks(20)
        .position(|slot| slot[..16] == md5(b"last"))
        .expect("stored");
    assert_eq!(map.as_bytes()[pos * 20 + 16..pos * 20 + 20], [0xff; 4]);

    // Near i64::MAX the range is capped.
    map.reset(MAX_OFFSET - 5).expect("valid base");
    assert_eq!(map.offset_range(), MAX_OFFSET - 5..=MAX_OFFSET);
    assert_eq!(map.size(), 0);
    // `clear` keeps the base.
    map.put(b"k", MAX_OFFSET).expect("fits");
    map.clear();
    assert_eq!(map.base_offset(), MAX_OFFSET - 5);
}

#[test]
fn load_factor_helpers_follow_kafka_cleaner() {
    let lf = LoadFactor::new(0.75).expect("valid");
    let mut map = kafka_map(72); // 3 slots -> 2 keys at 0.75
    assert_eq!(map.max_entries(lf), 2);
    map.ensure_progress(lf).expect("2 keys");
    let mut mapped = 0;
    for (offset, k) in [b"a", b"a", b"b", b"c"].iter().enumerate() {
        if !map.has_room(lf) {
            break;
        }
        map.put(*k, offset as u64).expect("room");
        mapped += 1;
    }
    // The check precedes every put, overwrites included: "a", "a", "b".
    assert_eq!((mapped, map.size()), (3, 2));
    assert!(!map.has_room(lf));

    let tiny = kafka_map(24);
    let err = tiny
        .ensure_progress(LoadFactor::KAFKA_DEFAULT)
        .expect_err("0.9 keys");
    assert!(matches!(err, Error::NoProgress { slots: 1, .. }), "{err}");
}

fn slots(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).expect("non-zero")
}

/// A key whose last digest window is -3 walks down from slot 3, bounces at
/// 0 and walks up: with only the top slot free, its put needs `slots + 15`
/// probes, more than the `slots + 12` Kafka's `get` allows. Kafka would then
/// answer -1 for a key it stored; this map finds it.
#[test]
fn get_finds_keys_stored_beyond_kafkas_probe_limit() {
    let mut map = kafka_map(4096);
    let n = map.slots() as u32;
    // Occupy every slot but the last: window 0 of filler i is i.
    for i in 0..n - 1 {
        let mut bytes = [0x55u8; 16];
        bytes[..4].copy_from_slice(&i.to_be_bytes());
        map.put_digest::<KafkaSlot>(&KeyDigest::from_bytes(bytes), u64::from(i));
    }
    assert_eq!(map.longest_put(), 1);

    let mut bytes = [0x01u8; 16];
    bytes[12..].copy_from_slice(&(-3i32).to_be_bytes());
    let bouncer = KeyDigest::from_bytes(bytes);
    let free = n - 1;
    let kafka_limit = (n + 12) as usize;
    let probes: Vec<u32> = probe_sequence(bouncer, slots(n)).take(200).collect();
    assert!(
        !probes[..kafka_limit].contains(&free),
        "Kafka's get misses it"
    );
    assert_eq!(
        probes.iter().position(|&s| s == free),
        Some(kafka_limit + 2)
    );

    map.put_digest::<KafkaSlot>(&bouncer, 777);
    assert_eq!(map.size(), map.slots());
    assert_eq!(map.longest_put(), u64::from(n) + 15);
    assert_eq!(map.get_digest::<KafkaSlot>(&bouncer), Some(777));
    let mut at = [0u8; 8];
    at.copy_from_slice(&map.as_bytes()[free as usize * 24 + 16..free as usize * 24 + 24]);
    assert_eq!(KafkaSlot::offset(u64::from_be_bytes(at), 0), 777);

    // An absent key in the completely full map: the lookup ends, after
    // max(slots + 12, longest put) probes.
    let before = map.probes();
    assert_eq!(map.get(b"absent"), None);
    assert_eq!(map.probes() - before, u64::from(n) + 15);
}

/// Every size from 1 to 120 slots, both layouts, both digests: fill to the
/// last slot, every key found, absent keys end as `None`.
#[test]
fn fill_every_small_map_completely() {
    for layout in [Layout::Kafka, Layout::Compact] {
        for digest in [DigestKind::Md5, DigestKind::Xxh3_128] {
            for n in 1..=120usize {
                let mut map = OffsetMap::with_layout(n * layout.bytes_per_entry(), layout, digest)
                    .expect("valid");
                assert_eq!(map.slots(), n);
                for i in 0..n as u64 {
                    map.put(&key(i), i * 3).expect("room");
                }
                assert!(map.put(b"one more", 1).is_err());
                for i in 0..n as u64 {
                    assert_eq!(map.get(&key(i)), Some(i * 3));
                }
                for i in n as u64..n as u64 + 20 {
                    assert_eq!(map.get(&key(i)), None);
                }
                assert!(map.longest_put() <= 2 * n as u64 + 15);
            }
        }
    }
}

#[test]
fn insert_returns_the_offset_it_replaces() {
    for layout in [Layout::Kafka, Layout::Compact] {
        let mut map = OffsetMap::with_layout(4096, layout, DigestKind::Md5).expect("map");
        assert_eq!(map.insert(b"a", 3).expect("room"), None);
        assert_eq!(map.insert(b"b", 4).expect("room"), None);
        assert_eq!(map.insert(b"a", 9).expect("room"), Some(3));
        assert_eq!(map.insert(b"a", 10).expect("room"), Some(9));
        assert_eq!(map.get(b"a"), Some(10));
        assert_eq!(map.get(b"b"), Some(4));
        assert_eq!((map.size(), map.latest_offset()), (2, Some(10)));
    }
}

#[test]
fn rehashed_maps_answer_as_the_original() {
    for (layout, digest) in [
        (Layout::Kafka, DigestKind::Md5),
        (Layout::Kafka, DigestKind::Xxh3_128),
        (Layout::Compact, DigestKind::Md5),
    ] {
        let mut small =
            OffsetMap::with_layout(200 * layout.bytes_per_entry(), layout, digest).expect("map");
        small.reset(1_000).expect("base");
        for i in 0..400u64 {
            if !small.has_room(LoadFactor::KAFKA_DEFAULT) {
                break;
            }
            small.put(&key(i % 150), 1_000 + i).expect("room");
        }
        let (lookups, probes) = (small.lookups(), small.probes());
        let big = small
            .rehashed(1_000 * layout.bytes_per_entry())
            .expect("bigger map");
        assert_eq!(big.slots(), 1_000);
        assert_eq!(
            (big.size(), big.latest_offset(), big.base_offset()),
            (small.size(), small.latest_offset(), small.base_offset())
        );
        assert_eq!((big.lookups(), big.probes()), (lookups, probes));
        for i in 0..300u64 {
            assert_eq!(big.get(&key(i)), small.get(&key(i)), "{layout:?} {i}");
        }
        // Too few slots for the entries.
        assert!(small.rehashed(100 * layout.bytes_per_entry()).is_err());
    }
}

#[test]
fn insert_digest_and_prefetch_agree_with_insert() {
    let mut by_key = kafka_map(4096);
    let mut by_digest = kafka_map(4096);
    for i in 0..150u64 {
        let k = key(i % 60);
        let d = KeyDigest::compute(DigestKind::Md5, &k);
        by_digest.prefetch(&d);
        assert_eq!(
            by_digest.insert_digest(&d, i).expect("room"),
            by_key.insert(&k, i).expect("room")
        );
    }
    assert_eq!(by_digest.as_bytes(), by_key.as_bytes());
    assert_eq!(by_digest.size(), 60);
}
