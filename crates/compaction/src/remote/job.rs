//! [`RemoteJob`]: a compaction as a worker elsewhere receives it.

use std::ops::Range;
use std::sync::Arc;

use lithify_base::coding::{put_fixed64, put_length_prefixed, put_varint64};
use lithify_base::{Id, InternalKey, SeqNo};
use lithify_sstable::Compression;
use lithify_version::FileMetadata;

use super::codec::{Body, frame, put_bool, put_files, put_opt_string, put_u64s, unframe};
use crate::compaction::{Compaction, CompactionInputs, CompactionReason};
use crate::compaction_pri::CompactionPri;
use crate::error::Result;

/// The magic of an encoded job.
pub(crate) const JOB_MAGIC: &[u8; 4] = b"LTCJ";

/// The table-building options a job's outputs are written with (the
/// compaction's own compression replaces the table's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SstSettings {
    /// Target uncompressed size of a data block.
    pub block_size: usize,
    /// Keys between restart points.
    pub block_restart_interval: usize,
    /// Bloom filter bits per key (0: no filter).
    pub bloom_bits_per_key: f64,
    /// Whether block checksums are verified on read.
    pub verify_checksums: bool,
}

/// A compaction handed to another process: what
/// [`run_remote_job`](super::run_remote_job) needs besides the table files
/// and the named objects of its [`WorkerEnv`](super::WorkerEnv).
///
/// Trivial moves, flush plans, incremental majors and jobs that write or
/// relocate blob files are not remote jobs ([`RemoteJob::is_remotable`]
/// says which are; the engine checks blob files): the engine runs them
/// itself.
#[derive(Debug, Clone)]
pub struct RemoteJob {
    /// The job's id: unique within the database, as it is the first
    /// reserved output number (file numbers are never reused).
    pub id: u64,
    /// The database's identity, recorded in the outputs' properties.
    pub db_id: Id,
    /// The identity of the writer's open (its session), recorded with it:
    /// the outputs' unique ids are those of tables the writer wrote.
    pub session_id: Id,
    /// The compaction.
    pub compaction: Compaction,
    /// The live snapshots' sequence numbers, ascending.
    pub snapshots: Vec<SeqNo>,
    /// The file numbers the outputs take, in order; a job needing more
    /// fails.
    pub output_numbers: Range<u64>,
    /// The user comparator's name.
    pub comparator: String,
    /// The merge operator's name, if the table has one.
    pub merge_operator: Option<String>,
    /// The compaction filter's name, if the table has one.
    pub compaction_filter: Option<String>,
    /// How outputs are built.
    pub sst: SstSettings,
    /// Check that every input record is accounted for.
    pub verify_record_count: bool,
    /// Creation time of the outputs (seconds since the epoch).
    pub now: u64,
    /// The picker's file order (it shapes subcompactions).
    pub compaction_pri: CompactionPri,
    /// Whether a single delete meeting a delete is an error.
    pub enforce_single_delete_contracts: bool,
}

impl RemoteJob {
    /// Whether `c` can run elsewhere: not a trivial move (metadata only),
    /// not a flush plan (it reads memtables), not an incremental major
    /// compaction that leaves untouched files in place (the files it keeps
    /// are decided while it runs, and the edit must not delete them), and
    /// with inputs.
    pub fn is_remotable(c: &Compaction) -> bool {
        !c.trivial_move
            && c.memtable_range.is_none()
            && !c.reuse_untouched_files
            && c.num_input_files() > 0
    }

    /// How many output numbers to reserve for `c`: enough for its input
    /// bytes cut at the target size twice over (a cut can come early at a
    /// grandparent boundary or a subcompaction's end), plus one per
    /// subcompaction and per boundary.
    pub fn output_numbers_for(c: &Compaction) -> u64 {
        let target = c.target_output_file_size.max(1);
        let by_size = c.input_bytes().div_ceil(target) * 2;
        by_size
            + c.max_subcompactions.max(1) as u64
            + c.output_boundaries.len() as u64
            + c.ttl_cut_files.len() as u64
            + 4
    }

