//! Per-partition cleaning states (Kafka's `LogCleaningState` and the
//! `inProgress` map of `LogCleanerManager`), so that no two cleaner threads
//! clean the same log and a log can be paused while a round runs.
//!
//! ```text
//!   (none) --try_begin--> InProgress --done(checkpoint)--> (none)
//!                             |
//!                     abort_and_pause
//!                             v
//!                          Aborted ----done(no checkpoint)--> Paused(1)
//!   (none) --abort_and_pause--> Paused(1);  Paused(n) --abort_and_pause--> Paused(n+1)
//!   Paused(n) --resume--> Paused(n-1) ... Paused(1) --resume--> (none)
//! ```
//!
//! Any state excludes the partition from cleaning. `abort_and_pause`
//! blocks until the partition is paused: a round in progress notices the
//! abort at its next [`StateBoard::check_aborted`], stops, and its
//! `done` turns `Aborted` into `Paused(1)` without advancing the
//! checkpoint. The board is one mutex and one condition variable from the
//! `lithify_base::sync` shim; its loom models check these rules under every
//! interleaving.

use std::collections::HashMap;

use lithify_base::sync::{Condvar, Mutex};

use crate::error::{InvalidArgumentSnafu, Result};
use lithify_kafka_log::TopicPartition;

/// The cleaning state of a partition that has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CleaningState {
    /// A cleaner thread is cleaning it.
    InProgress,
    /// Its round was asked to stop; it becomes `Paused(1)` when it does.
    Aborted,
    /// Cleaning is paused this many times over.
    Paused(u32),
}

/// The states of every partition that has one.
#[derive(Debug, Default)]
pub(crate) struct StateBoard {
    states: Mutex<HashMap<TopicPartition, CleaningState>>,
    paused: Condvar,
}

impl StateBoard {
    /// An empty board.
    pub(crate) fn new() -> Self {
        StateBoard::default()
    }

    /// The state of `tp`, if it has one.
    pub(crate) fn state(&self, tp: &TopicPartition) -> Option<CleaningState> {
        self.states.lock().get(tp).copied()
    }

    /// Whether `tp` has any state (and so must not be picked).
    pub(crate) fn is_busy(&self, tp: &TopicPartition) -> bool {
        self.states.lock().contains_key(tp)
    }

    /// Marks `tp` in progress if it has no state; false if it has one.
    pub(crate) fn try_begin(&self, tp: &TopicPartition) -> bool {
        let mut states = self.states.lock();
        if states.contains_key(tp) {
            return false;
        }
        states.insert(tp.clone(), CleaningState::InProgress);
        true
    }

    /// Ends a round of `tp`: `InProgress` -> none, returning true (the
    /// caller advances the checkpoint); `Aborted` -> `Paused(1)`, returning
    /// false (no checkpoint), waking `abort_and_pause` waiters.
    pub(crate) fn done(&self, tp: &TopicPartition) -> Result<bool> {
        let mut states = self.states.lock();
        match states.get(tp).copied() {
            Some(CleaningState::InProgress) => {
                states.remove(tp);
                Ok(true)
            }
            Some(CleaningState::Aborted) => {
                states.insert(tp.clone(), CleaningState::Paused(1));
                drop(states);
                self.paused.notify_all();
                Ok(false)
            }
            other => InvalidArgumentSnafu {
                message: format!("cleaning of {tp} cannot end: its state is {other:?}"),
            }
            .fail(),
        }
    }

    /// Pauses cleaning of `tp`, waiting for a round in progress to stop
    /// first. Each call needs one [`resume`](Self::resume).
    pub(crate) fn abort_and_pause(&self, tp: &TopicPartition) {
        let mut states = self.states.lock();
        // Whether this call turned a round in progress into `Aborted`: the
        // `Paused(1)` its end leaves is then this call's pause.
        let mut aborted_here = false;
        loop {
            match states.get(tp).copied() {
                None if aborted_here => return, // forgotten meanwhile
                None => {
                    states.insert(tp.clone(), CleaningState::Paused(1));
                    return;
                }
                Some(CleaningState::Paused(_)) if aborted_here => return,
                Some(CleaningState::Paused(n)) => {
                    states.insert(tp.clone(), CleaningState::Paused(n.saturating_add(1)));
                    return;
                }
                Some(CleaningState::InProgress) => {
                    states.insert(tp.clone(), CleaningState::Aborted);
                    aborted_here = true;
                }
                Some(CleaningState::Aborted) => {}
            }
            while states.get(tp) == Some(&CleaningState::Aborted) {
                states = self.paused.wait(states);
            }
        }
    }

