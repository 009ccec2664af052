//! zstd decompression into a length known in advance, with one reusable
//! decompression context per thread (creating one costs more than
//! decompressing a 4 KiB block): what SST blocks and blob values share.
//! Only with the `zstd` feature.

use std::cell::RefCell;

thread_local! {
    static DECOMPRESSOR: RefCell<Option<::zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// Decompresses the zstd `frame` into exactly `raw_len` bytes (the length
/// the caller's format recorded, checked against its own limit first: at
/// most `raw_len` bytes are allocated). The error is a phrase without
/// file or offset, for the caller to add them: the frame does not decode,
/// or decodes to another length.
///
/// ```
/// let frame = zstd::bulk::compress(b"hello hello hello", 3).unwrap();
/// assert_eq!(lithify_base::zstd::decompress_exact(&frame, 17).unwrap(), b"hello hello hello");
/// let err = lithify_base::zstd::decompress_exact(&frame, 16).unwrap_err();
/// assert!(err.contains("zstd"), "{err}");
/// ```
pub fn decompress_exact(frame: &[u8], raw_len: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(raw_len);
    let n = DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(::zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?);
        }
        let Some(decompressor) = slot.as_mut() else {
            return Err("no zstd decompressor".to_string());
        };
        decompressor
            .decompress_to_buffer(frame, &mut out)
            .map_err(|e| format!("zstd decompression failed: {e}"))
    })?;
    if n != raw_len || out.len() != raw_len {
        return Err(format!(
            "zstd data decompressed to {n} bytes, its recorded length is {raw_len}"
        ));
    }
    Ok(out)
}