    /// The job's bytes (the `LTCJ` format).
    pub fn encode(&self) -> Vec<u8> {
        let c = &self.compaction;
        let mut b = Vec::with_capacity(256 + c.num_input_files() * 128);
        put_varint64(&mut b, self.id);
        b.extend_from_slice(self.db_id.as_bytes());
        b.extend_from_slice(self.session_id.as_bytes());
        put_varint64(&mut b, u64::from(c.table));
        b.push(reason_code(c.reason));
        put_varint64(&mut b, c.output_level as u64);
        put_varint64(&mut b, c.target_output_file_size);
        put_varint64(&mut b, c.max_output_file_size);
        put_varint64(&mut b, c.max_compaction_bytes);
        match c.compression {
            Compression::Zstd { level } => {
                b.push(1);
                put_varint64(&mut b, u64::from(level as u32));
            }
            // Every other kind is stored blocks.
            _ => b.push(0),
        }
        put_fixed64(&mut b, c.score.to_bits());
        put_bool(&mut b, c.manual);
        put_bool(&mut b, c.bottommost);
        put_bool(&mut b, c.dynamic_file_size);
        put_bool(&mut b, c.reuse_untouched_files);
        put_varint64(&mut b, c.max_subcompactions as u64);
        put_bool(&mut b, c.new_compact_cursor.is_some());
        if let Some((level, key)) = &c.new_compact_cursor {
            put_varint64(&mut b, *level as u64);
            put_length_prefixed(&mut b, key.encoded());
        }
        put_bool(&mut b, c.output_split_key.is_some());
        if let Some(key) = &c.output_split_key {
            put_length_prefixed(&mut b, key.encoded());
        }
        put_varint64(&mut b, c.output_boundaries.len() as u64);
        for k in &c.output_boundaries {
            put_length_prefixed(&mut b, k);
        }
        put_files(&mut b, c.input_files());
        put_files(&mut b, c.grandparents.iter().map(|f| (0, f)));
        put_varint64(&mut b, c.deeper_files.len() as u64);
        put_files(
            &mut b,
            c.deeper_files
                .iter()
                .enumerate()
                .flat_map(|(i, fs)| fs.iter().map(move |f| (i, f))),
        );
        let ttl: Vec<u64> = c.ttl_cut_files.iter().map(|f| f.number).collect();
        put_u64s(&mut b, &ttl);
        put_u64s(&mut b, &self.snapshots);
        put_varint64(&mut b, self.output_numbers.start);
        put_varint64(&mut b, self.output_numbers.end);
        put_length_prefixed(&mut b, self.comparator.as_bytes());
        put_opt_string(&mut b, self.merge_operator.as_deref());
        put_opt_string(&mut b, self.compaction_filter.as_deref());
        put_varint64(&mut b, self.sst.block_size as u64);
        put_varint64(&mut b, self.sst.block_restart_interval as u64);
        put_fixed64(&mut b, self.sst.bloom_bits_per_key.to_bits());
        put_bool(&mut b, self.sst.verify_checksums);
        put_bool(&mut b, self.verify_record_count);
        put_varint64(&mut b, self.now);
        b.push(pri_code(self.compaction_pri));
        put_bool(&mut b, self.enforce_single_delete_contracts);
        frame(JOB_MAGIC, &b)
    }