    /// Undoes one pause of `tp`.
    pub(crate) fn resume(&self, tp: &TopicPartition) -> Result<()> {
        let mut states = self.states.lock();
        match states.get(tp).copied() {
            Some(CleaningState::Paused(1)) => {
                states.remove(tp);
                Ok(())
            }
            Some(CleaningState::Paused(n)) => {
                states.insert(tp.clone(), CleaningState::Paused(n - 1));
                Ok(())
            }
            other => InvalidArgumentSnafu {
                message: format!("cleaning of {tp} cannot be resumed: its state is {other:?}"),
            }
            .fail(),
        }
    }

    /// Stops a round of `tp` in progress without leaving it paused
    /// (Kafka's `abortCleaning`).
    pub(crate) fn abort(&self, tp: &TopicPartition) -> Result<()> {
        self.abort_and_pause(tp);
        self.resume(tp)
    }

    /// Whether the round of `tp` was asked to stop.
    pub(crate) fn check_aborted(&self, tp: &TopicPartition) -> bool {
        self.states.lock().get(tp) == Some(&CleaningState::Aborted)
    }

    /// Forgets `tp`'s state (the log left the cleaner).
    pub(crate) fn forget(&self, tp: &TopicPartition) {
        self.states.lock().remove(tp);
        self.paused.notify_all();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn state_machine() {
        let b = StateBoard::new();
        let tp = TopicPartition::new("t", 0);
        assert!(b.try_begin(&tp));
        assert!(!b.try_begin(&tp));
        assert!(b.done(&tp).unwrap());
        assert_eq!(b.state(&tp), None);
        assert!(b.done(&tp).is_err());
        b.abort_and_pause(&tp);
        b.abort_and_pause(&tp);
        assert_eq!(b.state(&tp), Some(CleaningState::Paused(2)));
        assert!(!b.try_begin(&tp));
        b.resume(&tp).unwrap();
        b.resume(&tp).unwrap();
        assert!(b.resume(&tp).is_err());
        assert!(b.try_begin(&tp));
        assert!(b.resume(&tp).is_err());
    }

    #[test]
    fn abort_waits_for_the_round_to_stop() {
        let b = std::sync::Arc::new(StateBoard::new());
        let tp = TopicPartition::new("t", 0);
        assert!(b.try_begin(&tp));
        let (b2, tp2) = (b.clone(), tp.clone());
        let cleaner = std::thread::spawn(move || {
            while !b2.check_aborted(&tp2) {
                std::thread::yield_now();
            }
            b2.done(&tp2).unwrap()
        });
        b.abort_and_pause(&tp);
        assert!(
            !cleaner.join().unwrap(),
            "an aborted round writes no checkpoint"
        );
        assert_eq!(b.state(&tp), Some(CleaningState::Paused(1)));
        b.resume(&tp).unwrap();
        assert_eq!(b.state(&tp), None);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use lithify_base::sync::{Arc, thread};

    use super::*;

    /// Two cleaner threads race for the same partition: exactly one wins,
    /// and after both are done the partition is free again.
    #[test]
    fn loom_two_cleaners_never_clean_the_same_log() {
        loom::model(|| {
            let board = Arc::new(StateBoard::new());
            let tp = TopicPartition::new("t", 0);
            let spawn = |board: Arc<StateBoard>, tp: TopicPartition| {
                thread::spawn(move || {
                    if board.try_begin(&tp) {
                        assert!(board.done(&tp).unwrap());
                        1
                    } else {
                        0
                    }
                })
            };
            let a = spawn(board.clone(), tp.clone());
            let b = spawn(board.clone(), tp.clone());
            let wins = a.join().unwrap() + b.join().unwrap();
            assert!((1..=2).contains(&wins));
            assert_eq!(board.state(&tp), None);
        });
    }

    /// A pause requested while a round runs: the round either finished
    /// first (and checkpointed) or saw the abort (and did not); either way
    /// the partition ends paused once, and resuming frees it.
    #[test]
    fn loom_pause_during_a_round() {
        loom::model(|| {
            let board = Arc::new(StateBoard::new());
            let tp = TopicPartition::new("t", 0);
            assert!(board.try_begin(&tp));
            let (b2, tp2) = (board.clone(), tp.clone());
            let cleaner = thread::spawn(move || {
                // One unit of work, then the abort check, then done.
                let aborted = b2.check_aborted(&tp2);
                let checkpointed = b2.done(&tp2).unwrap();
                if aborted {
                    assert!(!checkpointed);
                }
                checkpointed
            });
            board.abort_and_pause(&tp);
            assert_eq!(board.state(&tp), Some(CleaningState::Paused(1)));
            let _checkpointed = cleaner.join().unwrap();
            board.resume(&tp).unwrap();
            assert_eq!(board.state(&tp), None);
        });
    }
}
