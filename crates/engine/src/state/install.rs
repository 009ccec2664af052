//! The one door for changes to what a running database holds.
//!
//! * [`apply_and_install`](DbInner::apply_and_install): an edit that
//!   changes a table's files (flush, compaction, refit, ingestion) is
//!   logged to the MANIFEST; if that fails, the failure becomes the
//!   background error and the database read-only (the record may be
//!   durable or not: only a new MANIFEST settles it); otherwise the table's
//!   new version is installed.
//! * [`record`](DbInner::record): metadata a caller asks for on its own
//!   thread (a table's creation or drop, a table's merge operator, the WAL
//!   sizes at close); a failure goes back to that caller, as RocksDB's
//!   column family calls return theirs, and the next MANIFEST write starts
//!   a new MANIFEST.
//! * [`install`](DbInner::install): a change to a table's parts outside
//!   the MANIFEST (a memtable switch, a strategy switch, a table created or
//!   dropped) made visible to readers, with the write stall recomputed.
//!
//! Recovery writes its first edit group before there is a running
//! database (`open`).

use std::sync::atomic::Ordering;

use lithify_version::{TableId, VersionEdit};

use super::table::TableMut;
use super::{DbInner, DbState};
use crate::error::Result;
use crate::stall::{StallCause, StallCondition};
use crate::write_controller::{StallInputs, stall_condition};

impl DbInner {
    /// Logs `edits` (which change `table`'s files) to the MANIFEST, lets
    /// `applied` update the job's bookkeeping (a flush's memtables go, a
    /// compaction's statistics count), and installs `table`'s new parts,
    /// all under the database mutex `st`: readers see the new files and
    /// the old memtables gone at once. A failed MANIFEST write becomes the
    /// background error, and the database read-only; `applied` does not
    /// run.
    pub(crate) fn apply_and_install(
        &self,
        st: &mut DbState,
        table: TableId,
        edits: Vec<VersionEdit>,
        applied: impl FnOnce(&mut DbState),
    ) -> Result<()> {
        if let Err(e) = self.versions.log_and_apply(edits) {
            return Err(self.stop_writes(st, e.into()));
        }
        applied(st);
        self.install(st, table);
        Ok(())
    }

    /// Logs metadata `edits` a caller asked for (no table's files change);
    /// a failure is the caller's.
    pub(crate) fn record(&self, edits: Vec<VersionEdit>) -> Result<()> {
        Ok(self.versions.log_and_apply(edits)?)
    }

    /// Records a new table `name` (WALs below `log_number` are not
    /// replayed into it) and its merge operator; returns its id.
    pub(crate) fn record_table_created(
        &self,
        name: &str,
        log_number: u64,
        merge_operator: Option<&str>,
    ) -> Result<TableId> {
        let id = self.versions.create_table(name, None, log_number)?;
        if let Some(m) = merge_operator {
            let mut e = VersionEdit::new(id);
            e.merge_operator = Some(m.to_owned());
            self.record(vec![e])?;
        }
        Ok(id)
    }

    /// Makes a table created by [`record_table_created`] live: readers
    /// see it and it counts in the write stall.
    ///
    /// [`record_table_created`]: DbInner::record_table_created
    pub(crate) fn add_table(&self, st: &mut DbState, table: TableMut) {
        let id = table.state.id;
        st.tables.insert(id, table);
        self.install(st, id);
    }

    /// Records the drop of `table` and forgets it: no flush of it stays
    /// queued, and the write stall no longer counts it. Its files are
    /// deleted once no version holds them.
    pub(crate) fn remove_table(&self, st: &mut DbState, table: TableId) -> Result<()> {
        self.versions.drop_table(table)?;
        st.tables.remove(&table);
        st.flush_queue.retain(|t| *t != table);
        self.install(st, table);
        Ok(())
    }

    /// Makes a change to `table`'s parts visible — a new version after
    /// an installed edit (flush, compaction, refit), a memtable switch, a
    /// new table — the one way RocksDB's `InstallSuperVersionAndScheduleWork`
    /// does: take the table's current version from the `VersionSet`,
    /// install a new super version for readers, and recompute the write
    /// stall over all tables. The caller wakes
    /// waiters and background threads with [`notify_installed`] once it
    /// has released the database mutex.
    ///
    /// [`notify_installed`]: DbInner::notify_installed
    pub(crate) fn install(&self, st: &mut DbState, table: TableId) {
        if let Some(t) = st.tables.get_mut(&table) {
            if let Some(v) = self.versions.current(table) {
                t.version = v;
            }
            let sv = t.super_version();
            t.state.sv.install(sv);
        }
        // A read-only database takes no writes: nothing to stall.
        if !self.opened_read_only {
            self.recompute_stall(st);
        }
    }

    /// Wakes whoever waits for installed changes (flush and compaction
    /// callers, stopped writers, `close`) and the background threads
    /// (the change may have made work).
    pub(crate) fn notify_installed(&self) {
        self.done_cv.notify_all();
        self.wake_background();
    }

    /// Recomputes the write-stall condition over all tables (the worst
    /// wins, as RocksDB's DB-wide write controller).
    fn recompute_stall(&self, st: &mut DbState) {
        let mut worst = (StallCondition::Normal, None::<StallCause>);
        let mut worst_inputs = StallInputs::default();
        for t in st.tables.values() {
            let inputs = StallInputs {
                unflushed_imm: t.unflushed(),
                l0_files: if t.picker.l0_count_stalls_writes() {
                    t.version.num_files(0)
                } else {
                    0
                },
                pending_bytes: t.pending_compaction_bytes(),
            };
            let d = stall_condition(&t.state.options, &inputs);
            if d.0 > worst.0 {
                worst = d;
                worst_inputs = inputs;
            }
        }
        let was = st.controller.condition();
        let was_cause = st.controller.cause();
        st.controller.update(&self.options, worst, &worst_inputs);
        self.stalled
            .store(worst.0 != StallCondition::Normal, Ordering::Release);
        if worst.0 != was || (worst.0 != StallCondition::Normal && worst.1 != was_cause) {
            self.events.stall_changed(crate::events::WriteStallInfo {
                condition: worst.0,
                previous: was,
                cause: worst.1,
            });
        }
        if worst.0 < was {
            self.done_cv.notify_all();
        }
    }
}
