//! What the engine stress run knows about one key: the states the database
//! may hold for it after a crash.
//!
//! As in RocksDB's `db_stress` (`ExpectedValue`), a key's values are
//! numbered by a *value base* that grows by one with every put of the key,
//! and the value's bytes are a function of (key, base), so a value read
//! back names the write it came from. A key's state is not one value but a
//! **window** of the key's history: from the newest state known to be
//! durable to the newest one issued. A crash may end the history anywhere
//! in the window, so after it the database must hold one of:
//!
//! * the durable state's put, or a put whose base was issued after the
//!   durable state (`issued_after < base <= max_base`), or
//! * no value, if `absent_ok` (the durable state is a deletion, or a
//!   deletion was issued since).
//!
//! A write widens the window before it is issued (`begin_*`: the *pending*
//! state, written to the file before the database sees the write) and, once
//! acknowledged, records it as the latest state (`ack_*`). If the ack makes
//! the write durable — a sync write, or any write when the WAL reaches the
//! OS before the write returns and the crash is a process kill — the window
//! collapses to it. A write acknowledged without durability collapses the
//! window later, when a sync write that started after its ack is
//! acknowledged: the run's *durability stamp* then passes the write's ack
//! stamp ([`KeyState::collapse`]).

use crate::state_file::{Fields, SLOT_PAYLOAD, put_u32, put_u64};

/// What a read found for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Observed {
    /// No value.
    Absent,
    /// The value with this base.
    Put(u32),
}

impl std::fmt::Display for Observed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Observed::Absent => f.write_str("no value"),
            Observed::Put(b) => write!(f, "the value with base {b}"),
        }
    }
}

const LATEST_ABSENT: u32 = 1;
const ABSENT_OK: u32 = 1 << 1;
const PENDING: u32 = 1 << 2;
const KNOWN_FLAGS: u32 = LATEST_ABSENT | ABSENT_OK | PENDING;

/// One key's window (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyState {
    /// The highest value base issued for the key (0: none yet).
    pub max_base: u32,
    /// The base of the newest state known durable; 0 when that state is
    /// "no value".
    pub durable_base: u32,
    /// Every base above this one (up to `max_base`) was issued after the
    /// durable state, so a crash may leave any of them.
    pub issued_after: u32,
    /// The base of the latest acknowledged put (meaningful unless
    /// `latest_absent`).
    pub latest_base: u32,
    /// The latest acknowledged write removed the key (or none was made).
    pub latest_absent: bool,
    /// "No value" is acceptable after a crash: the durable state is a
    /// deletion, or a deletion was issued since.
    pub absent_ok: bool,
    /// A write of the key was issued and not acknowledged.
    pub pending: bool,
    /// When the latest write was acknowledged (the run's ack counter).
    pub ack_stamp: u64,
}

impl KeyState {
    /// A key never written.
    pub(crate) fn fresh() -> Self {
        KeyState {
            max_base: 0,
            durable_base: 0,
            issued_after: 0,
            latest_base: 0,
            latest_absent: true,
            absent_ok: true,
            pending: false,
            ack_stamp: 0,
        }
    }

    /// The one state reads must see while no write of the key is in
    /// flight: the latest acknowledged.
    pub(crate) fn latest(&self) -> Observed {
        if self.latest_absent {
            Observed::Absent
        } else {
            Observed::Put(self.latest_base)
        }
    }

    /// Narrows the window to the latest acknowledged state if that state
    /// is durable: acknowledged with a stamp at or below `durable_stamp`.
    /// Writers call it before each write of the key, so what a sync write
    /// made durable is not forgotten when the key is written again.
    pub(crate) fn collapse(&mut self, durable_stamp: u64) {
        if !self.pending && self.ack_stamp <= durable_stamp {
            self.narrow_to_latest();
        }
    }

    fn narrow_to_latest(&mut self) {
        self.durable_base = if self.latest_absent {
            0
        } else {
            self.latest_base
        };
        self.issued_after = self.max_base;
        self.absent_ok = self.latest_absent;
    }

