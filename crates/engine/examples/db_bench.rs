//! A db_bench-style benchmark of the engine on the real file system.
//!
//! ```text
//! cargo run --release -p lithify-engine --example db_bench -- \
//!     --num 2000000 --benchmarks fillrandom,readrandom,seekrandom
//! ```
//!
//! Defaults follow the comparison setup: 16-byte keys, 100-byte values, no
//! compression, WAL without fsync, 64 MiB memtable, 64 MiB block cache,
//! bloom filter 10 bits/key. `seekrandom` is a seek followed by
//! `--seek_nexts` (10) nexts. Prints ops/s per benchmark, the peak RSS and
//! the `lithify.stats` report.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use lithify_engine::{BlockCache, Db, Options, ReadOptions};

struct Args {
    num: u64,
    reads: Option<u64>,
    value_size: usize,
    benchmarks: Vec<String>,
    db: Option<PathBuf>,
    seek_nexts: usize,
    write_buffer_size: usize,
    cache_size: usize,
    use_existing_db: bool,
    stats: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        num: 2_000_000,
        reads: None,
        value_size: 100,
        benchmarks: vec![
            "fillrandom".into(),
            "readrandom".into(),
            "seekrandom".into(),
        ],
        db: None,
        seek_nexts: 10,
        write_buffer_size: 64 << 20,
        cache_size: 64 << 20,
        use_existing_db: false,
        stats: true,
    };
    for arg in std::env::args().skip(1) {
        let (k, v) = arg.split_once('=').unwrap_or((&arg, ""));
        let num = || v.parse::<u64>().expect("a number");
        match k {
            "--num" => a.num = num(),
            "--reads" => a.reads = Some(num()),
            "--value_size" => a.value_size = num() as usize,
            "--benchmarks" => a.benchmarks = v.split(',').map(str::to_owned).collect(),
            "--db" => a.db = Some(PathBuf::from(v)),
            "--seek_nexts" => a.seek_nexts = num() as usize,
            "--write_buffer_size" => a.write_buffer_size = num() as usize,
            "--cache_size" => a.cache_size = num() as usize,
            "--use_existing_db" => a.use_existing_db = v != "0" && v != "false",
            "--stats" => a.stats = v != "0" && v != "false",
            other => panic!("unknown flag {other} (flags take the form --name=value)"),
        }
    }
    a
}

/// SplitMix64: a fast, seedable generator (no dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

/// db_bench's 16-byte key: the number, zero-padded.
fn key(buf: &mut [u8; 16], n: u64) {
    let mut n = n;
    for b in buf.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// Peak resident set size from `/proc/self/status` (Linux). `/proc` files
/// report size 0, which `lithify_vfs::read_file` trusts, so this reads the
/// file directly: it is no database file.
#[allow(clippy::disallowed_methods)]
fn peak_rss_mb() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn report(name: &str, ops: u64, start: Instant, extra: &str) {
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{name:<12}: {:>10.3} micros/op {:>10.0} ops/sec; {secs:.2} s{extra}",
        secs * 1e6 / ops as f64,
        ops as f64 / secs
    );
}

fn main() {
    let args = parse_args();
    let tmp;
    let dir = match &args.db {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir().expect("a temporary directory");
            tmp.path().to_path_buf()
        }
    };
    let opts = Options {
        write_buffer_size: args.write_buffer_size,
        block_cache: Some(Arc::new(BlockCache::new(args.cache_size))),
        error_if_exists: !args.use_existing_db && args.db.is_some(),
        ..Options::default()
    };
    println!(
        "lithify db_bench: {} keys, 16-byte keys, {}-byte values, memtable {} MiB, cache {} MiB, dir {}",
        args.num,
        args.value_size,
        args.write_buffer_size >> 20,
        args.cache_size >> 20,
        dir.display()
    );
    let db = Db::open(&dir, opts).expect("open");
    let mut k = [0u8; 16];
    let value: Vec<u8> = (0..args.value_size)
        .map(|i| b'a' + (i % 26) as u8)
        .collect();
    let reads = args.reads.unwrap_or(args.num);
    for bench in &args.benchmarks {
        // Each benchmark draws its own key sequence (as db_bench seeds
        // each thread differently), so reads do not replay the fill order.
        let mut rng = Rng(0x5eed ^ lithify_base::xxh3_64(bench.as_bytes()));
        match bench.as_str() {
            "fillrandom" | "fillseq" => {
                let start = Instant::now();
                for i in 0..args.num {
                    let n = if bench == "fillseq" {
                        i
                    } else {
                        rng.below(args.num)
                    };
                    key(&mut k, n);
                    db.put(k, &value).expect("put");
                }
                report(bench, args.num, start, "");
            }
            "readrandom" => {
                let start = Instant::now();
                let mut found = 0u64;
                for _ in 0..reads {
                    key(&mut k, rng.below(args.num));
                    if db.get(k).expect("get").is_some() {
                        found += 1;
                    }
                }
                report(bench, reads, start, &format!(" ({found} of {reads} found)"));
            }
            "seekrandom" => {
                let start = Instant::now();
                let mut it = db.raw_iterator(&ReadOptions::default()).expect("iterator");
                let mut seen = 0u64;
                for _ in 0..reads {
                    key(&mut k, rng.below(args.num));
                    it.seek(k).expect("seek");
                    for _ in 0..args.seek_nexts {
                        if !it.valid() {
                            break;
                        }
                        seen += 1;
                        it.next().expect("next");
                    }
                }
                report(
                    bench,
                    reads,
                    start,
                    &format!(" (seek + {} nexts; {seen} entries)", args.seek_nexts),
                );
            }
            "waitforcompaction" => {
                let start = Instant::now();
                db.flush().expect("flush");
                report(bench, 1, start, "");
            }
            other => panic!("unknown benchmark {other}"),
        }
    }
    if let Some(mb) = peak_rss_mb() {
        println!("peak RSS: {mb:.1} MB");
    }
    if args.stats {
        println!("{}", db.property("lithify.stats").expect("stats"));
    }
}
