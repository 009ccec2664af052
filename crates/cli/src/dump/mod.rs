//! The file dumps: `dump-sst` (as RocksDB's `sst_dump`), `dump-wal` and
//! `dump-manifest` (as `ldb dump_wal` / `ldb manifest_dump`). Each reads
//! one file without opening the database, prints what it holds, checks
//! every checksum, and fails naming the file and byte offset when it finds
//! damage.

pub(crate) mod manifest;
pub(crate) mod sst;
pub(crate) mod wal;
