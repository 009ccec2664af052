//! Checks a reopened database against the expected state: every key holds
//! a state its window allows, nothing is there that no write produced, and
//! the read paths (forward scan, backward scan, point lookups) agree.

use lithify::Db;
use snafu::ResultExt as _;

use crate::db_expected::DbExpected;
use crate::error::{DbSnafu, Result};
use crate::key_state::Observed;
use crate::values::parse_key;

/// How many failures a report spells out.
const SHOWN: usize = 20;

/// What a verification found.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    /// What each key holds, by key number.
    pub observed: Vec<Observed>,
    /// Failures, spelled out (at most [`SHOWN`]).
    pub failures: Vec<String>,
    /// Failures in all.
    pub failure_count: usize,
    /// Keys with a write in flight at the crash whose write survived.
    pub pending_applied: u64,
    /// Keys with a write in flight at the crash whose write did not.
    pub pending_lost: u64,
    /// Keys holding a value.
    pub present: u64,
}

impl Verdict {
    fn fail(&mut self, message: String) {
        self.failure_count += 1;
        if self.failures.len() < SHOWN {
            self.failures.push(message);
        }
    }

    /// Whether everything checked out.
    pub(crate) fn passed(&self) -> bool {
        self.failure_count == 0
    }

    /// The failures as lines.
    pub(crate) fn report(&self) -> String {
        let mut out = format!("{} failures", self.failure_count);
        for f in &self.failures {
            out.push_str("\n  ");
            out.push_str(f);
        }
        if self.failure_count > self.failures.len() {
            out.push_str(&format!(
                "\n  ... and {} more",
                self.failure_count - self.failures.len()
            ));
        }
        out
    }
}

fn show(bytes: &[u8]) -> String {
    let mut s = lithify_base::key::escape(bytes);
    if s.len() > 60 {
        s.truncate(60);
        s.push_str("...");
    }
    s
}

/// Reads every key of `db` three ways and checks each against its window
/// in `state` (after narrowing it by the file's durability stamp).
pub(crate) fn verify(db: &Db, state: &DbExpected) -> Result<Verdict> {
    let keys = state.keys();
    let values = state.values();
    let mut v = Verdict {
        observed: vec![Observed::Absent; keys as usize],
        ..Verdict::default()
    };
    // What a (key, value) pair read back means; `None` when it is not
    // something this run wrote.
    let decode = |k: &[u8], value: &[u8], v: &mut Verdict, how: &str| -> Option<(u64, u32)> {
        let Some(n) = parse_key(k).filter(|&n| n < keys) else {
            v.fail(format!(
                "{how} found key {} which no write of this run produced",
                show(k)
            ));
            return None;
        };
        match values.base_of(n, value) {
            Some(base) => Some((n, base)),
            None => {
                v.fail(format!(
                    "{how} found for key {} the value {} which no write of this key produced",
                    show(k),
                    show(value)
                ));
                None
            }
        }
    };

    let mut forward = Vec::new();
    for item in db.iter() {
        let (k, value) = item.context(DbSnafu)?;
        if let Some((n, base)) = decode(&k, &value, &mut v, "a forward scan") {
            forward.push((n, base));
            v.observed[n as usize] = Observed::Put(base);
        }
    }
    let mut backward = Vec::new();
    for item in db.iter().rev() {
        let (k, value) = item.context(DbSnafu)?;
        if let Some(pair) = decode(&k, &value, &mut v, "a backward scan") {
            backward.push(pair);
        }
    }
    backward.reverse();
    if backward != forward {
        let at = forward
            .iter()
            .zip(&backward)
            .position(|(a, b)| a != b)
            .unwrap_or(forward.len().min(backward.len()));
        v.fail(format!(
            "a backward scan ({} keys) disagrees with a forward scan ({} keys) from position {at}: \
             forward has {:?}, backward {:?} (key, base)",
            backward.len(),
            forward.len(),
            forward.get(at),
            backward.get(at)
        ));
    }
    for n in 0..keys {
        let key = crate::values::key(n);
        let got = match db.get(&key).context(DbSnafu)? {
            None => Observed::Absent,
            Some(value) => match values.base_of(n, &value) {
                Some(base) => Observed::Put(base),
                None => {
                    v.fail(format!(
                        "a lookup of key {} returned the value {} which no write of this key produced",
                        show(&key),
                        show(&value)
                    ));
                    continue;
                }
            },
        };
        let scanned = v.observed[n as usize];
        if got != scanned {
            v.fail(format!(
                "a lookup of key {} returned {got} but a scan found {scanned}",
                show(&key)
            ));
        }
    }
    let durable = state.durable_stamp();
    for n in 0..keys {
        let mut s = *state.lock(n);
        s.collapse(durable);
        let seen = v.observed[n as usize];
        if seen != Observed::Absent {
            v.present += 1;
        }
        if !s.accepts(seen) {
            v.fail(format!(
                "key {} holds {seen}; {}",
                show(&crate::values::key(n)),
                s.describe()
            ));
        } else if s.pending {
            if seen == s.latest() {
                v.pending_lost += 1;
            } else {
                v.pending_applied += 1;
            }
        }
    }
    Ok(v)
}

/// Restarts every key's history from what `verdict` found and rewrites
/// the file: the state the next run starts from.
pub(crate) fn resolve(state: &DbExpected, verdict: &Verdict) -> Result<()> {
    for (n, seen) in verdict.observed.iter().enumerate() {
        state.lock(n as u64).resolve(*seen);
    }
    state.reset_stamps();
    state.save()
}
