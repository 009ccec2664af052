//! 128-bit identities: of a database, of one open of it (a session), of a
//! SST file — what lets a file copied in from elsewhere be told from the
//! database's own (RocksDB's `db_id`, `db_session_id` and unique SST ids).

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A 128-bit identity, shown as 32 hex digits in a UUID's groups.
///
/// ```
/// use lithify_base::Id;
///
/// let a = Id::random();
/// assert_ne!(a, Id::random());
/// assert_eq!(Id::parse(&a.to_string()), Some(a));
/// assert_eq!(Id::from_bytes([0xab; 16]).to_string(), "abababab-abab-abab-abab-abababababab");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id([u8; 16]);

impl Id {
    /// The identity with these bytes.
    pub const fn from_bytes(bytes: [u8; 16]) -> Id {
        Id(bytes)
    }

    /// Its bytes.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// A new identity no other will have: the process's random hasher
    /// keys (seeded by the operating system), the time, the process id and
    /// a counter, hashed to 128 bits.
    pub fn random() -> Id {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut seed = Vec::with_capacity(48);
        for salt in 0..2u8 {
            let mut h = RandomState::new().build_hasher();
            h.write_u8(salt);
            h.write_u128(nanos);
            h.write_u64(n);
            seed.extend_from_slice(&h.finish().to_le_bytes());
        }
        seed.extend_from_slice(&nanos.to_le_bytes());
        seed.extend_from_slice(&std::process::id().to_le_bytes());
        seed.extend_from_slice(&n.to_le_bytes());
        Id(xxhash_rust::xxh3::xxh3_128(&seed).to_le_bytes())
    }

    /// The identity derived from `parts` (xxh3-128 of their bytes, each
    /// prefixed by its length): the same parts give the same identity.
    pub fn derive(parts: &[&[u8]]) -> Id {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for p in parts {
            h.update(&(p.len() as u64).to_le_bytes());
            h.update(p);
        }
        Id(h.digest128().to_le_bytes())
    }

    /// Parses the text form (32 hex digits, dashes anywhere ignored).
    pub fn parse(text: &str) -> Option<Id> {
        let digits: Vec<u8> = text.bytes().filter(|&b| b != b'-').collect();
        if digits.len() != 32 || !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, pair) in digits.chunks(2).enumerate() {
            let hex = std::str::from_utf8(pair).ok()?;
            out[i] = u8::from_str_radix(hex, 16).ok()?;
        }
        Some(Id(out))
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Id({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_ids_differ_and_derived_ones_repeat() {
        let ids: std::collections::BTreeSet<Id> = (0..1000).map(|_| Id::random()).collect();
        assert_eq!(ids.len(), 1000);
        let a = Id::derive(&[b"db", b"session", &7u64.to_le_bytes()]);
        assert_eq!(a, Id::derive(&[b"db", b"session", &7u64.to_le_bytes()]));
        assert_ne!(a, Id::derive(&[b"db", b"session", &8u64.to_le_bytes()]));
        // Lengths are part of the input: moving a byte between parts changes it.
        assert_ne!(Id::derive(&[b"ab", b"c"]), Id::derive(&[b"a", b"bc"]));
        assert_eq!(Id::parse("not an id"), None);
        // Signs are not hex digits, whatever `from_str_radix` accepts.
        assert_eq!(Id::parse(&"+f".repeat(16)), None);
        assert_eq!(
            Id::parse(&"0f".repeat(16)),
            Some(Id::from_bytes([0x0f; 16]))
        );
    }
}
