//! The safe write path — the only code in llctop that writes to the kernel.
//!
//! Every change goes through `Session::write_knob`:
//! 1. the knob must be in the registry (the allowlist; cgroup knobs resolved inside their
//!    mount), the session must not be read-only, and the knob must be writable;
//! 2. the value is validated by the knob's type and range before anything is written;
//! 3. the current value is read and journaled (the first original wins) *before* writing;
//! 4. the value is written in one `write()`, then read back — a different value is an
//!    error;
//! 5. a [`KnobEvent`] records old/new/time for the recording, and the change joins the
//!    undo stack.
//!
//! A knob is owned by one llctop at a time ([`super::owner`]): a second writer is refused
//! with the pid of the first. Dropping a session restores every knob it changed, in
//! reverse order, to the value *this session* found (a value kept by an earlier
//! `--keep-changes` run stays what the journal's original is restored over, later),
//! unless the operator asked to keep them; unwinding panics drop it too. A knob someone
//! else changed since llctop wrote it is left as it is, and the session says so. After a
//! SIGKILL the journal still has the originals: `llctop knobs restore` puts them back, and
//! so does the next run that opens a knob session ([`Session::restore_orphans`]).

use std::io::Write as _;
use std::path::{Component, PathBuf};

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::journal::{Entry, Journal};
use super::owner::Owners;
use super::registry::Registry;
use super::{Knob, domains};
use crate::text::Esc;

pub mod affinity;
mod error;
mod hold;
pub mod resctrl;
mod restore;
pub mod scheduler;

pub use error::KnobError;

/// What a knob event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KnobAction {
    /// The operator set a value (or a profile did).
    Set,
    /// Undo of the last change.
    Undo,
    /// Back to the journaled original (exit, `knobs restore`).
    Restore,
    /// llctop's own temporary change (sched/verbose while reading domains).
    Internal,
}

/// One knob change, as written to recordings (`"type":"knob"` lines).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnobEvent {
    pub id: String,
    pub path: PathBuf,
    pub action: KnobAction,
    pub old: String,
    pub new: String,
    /// The bytes written.
    pub written: String,
    /// The value read back after writing.
    pub read_back: String,
    pub unix_ns: u64,
    pub mono_ns: u64,
    /// Profile name or other grouping.
    #[serde(default)]
    pub label: Option<String>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// No writes at all.
    pub read_only: bool,
    /// Leave changes in place when the session ends (journal entries stay).
    pub keep_changes: bool,
}

/// One applied change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub id: String,
    pub old: String,
    pub new: String,
}

/// An undo step: one `set`, or a whole profile.
#[derive(Debug, Clone)]
pub struct Step {
    pub label: String,
    pub changes: Vec<Change>,
}

pub struct Session {
    registry: Registry,
    journal: Journal,
    opts: Options,
    steps: Vec<Step>,
    /// Knobs this session changed, in first-change order.
    touched: Vec<String>,
    /// The value each knob had when this session first changed it (what it restores).
    originals: BTreeMap<String, String>,
    /// The value this session last wrote to each knob and read back.
    written: BTreeMap<String, String>,
    owners: Owners,
    /// Knobs held for an experiment's whole run, whatever their value ([`Session::hold`]).
    held: Vec<String>,
    /// Things to tell the operator when the session ends (a knob changed behind us).
    notes: Vec<String>,
    events: Vec<KnobEvent>,
    finished: bool,
    /// The running processes this session placed on CPUs ([`affinity`]), by pid.
    placed: BTreeMap<u32, affinity::Placed>,
    /// llctop's resctrl monitoring groups made by this session ([`resctrl`]).
    resctrl_groups: Vec<PathBuf>,
    /// Where this session mounted resctrl.
    resctrl_mounted: Option<PathBuf>,
    /// The sched_ext scheduler this session started ([`scheduler`]).
    sched_child: Option<scheduler::Started>,
    /// How long a scheduler may take to attach.
    sched_limit: std::time::Duration,
}

impl Session {
    pub fn new(registry: Registry, journal: Journal, opts: Options) -> Session {
        Session {
            registry,
            journal,
            opts,
            steps: Vec::new(),
            touched: Vec::new(),
            originals: BTreeMap::new(),
            written: BTreeMap::new(),
            owners: Owners::new(super::owner::default_dir()),
            held: Vec::new(),
            notes: Vec::new(),
            events: Vec::new(),
            finished: false,
            placed: BTreeMap::new(),
            resctrl_groups: Vec::new(),
            resctrl_mounted: None,
            sched_child: None,
            sched_limit: scheduler::attach_limit(),
        }
    }