    /// Marks a put as issued; returns its value base.
    pub(crate) fn begin_put(&mut self) -> u32 {
        self.max_base = self.max_base.saturating_add(1);
        self.pending = true;
        self.max_base
    }

    /// Marks a deletion as issued.
    pub(crate) fn begin_delete(&mut self) {
        self.absent_ok = true;
        self.pending = true;
    }

    /// Records the put of `base` as acknowledged at `stamp`; `durable`
    /// when the acknowledgement means it survives the crash being tested.
    pub(crate) fn ack_put(&mut self, base: u32, stamp: u64, durable: bool) {
        self.latest_base = base;
        self.latest_absent = false;
        self.ack(stamp, durable);
    }

    /// Records a deletion as acknowledged at `stamp`.
    pub(crate) fn ack_delete(&mut self, stamp: u64, durable: bool) {
        self.latest_absent = true;
        self.ack(stamp, durable);
    }

    fn ack(&mut self, stamp: u64, durable: bool) {
        self.pending = false;
        self.ack_stamp = stamp;
        if durable {
            self.narrow_to_latest();
        }
    }

    /// Whether a database holding `seen` for the key after a crash is
    /// consistent with the window.
    pub(crate) fn accepts(&self, seen: Observed) -> bool {
        match seen {
            Observed::Absent => self.absent_ok,
            Observed::Put(b) => {
                (b != 0 && b == self.durable_base) || (self.issued_after < b && b <= self.max_base)
            }
        }
    }

    /// The window in words, for failure messages.
    pub(crate) fn describe(&self) -> String {
        let mut puts = Vec::new();
        if self.durable_base != 0 {
            puts.push(format!("base {}", self.durable_base));
        }
        if self.issued_after < self.max_base {
            puts.push(format!(
                "bases {}..={}",
                self.issued_after + 1,
                self.max_base
            ));
        }
        if self.absent_ok {
            puts.push("no value".to_string());
        }
        format!(
            "acceptable: {}; latest acknowledged: {}{}",
            if puts.is_empty() {
                "nothing".to_string()
            } else {
                puts.join(" or ")
            },
            self.latest(),
            if self.pending {
                "; a write was in flight"
            } else {
                ""
            }
        )
    }

    /// After verification found `seen`: the key's history restarts from
    /// it, durable and with nothing in flight. Bases keep growing, so a
    /// write lost in the crash is never confused with a later one.
    pub(crate) fn resolve(&mut self, seen: Observed) {
        self.pending = false;
        self.ack_stamp = 0;
        match seen {
            Observed::Absent => self.latest_absent = true,
            Observed::Put(b) => {
                self.latest_absent = false;
                self.latest_base = b;
            }
        }
        self.narrow_to_latest();
    }

    /// The slot payload: `max_base`, `durable_base`, `issued_after`,
    /// `latest_base`, flags (u32 each), `ack_stamp` (u64).
    pub(crate) fn encode(&self) -> [u8; SLOT_PAYLOAD] {
        let mut p = [0u8; SLOT_PAYLOAD];
        put_u32(&mut p, 0, self.max_base);
        put_u32(&mut p, 4, self.durable_base);
        put_u32(&mut p, 8, self.issued_after);
        put_u32(&mut p, 12, self.latest_base);
        let mut flags = 0;
        if self.latest_absent {
            flags |= LATEST_ABSENT;
        }
        if self.absent_ok {
            flags |= ABSENT_OK;
        }
        if self.pending {
            flags |= PENDING;
        }
        put_u32(&mut p, 16, flags);
        put_u64(&mut p, 20, self.ack_stamp);
        p
    }

