//! A knob held for an experiment's whole run: owned from before its first window to its
//! end whatever the value (a second llctop is refused with this one's pid), and checked
//! at every snapshot for a value changed behind the session's back.

use super::{KnobError, Session};

impl Session {
    /// Own knob `id` from now until [`Session::unhold`] or the session's end, whatever
    /// its value — an experiment takes its knob before the first window, so that a second
    /// llctop is refused (told this one's pid) even while the knob is at its original
    /// value between two flips.
    pub fn hold(&mut self, id: &str) -> Result<(), KnobError> {
        let knob = self.knob(id)?;
        self.check_writable(&knob)?;
        let root = self.registry.root().root().to_path_buf();
        self.owners
            .acquire(&root, &knob.id)
            .map_err(KnobError::Busy)?;
        if !self.written.contains_key(&knob.id) {
            // The value in place now is the one expected until the session writes, and
            // the one it puts back at its end (even if someone changes it meanwhile).
            let now = self.read_current(&knob)?;
            self.originals
                .entry(knob.id.clone())
                .or_insert_with(|| now.clone());
            self.written.insert(knob.id.clone(), now);
        }
        if !self.held.contains(&knob.id) {
            self.held.push(knob.id);
        }
        Ok(())
    }

    /// Stop holding `id`: it is let go now if it is back at the value this session found
    /// (or was never changed), else when it is.
    pub fn unhold(&mut self, id: &str) {
        self.held.retain(|h| h != id);
        let root = self.registry.root().root().to_path_buf();
        let home = match (self.originals.get(id), self.written.get(id)) {
            (Some(o), Some(w)) => o == w,
            _ => true,
        };
        if home {
            self.owners.release(&root, id);
        }
    }

    /// The knobs among `ids` whose value is no longer the one this session last put in
    /// place (or found, when it wrote nothing): `ID: now X, not the Y llctop put in
    /// place` — changed behind the session's back. A knob that cannot be read is said so.
    pub fn drifted(&self, ids: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for id in ids {
            let Some(want) = self.written.get(id) else {
                continue;
            };
            let now = self
                .registry
                .get(id)
                .ok_or_else(|| "no longer in the registry".to_string())
                .and_then(|k| self.registry.read_value(k));
            match now {
                Ok(now) if &now == want => {}
                Ok(now) if id == crate::knobs::scheduler::ID => out.push(format!(
                    "{id}: now {now}, not the {want} llctop put in place: {}",
                    self.scheduler_gone()
                        .unwrap_or_else(|| "changed by someone else".into())
                )),
                Ok(now) => out.push(format!(
                    "{id}: now {now}, not the {want} llctop put in place (changed by someone else)"
                )),
                Err(e) => out.push(format!("{id}: cannot be read back ({e})")),
            }
        }
        out
    }
}
