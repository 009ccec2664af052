//! Throughput of `lithify-offsetmap`: puts and gets for 16- and 64-byte keys
//! at 10%, 50% and 90% fill (10%: a large configured map holding a small
//! dirty section's keys, the case issue 26 measured), MD5 vs XXH3-128, for Kafka's 24-byte layout, the
//! compact 20-byte layout, and `std::collections::HashMap<[u8; 16], u64>`
//! fed the same digests.
//!
//! * `put`: fill an empty map (cleared, memory kept) up to the fill level,
//!   i.e. the average cost of a put in a cleaner's mapping pass run to that
//!   load factor;
//! * `get_hit` / `get_miss`: lookups of present / absent keys in a map at the
//!   fill level (a cleaner's second pass looks up both kinds).
//!
//! * `digest`: 1024 keys of 16 and 64 bytes digested one at a time
//!   (`KeyDigest::compute`) and a batch at a time
//!   (`KeyDigest::compute_many`, which runs MD5 over short keys eight
//!   side by side).
//!
//! Every map gets 64 MiB (twice the L3 cache of the machine the README
//! figures come from); the hash map holds as many entries as Kafka's layout
//! at the same fill, with its capacity reserved up front. Before the
//! benchmarks run, the bytes per entry of every structure are printed,
//! measured with a counting allocator.

use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use lithify_offsetmap::{DigestKind, KeyDigest, Layout, OffsetMap};

