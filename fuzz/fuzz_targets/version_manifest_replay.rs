//! Replays arbitrary bytes as a MANIFEST: `VersionSet::recover` and
//! `manifest::dump` never panic, hang or allocate without bound, and a
//! successful recovery yields versions that satisfy their invariants.
//!
//! The first byte picks the shape: raw bytes as the whole file, or records
//! (length-prefixed chunks of the input) framed by the real log writer so
//! the fuzzer reaches edit decoding and replay validation.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use lithify_vfs::{FileSystem, MemFs};
use lithify_version::{VersionSet, VersionSetOptions, manifest};
use lithify_wal::Writer;

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    fs.create_dir_all(dir).unwrap();
    let path = dir.join("MANIFEST-000001");
    if control & 1 == 0 {
        let mut f = fs.create(&path).unwrap();
        f.append(rest).unwrap();
    } else {
        let mut w = Writer::new(fs.create(&path).unwrap(), &path, 1).unwrap();
        let mut input = rest;
        while let Some((&len, tail)) = input.split_first() {
            let n = usize::from(len).min(tail.len());
            w.add_record(&tail[..n]).unwrap();
            input = &tail[n..];
        }
        w.flush().unwrap();
    }
    manifest::set_current(&*fs, dir, 1).unwrap();
    if let Ok(set) = VersionSet::recover(fs.clone(), dir, VersionSetOptions::default()) {
        for (_, v) in set.current_all() {
            v.check_invariants().expect("recovered versions are valid");
        }
    }
    let mut out = String::new();
    let _ = manifest::dump(&*fs, &path, &mut out);
});
