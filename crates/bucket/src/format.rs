//! The two object formats of a database's metadata in a bucket
//! (`docs/FORMATS.md`, "The MANIFEST in a bucket"): a CURRENT object and a
//! MANIFEST part. Public so that tools and the fuzz targets decode them
//! with the code the bucket uses.

use std::io;

use bytes::Bytes;

/// `LTMP`: the magic of a MANIFEST part's header.
pub const PART_MAGIC: [u8; 4] = *b"LTMP";
/// A MANIFEST part's header: magic (4), format version (1), reserved
/// zeros (3), writer epoch (u64 LE), CRC-32C (u32 LE) of the header's
/// first 16 bytes followed by the payload.
pub const PART_HEADER: usize = 20;
/// The part format version this build writes and reads.
pub const PART_VERSION: u8 = 1;
const CURRENT_FIRST_LINE: &str = "lithify CURRENT v1";

/// One CURRENT object: the MANIFEST it names and the epoch of the writer
/// that wrote it.
///
/// ```
/// use lithify_bucket::format::CurrentObject;
///
/// let c = CurrentObject { manifest: "MANIFEST-000012".into(), epoch: 3 };
/// let bytes = c.encode();
/// assert_eq!(
///     &bytes[..],
///     b"lithify CURRENT v1\nmanifest MANIFEST-000012\nepoch 3\ncrc32c 69a54c81\n"
/// );
/// assert_eq!(CurrentObject::decode("CURRENT/1", &bytes).unwrap(), c);
/// let mut bad = bytes.to_vec();
/// bad[40] ^= 1;
/// assert!(CurrentObject::decode("CURRENT/1", &bad).unwrap_err().to_string().contains("CURRENT/1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentObject {
    /// The MANIFEST's file name (`MANIFEST-NNNNNN`).
    pub manifest: String,
    /// The writer epoch.
    pub epoch: u64,
}

impl CurrentObject {
    /// The object's bytes.
    pub fn encode(&self) -> Bytes {
        let body = format!(
            "{CURRENT_FIRST_LINE}\nmanifest {}\nepoch {}\n",
            self.manifest, self.epoch
        );
        let crc = crc32c::crc32c(body.as_bytes());
        Bytes::from(format!("{body}crc32c {crc:08x}\n"))
    }

    /// Decodes the object `key`; anything but the exact form `encode`
    /// writes is refused, naming `key` and the offset.
    pub fn decode(key: &str, bytes: &[u8]) -> io::Result<Self> {
        let corrupt = |offset: usize, what: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("corrupt CURRENT object {key} at offset {offset}: {what}"),
            )
        };
        let text = std::str::from_utf8(bytes).map_err(|e| corrupt(e.valid_up_to(), "not text"))?;
        let mut offset = 0;
        let mut lines = Vec::with_capacity(4);
        for line in text.split_inclusive('\n') {
            let Some(line) = line.strip_suffix('\n') else {
                return Err(corrupt(offset + line.len(), "no final newline"));
            };
            lines.push((offset, line));
            offset += line.len() + 1;
        }
        let [(_, first), (m_at, manifest), (e_at, epoch), (c_at, crc)] = lines[..] else {
            return Err(corrupt(0, &format!("{} lines, not 4", lines.len())));
        };
        let stored = crc
            .strip_prefix("crc32c ")
            .filter(|h| h.len() == 8 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| corrupt(c_at, "not a checksum line"))?;
        if crc32c::crc32c(&bytes[..c_at]) != stored {
            return Err(corrupt(0, "checksum mismatch"));
        }
        if first != CURRENT_FIRST_LINE {
            return Err(corrupt(0, "not a lithify CURRENT object"));
        }
        let manifest = manifest
            .strip_prefix("manifest ")
            .filter(|m| {
                m.strip_prefix("MANIFEST-")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
            .ok_or_else(|| corrupt(m_at, "no manifest line"))?;
        let epoch = epoch
            .strip_prefix("epoch ")
            .filter(|e| {
                !e.is_empty()
                    && e.bytes().all(|b| b.is_ascii_digit())
                    && (e.len() == 1 || !e.starts_with('0'))
            })
            .and_then(|e| e.parse().ok())
            .ok_or_else(|| corrupt(e_at, "no epoch line"))?;
        Ok(CurrentObject {
            manifest: manifest.to_owned(),
            epoch,
        })
    }
}