    /// The same with the knob owner files in `dir` (tests).
    pub fn with_owners(mut self, dir: impl Into<PathBuf>) -> Session {
        self.owners = Owners::new(dir);
        self
    }

    /// What the session has to tell the operator (taken).
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    pub fn options(&self) -> Options {
        self.opts
    }

    /// Events since the last call (for the recording).
    pub fn take_events(&mut self) -> Vec<KnobEvent> {
        std::mem::take(&mut self.events)
    }

    /// Undo steps, oldest first.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Whether `input` could be written to knob `id` now: the knob's canonical id and
    /// value, or why not (unknown, read-only and why, invalid). Nothing is written.
    pub fn check(&mut self, id: &str, input: &str) -> Result<(String, String), KnobError> {
        let (knob, value) = self.knob_and_value(id, input)?;
        self.check_writable(&knob)?;
        Ok((knob.id, value))
    }

    /// The knob and the canonical form of `input` for it (validated, not written).
    fn knob_and_value(&mut self, id: &str, input: &str) -> Result<(Knob, String), KnobError> {
        let knob = self.knob(id)?;
        let value = knob.parse_input(input).map_err(|e| KnobError::Invalid {
            id: knob.id.clone(),
            reason: e.0,
        })?;
        Ok((knob, value))
    }

    /// Set one knob (validated, journaled, read back); one undo step.
    pub fn set(&mut self, id: &str, input: &str) -> Result<Change, KnobError> {
        let (knob, value) = self.knob_and_value(id, input)?;
        let change = self.write_knob(&knob, &value, KnobAction::Set, None)?;
        self.steps.push(Step {
            label: knob.id.clone(),
            changes: vec![change.clone()],
        });
        Ok(change)
    }

    /// Set several knobs as one step: all are validated first; if a write fails, the
    /// ones already written are put back and nothing of the step remains.
    pub fn apply(
        &mut self,
        label: &str,
        settings: &[(String, String)],
    ) -> Result<Vec<Change>, KnobError> {
        let mut planned = Vec::new();
        for (id, input) in settings {
            let (knob, value) = self.knob_and_value(id, input)?;
            self.check_writable(&knob)?;
            planned.push((knob, value));
        }
        let mut done: Vec<(Knob, Change)> = Vec::new();
        for (knob, value) in planned {
            match self.write_knob(&knob, &value, KnobAction::Set, Some(label)) {
                Ok(c) => done.push((knob, c)),
                Err(e) => {
                    for (k, c) in done.into_iter().rev() {
                        let _ = self.write_knob(&k, &c.old, KnobAction::Undo, Some(label));
                    }
                    return Err(e);
                }
            }
        }
        let changes: Vec<Change> = done.into_iter().map(|(_, c)| c).collect();
        self.steps.push(Step {
            label: label.to_string(),
            changes: changes.clone(),
        });
        Ok(changes)
    }

    /// Undo the last step (a set or a profile), newest change first.
    pub fn undo(&mut self) -> Result<Option<Step>, KnobError> {
        let Some(step) = self.steps.pop() else {
            return Ok(None);
        };
        for c in step.changes.iter().rev() {
            let knob = self.knob(&c.id)?;
            if let Err(e) = self.write_knob(&knob, &c.old, KnobAction::Undo, Some(&step.label)) {
                self.steps.push(step);
                return Err(e);
            }
        }
        Ok(Some(step))
    }

