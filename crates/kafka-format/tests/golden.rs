//! The golden batches of the reference (kafka-log-cleaner.md section 3.3),
//! each verified there with kafka-python and aiokafka: we decode each to
//! exactly the stated fields and re-encode them byte for byte.

use bytes::Bytes;
use lithify_kafka_format::codec::Compression;
use lithify_kafka_format::record::{
    BatchBuilder, ControlRecordType, EndTransactionMarker, Header, RecordBatch, TimestampType,
};

fn unhex(s: &str) -> Bytes {
    let v: Vec<u8> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect();
    Bytes::from(v)
}

const A: &str = "0000000000000000000000450000000002b0db168e00000000000100000000000003e800000000000003edffffffffffffffffffffffffffff0000000214000000046b310476310010000a02046b320100";
const B: &str = "000000000000000500000031000000000201ed0cb1001000000002ffffffffffffffff00000000000003ed000000000000000100000000000300000000";
const C: &str = "00000000000000090000004200000000029a0c66ce00300000000000000000000007d000000000000007d000000000000000010000ffffffff000000012000000008000000010c00000000000000";
const D0: &str = "000000000000000a000000390000000002b27ef30200000000000000000000000003e800000000000003e8ffffffffffffffffffffffffffff000000010e000000026b0100";
const D1: &str = "000000000000000a0000003c0000000002dca34eda0040000000000000000005266f8800000000000003e8ffffffffffffffffffffffffffff000000011400bfaeb35200026b0100";
const E0: &str = "00000000000000140000004c00000000025992e06f0000000000020000000000000bb80000000000000bbaffffffffffffffffffffffffffff00000003100000000261023100100002020262023200100004040261023300";
const E1: &str = "0000000000000014000000430000000002e4801c140000000000020000000000000bb90000000000000bbaffffffffffffffffffffffffffff00000002100000020262023200100002040261023300";

fn parse(hex: &str) -> RecordBatch {
    let b = RecordBatch::parse(unhex(hex)).unwrap();
    b.ensure_valid().unwrap();
    b
}

type Fields = (i64, Option<&'static [u8]>, Option<&'static [u8]>, i64);
type Owned = (i64, Option<Vec<u8>>, Option<Vec<u8>>, i64);

fn records(b: &RecordBatch) -> Vec<Owned> {
    b.records()
        .unwrap()
        .into_iter()
        .map(|r| {
            assert!(r.headers.is_empty());
            (
                r.offset,
                r.key.map(|k| k.to_vec()),
                r.value.map(|v| v.to_vec()),
                r.timestamp,
            )
        })
        .collect()
}

fn expect(b: &RecordBatch, want: &[Fields]) {
    let want: Vec<_> = want
        .iter()
        .map(|(o, k, v, t)| (*o, k.map(<[u8]>::to_vec), v.map(<[u8]>::to_vec), *t))
        .collect();
    assert_eq!(records(b), want);
}

#[test]
fn vector_a_decodes_and_reencodes_byte_for_byte() {
    let a = parse(A);
    assert_eq!(a.size_in_bytes(), 81);
    assert_eq!(a.checksum(), 0xb0db168e);
    assert_eq!(
        (
            a.base_offset(),
            a.partition_leader_epoch(),
            a.last_offset_delta()
        ),
        (0, 0, 1)
    );
    assert_eq!((a.base_timestamp(), a.max_timestamp()), (1000, 1005));
    assert_eq!(a.timestamp_type(), TimestampType::CreateTime);
    assert_eq!(
        (a.producer_id(), a.producer_epoch(), a.base_sequence()),
        (-1, -1, -1)
    );
    assert_eq!(a.compression().unwrap(), Compression::None);
    expect(
        &a,
        &[
            (0, Some(b"k1"), Some(b"v1"), 1000),
            (1, Some(b"k2"), None, 1005),
        ],
    );

    let mut b = BatchBuilder::new(0).partition_leader_epoch(0);
    b.append(0, 1000, Some(b"k1"), Some(b"v1"), &[]).unwrap();
    b.append(1, 1005, Some(b"k2"), None, &[]).unwrap();
    assert_eq!(b.build(), unhex(A));
}

#[test]
fn vector_b_is_the_cleaners_empty_header() {
    let b = parse(B);
    assert_eq!(b.size_in_bytes(), 61);
    assert_eq!(b.checksum(), 0x01ed0cb1);
    assert_eq!((b.base_offset(), b.last_offset()), (5, 7));
    assert!(b.is_transactional() && !b.is_control());
    assert_eq!((b.base_timestamp(), b.max_timestamp()), (-1, 1005));
    assert_eq!(
        (b.producer_id(), b.producer_epoch(), b.base_sequence()),
        (1, 0, 3)
    );
    assert_eq!(b.records_count(), 0);
    assert!(b.records().unwrap().is_empty());
    let built = BatchBuilder::new(5)
        .partition_leader_epoch(0)
        .transactional(true)
        .producer(1, 0, 3)
        .last_offset(7)
        .max_timestamp(1005)
        .build();
    assert_eq!(built, unhex(B));
}