/// Counts the bytes currently allocated, to measure bytes per entry.
struct CountingAlloc;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments, so
// `System`'s guarantees carry over; the counter has no effect on memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: AllocLayout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged; the caller upholds the contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
        ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` (through us) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: AllocLayout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
        ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

const MEMORY: usize = 64 << 20;
const LOOKUPS_PER_ITER: u64 = 1 << 16;
const FILLS: [(f64, &str); 3] = [(0.1, "10%"), (0.5, "50%"), (0.9, "90%")];
const DIGESTS: [(DigestKind, &str); 2] = [(DigestKind::Md5, "md5"), (DigestKind::Xxh3_128, "xxh3")];
const KEY_LENS: [usize; 2] = [16, 64];
/// Keys at or above this index are never inserted: lookups of them miss.
const ABSENT: u64 = 1 << 40;

/// Key `i` of length `len`: the index, then a fixed pattern.
#[inline]
fn make_key(buf: &mut [u8; 64], i: u64, len: usize) -> &[u8] {
    buf[..8].copy_from_slice(&i.to_le_bytes());
    &buf[..len]
}

fn key_buffer() -> [u8; 64] {
    let mut buf = [0u8; 64];
    for (j, b) in buf.iter_mut().enumerate() {
        *b = (j as u8).wrapping_mul(37).wrapping_add(11);
    }
    buf
}

/// The structures under test, behind one interface.
enum Subject {
    Map(OffsetMap),
    Std {
        map: HashMap<[u8; 16], u64>,
        digest: DigestKind,
    },
}

impl Subject {
    fn map(layout: Layout, digest: DigestKind) -> Self {
        Subject::Map(OffsetMap::with_layout(MEMORY, layout, digest).expect("64 MiB map"))
    }

    fn std(digest: DigestKind, entries: usize) -> Self {
        Subject::Std {
            map: HashMap::with_capacity(entries),
            digest,
        }
    }

    #[inline]
    fn put(&mut self, key: &[u8], offset: u64) {
        match self {
            Subject::Map(map) => map.put(key, offset).expect("below the fill level"),
            Subject::Std { map, digest } => {
                map.insert(*KeyDigest::compute(*digest, key).as_bytes(), offset);
            }
        }
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        match self {
            Subject::Map(map) => map.get(key),
            Subject::Std { map, digest } => map
                .get(KeyDigest::compute(*digest, key).as_bytes())
                .copied(),
        }
    }

    fn clear(&mut self) {
        match self {
            Subject::Map(map) => map.clear(),
            Subject::Std { map, .. } => map.clear(),
        }
    }

    fn fill(&mut self, entries: u64, len: usize) {
        let mut buf = key_buffer();
        for i in 0..entries {
            self.put(make_key(&mut buf, i, len), i);
        }
    }
}

/// The three structures of one comparison, with the entries each holds at
/// `fill`.
fn subjects(digest: DigestKind, fill: f64) -> Vec<(&'static str, Subject, u64)> {
    let kafka_entries = (Layout::Kafka.slots_for(MEMORY) as f64 * fill) as u64;
    let compact_entries = (Layout::Compact.slots_for(MEMORY) as f64 * fill) as u64;
    vec![
        (
            "kafka24",
            Subject::map(Layout::Kafka, digest),
            kafka_entries,
        ),
        (
            "compact20",
            Subject::map(Layout::Compact, digest),
            compact_entries,
        ),
        (
            "std_hashmap",
            Subject::std(digest, kafka_entries as usize),
            kafka_entries,
        ),
    ]
}

/// Prints the bytes per entry of every structure at each fill level.
fn report_bytes_per_entry() {
    eprintln!("bytes per entry (memory held / entries), {MEMORY} B maps:");
    for (fill, fill_name) in FILLS {
        let kafka = (Layout::Kafka.slots_for(MEMORY) as f64 * fill) as u64;
        let compact = (Layout::Compact.slots_for(MEMORY) as f64 * fill) as u64;
        for (name, layout, entries) in [
            ("kafka24", Layout::Kafka, kafka),
            ("compact20", Layout::Compact, compact),
        ] {
            let before = ALLOCATED.load(Ordering::Relaxed);
            let mut s = Subject::map(layout, DigestKind::Xxh3_128);
            let held = ALLOCATED.load(Ordering::Relaxed) - before;
            s.fill(entries, 16);
            eprintln!(
                "  {fill_name} {name:<12} {entries:>9} entries  {:>6.2} B/entry",
                held as f64 / entries as f64
            );
        }
        for (reserve, label) in [(true, "reserved"), (false, "grown")] {
            let before = ALLOCATED.load(Ordering::Relaxed);
            let mut s = Subject::std(
                DigestKind::Xxh3_128,
                if reserve { kafka as usize } else { 0 },
            );
            s.fill(kafka, 16);
            let held = ALLOCATED.load(Ordering::Relaxed) - before;
            eprintln!(
                "  {fill_name} std_hashmap  {kafka:>9} entries  {:>6.2} B/entry ({label})",
                held as f64 / kafka as f64
            );
        }
    }
}

fn puts(c: &mut Criterion) {
    report_bytes_per_entry();
    for (digest, digest_name) in DIGESTS {
        for len in KEY_LENS {
            for (fill, fill_name) in FILLS {
                let mut g =
                    c.benchmark_group(format!("offsetmap/put/{digest_name}/{len}B/{fill_name}"));
                g.sampling_mode(SamplingMode::Flat);
                g.sample_size(10);
                g.warm_up_time(Duration::from_millis(500));
                g.measurement_time(Duration::from_secs(2));
                for (name, mut subject, entries) in subjects(digest, fill) {
                    g.throughput(Throughput::Elements(entries));
                    g.bench_function(BenchmarkId::from_parameter(name), |b| {
                        b.iter_custom(|iters| {
                            let mut total = Duration::ZERO;
                            let mut buf = key_buffer();
                            for _ in 0..iters {
                                subject.clear();
                                let start = Instant::now();
                                for i in 0..entries {
                                    subject.put(make_key(&mut buf, i, len), i);
                                }
                                total += start.elapsed();
                            }
                            total
                        })
                    });
                }
                g.finish();
            }
        }
    }
}

fn gets(c: &mut Criterion) {
    for (digest, digest_name) in DIGESTS {
        for len in KEY_LENS {
            for (fill, fill_name) in FILLS {
                let filled: Vec<_> = subjects(digest, fill)
                    .into_iter()
                    .map(|(name, mut subject, entries)| {
                        subject.fill(entries, len);
                        (name, subject, entries)
                    })
                    .collect();
                for (op, miss) in [("get_hit", false), ("get_miss", true)] {
                    let mut g = c.benchmark_group(format!(
                        "offsetmap/{op}/{digest_name}/{len}B/{fill_name}"
                    ));
                    g.sample_size(10);
                    g.warm_up_time(Duration::from_millis(500));
                    g.measurement_time(Duration::from_secs(1));
                    g.throughput(Throughput::Elements(LOOKUPS_PER_ITER));
                    for (name, subject, entries) in &filled {
                        let mut next = 0u64;
                        g.bench_function(BenchmarkId::from_parameter(name), |b| {
                            let mut buf = key_buffer();
                            b.iter(|| {
                                let mut found = 0u64;
                                for _ in 0..LOOKUPS_PER_ITER {
                                    next = (next + 1) % entries;
                                    let i = if miss { ABSENT + next } else { next };
                                    found += u64::from(
                                        subject.get(make_key(&mut buf, i, len)).is_some(),
                                    );
                                }
                                assert_eq!(found, if miss { 0 } else { LOOKUPS_PER_ITER });
                                black_box(found)
                            })
                        });
                    }
                    g.finish();
                }
            }
        }
    }
}

fn digests(c: &mut Criterion) {
    const KEYS: usize = 1024;
    for len in KEY_LENS {
        let mut buf = key_buffer();
        let owned: Vec<Vec<u8>> = (0..KEYS as u64)
            .map(|i| make_key(&mut buf, i, len).to_vec())
            .collect();
        let keys: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let mut out = vec![KeyDigest::from_bytes([0; 16]); KEYS];
        let mut g = c.benchmark_group(format!("offsetmap/digest/{len}B"));
        g.throughput(Throughput::Elements(KEYS as u64));
        g.measurement_time(Duration::from_secs(2));
        for (kind, name) in DIGESTS {
            g.bench_function(format!("{name}/one_at_a_time"), |b| {
                b.iter(|| {
                    for (key, d) in keys.iter().zip(out.iter_mut()) {
                        *d = KeyDigest::compute(kind, key);
                    }
                    black_box(&out);
                })
            });
            g.bench_function(format!("{name}/many"), |b| {
                b.iter(|| {
                    KeyDigest::compute_many(kind, &keys, &mut out);
                    black_box(&out);
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, digests, puts, gets);
criterion_main!(benches);
