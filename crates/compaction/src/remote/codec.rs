//! The framing both remote-compaction objects share: four magic bytes, a
//! version byte, the body, and a CRC-32C (little-endian) over everything
//! before it. Decoding is strict: a wrong magic, version or checksum, a
//! body that ends early or has bytes left over, is refused with the byte
//! position it was found at.

use std::sync::Arc;

use lithify_base::DecodeError;
use lithify_base::coding::{Decoder, put_length_prefixed, put_varint64};
use lithify_version::{FileMetadata, VersionEdit};

use crate::error::{RemoteFormatSnafu, Result};

/// The format version both objects are written in.
pub(crate) const VERSION: u8 = 1;
const HEADER: usize = 5;
const TRAILER: usize = 4;

/// `magic`, the version, `body`, and the checksum.
pub(crate) fn frame(magic: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + body.len() + TRAILER);
    out.extend_from_slice(magic);
    out.push(VERSION);
    out.extend_from_slice(body);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The body of a framed object, checked.
pub(crate) fn unframe<'a>(
    bytes: &'a [u8],
    magic: &[u8; 4],
    what: &'static str,
) -> Result<&'a [u8]> {
    if bytes.len() < HEADER + TRAILER {
        return fail(
            what,
            bytes.len(),
            "object shorter than its header and checksum",
        );
    }
    if &bytes[..4] != magic {
        return fail(what, 0, "wrong magic");
    }
    if bytes[4] != VERSION {
        return fail(what, 4, format!("unknown version {}", bytes[4]));
    }
    let (covered, stored) = bytes.split_at(bytes.len() - TRAILER);
    let stored = u32::from_le_bytes(stored.try_into().expect("four bytes"));
    let actual = crc32c::crc32c(covered);
    if stored != actual {
        return fail(
            what,
            covered.len(),
            format!("checksum mismatch: stored {stored:08x}, computed {actual:08x}"),
        );
    }
    Ok(&covered[HEADER..])
}

pub(crate) fn fail<T>(what: &'static str, at: usize, message: impl Into<String>) -> Result<T> {
    RemoteFormatSnafu {
        what,
        at,
        message: message.into(),
    }
    .fail()
}

/// A body reader whose errors name the object and the absolute position.
pub(crate) struct Body<'a> {
    pub(crate) d: Decoder<'a>,
    what: &'static str,
}

impl<'a> Body<'a> {
    pub(crate) fn new(body: &'a [u8], what: &'static str) -> Self {
        Body {
            d: Decoder::new(body),
            what,
        }
    }

    fn err<T>(&self, e: DecodeError) -> Result<T> {
        fail(self.what, e.position() + HEADER, e.to_string())
    }

    /// The absolute position of the next byte.
    pub(crate) fn at(&self) -> usize {
        self.d.position() + HEADER
    }

    pub(crate) fn invalid<T>(&self, at: usize, message: impl Into<String>) -> Result<T> {
        fail(self.what, at, message)
    }

    pub(crate) fn u64(&mut self) -> Result<u64> {
        self.d.varint64().or_else(|e| self.err(e))
    }

    pub(crate) fn usize(&mut self) -> Result<usize> {
        let at = self.at();
        let v = self.u64()?;
        usize::try_from(v).or_else(|_| self.invalid(at, "count too large"))
    }

    pub(crate) fn fixed64(&mut self) -> Result<u64> {
        self.d.fixed64().or_else(|e| self.err(e))
    }

    pub(crate) fn byte(&mut self) -> Result<u8> {
        self.d.u8().or_else(|e| self.err(e))
    }

    pub(crate) fn bool(&mut self) -> Result<bool> {
        let at = self.at();
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            b => self.invalid(at, format!("flag byte {b:#04x} is neither 0 nor 1")),
        }
    }

    pub(crate) fn bytes(&mut self) -> Result<&'a [u8]> {
        self.d.length_prefixed().or_else(|e| self.err(e))
    }

    pub(crate) fn string(&mut self) -> Result<String> {
        let at = self.at();
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).or_else(|_| self.invalid(at, "name is not UTF-8"))
    }

    pub(crate) fn opt_string(&mut self) -> Result<Option<String>> {
        if self.bool()? {
            self.string().map(Some)
        } else {
            Ok(None)
        }
    }

    pub(crate) fn id(&mut self) -> Result<lithify_base::Id> {
        let b = self.d.bytes(16, "identity").or_else(|e| self.err(e))?;
        Ok(lithify_base::Id::from_bytes(
            b.try_into().expect("16 bytes"),
        ))
    }

    /// A file list written by [`put_files`].
    pub(crate) fn files(&mut self) -> Result<Vec<(usize, FileMetadata)>> {
        let at = self.at();
        let b = self.bytes()?;
        let edit = match VersionEdit::decode(b) {
            Ok(edit) => edit,
            Err(e) => return self.invalid(at, format!("file records: {e}")),
        };
        // Nothing but file records, in the one encoding `put_files` gives.
        let mut only = VersionEdit::new(0);
        only.new_files = edit.new_files;
        if only.encode() != b {
            return self.invalid(
                at,
                "file records with other fields, or not in their encoding",
            );
        }
        Ok(only.new_files)
    }

    /// Fails unless every byte was read.
    pub(crate) fn finish(self) -> Result<()> {
        if self.d.is_empty() {
            Ok(())
        } else {
            let at = self.at();
            self.invalid(at, "bytes left over after the last field")
        }
    }
}

pub(crate) fn put_bool(out: &mut Vec<u8>, v: bool) {
    out.push(u8::from(v));
}

pub(crate) fn put_opt_string(out: &mut Vec<u8>, v: Option<&str>) {
    put_bool(out, v.is_some());
    if let Some(s) = v {
        put_length_prefixed(out, s.as_bytes());
    }
}

/// Files with their levels, as the MANIFEST records them (a version
/// edit's new-file records).
pub(crate) fn put_files<'a>(
    out: &mut Vec<u8>,
    files: impl IntoIterator<Item = (usize, &'a Arc<FileMetadata>)>,
) {
    let mut edit = VersionEdit::new(0);
    for (level, f) in files {
        edit.add_file(level, (**f).clone());
    }
    put_length_prefixed(out, &edit.encode());
}

pub(crate) fn put_u64s(out: &mut Vec<u8>, values: &[u64]) {
    put_varint64(out, values.len() as u64);
    for &v in values {
        put_varint64(out, v);
    }
}
