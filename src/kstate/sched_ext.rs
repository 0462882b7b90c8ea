//! `procfs.sched_ext`: which BPF scheduler runs, from `/sys/kernel/sched_ext` (`state`,
//! `switch_all`, `nr_rejected`, `enable_seq`, `root/ops`), read every interval, and since
//! when llctop has seen it.

use crate::kroot::{KResult, KernelRoot};
use crate::snapshot::{SchedExt, ScxState};

pub const DIR: &str = "/sys/kernel/sched_ext";
pub const STATE: &str = "/sys/kernel/sched_ext/state";
pub const OPS: &str = "/sys/kernel/sched_ext/root/ops";
/// Why there is no scheduler state on a kernel without the directory.
pub const ABSENT: &str = "this kernel has no sched_ext (CONFIG_SCHED_CLASS_EXT, 6.12+): \
                          /sys/kernel/sched_ext does not exist; the fair scheduler runs everything";

/// The directory as read now; `Ok(None)` when the kernel has no sched_ext.
pub fn read(root: &KernelRoot) -> KResult<Option<SchedExt>> {
    let state = match root.read_trimmed(STATE) {
        Ok(s) => ScxState::from(s),
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    let num = |f: &str| -> Option<u64> {
        root.read_value_opt::<u64>(format!("{DIR}/{f}"))
            .ok()
            .flatten()
    };
    // root/ops exists only while a scheduler is loaded (and on 6.16+; older kernels have
    // the ops name nowhere else but the kernel log).
    let ops = root
        .read_trimmed(OPS)
        .ok()
        .filter(|s| !s.is_empty() && state != ScxState::Disabled);
    Ok(Some(SchedExt {
        state,
        ops,
        switch_all: num("switch_all").map(|v| v != 0),
        nr_rejected: num("nr_rejected"),
        enable_seq: num("enable_seq"),
        since_unix_ns: None,
        since_before_run: false,
    }))
}

/// Remembers when each scheduler (by `enable_seq`, or its ops name where the kernel has
/// no sequence) was first seen enabled.
#[derive(Debug, Default)]
pub struct Since {
    sampled: bool,
    seen: Option<(Option<u64>, Option<String>, u64, bool)>,
}

impl Since {
    /// Fills `since_*` of `s`, read at `unix_ns`.
    pub fn stamp(&mut self, s: &mut SchedExt, unix_ns: u64) {
        let first = !self.sampled;
        self.sampled = true;
        if !s.enabled() {
            self.seen = None;
            return;
        }
        let key = (s.enable_seq, s.ops.clone());
        match &self.seen {
            Some((seq, ops, at, before)) if (seq, ops) == (&key.0, &key.1) => {
                s.since_unix_ns = Some(*at);
                s.since_before_run = *before;
            }
            _ => {
                self.seen = Some((key.0, key.1, unix_ns, first));
                s.since_unix_ns = Some(unix_ns);
                s.since_before_run = first;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree(state: &str, ops: Option<&str>) -> (tempfile::TempDir, KernelRoot) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("sys/kernel/sched_ext");
        fs::create_dir_all(dir.join("root")).unwrap();
        fs::write(dir.join("state"), format!("{state}\n")).unwrap();
        fs::write(dir.join("switch_all"), "1\n").unwrap();
        fs::write(dir.join("nr_rejected"), "0\n").unwrap();
        fs::write(dir.join("enable_seq"), "3\n").unwrap();
        if let Some(o) = ops {
            fs::write(dir.join("root/ops"), format!("{o}\n")).unwrap();
        }
        let r = KernelRoot::new(d.path());
        (d, r)
    }

    #[test]
    fn reads_a_running_scheduler() {
        let (_d, r) = tree("enabled", Some("bpfland_1.1.4_x86_64_unknown_linux_gnu"));
        let s = read(&r).unwrap().unwrap();
        assert!(s.runs_fair_tasks());
        assert_eq!(s.short_name(), "bpfland");
        assert_eq!((s.enable_seq, s.nr_rejected), (Some(3), Some(0)));
    }

    #[test]
    fn disabled_has_no_ops_and_absent_is_none() {
        let (_d, r) = tree("disabled", Some("stale"));
        let s = read(&r).unwrap().unwrap();
        assert_eq!(
            (s.ops.as_deref(), s.describe()),
            (None, "eevdf".to_string())
        );
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(read(&KernelRoot::new(empty.path())).unwrap(), None);
    }

    #[test]
    fn since_is_kept_per_scheduler_and_bounded_at_the_start() {
        let (_d, r) = tree("enabled", Some("lavd_1"));
        let mut since = Since::default();
        let mut s = read(&r).unwrap().unwrap();
        since.stamp(&mut s, 100);
        assert_eq!((s.since_unix_ns, s.since_before_run), (Some(100), true));
        let mut s = read(&r).unwrap().unwrap();
        since.stamp(&mut s, 200);
        assert_eq!((s.since_unix_ns, s.since_before_run), (Some(100), true));
        let mut s = read(&r).unwrap().unwrap();
        s.enable_seq = Some(4);
        since.stamp(&mut s, 300);
        assert_eq!((s.since_unix_ns, s.since_before_run), (Some(300), false));
        let mut off = SchedExt {
            state: "disabled".into(),
            ..Default::default()
        };
        since.stamp(&mut off, 400);
        assert_eq!(off.since_unix_ns, None);
    }
}
