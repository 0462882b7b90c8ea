//! The restore side of a knob session: a session's knobs back to the values it found at
//! its end (leaving what someone else changed since), a killed run's orphans at the next
//! run's start, and `llctop knobs restore`'s journal entries — all through the session's
//! one write path.

use super::{KnobAction, KnobError, Session};

impl Session {
    /// Put every knob this session changed back to the value it found, unless someone
    /// else changed it since (left, with a note). Returns the restored ids and the
    /// failures (each failure leaves its journal entry in place).
    pub fn restore_session(&mut self) -> (Vec<String>, Vec<KnobError>) {
        let ids: Vec<String> = self.touched.iter().rev().cloned().collect();
        let (mut ok, mut failed) = (Vec::new(), Vec::new());
        for id in ids {
            let (Some(original), Some(wrote)) = (
                self.originals.get(&id).cloned(),
                self.written.get(&id).cloned(),
            ) else {
                continue;
            };
            let res = self.knob(&id).and_then(|knob| {
                let now = self.read_current(&knob)?;
                if now == original {
                    self.release_if_home(&knob.id, &now);
                    return Ok(false);
                }
                if now != wrote {
                    // Someone else wrote it since: theirs stands.
                    self.notes.push(format!(
                        "{id}: now {now}, not the {wrote} llctop wrote: changed by someone else since, so left as it is (it was {original} before llctop; `llctop knobs restore {id}` puts that back)"
                    ));
                    let root = self.registry.root().root().to_path_buf();
                    self.owners.release(&root, &id);
                    return Ok(false);
                }
                self.write_knob(&knob, &original, KnobAction::Restore, None)
                    .map(|_| true)
            });
            match res {
                Ok(true) => ok.push(id),
                Ok(false) => {}
                Err(e) => failed.push(e),
            }
        }
        self.steps.clear();
        (ok, failed)
    }

    /// Journal entries of this sysroot left by a run that ended without restoring them
    /// (killed): not kept on purpose, and no llctop owns the knob now. Each is put back
    /// to its original; returns what was restored and what could not be.
    pub fn restore_orphans(&mut self) -> (Vec<String>, Vec<KnobError>) {
        let root = self.registry.root().root().to_path_buf();
        let ids: Vec<String> = match self.journal.entries_for(&root) {
            Ok(es) => es
                .into_iter()
                .rev()
                .filter(|e| !e.kept && self.owners.is_free(&root, &e.id))
                .map(|e| e.id)
                .collect(),
            Err(e) => return (Vec::new(), vec![e.into()]),
        };
        self.restore_ids(&ids)
    }

    /// Let go of a knob once it is back at the value this session found.
    pub(super) fn release_if_home(&mut self, id: &str, value: &str) {
        if self.held.iter().any(|h| h == id) {
            return;
        }
        if self.originals.get(id).map(String::as_str) == Some(value) {
            let root = self.registry.root().root().to_path_buf();
            self.owners.release(&root, id);
        }
    }

    /// Restore every journaled knob of this sysroot (`llctop knobs restore`), or only
    /// `only` if given.
    pub fn restore_journal(
        &mut self,
        only: &[String],
    ) -> Result<(Vec<String>, Vec<KnobError>), KnobError> {
        let root = self.registry.root().root().to_path_buf();
        let ids: Vec<String> = self
            .journal
            .entries_for(&root)?
            .into_iter()
            .rev()
            .map(|e| e.id)
            .filter(|id| only.is_empty() || only.contains(id))
            .collect();
        Ok(self.restore_ids(&ids))
    }

    fn restore_ids(&mut self, ids: &[String]) -> (Vec<String>, Vec<KnobError>) {
        let root = self.registry.root().root().to_path_buf();
        let mut ok = Vec::new();
        let mut failed = Vec::new();
        for id in ids {
            let entry = match self.journal.get(&root, id) {
                Ok(Some(e)) => e,
                Ok(None) => continue, // already back at its original
                Err(e) => {
                    failed.push(e.into());
                    continue;
                }
            };
            if super::scheduler::is_scheduler_id(id) {
                match self.scheduler_restore(&entry) {
                    Ok(()) => ok.push(id.clone()),
                    Err(e) => failed.push(e),
                }
                continue;
            }
            if super::affinity::is_affinity_id(id) {
                match self.affinity_restore_entry(&entry) {
                    Ok(()) => ok.push(id.clone()),
                    Err(e) => failed.push(e),
                }
                continue;
            }
            if super::resctrl::is_resctrl_id(id) {
                match self.resctrl_restore(&entry) {
                    Ok(()) => ok.push(id.clone()),
                    Err(e) => failed.push(e),
                }
                continue;
            }
            let res = self.knob(id).and_then(|knob| {
                // A journal is only a hint: it may only restore a registered knob at the
                // path the registry has for it.
                if knob.path != entry.path {
                    return Err(KnobError::Refused(format!(
                        "{id}: journal path {} is not the knob's path {}",
                        entry.path.display(),
                        knob.path.display()
                    )));
                }
                self.write_knob(&knob, &entry.original, KnobAction::Restore, None)
            });
            match res {
                Ok(_) => ok.push(id.clone()),
                Err(e) => failed.push(e),
            }
        }
        (ok, failed)
    }
}
