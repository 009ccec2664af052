#!/usr/bin/env python3
"""Independent check of lithify's Kafka log format with kafka-python.

    check.py validate DIR   every batch of every .log under DIR/from-rust/*/
                            must pass kafka-python's CRC check and decode to
                            the fields in the expected.json beside it; every
                            .index / .timeindex entry must point at a batch.
    check.py validate-cleaned DIR
                            the same checks on every log under
                            DIR/from-cleaner/*/: logs the log cleaner rewrote
                            (rebuilt batches, delete horizons, empty headers).
    check.py validate-cli DIR
                            every log directory under DIR/from-cli/ (written
                            by `lithify log produce`, cleaned by `lithify log
                            clean`): every batch through kafka-python, and
                            every .index / .timeindex through our own reader
                            of Kafka's DumpLogSegments rules, which must find
                            them trimmed (whole entries, no preallocated
                            zeros) with every entry at a batch boundary.
    check.py generate DIR   writes DIR/from-python/<codec>.bin: batches built
                            by kafka-python's DefaultRecordBatchBuilder, in
                            every codec, from the specification that the Rust
                            test `reads_batches_written_by_kafka_python`
                            checks field by field.
    check.py generate-txn DIR
                            writes DIR/from-python/txn.bin: transactional
                            data batches of three interleaved producers,
                            built by kafka-python, plain batches between them,
                            and the COMMIT/ABORT control batches a broker
                            writes, encoded here (kafka-python's builder has
                            no control flag) and read back by kafka-python.
    check.py validate-txn DIR
                            the logs the Rust test
                            `cleans_transactions_written_by_kafka_python`
                            wrote from txn.bin under DIR/from-python-txn/:
                            as appended (before), after one cleaning round
                            (cleaned), and after two more, the last past the
                            delete horizon (past-horizon). Every batch
                            through kafka-python; a read_committed reader
                            written here (aborted transactions from the
                            .txnindex files, control batches skipped, nothing
                            past the last stable offset) must see each key's
                            latest committed record at the same offset with
                            the same value before and after cleaning.

kafka-python decodes snappy with python-snappy (over cramjam), lz4 with the
lz4 package's frame API, zstd with zstandard; `cargo xtask kafka-compat`
installs them into a venv under target/.
"""

import json
import os
import struct
import sys

