//! Many readers share one table and one small block cache.

mod common;

use std::sync::Arc;
use std::thread;

use lithify_base::InternalIterator;
use lithify_sstable::{BlockCache, Compression, SstIter, SstOptions, SstReader};
use lithify_vfs::MemFs;

use common::{build, open, scan_forward};

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>() {}

#[test]
fn tables_and_iterators_cross_threads() {
    assert_send_sync::<SstReader>();
    assert_send_sync::<BlockCache>();
    assert_send::<SstIter>();
}

#[test]
fn concurrent_readers_see_the_same_table() {
    let fs = MemFs::new();
    let opts = SstOptions::default()
        .block_size(512)
        .compression(Compression::Zstd { level: 1 });
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..3000u32)
        .map(|i| {
            (
                format!("key{i:06}").into_bytes(),
                format!("value{}", i % 97).repeat(3).into_bytes(),
            )
        })
        .collect();
    build(&fs, "/c.sst", &opts, &entries, &[]);
    // Room for a few dozen blocks: readers keep evicting each other's.
    let cache = Arc::new(BlockCache::with_shard_bits(32 << 10, 2));
    let table = open(&fs, "/c.sst", &opts, Some(cache.clone())).unwrap();
    let entries = Arc::new(entries);
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let table = Arc::clone(&table);
            let entries = Arc::clone(&entries);
            thread::spawn(move || {
                let mut x = t.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                for _ in 0..2000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let (k, v) = &entries[(x % entries.len() as u64) as usize];
                    assert_eq!(table.get(k).unwrap().as_deref(), Some(&v[..]));
                }
                let mut it = table.iter();
                assert_eq!(scan_forward(&mut it).unwrap(), *entries);
                it.read_stats()
            })
        })
        .collect();
    let mut blocks = 0;
    for h in handles {
        let stats = h.join().unwrap();
        assert!(stats.blocks_read() > 0);
        blocks += stats.blocks_read();
    }
    let cs = cache.stats();
    assert!(cs.usage <= cs.capacity);
    assert!(cs.evictions > 0 && cs.hits > 0);
    // The scans' block reads went through the cache (gets too).
    assert!(cs.hits + cs.misses >= blocks);
}

#[test]
fn an_iterator_outlives_the_callers_handle() {
    let fs = MemFs::new();
    let opts = SstOptions::default();
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..100u32)
        .map(|i| (format!("{i:03}").into_bytes(), vec![7; 50]))
        .collect();
    build(&fs, "/o.sst", &opts, &entries, &[]);
    let mut it = {
        let table = open(&fs, "/o.sst", &opts, None).unwrap();
        table.iter()
        // `table` is dropped here; the iterator keeps it alive.
    };
    assert_eq!(scan_forward(&mut it).unwrap(), entries);
    let first = {
        it.first().unwrap();
        it.value_bytes()
    };
    drop(it);
    // Values are slices of the block and outlive the iterator too.
    assert_eq!(&first[..], &[7; 50][..]);
}