    /// Read the sched domains from the kernel for relax_domain_level's notes, turning
    /// `sched/verbose` on just for the read when it is off (and putting it back).
    /// Returns why the kernel's domains could not be read, if so.
    pub fn read_domains(&mut self) -> Option<String> {
        if self
            .registry
            .domains
            .as_ref()
            .is_some_and(|d| d.from_kernel)
        {
            return None;
        }
        let cpu = self.registry.first_cpu();
        let Some(verbose) = self.registry.get("sched.verbose").cloned() else {
            return Some("no sched/verbose in debugfs".into());
        };
        if self.opts.read_only {
            return Some("sched/verbose is off and --read-only forbids turning it on".into());
        }
        if let super::Access::ReadOnly(r) = &verbose.access {
            return Some(format!("sched/verbose: {r}"));
        }
        let before = match self.registry.read_value(&verbose) {
            Ok(v) => v,
            Err(e) => return Some(e),
        };
        if let Err(e) = self.write_knob(
            &verbose,
            "1",
            KnobAction::Internal,
            Some("read sched domains"),
        ) {
            return Some(e.to_string());
        }
        let info = domains::read_kernel(self.registry.root(), cpu);
        let back = self.write_knob(
            &verbose,
            &before,
            KnobAction::Internal,
            Some("read sched domains"),
        );
        if let Err(e) = back {
            crate::say!("llctop: putting sched/verbose back failed: {e}");
        }
        match info {
            Some(info) => {
                self.registry.set_domains(info);
                None
            }
            None => Some("sched/domains did not appear with verbose on".into()),
        }
    }

    /// End the session: restore (unless keeping changes) and report. Idempotent.
    pub fn finish(&mut self) -> (Vec<String>, Vec<KnobError>) {
        if self.finished {
            return (Vec::new(), Vec::new());
        }
        self.finished = true;
        // A scheduler this session started that has exited since: nothing to stop.
        self.sched_reap();
        // llctop's resctrl groups and mount are instruments of the run, not settings:
        // removed whatever --keep-changes says.
        let (mut ok, mut failed) = self.resctrl_finish();
        // So are the running processes it placed on CPUs.
        let (a_ok, a_failed) = self.affinity_finish();
        ok.extend(a_ok);
        failed.extend(a_failed);
        if self.opts.keep_changes || self.opts.read_only {
            return (ok, failed);
        }
        let (k_ok, k_failed) = self.restore_session();
        ok.extend(k_ok);
        failed.extend(k_failed);
        (ok, failed)
    }

    /// Knobs changed in this session that are still not at their original value.
    pub fn pending(&self) -> Vec<String> {
        let root = self.registry.root().root();
        self.touched
            .iter()
            .filter(|id| matches!(self.journal.get(root, id), Ok(Some(_))))
            .cloned()
            .collect()
    }

    fn knob(&mut self, id: &str) -> Result<Knob, KnobError> {
        self.registry
            .resolve(id)
            .cloned()
            .map_err(KnobError::NotFound)
    }

    /// The knob's value as the kernel has it now.
    fn read_current(&self, knob: &Knob) -> Result<String, KnobError> {
        self.registry
            .read_value(knob)
            .map_err(|reason| KnobError::Read {
                id: knob.id.clone(),
                reason,
            })
    }

    fn check_writable(&self, knob: &Knob) -> Result<(), KnobError> {
        if self.opts.read_only {
            return Err(KnobError::ReadOnlySession {
                id: knob.id.clone(),
            });
        }
        if let super::Access::ReadOnly(reason) = &knob.access {
            return Err(KnobError::NotWritable {
                id: knob.id.clone(),
                reason: reason.clone(),
            });
        }
        if knob
            .path
            .components()
            .any(|c| matches!(c, Component::ParentDir))
            || !knob.path.is_absolute()
        {
            return Err(KnobError::Refused(format!(
                "{}: {} is not a plain kernel path",
                knob.id,
                knob.path.display()
            )));
        }
        Ok(())
    }

