//! Microbenchmarks of `lithify-base`: varints, checksums, key comparison and
//! the merging iterator.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lithify_base::coding::{Decoder, put_varint64};
use lithify_base::{
    BytewiseComparator, Comparator, InternalIterator, InternalKey, InternalKeyComparator,
    MergingIterator, ValueKind, VecIterator, masked_xxh3_64,
};

fn varints(c: &mut Criterion) {
    let values: Vec<u64> = (0..4096u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9) >> (i % 60))
        .collect();
    let mut encoded = Vec::new();
    for &v in &values {
        put_varint64(&mut encoded, v);
    }
    let mut g = c.benchmark_group("varint64");
    g.throughput(Throughput::Elements(values.len() as u64));
    g.bench_function("encode", |b| {
        let mut buf = Vec::with_capacity(encoded.len());
        b.iter(|| {
            buf.clear();
            for &v in &values {
                put_varint64(&mut buf, v);
            }
            black_box(buf.len())
        })
    });
    g.bench_function("decode", |b| {
        b.iter(|| {
            let mut d = Decoder::new(&encoded);
            let mut sum = 0u64;
            while !d.is_empty() {
                sum = sum.wrapping_add(d.varint64().unwrap());
            }
            black_box(sum)
        })
    });
    g.finish();
}

fn checksums(c: &mut Criterion) {
    let data = vec![0xabu8; 4096];
    let mut g = c.benchmark_group("checksum");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("masked_xxh3_64/4KiB", |b| {
        b.iter(|| masked_xxh3_64(&[black_box(&data)]))
    });
    g.finish();
}

fn compare(c: &mut Criterion) {
    let cmp = InternalKeyComparator::bytewise();
    let a = InternalKey::new(b"user-key-0000012345", 100, ValueKind::Put);
    let b = InternalKey::new(b"user-key-0000012345", 99, ValueKind::Put);
    c.bench_function("internal_key_compare/same_user_key", |bench| {
        bench.iter(|| cmp.compare(black_box(a.encoded()), black_box(b.encoded())))
    });
}

fn merging(c: &mut Criterion) {
    let children: Vec<VecIterator<BytewiseComparator>> = (0..8u32)
        .map(|child| {
            let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..10_000u32)
                .map(|i| ((i * 8 + child).to_be_bytes().to_vec(), vec![0u8; 16]))
                .collect();
            VecIterator::new(BytewiseComparator, entries)
        })
        .collect();
    let mut g = c.benchmark_group("merging_iterator");
    g.throughput(Throughput::Elements(80_000));
    g.bench_function("8_children_full_scan", |b| {
        b.iter_batched(
            || MergingIterator::new(BytewiseComparator, children.clone()),
            |mut it| {
                it.first().unwrap();
                let mut n = 0;
                while it.valid() {
                    n += 1;
                    it.next().unwrap();
                }
                black_box(n)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, varints, checksums, compare, merging);
criterion_main!(benches);
