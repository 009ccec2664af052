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
    check.py generate DIR   writes DIR/from-python/<codec>.bin: batches built
                            by kafka-python's DefaultRecordBatchBuilder, in
                            every codec, from the specification that the Rust
                            test `reads_batches_written_by_kafka_python`
                            checks field by field.

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


def main(argv):
    commands = {"validate": validate, "validate-cleaned": validate_cleaned, "generate": generate}
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