    /// The one place that writes: validated canonical `value` → journal → write → read back.
    fn write_knob(
        &mut self,
        knob: &Knob,
        value: &str,
        action: KnobAction,
        label: Option<&str>,
    ) -> Result<Change, KnobError> {
        self.check_writable(knob)?;
        // Re-validate: restore and undo values come from the journal / history.
        let value = knob
            .kind
            .parse_input(value)
            .map_err(|e| KnobError::Invalid {
                id: knob.id.clone(),
                reason: e.0,
            })?;
        if let super::KnobType::Scheduler { .. } = knob.kind {
            return self.write_scheduler(knob, &value, action, label);
        }
        let old = self.read_current(knob)?;
        let change = Change {
            id: knob.id.clone(),
            old: old.clone(),
            new: value.clone(),
        };
        let root_dir = self.registry.root().root().to_path_buf();
        if old == value {
            // Nothing to write; a restore to the original still clears the journal.
            if action == KnobAction::Restore {
                self.journal.remove(&root_dir, &knob.id)?;
            }
            if action != KnobAction::Internal && action != KnobAction::Restore {
                // The value this session puts in place, though it was there already.
                self.written.insert(knob.id.clone(), value);
            }
            return Ok(change);
        }
        let full = self
            .registry
            .root()
            .write_target(&knob.path)
            .map_err(|why| KnobError::Refused(format!("{}: {why}", knob.id)))?;
        if action != KnobAction::Internal {
            self.owners
                .acquire(&root_dir, &knob.id)
                .map_err(KnobError::Busy)?;
            self.originals
                .entry(knob.id.clone())
                .or_insert_with(|| old.clone());
        }
        // What a crash leaves to restore: the value this session found (taken when it
        // first changed the knob, or when it began to hold it).
        let original = self.originals.get(&knob.id).unwrap_or(&old).clone();
        let added = self.journal.record(Entry {
            root: root_dir.clone(),
            id: knob.id.clone(),
            path: knob.path.clone(),
            original: original.clone(),
            restore_bytes: knob.kind.encode(&original),
            changed_unix_ns: crate::clock::unix_ns(),
            pid: std::process::id(),
            kept: self.opts.keep_changes,
        })?;
        if action != KnobAction::Internal && !self.touched.contains(&knob.id) {
            self.touched.push(knob.id.clone());
        }
        let bytes = knob.kind.encode(&value);

        // Opened like `echo VALUE > file` (O_WRONLY|O_TRUNC; kernel files ignore the
        // truncation), written in one write().
        let written = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&full)
            .and_then(|mut f| {
                let n = f.write(bytes.as_bytes())?;
                if n != bytes.len() {
                    return Err(std::io::Error::other(format!(
                        "short write: {n} of {} bytes",
                        bytes.len()
                    )));
                }
                Ok(())
            });
        if let Err(e) = written {
            // Nothing changed: drop the journal entry this write added.
            if added && self.registry.read_value(knob).as_deref() == Ok(old.as_str()) {
                let _ = self.journal.remove(&root_dir, &knob.id);
            }
            return Err(KnobError::Write {
                path: knob.path.clone(),
                written: bytes,
                cause: write_cause(e, &knob.path),
            });
        }
        let read = self.read_current(knob)?;
        self.events.push(KnobEvent {
            id: knob.id.clone(),
            path: knob.path.clone(),
            action,
            old: old.clone(),
            new: value.clone(),
            written: bytes.clone(),
            read_back: read.clone(),
            unix_ns: crate::clock::unix_ns(),
            mono_ns: crate::clock::mono_ns(),
            label: label.map(str::to_string),
        });
        if let Some(k) = self.registry.knobs.iter_mut().find(|k| k.id == knob.id) {
            k.value = Some(read.clone());
            k.value_source = None;
        }
        if read != value {
            return Err(KnobError::ReadBack {
                path: knob.path.clone(),
                wrote: bytes,
                read,
            });
        }
        if let Ok(Some(entry)) = self.journal.get(&root_dir, &knob.id)
            && entry.original == read
        {
            self.journal.remove(&root_dir, &knob.id)?;
        }
        if action != KnobAction::Internal {
            self.written.insert(knob.id.clone(), read.clone());
            self.release_if_home(&knob.id, &read);
        }
        Ok(change)
    }
}

/// Why a write failed: the registry's wording for refusals to open, plus what only a
/// write can report (EINVAL for a value the kernel refused, a knob that vanished, EBUSY).
fn write_cause(e: std::io::Error, path: &std::path::Path) -> String {
    match e.raw_os_error() {
        Some(libc::EINVAL) => "EINVAL: the kernel refused the value".into(),
        Some(libc::ENOENT) => "ENOENT: the knob vanished".into(),
        Some(libc::EBUSY) => "EBUSY: the kernel is busy (e.g. CPU offline)".into(),
        _ => super::access::refusal(&crate::kroot::KernelError::Io {
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let (restored, failed) = self.finish();
        if !restored.is_empty() {
            crate::say!("llctop: restored {}", Esc(&restored.join(", ")));
        }
        for e in failed {
            crate::say!(
                "llctop: could not restore: {} (llctop knobs restore retries)",
                Esc(&e.to_string())
            );
        }
        for n in self.take_notes() {
            crate::say!("llctop: {}", Esc(&n));
        }
    }
}