from kafka import codec as kafka_codec
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32c

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class Failure(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failure(what)


def need_codecs():
    for name, have in [
        ("snappy", kafka_codec.has_snappy()),
        ("lz4", kafka_codec.has_lz4()),
        ("zstd", kafka_codec.has_zstd()),
    ]:
        expect(have, "kafka-python cannot load its %s codec library" % name)


def hex_or_none(b):
    return None if b is None else bytes(b).hex()


def batches_of(log_bytes, where):
    records = MemoryRecords(log_bytes)
    out = []
    pos = 0
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        expect(isinstance(batch, DefaultRecordBatch), "%s@%d: not a v2 batch" % (where, pos))
        expect(batch.magic == 2, "%s@%d: magic %d" % (where, pos, batch.magic))
        expect(batch.validate_crc(), "%s@%d: CRC mismatch" % (where, pos))
        out.append((pos, batch))
        pos += batch.size_in_bytes
    expect(pos == len(log_bytes), "%s: %d trailing bytes after the last batch" % (where, len(log_bytes) - pos))
    return out


def strip_preallocated(data, entry_size):
    """The active segment's index files are preallocated with zeros."""
    used = len(data.rstrip(b"\0"))
    return data[: -(-used // entry_size) * entry_size]


def check_indexes(log_dir, name, base, positions, active):
    """positions: {file position: (last offset, max timestamp)} of the segment."""
    stem = os.path.join(log_dir, name[: -len(".log")])
    with open(stem + ".index", "rb") as f:
        index = f.read()
    with open(stem + ".timeindex", "rb") as f:
        timeindex = f.read()
    if active:
        index = strip_preallocated(index, 8)
        timeindex = strip_preallocated(timeindex, 12)
    expect(len(index) % 8 == 0, "%s.index: size %d" % (stem, len(index)))
    expect(len(timeindex) % 12 == 0, "%s.timeindex: size %d" % (stem, len(timeindex)))
    prev = -1
    for i in range(0, len(index), 8):
        rel, pos = struct.unpack_from(">ii", index, i)
        expect(rel > prev, "%s.index entry %d: offsets not increasing" % (stem, i // 8))
        expect(pos in positions, "%s.index entry %d: position %d is not a batch start" % (stem, i // 8, pos))
        expect(positions[pos][0] == base + rel, "%s.index entry %d: batch at %d ends at %d, not %d"
               % (stem, i // 8, pos, positions[pos][0], base + rel))
        prev = rel
    last_offsets = {v[0] for v in positions.values()}
    prev_ts = -1
    for i in range(0, len(timeindex), 12):
        ts, rel = struct.unpack_from(">qi", timeindex, i)
        expect(ts > prev_ts, "%s.timeindex entry %d: timestamps not increasing" % (stem, i // 12))
        expect(base + rel in last_offsets, "%s.timeindex entry %d: offset %d ends no batch" % (stem, i // 12, base + rel))
        prev_ts = ts
    if positions and not active:
        # An inactive segment's last time-index entry is its max timestamp.
        max_ts = max(v[1] for v in positions.values())
        expect(prev_ts == max_ts, "%s.timeindex: last entry %d is not the segment's max timestamp %d"
               % (stem, prev_ts, max_ts))
    return len(index) // 8 + len(timeindex) // 12


def validate_log_dir(log_dir):
    with open(os.path.join(log_dir, "expected.json")) as f:
        expected = json.load(f)["batches"]
    got = []
    index_entries = 0
    names = sorted(n for n in os.listdir(log_dir) if n.endswith(".log"))
    for name in names:
        base = int(name.split(".")[0])
        with open(os.path.join(log_dir, name), "rb") as f:
            data = f.read()
        batches = batches_of(data, os.path.join(log_dir, name))
        positions = {}
        for pos, batch in batches:
            expect(batch.base_offset >= base, "%s@%d: batch below the segment's base" % (name, pos))
            positions[pos] = (batch.last_offset, batch.max_timestamp)
            got.append((name, pos, batch))
        index_entries += check_indexes(log_dir, name, base, positions, name == names[-1])
    expect(len(got) == len(expected), "%s: %d batches, expected %d" % (log_dir, len(got), len(expected)))
    n_records = 0
    for (name, pos, batch), want in zip(got, expected):
        where = "%s/%s@%d" % (log_dir, name, pos)
        for field in ["base_offset", "last_offset", "attributes", "first_timestamp", "max_timestamp",
                      "producer_id", "producer_epoch", "base_sequence", "crc"]:
            have = getattr(batch, field)
            expect(have == want[field], "%s: %s is %r, expected %r" % (where, field, have, want[field]))
        records = list(batch)
        expect(len(records) == batch.records_count == len(want["records"]),
               "%s: %d records, expected %d" % (where, len(records), len(want["records"])))
        for r, (offset, ts, key, value, headers) in zip(records, want["records"]):
            have = (r.offset, r.timestamp, hex_or_none(r.key), hex_or_none(r.value),
                    [[k, hex_or_none(v)] for k, v in r.headers])
            expect(have == (offset, ts, key, value, headers), "%s: record %r, expected %r"
                   % (where, have, (offset, ts, key, value, headers)))
            if batch.is_control_batch:
                expect(r.type == 1 and r.commit, "%s: control record is not a COMMIT" % where)
        n_records += len(records)
    return len(got), n_records, index_entries


def validate(root):
    need_codecs()
    base = os.path.join(root, "from-rust")
    dirs = sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d)))
    expect(len(dirs) == len(CODECS), "expected one log per codec in %s, found %r" % (base, dirs))
    total = [0, 0, 0]
    for d in dirs:
        b, r, i = validate_log_dir(os.path.join(base, d))
        print("kafka-compat: %s: %d batches, %d records, %d index entries valid" % (d, b, r, i))
        total = [total[0] + b, total[1] + r, total[2] + i]
    print("kafka-compat: kafka-python validated %d batches and %d records written by lithify" % tuple(total[:2]))


def validate_cleaned(root):
    need_codecs()
    base = os.path.join(root, "from-cleaner")
    dirs = sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d)))
    expect(len(dirs) >= 2 * len(CODECS), "expected two cleaned logs per codec in %s, found %r" % (base, dirs))
    total = [0, 0, 0, 0, 0]
    for d in dirs:
        b, r, i = validate_log_dir(os.path.join(base, d))
        horizons = empty = 0
        for name in sorted(n for n in os.listdir(os.path.join(base, d)) if n.endswith(".log")):
            with open(os.path.join(base, d, name), "rb") as f:
                for _, batch in batches_of(f.read(), name):
                    horizons += 1 if batch.attributes & 0x40 else 0
                    empty += 1 if batch.records_count == 0 else 0
        print("kafka-compat: cleaned %s: %d batches (%d with a delete horizon, %d empty headers), %d records, %d index entries valid"
              % (d, b, horizons, empty, r, i))
        total = [total[0] + b, total[1] + r, total[2] + i, total[3] + horizons, total[4] + empty]
    expect(total[3] > 0, "no cleaned batch carries a delete horizon")
    expect(total[4] > 0, "no cleaned batch is an empty header")
    print("kafka-compat: kafka-python validated %d batches (%d with a delete horizon, %d empty headers) and %d records written by the cleaner"
          % (total[0], total[3], total[4], total[1]))


def dump_log_segments_indexes(log_dir, name, batches):
    """Reads the segment's .index and .timeindex as Kafka's DumpLogSegments
    does (core/src/main/scala/kafka/tools/DumpLogSegments.scala, dumpIndex
    and dumpTimeIndex), and fails where it would report a problem, or where
    it would stop early at a zero entry: an index Kafka left after a clean
    shutdown is trimmed to its entries (AbstractIndex.trimToValidSize).

    batches: [(position, batch)] of the segment's .log, from kafka-python.
    Returns the number of entries read."""
    base = int(name.split(".")[0])
    stem = os.path.join(log_dir, name[: -len(".log")])
    by_position = {pos: b for pos, b in batches}
    with open(stem + ".index", "rb") as f:
        index = f.read()
    with open(stem + ".timeindex", "rb") as f:
        timeindex = f.read()
    # A read-only OffsetIndex/TimeIndex has length / entrySize entries.
    expect(len(index) % 8 == 0, "%s.index: %d bytes, not whole 8-byte entries" % (stem, len(index)))
    expect(len(timeindex) % 12 == 0, "%s.timeindex: %d bytes, not whole 12-byte entries" % (stem, len(timeindex)))
    offsets = []
    for i in range(len(index) // 8):
        rel, pos = struct.unpack_from(">ii", index, i * 8)
        # DumpLogSegments stops at a zero entry: "since it is a sparse file,
        # in the event of a crash there may be many zero entries".
        expect(not (rel == 0 and i > 0), "%s.index entry %d: a zero entry (preallocated, not trimmed)" % (stem, i))
        # fileRecords.slice(entry.position, ...).batches.next().lastOffset
        expect(pos in by_position, "%s.index entry %d: position %d is not a batch boundary" % (stem, i, pos))
        last = by_position[pos].last_offset
        expect(last == base + rel, "%s.index entry %d: index offset %d, log offset %d" % (stem, i, base + rel, last))
        expect(not offsets or base + rel > offsets[-1][0], "%s.index entry %d: offsets not increasing" % (stem, i))
        offsets.append((base + rel, pos))
    prev_ts = -1
    for i in range(len(timeindex) // 12):
        ts, rel = struct.unpack_from(">qi", timeindex, i * 12)
        expect(not (rel == 0 and i > 0), "%s.timeindex entry %d: a zero entry (preallocated, not trimmed)" % (stem, i))
        offset = base + rel
        # position = index.lookup(entry.offset).position: the last entry
        # with an offset <= it, else the segment's start.
        position = 0
        for o, p in offsets:
            if o <= offset:
                position = p
        found = None
        for pos, batch in batches:
            if pos >= position and batch.last_offset >= offset:
                found = batch
                break
        expect(found is not None, "%s.timeindex entry %d: offset %d not found in the log" % (stem, i, offset))
        expect(found.last_offset == offset, "%s.timeindex entry %d: offset %d is not a batch's last offset (%d)"
               % (stem, i, offset, found.last_offset))
        max_ts = max([r.timestamp for r in found] or [-1])
        expect(max_ts == ts, "%s.timeindex entry %d: timestamp %d, the batch's max record timestamp is %d"
               % (stem, i, ts, max_ts))
        expect(prev_ts < ts, "%s.timeindex entry %d: timestamp %d not after %d" % (stem, i, ts, prev_ts))
        prev_ts = ts
    return len(index) // 8 + len(timeindex) // 12


def read_offset_checkpoint(path):
    """Kafka's CheckpointFile.read for an OffsetCheckpointFile."""
    with open(path, "r", encoding="utf-8") as f:
        lines = f.read().split("\n")
    expect(lines[0] == "0", "%s: version %r" % (path, lines[0]))
    n = int(lines[1])
    entries = {}
    for line in lines[2:2 + n]:
        topic, partition, offset = line.split()
        entries["%s-%s" % (topic, partition)] = int(offset)
    expect(len(entries) == n and all(l == "" for l in lines[2 + n:]), "%s: %d entries expected" % (path, n))
    return entries


def validate_cli(root):
    need_codecs()
    base = os.path.join(root, "from-cli")
    dirs = sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d)))
    expect(len(dirs) >= len(CODECS), "expected a log per codec in %s, found %r" % (base, dirs))
    cleaned = read_offset_checkpoint(os.path.join(base, "cleaner-offset-checkpoint"))
    flushed = read_offset_checkpoint(os.path.join(base, "recovery-point-offset-checkpoint"))
    totals = [0, 0, 0]
    for d in dirs:
        log_dir = os.path.join(base, d)
        names = sorted(n for n in os.listdir(log_dir) if n.endswith(".log"))
        end = None
        n_batches = n_entries = 0
        for name in names:
            with open(os.path.join(log_dir, name), "rb") as f:
                batches = batches_of(f.read(), os.path.join(log_dir, name))
            n_entries += dump_log_segments_indexes(log_dir, name, batches)
            n_batches += len(batches)
            if batches:
                end = batches[-1][1].last_offset + 1
        expect(d in cleaned, "%s: no cleaner checkpoint" % d)
        expect(flushed.get(d) == end, "%s: recovery point %r, log end offset %r" % (d, flushed.get(d), end))
        print("kafka-compat: cli %s: %d segments, %d batches, %d index entries, all trimmed and at batch boundaries"
              % (d, len(names), n_batches, n_entries))
        totals = [totals[0] + len(names), totals[1] + n_batches, totals[2] + n_entries]
    expect(totals[2] > 0, "no index entry was checked")
    print("kafka-compat: %d segments written by lithify log produce / clean: %d batches valid, %d index entries read by DumpLogSegments' rules"
          % tuple(totals))


def python_spec(codec_name, j):
    """Mirror of `python_spec` in tests/kafka_compat.rs."""
    out = []
    for i in range(3 + j * 4):
        key = None if i % 7 == 6 else ("py-%d-%d" % (j, i % 5)).encode()
        value = None if i % 4 == 1 else (("%s:%d:%d;" % (codec_name, j, i)) * 8).encode()
        headers = [("h%d" % i, bytes([i]) * 3), ("n", None)] if i % 2 == 0 else []
        out.append((i, 1_600_000_000_000 + j * 1000 + i * 3, key, value, headers))
    return out


def set_base_offset(buf, base_offset):
    # baseOffset is outside the CRC; kafka-python's builder writes 0.
    struct.pack_into(">q", buf, 0, base_offset)


def generate(root):
    need_codecs()
    out_dir = os.path.join(root, "from-python")
    os.makedirs(out_dir, exist_ok=True)
    for codec_id, name in CODECS.items():
        data = bytearray()
        for j in range(3):
            producer = (77, 2, 10, True) if j == 1 else (-1, -1, -1, False)
            b = DefaultRecordBatchBuilder(magic=2, compression_type=codec_id, is_transactional=producer[3],
                                          producer_id=producer[0], producer_epoch=producer[1],
                                          base_sequence=producer[2], batch_size=1 << 20)
            for delta, ts, key, value, headers in python_spec(name, j):
                expect(b.append(delta, timestamp=ts, key=key, value=value, headers=headers) is not None,
                       "builder refused a record")
            buf = bytearray(b.build())
            set_base_offset(buf, 1000 * j)
            batch = DefaultRecordBatch(bytes(buf))
            expect(batch.compression_type == codec_id,
                   "kafka-python stored the %s batch uncompressed (not smaller)" % name)
            expect(batch.validate_crc(), "kafka-python built a batch with a bad CRC")
            expect(calc_crc32c(bytes(buf[21:])) == batch.crc, "CRC over bytes 21..")
            data += buf
        with open(os.path.join(out_dir, name + ".bin"), "wb") as f:
            f.write(data)
    print("kafka-compat: kafka-python wrote 3 batches in each of %d codecs to %s" % (len(CODECS), out_dir))


def marker_batch(producer_id, epoch, commit, timestamp, coordinator_epoch=0):
    """A COMMIT/ABORT control batch as a broker writes it: kafka-python's
    builder for the record, then the control bit (0x20) set in the
    attributes and the CRC-32C recomputed (bytes 21.. , stored at 17)."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                  producer_id=producer_id, producer_epoch=epoch, base_sequence=-1,
                                  batch_size=1 << 10)
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    expect(b.append(0, timestamp=timestamp, key=key, value=value, headers=[]) is not None, "marker refused")
    buf = bytearray(b.build())
    attributes = struct.unpack_from(">h", buf, 21)[0] | 0x20
    struct.pack_into(">h", buf, 21, attributes)
    struct.pack_into(">I", buf, 17, calc_crc32c(bytes(buf[21:])))
    batch = DefaultRecordBatch(bytes(buf))
    expect(batch.validate_crc() and batch.is_control_batch and batch.is_transactional,
           "kafka-python does not read our marker as a transactional control batch")
    records = list(batch)
    expect(len(records) == 1 and records[0].commit == commit and records[0].abort != commit,
           "kafka-python reads our marker as %r" % records)
    return buf


def generate_txn(root):
    """Three transactional producers (ids 11..13) interleaved with plain
    batches; transactions of 1..3 batches, one in four aborted; keys from a
    small set, some tombstones; codecs mixed. Every transaction ends."""
    need_codecs()
    out_dir = os.path.join(root, "from-python")
    os.makedirs(out_dir, exist_ok=True)
    x = 0x2545F4914F6CDD1D

    def rand(n):
        nonlocal x
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        return (x >> 16) % n

    data = bytearray()
    left = {11: 0, 12: 0, 13: 0}
    seq = {11: 0, 12: 0, 13: 0}
    ts = 1_600_000_000_000
    counts = {"data": 0, "commit": 0, "abort": 0, "plain": 0}
    for i in range(240):
        ts += 7
        pid = [11, 12, 13, -1][rand(4)]
        n = 1 + rand(3)
        records = []
        for j in range(n):
            key = ("tx-key-%d" % rand(15)).encode()
            value = None if rand(8) == 0 else ("py-%d-%d-%d" % (i, j, pid)).encode() * (1 + rand(3))
            records.append((j, ts + j, key, value))
        if pid < 0:
            b = DefaultRecordBatchBuilder(magic=2, compression_type=rand(5), is_transactional=False,
                                          producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
            counts["plain"] += 1
        else:
            if left[pid] == 0:
                left[pid] = 1 + rand(3)
            b = DefaultRecordBatchBuilder(magic=2, compression_type=rand(5), is_transactional=True,
                                          producer_id=pid, producer_epoch=0, base_sequence=seq[pid],
                                          batch_size=1 << 20)
            seq[pid] += n
            counts["data"] += 1
        for delta, t, key, value in records:
            expect(b.append(delta, timestamp=t, key=key, value=value, headers=[]) is not None, "builder refused a record")
        buf = bytearray(b.build())
        expect(DefaultRecordBatch(bytes(buf)).validate_crc(), "kafka-python built a bad batch")
        data += buf
        if pid >= 0:
            left[pid] -= 1
            if left[pid] == 0:
                commit = rand(4) != 0
                counts["commit" if commit else "abort"] += 1
                data += marker_batch(pid, 0, commit, ts + 5)
    for pid in sorted(left):
        if left[pid] > 0:
            counts["abort"] += 1
            data += marker_batch(pid, 0, False, ts + 9)
    with open(os.path.join(out_dir, "txn.bin"), "wb") as f:
        f.write(data)
    print("kafka-compat: kafka-python wrote %d transactional and %d plain batches, %d COMMIT and %d ABORT markers to %s"
          % (counts["data"], counts["plain"], counts["commit"], counts["abort"], out_dir))


def read_txn_log(log_dir):
    """Every batch of the log with its records (kafka-python, CRC checked;
    a kafka-python batch is iterated once) and every .txnindex entry (34
    bytes: version, producer id, first, last offset, last stable
    offset)."""
    batches = []
    aborted = []
    for name in sorted(n for n in os.listdir(log_dir) if n.endswith(".log")):
        with open(os.path.join(log_dir, name), "rb") as f:
            batches += [(b, list(b)) for _, b in batches_of(f.read(), os.path.join(log_dir, name))]
        index = os.path.join(log_dir, name[: -len(".log")] + ".txnindex")
        if os.path.exists(index):
            with open(index, "rb") as f:
                raw = f.read()
            expect(len(raw) % 34 == 0, "%s: %d bytes" % (index, len(raw)))
            for i in range(0, len(raw), 34):
                version, pid, first, last, lso = struct.unpack_from(">hqqqq", raw, i)
                expect(version == 0 and first <= last, "%s: entry %d" % (index, i // 34))
                aborted.append((first, pid, last, lso))
    return batches, aborted


def read_committed(log_dir):
    """What a read_committed Kafka consumer reads: no record at or after the
    last stable offset, none of a transaction a .txnindex entry aborts
    (Fetcher's abortedProducerIds bookkeeping), no control record."""
    batches, aborted = read_txn_log(log_dir)
    open_first = {}
    markers = 0
    for b, records in batches:
        if b.producer_id >= 0:
            if b.is_control_batch:
                open_first.pop(b.producer_id, None)
                markers += len(records)
            elif b.is_transactional:
                open_first.setdefault(b.producer_id, b.base_offset)
    stable = min(open_first.values(), default=1 << 62)
    aborted.sort()
    aborting = set()
    i = 0
    out = []
    for b, records in batches:
        if b.base_offset >= stable:
            break
        if b.producer_id >= 0:
            while i < len(aborted) and aborted[i][0] <= b.last_offset:
                aborting.add(aborted[i][1])
                i += 1
            if b.is_control_batch:
                if records and records[0].abort:
                    aborting.discard(b.producer_id)
                continue
            if b.is_transactional and b.producer_id in aborting:
                continue
        if b.is_control_batch:
            continue
        for r in records:
            out.append((r.offset, hex_or_none(r.key), hex_or_none(r.value)))
    return out, markers, len(aborted)


def validate_txn(root):
    need_codecs()
    base = os.path.join(root, "from-python-txn")
    views = {}
    for name in ["before", "cleaned", "past-horizon"]:
        log_dir = os.path.join(base, name, "txns-0")
        views[name] = read_committed(log_dir)
        records, markers, entries = views[name]
        print("kafka-compat: txn %s: kafka-python read %d committed records, %d markers, %d .txnindex entries"
              % (name, len(records), markers, entries))
    before = views["before"][0]
    expect(len(before) > 0 and views["before"][2] > 0, "the log has no committed records or no aborted transaction")
    latest = {}
    for offset, key, value in before:
        latest[key] = (offset, key, value)
    want = sorted(latest.values())
    expect(views["cleaned"][0] == want,
           "after one round the read_committed view is not each key's latest committed record: %r != %r"
           % (views["cleaned"][0][:5], want[:5]))
    # Past the horizon the tombstones go, and the markers of transactions
    # without data left.
    want2 = [r for r in want if r[2] is not None]
    late = views["past-horizon"]
    expect(late[0] == want2, "past the horizon: %r != %r" % (late[0][:5], want2[:5]))
    expect(late[1] < views["cleaned"][1], "no marker was removed past the horizon")
    print("kafka-compat: the read_committed view of %d records survives cleaning (%d records, then %d without tombstones; markers %d -> %d -> %d)"
          % (len(before), len(want), len(want2), views["before"][1], views["cleaned"][1], late[1]))


def main(argv):
    commands = {"validate": validate, "validate-cleaned": validate_cleaned, "validate-cli": validate_cli,
                "generate": generate, "generate-txn": generate_txn, "validate-txn": validate_txn}
    if len(argv) != 3 or argv[1] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        commands[argv[1]](argv[2])
    except Failure as e:
        print("kafka-compat: FAILED: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