    /// Decodes a job, refusing anything [`encode`](Self::encode) could not
    /// have written; the error names the byte position.
    pub fn decode(bytes: &[u8]) -> Result<RemoteJob> {
        const WHAT: &str = "compaction job";
        let mut d = Body::new(unframe(bytes, JOB_MAGIC, WHAT)?, WHAT);
        let id = d.u64()?;
        let db_id = d.id()?;
        let session_id = d.id()?;
        let at = d.at();
        let table = u32::try_from(d.u64()?).or_else(|_| d.invalid(at, "table id too large"))?;
        let at = d.at();
        let reason = reason_from(d.byte()?).map_or_else(|| d.invalid(at, "unknown reason"), Ok)?;
        let output_level = d.usize()?;
        let target_output_file_size = d.u64()?;
        let max_output_file_size = d.u64()?;
        let max_compaction_bytes = d.u64()?;
        let at = d.at();
        let compression = match d.byte()? {
            0 => Compression::None,
            1 => {
                let at = d.at();
                let v = u32::try_from(d.u64()?).or_else(|_| d.invalid(at, "zstd level"))?;
                Compression::Zstd { level: v as i32 }
            }
            _ => return d.invalid(at, "unknown compression"),
        };
        let score = f64::from_bits(d.fixed64()?);
        let manual = d.bool()?;
        let bottommost = d.bool()?;
        let dynamic_file_size = d.bool()?;
        let reuse_untouched_files = d.bool()?;
        let max_subcompactions = d.usize()?;
        let new_compact_cursor = if d.bool()? {
            let level = d.usize()?;
            Some((level, key(&mut d)?))
        } else {
            None
        };
        let output_split_key = if d.bool()? { Some(key(&mut d)?) } else { None };
        let n = d.usize()?;
        let mut output_boundaries = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            output_boundaries.push(d.bytes()?.to_vec());
        }
        let at = d.at();
        let mut inputs: Vec<CompactionInputs> = Vec::new();
        for (level, f) in d.files()? {
            match inputs.last_mut() {
                Some(i) if i.level == level => i.files.push(Arc::new(f)),
                _ => {
                    if inputs.iter().any(|i| i.level == level) {
                        return d.invalid(at, format!("inputs of level {level} are not together"));
                    }
                    inputs.push(CompactionInputs {
                        level,
                        files: vec![Arc::new(f)],
                    });
                }
            }
        }
        if inputs.is_empty() {
            return d.invalid(at, "a job without input files");
        }
        let grandparents = d.files()?.into_iter().map(|(_, f)| Arc::new(f)).collect();
        let at = d.at();
        let levels = d.usize()?;
        if levels > 64 {
            return d.invalid(at, format!("{levels} deeper levels"));
        }
        let at = d.at();
        let mut deeper_files: Vec<Vec<Arc<FileMetadata>>> = vec![Vec::new(); levels];
        for (i, f) in d.files()? {
            let Some(l) = deeper_files.get_mut(i) else {
                return d.invalid(at, format!("deeper file on level index {i} of {levels}"));
            };
            l.push(Arc::new(f));
        }
        let at = d.at();
        let n = d.usize()?;
        let mut ttl_cut_files = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let number = d.u64()?;
            let Some(f) = inputs
                .iter()
                .flat_map(|i| &i.files)
                .find(|f| f.number == number)
            else {
                return d.invalid(at, format!("TTL cut file {number:06} is not an input"));
            };
            ttl_cut_files.push(Arc::clone(f));
        }
        let n = d.usize()?;
        let mut snapshots = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            snapshots.push(d.u64()?);
        }
        let at = d.at();
        let start = d.u64()?;
        let end = d.u64()?;
        if start > end || start != id {
            return d.invalid(at, "output numbers do not start at the job id");
        }
        let comparator = d.string()?;
        let merge_operator = d.opt_string()?;
        let compaction_filter = d.opt_string()?;
        let sst = SstSettings {
            block_size: d.usize()?,
            block_restart_interval: d.usize()?,
            bloom_bits_per_key: f64::from_bits(d.fixed64()?),
            verify_checksums: d.bool()?,
        };
        let verify_record_count = d.bool()?;
        let now = d.u64()?;
        let at = d.at();
        let compaction_pri =
            pri_from(d.byte()?).map_or_else(|| d.invalid(at, "unknown file order"), Ok)?;
        let enforce_single_delete_contracts = d.bool()?;
        d.finish()?;
        let job = RemoteJob {
            id,
            db_id,
            session_id,
            compaction: Compaction {
                table,
                reason,
                inputs,
                output_level,
                grandparents,
                target_output_file_size,
                max_output_file_size,
                max_compaction_bytes,
                compression,
                score,
                manual,
                bottommost,
                trivial_move: false,
                max_subcompactions,
                dynamic_file_size,
                deeper_files,
                new_compact_cursor,
                output_split_key,
                ttl_cut_files,
                output_boundaries,
                reuse_untouched_files,
                memtable_range: None,
            },
            snapshots,
            output_numbers: start..end,
            comparator,
            merge_operator,
            compaction_filter,
            sst,
            verify_record_count,
            now,
            compaction_pri,
            enforce_single_delete_contracts,
        };
        // Fields decoded but not kept (a grandparent's level, say) or
        // regrouped would encode differently: one encoding only.
        if job.encode() != bytes {
            return super::codec::fail(WHAT, 5, "fields not in their one encoding");
        }
        Ok(job)
    }
}

fn key(d: &mut Body<'_>) -> Result<InternalKey> {
    let at = d.at();
    let b = d.bytes()?;
    InternalKey::from_encoded(b.to_vec()).or_else(|e| d.invalid(at, format!("key: {e}")))
}

const REASONS: [CompactionReason; 15] = [
    CompactionReason::LevelL0FilesNum,
    CompactionReason::LevelMaxLevelSize,
    CompactionReason::FilesMarkedForCompaction,
    CompactionReason::BottommostFiles,
    CompactionReason::Ttl,
    CompactionReason::RoundRobinTtl,
    CompactionReason::PeriodicCompaction,
    CompactionReason::ManualCompaction,
    CompactionReason::CompactFiles,
    CompactionReason::RefitLevel,
    CompactionReason::Minor,
    CompactionReason::Major,
    CompactionReason::Reshape,
    CompactionReason::Flush,
    CompactionReason::ForcedBlobGc,
];

fn reason_code(r: CompactionReason) -> u8 {
    REASONS
        .iter()
        .position(|&x| x == r)
        .expect("every reason is listed") as u8
}

fn reason_from(b: u8) -> Option<CompactionReason> {
    REASONS.get(usize::from(b)).copied()
}

const PRIS: [CompactionPri; 5] = [
    CompactionPri::ByCompensatedSize,
    CompactionPri::OldestLargestSeqFirst,
    CompactionPri::OldestSmallestSeqFirst,
    CompactionPri::MinOverlappingRatio,
    CompactionPri::RoundRobin,
];

fn pri_code(p: CompactionPri) -> u8 {
    PRIS.iter()
        .position(|&x| x == p)
        .expect("every order is listed") as u8
}

fn pri_from(b: u8) -> Option<CompactionPri> {
    PRIS.get(usize::from(b)).copied()
}
