//! `lithify-wal` append throughput.
//!
//! * `wal_append/{100B,4KiB}/wal-os`: buffered `add_record` of 1 MiB worth
//!   of records into a new log on the OS file system, then one flush (no
//!   sync);
//! * `wal_append/{100B,4KiB}/plain-os`: the same payload bytes through a
//!   plain 64 KiB user-space buffer into a new file (the baseline for the
//!   ratio);
//! * `.../wal-null` and `.../plain-null`: the same into a file that discards
//!   its writes, which isolates the CPU cost of framing and checksums from
//!   the file system's (whose timings on a shared machine are noisy);
//! * `wal_sync/100B`: one `add_record` + `sync` (fdatasync) per iteration,
//!   i.e. synced appends per second.

use std::hint::black_box;
use std::io;
use std::path::Path;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lithify_vfs::{FileSystem, OsFs, WritableFile};
use lithify_wal::Writer;

const TOTAL: usize = 1 << 20;
const PLAIN_BUFFER: usize = 64 * 1024;

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + 7) as u8).collect()
}

/// A file that discards what is written to it.
#[derive(Debug, Default)]
struct NullFile {
    len: u64,
}

impl WritableFile for NullFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.len += black_box(data).len() as u64;
        Ok(())
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.len = self.len.max(offset + data.len() as u64);
        Ok(())
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.len = len;
        Ok(())
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn sync_data(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn sync_all(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn append(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let fs = OsFs;
    let mut g = c.benchmark_group("wal_append");
    for (name, size) in [("100B", 100usize), ("4KiB", 4096)] {
        let record = payload(size);
        let count = TOTAL / size;
        g.throughput(Throughput::Bytes((count * size) as u64));
        let wal_path = dir.path().join(format!("wal-{size}.log"));
        let plain_path = dir.path().join(format!("plain-{size}.bin"));
        g.bench_function(BenchmarkId::new(name, "wal-os"), |b| {
            b.iter(|| wal_write(fs.create(&wal_path).unwrap(), &wal_path, &record, count))
        });
        g.bench_function(BenchmarkId::new(name, "plain-os"), |b| {
            b.iter(|| plain_write(fs.create(&plain_path).unwrap(), &record, count))
        });
        g.bench_function(BenchmarkId::new(name, "wal-null"), |b| {
            b.iter(|| wal_write(Box::new(NullFile::default()), &wal_path, &record, count))
        });
        g.bench_function(BenchmarkId::new(name, "plain-null"), |b| {
            b.iter(|| plain_write(Box::new(NullFile::default()), &record, count))
        });
    }
    g.finish();
}

fn wal_write(file: Box<dyn WritableFile>, path: &Path, record: &[u8], count: usize) -> u64 {
    let mut w = Writer::new(file, path, 1).unwrap();
    for _ in 0..count {
        black_box(w.add_record(record).unwrap());
    }
    w.flush().unwrap();
    w.bytes_written()
}

/// The baseline: the same bytes, buffered in user space, no framing.
fn plain_write(mut file: Box<dyn WritableFile>, record: &[u8], count: usize) -> usize {
    let mut buf = Vec::with_capacity(PLAIN_BUFFER + record.len());
    for _ in 0..count {
        buf.extend_from_slice(black_box(record));
        if buf.len() >= PLAIN_BUFFER {
            file.append(&buf).unwrap();
            buf.clear();
        }
    }
    file.append(&buf).unwrap();
    count
}

fn synced(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let fs = OsFs;
    let path = dir.path().join("synced.log");
    let record = payload(100);
    let mut g = c.benchmark_group("wal_sync");
    g.throughput(Throughput::Elements(1));
    g.bench_function("100B", |b| {
        let mut w = Writer::new(fs.create(&path).unwrap(), &path, 1).unwrap();
        b.iter(|| {
            w.add_record(&record).unwrap();
            w.sync().unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, append, synced);
criterion_main!(benches);