#[test]
fn vector_c_is_a_commit_marker() {
    let c = parse(C);
    assert_eq!(c.size_in_bytes(), 78);
    assert_eq!(c.checksum(), 0x9a0c66ce);
    assert!(c.is_control() && c.is_transactional());
    assert_eq!(
        (c.base_offset(), c.base_timestamp(), c.max_timestamp()),
        (9, 2000, 2000)
    );
    assert_eq!(
        (c.producer_id(), c.producer_epoch(), c.base_sequence()),
        (1, 0, -1)
    );
    assert_eq!(c.control_type().unwrap(), Some(ControlRecordType::Commit));
    let r = &c.records().unwrap()[0];
    let marker = EndTransactionMarker::parse(r.value.as_deref().unwrap()).unwrap();
    assert_eq!(marker.coordinator_epoch, 0);

    let build = |t: ControlRecordType| {
        let mut b = BatchBuilder::new(9)
            .partition_leader_epoch(0)
            .transactional(true)
            .control(true)
            .producer(1, 0, -1);
        b.append(9, 2000, Some(&t.key()), Some(&marker.value()), &[])
            .unwrap();
        b.build()
    };
    assert_eq!(build(ControlRecordType::Commit), unhex(C));
    let abort = RecordBatch::parse(build(ControlRecordType::Abort)).unwrap();
    assert_eq!(abort.checksum(), 0x6e32b086);
    assert_eq!(
        abort.control_type().unwrap(),
        Some(ControlRecordType::Abort)
    );
}

#[test]
fn vectors_d_tombstone_before_and_after_its_horizon_is_stamped() {
    let d0 = parse(D0);
    assert_eq!((d0.size_in_bytes(), d0.checksum()), (69, 0xb27ef302));
    assert_eq!(d0.delete_horizon_ms(), None);
    expect(&d0, &[(10, Some(b"k"), None, 1000)]);

    let d1 = parse(D1);
    assert_eq!((d1.size_in_bytes(), d1.checksum()), (72, 0xdca34eda));
    assert_eq!(d1.delete_horizon_ms(), Some(86_405_000));
    assert_eq!(d1.max_timestamp(), 1000);
    expect(&d1, &[(10, Some(b"k"), None, 1000)]);

    for (hex, horizon) in [(D0, None), (D1, Some(86_405_000))] {
        let mut b = BatchBuilder::new(10).partition_leader_epoch(0);
        if let Some(h) = horizon {
            b = b.delete_horizon_ms(h);
        }
        b.append(10, 1000, Some(b"k"), None, &[]).unwrap();
        assert_eq!(b.build(), unhex(hex));
    }
}

#[test]
fn vectors_e_dedupe_keeps_offsets_and_last_offset_delta() {
    let e0 = parse(E0);
    assert_eq!((e0.size_in_bytes(), e0.checksum()), (88, 0x5992e06f));
    expect(
        &e0,
        &[
            (20, Some(b"a"), Some(b"1"), 3000),
            (21, Some(b"b"), Some(b"2"), 3001),
            (22, Some(b"a"), Some(b"3"), 3002),
        ],
    );
    let e1 = parse(E1);
    assert_eq!((e1.size_in_bytes(), e1.checksum()), (79, 0xe4801c14));
    assert_eq!(
        (
            e1.base_offset(),
            e1.last_offset_delta(),
            e1.base_timestamp()
        ),
        (20, 2, 3001)
    );
    expect(
        &e1,
        &[
            (21, Some(b"b"), Some(b"2"), 3001),
            (22, Some(b"a"), Some(b"3"), 3002),
        ],
    );

    // Rebuilding E1 from E0's surviving records, as the cleaner will.
    let mut b = BatchBuilder::new(20)
        .partition_leader_epoch(0)
        .last_offset(e0.last_offset());
    for r in e0.records().unwrap().into_iter().skip(1) {
        b.append(
            r.offset,
            r.timestamp,
            r.key.as_deref(),
            r.value.as_deref(),
            &r.headers,
        )
        .unwrap();
    }
    assert_eq!(b.build(), unhex(E1));
}

#[test]
fn crc32c_check_value() {
    assert_eq!(crc32c::crc32c(b"123456789"), 0xE3069283);
}

#[test]
fn headers_and_every_codec_round_trip() {
    let headers = [
        Header::new("trace", Some(Bytes::from_static(b"abc"))),
        Header::new("null-valued", None),
    ];
    for codec in Compression::ALL {
        let mut b = BatchBuilder::new(1 << 40)
            .compression(codec)
            .producer(7, 3, 11);
        for i in 0..50i64 {
            let key = format!("key-{}", i % 7);
            let value = (i % 5 != 0).then(|| format!("value-{i}").repeat(3));
            b.append(
                (1 << 40) + i * 2,
                10_000 - i,
                Some(key.as_bytes()),
                value.as_deref().map(str::as_bytes),
                &headers,
            )
            .unwrap();
        }
        let batch = RecordBatch::parse(b.build()).unwrap();
        batch.ensure_valid().unwrap();
        assert_eq!(batch.compression().unwrap(), codec);
        assert_eq!(batch.max_timestamp(), 10_000);
        assert_eq!(batch.last_offset(), (1 << 40) + 98);
        let rs = batch.records().unwrap();
        assert_eq!(rs.len(), 50);
        for (i, r) in rs.iter().enumerate() {
            let i = i as i64;
            assert_eq!(r.offset, (1 << 40) + i * 2);
            assert_eq!(r.timestamp, 10_000 - i);
            assert_eq!(r.headers, headers);
            assert_eq!(r.is_tombstone(), i % 5 == 0);
        }
    }
}