    /// Decodes a slot payload; `None` for flags or bases no writer
    /// produces.
    pub(crate) fn decode(p: &[u8; SLOT_PAYLOAD]) -> Option<KeyState> {
        let f = Fields(p);
        let flags = f.u32(16);
        if flags & !KNOWN_FLAGS != 0 {
            return None;
        }
        let s = KeyState {
            max_base: f.u32(0),
            durable_base: f.u32(4),
            issued_after: f.u32(8),
            latest_base: f.u32(12),
            latest_absent: flags & LATEST_ABSENT != 0,
            absent_ok: flags & ABSENT_OK != 0,
            pending: flags & PENDING != 0,
            ack_stamp: f.u64(20),
        };
        let sane = s.durable_base <= s.max_base
            && s.issued_after <= s.max_base
            && s.latest_base <= s.max_base
            && (s.latest_absent || s.latest_base >= 1);
        sane.then_some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durable_acks_leave_one_state() {
        let mut s = KeyState::fresh();
        assert!(s.accepts(Observed::Absent));
        assert!(!s.accepts(Observed::Put(1)));
        let b = s.begin_put();
        assert_eq!(b, 1);
        // In flight: either.
        assert!(s.accepts(Observed::Absent) && s.accepts(Observed::Put(1)));
        s.ack_put(b, 1, true);
        assert!(!s.accepts(Observed::Absent) && s.accepts(Observed::Put(1)));
        s.begin_delete();
        assert!(s.accepts(Observed::Absent) && s.accepts(Observed::Put(1)));
        s.ack_delete(2, true);
        assert!(s.accepts(Observed::Absent) && !s.accepts(Observed::Put(1)));
        assert_eq!(s.latest(), Observed::Absent);
    }

    #[test]
    fn unsynced_writes_widen_the_window_until_a_later_sync() {
        let mut s = KeyState::fresh();
        let b1 = s.begin_put();
        s.ack_put(b1, 1, true); // synced: base 1 durable
        let b2 = s.begin_put();
        s.ack_put(b2, 2, false);
        s.begin_delete();
        s.ack_delete(3, false);
        let b4 = s.begin_put();
        s.ack_put(b4, 4, false);
        assert_eq!(b4, 3);
        // Any state since the durable one.
        for ok in [
            Observed::Put(1),
            Observed::Put(2),
            Observed::Absent,
            Observed::Put(3),
        ] {
            assert!(s.accepts(ok), "{ok:?}: {}", s.describe());
        }
        // A sync that started before the last ack proves nothing about it.
        s.collapse(3);
        assert!(s.accepts(Observed::Put(1)));
        // One that started after it does.
        s.collapse(4);
        assert!(!s.accepts(Observed::Put(1)) && !s.accepts(Observed::Absent));
        assert!(s.accepts(Observed::Put(3)));
        // Never collapses over a write in flight.
        s.begin_delete();
        s.collapse(u64::MAX);
        assert!(s.accepts(Observed::Absent) && s.accepts(Observed::Put(3)));
    }

    #[test]
    fn resolve_restarts_from_what_was_found() {
        let mut s = KeyState::fresh();
        let b = s.begin_put();
        s.ack_put(b, 1, false);
        let _lost = s.begin_put();
        s.resolve(Observed::Put(1));
        assert!(!s.pending && s.accepts(Observed::Put(1)));
        assert!(!s.accepts(Observed::Put(2)) && !s.accepts(Observed::Absent));
        // The lost base is not reused.
        assert_eq!(s.begin_put(), 3);
        s.resolve(Observed::Absent);
        assert!(s.accepts(Observed::Absent) && !s.accepts(Observed::Put(3)));
    }

    #[test]
    fn slot_round_trip_and_rejects_nonsense() {
        let mut s = KeyState::fresh();
        assert_eq!(KeyState::decode(&s.encode()), Some(s));
        let b = s.begin_put();
        s.ack_put(b, 77, false);
        s.begin_delete();
        assert_eq!(KeyState::decode(&s.encode()), Some(s));
        let mut bad = s.encode();
        bad[16] |= 0x80;
        assert_eq!(KeyState::decode(&bad), None);
        let mut bad = s.encode();
        bad[4..8].copy_from_slice(&99u32.to_le_bytes());
        assert_eq!(KeyState::decode(&bad), None);
    }
}