/// One MANIFEST part: the bytes of one sync of the MANIFEST, and the
/// epoch of the writer that wrote them (an empty payload is a fence or a
/// tombstone).
///
/// ```
/// use lithify_bucket::format::ManifestPart;
///
/// let bytes = ManifestPart::encode(3, b"ab");
/// assert_eq!(bytes.len(), 22);
/// let part = ManifestPart::decode("MANIFEST-000004", "db/MANIFEST-000004/0", 0, &bytes).unwrap();
/// assert_eq!((part.epoch, &part.payload[..]), (3, &b"ab"[..]));
/// let mut bad = bytes.to_vec();
/// bad[8] ^= 1; // the epoch is checksummed too
/// assert!(ManifestPart::decode("MANIFEST-000004", "k", 0, &bad.into()).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestPart {
    /// The writer epoch.
    pub epoch: u64,
    /// The MANIFEST bytes this part holds.
    pub payload: Bytes,
}

impl ManifestPart {
    /// The part's bytes.
    pub fn encode(epoch: u64, payload: &[u8]) -> Bytes {
        let mut out = Vec::with_capacity(PART_HEADER + payload.len());
        out.extend_from_slice(&PART_MAGIC);
        out.push(PART_VERSION);
        out.extend_from_slice(&[0; 3]);
        out.extend_from_slice(&epoch.to_le_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&out), payload);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(payload);
        Bytes::from(out)
    }

    /// Decodes the part `key` of MANIFEST `file`, which starts at offset
    /// `base` of the MANIFEST; damage is refused naming both, the offset
    /// and the byte of the object.
    pub fn decode(file: &str, key: &str, base: u64, bytes: &Bytes) -> io::Result<Self> {
        let corrupt = |byte: usize, what: String| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("corrupt {file} at offset {base} (object {key}, byte {byte}): {what}"),
            )
        };
        if bytes.len() < PART_HEADER {
            return Err(corrupt(
                0,
                format!("{} bytes, shorter than the header", bytes.len()),
            ));
        }
        if bytes[..4] != PART_MAGIC {
            return Err(corrupt(0, "not a MANIFEST part (bad magic)".to_owned()));
        }
        if bytes[4] != PART_VERSION {
            return Err(corrupt(4, format!("unknown part version {}", bytes[4])));
        }
        if bytes[5..8] != [0; 3] {
            return Err(corrupt(5, "reserved bytes are not zero".to_owned()));
        }
        let epoch = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
        let stored = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes"));
        let payload = bytes.slice(PART_HEADER..);
        if crc32c::crc32c_append(crc32c::crc32c(&bytes[..16]), &payload) != stored {
            return Err(corrupt(16, "checksum mismatch".to_owned()));
        }
        Ok(ManifestPart { epoch, payload })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of docs/FORMATS.md.
    #[test]
    fn the_documented_bytes() {
        let part = ManifestPart::encode(3, b"ab");
        let hex: Vec<String> = part.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex.join(" "),
            "4c 54 4d 50 01 00 00 00 03 00 00 00 00 00 00 00 21 47 71 7a 61 62"
        );
    }

    #[test]
    fn every_flipped_byte_is_refused() {
        let current = CurrentObject {
            manifest: "MANIFEST-000012".into(),
            epoch: 7,
        }
        .encode();
        for i in 0..current.len() {
            for bit in 0..8 {
                let mut bad = current.to_vec();
                bad[i] ^= 1 << bit;
                assert!(
                    CurrentObject::decode("k", &bad).is_err(),
                    "byte {i} bit {bit}"
                );
            }
        }
        let part = ManifestPart::encode(9, b"records");
        for i in 0..part.len() {
            let mut bad = part.to_vec();
            bad[i] ^= 0x10;
            assert!(
                ManifestPart::decode("M", "k", 0, &bad.into()).is_err(),
                "byte {i}"
            );
        }
        for cut in 0..current.len() {
            assert!(
                CurrentObject::decode("k", &current[..cut]).is_err(),
                "cut at {cut}"
            );
        }
    }
}
