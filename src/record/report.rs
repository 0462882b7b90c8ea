//! `llctop report FILE`: a text summary of a recording — knob changes and markers with
//! their times, the scheduler in charge (record/sched.rs), the findings, then the totals
//! tables (record/tables.rs, which the page draws too: per-LLC busy, migrations by
//! distance, load balancing by domain level or why there is none, the split at each
//! marker, placements and their pile-ups, top processes) with L3 occupancy and memory
//! bandwidth (record/l3.rs) after busy.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::Recording;
pub use super::summary::Summary;
use crate::findings::Kind;
use crate::findings::advisor::State;
use crate::text::Esc;

impl Summary {
    /// Seconds from the recording's start to the end of snapshot `seq`.
    pub(super) fn at(&self, seq: u64) -> f64 {
        let t0 = self.t0.unwrap_or(0);
        self.ends
            .binary_search_by_key(&seq, |e| e.0)
            .ok()
            .map_or(0.0, |i| self.ends[i].1.saturating_sub(t0) as f64 / 1e9)
    }

    /// The findings of the advisor's replay: the worst first (severity comes from each
    /// finding's measured harm), then in time.
    pub(super) fn problems(&self) -> Vec<&crate::findings::advisor::Episode> {
        let mut problems: Vec<_> = self.trail.advisor.problems().collect();
        problems.sort_by_key(|e| std::cmp::Reverse(e.worst()));
        problems
    }

    /// The report.
    /// The processes the kernel gave no preferred LLC (7.2+), busiest first, each with
    /// the rules that held at its last snapshot; empty when none said.
    fn no_preference(&self) -> String {
        let mut procs: Vec<(&u32, &super::summary::ProcTotal)> = self
            .procs
            .iter()
            .filter(|(_, p)| p.no_pref.is_some())
            .collect();
        if procs.is_empty() {
            return String::new();
        }
        procs.sort_by(|a, b| b.1.cpu.cmp(&a.1.cpu).then(a.0.cmp(b.0)));
        let mut out = String::from(
            "\nNo preferred LLC: why, by the kernel's own rules (its cache group at the last snapshot)\n",
        );
        for (pid, p) in procs.iter().take(20) {
            let Some((why, g)) = &p.no_pref else { continue };
            let why: Vec<&str> = why.iter().map(|w| w.text()).collect();
            let _ = writeln!(
                out,
                "  {} ({pid}): {} · {} running threads (avg), footprint {}, scanned {} epochs ago",
                Esc(&p.comm),
                why.join("; "),
                g.nr_running_avg,
                crate::units::bytes(g.footprint_bytes),
                g.epochs_since_scan
            );
        }
        if procs.len() > 20 {
            let _ = writeln!(out, "  … and {} more", procs.len() - 20);
        }
        out
    }

    /// The processes whose threads moved off their kernel-preferred LLC (7.2+), most
    /// moves first, with their moves onto it; empty when none did.
    fn off_preferred(&self) -> String {
        let mut procs: Vec<(&u32, &super::summary::ProcTotal, u64, u64)> = self
            .procs
            .iter()
            .filter_map(|(pid, p)| {
                let (onto, off) = p.pref_moves?;
                (off > 0).then_some((pid, p, onto, off))
            })
            .collect();
        if procs.is_empty() {
            return String::new();
        }
        procs.sort_by(|a, b| b.3.cmp(&a.3).then(a.0.cmp(b.0)));
        let mut out = String::from(
            "\nMoves off the kernel-preferred LLC (each process's threads, the preference at the move)\n",
        );
        for (pid, p, onto, off) in procs.iter().take(20) {
            let _ = writeln!(out, "  {} ({pid}): {off} off, {onto} onto it", Esc(&p.comm));
        }
        if procs.len() > 20 {
            let _ = writeln!(out, "  … and {} more", procs.len() - 20);
        }
        out
    }

    /// The pairs of processes that map the same shared memory (the newest read that found
    /// any; a later read that found none is named), each with the LLC it ran on most over
    /// the recording — a pair on two LLCs is a candidate to run on one; empty when no pair
    /// was read.
    fn shared_memory(&self) -> String {
        let Some(sh) = &self.sharing else {
            return String::new();
        };
        if sh.pairs.is_empty() {
            return String::new();
        }
        let later = self
            .sharing_none_at
            .map(|n| format!("; the read at snapshot {n} found none"))
            .unwrap_or_default();
        let mut out = format!(
            "\nProcesses that share memory (the same shared writable mapping in both /proc/PID/maps, {} busiest processes read at snapshot {}{later})\n",
            sh.processes, sh.seq
        );
        let who = |pid: u32| -> (String, Option<u32>) {
            self.procs.get(&pid).map_or((String::new(), None), |p| {
                (format!("{} ", Esc(&p.comm)), p.busiest_llc())
            })
        };
        for p in sh.pairs.iter().take(20) {
            let ((na, la), (nb, lb)) = (who(p.a), who(p.b));
            let llc = |l: Option<u32>| l.map_or("–".to_string(), |l| format!("llc{l}"));
            let _ = writeln!(
                out,
                "  {na}({}, {}) and {nb}({}, {}): {} in {} object{} ({}){}",
                p.a,
                llc(la),
                p.b,
                llc(lb),
                crate::units::bytes(p.bytes),
                p.objects,
                if p.objects == 1 { "" } else { "s" },
                Esc(&p.object),
                match (la, lb) {
                    (Some(x), Some(y)) if x != y => " — on different LLCs",
                    _ => "",
                }
            );
        }
        if sh.pairs.len() > 20 {
            let _ = writeln!(out, "  … and {} more", sh.pairs.len() - 20);
        }
        out
    }

    /// The pairs of processes that woke each other (`--wakeups`), both directions per
    /// second over the snapshots that counted them, the most first, each with the LLC it
    /// ran on most; empty when nothing was counted.
    fn wakeups(&self) -> String {
        let w = &self.wakeups;
        if w.secs <= 0.0 {
            return String::new();
        }
        let mut out = format!(
            "\nProcesses that wake each other (sched_waking in task context, over {:.0} s: {} wakeups between processes; {} in interrupt context went to no pair{})\n",
            w.secs,
            w.paired,
            w.interrupt,
            if w.lost > 0 {
                format!("; {} lost, the pair map full", w.lost)
            } else {
                String::new()
            }
        );
        // Each unordered pair once: (lower pid, higher pid) → (lower woke higher, back).
        let mut both: BTreeMap<(u32, u32), (u64, u64)> = BTreeMap::new();
        for (&(waker, wakee), &n) in &w.pairs {
            if waker < wakee {
                let e = &mut both.entry((waker, wakee)).or_default().0;
                *e = e.saturating_add(n);
            } else {
                let e = &mut both.entry((wakee, waker)).or_default().1;
                *e = e.saturating_add(n);
            }
        }
        let mut pairs: Vec<((u32, u32), (u64, u64))> = both.into_iter().collect();
        pairs.sort_by(|a, b| {
            (b.1.0.saturating_add(b.1.1))
                .cmp(&a.1.0.saturating_add(a.1.1))
                .then(a.0.cmp(&b.0))
        });
        if pairs.is_empty() {
            out.push_str("  none\n");
            return out;
        }
        let who = |pid: u32| -> (String, Option<u32>) {
            self.procs.get(&pid).map_or((String::new(), None), |p| {
                (format!("{} ", Esc(&p.comm)), p.busiest_llc())
            })
        };
        let per_s = |n: u64| crate::units::rate(n, w.secs);
        for ((a, b), (ab, ba)) in pairs.iter().take(20) {
            let ((na, la), (nb, lb)) = (who(*a), who(*b));
            let llc = |l: Option<u32>| l.map_or("–".to_string(), |l| format!("llc{l}"));
            let _ = writeln!(
                out,
                "  {na}({a}, {}) → {nb}({b}, {}): {}/s, back {}/s{}",
                llc(la),
                llc(lb),
                per_s(*ab),
                per_s(*ba),
                match (la, lb) {
                    (Some(x), Some(y)) if x != y => " — on different LLCs",
                    _ => "",
                }
            );
        }
        if pairs.len() > 20 {
            let _ = writeln!(out, "  … and {} more", pairs.len() - 20);
        }
        out
    }

    /// The threads of one process that woke each other (`--wakeups`): each pair of
    /// threads once, both directions per second, the most first; empty when nothing was
    /// counted or no thread woke another of its process.
    fn thread_wakeups(&self) -> String {
        let w = &self.wakeups;
        if w.secs <= 0.0 || w.threads.is_empty() {
            return String::new();
        }
        let mut out = format!(
            "\nThreads that wake each other within a process (over {:.0} s: {} wakeups)\n",
            w.secs, w.within
        );
        // Each unordered pair of threads once: (pid, lower tid, higher tid) → (lower
        // woke higher, back).
        let mut both: BTreeMap<(u32, u32, u32), (u64, u64)> = BTreeMap::new();
        for (&(pid, waker, wakee), &n) in &w.threads {
            let (k, back) = if waker <= wakee {
                ((pid, waker, wakee), false)
            } else {
                ((pid, wakee, waker), true)
            };
            let e = both.entry(k).or_default();
            let e = if back { &mut e.1 } else { &mut e.0 };
            *e = e.saturating_add(n);
        }
        let mut pairs: Vec<_> = both.into_iter().collect();
        pairs.sort_by(|a, b| {
            (b.1.0.saturating_add(b.1.1))
                .cmp(&a.1.0.saturating_add(a.1.1))
                .then(a.0.cmp(&b.0))
        });
        let per_s = |n: u64| crate::units::rate(n, w.secs);
        for ((pid, a, b), (ab, ba)) in pairs.iter().take(20) {
            let name = self
                .procs
                .get(pid)
                .map_or(String::new(), |p| format!("{} ", Esc(&p.comm)));
            let _ = writeln!(
                out,
                "  {name}({pid}): thread {a} → {b}: {}/s, back {}/s",
                per_s(*ab),
                per_s(*ba)
            );
        }
        if pairs.len() > 20 {
            let _ = writeln!(out, "  … and {} more", pairs.len() - 20);
        }
        out
    }

    pub fn render(self) -> String {
        let h = &self.header;
        let mut out = String::new();
        let secs = self.secs;
        let _ = writeln!(
            out,
            "llctop recording v{}: host {} · kernel {} · {}",
            h.version,
            Esc(h.host.as_deref().unwrap_or("?")),
            Esc(h.kernel.as_deref().unwrap_or("?")),
            h.topology.summary()
        );
        let _ = writeln!(
            out,
            "{} snapshots over {:.1} s (interval {:.3} s){}{}",
            self.snapshots,
            secs,
            h.interval_ns as f64 / 1e9,
            if self.truncated {
                " · file truncated after the last complete line"
            } else {
                ""
            },
            if self.skipped_lines > 0 {
                format!(" · {} lines of unknown type skipped", self.skipped_lines)
            } else {
                String::new()
            }
        );
        if !h.knobs.is_empty() {
            let _ = writeln!(
                out,
                "\nKnob values at the start ({} knobs; `llctop diff` compares two recordings')",
                h.knobs.len()
            );
            let items: Vec<String> = h
                .knobs
                .iter()
                .map(|(k, v)| format!("{} {}", Esc(k), Esc(v)))
                .collect();
            out.push_str(&wrap_items(&items, " · ", 88, "  "));
        }
        if !self.knobs.is_empty() {
            let _ = writeln!(out, "\nKnob changes (seconds from the start)");
            for k in &self.knobs {
                let at = k.unix_ns.saturating_sub(h.start_unix_ns) as f64 / 1e9;
                let _ = writeln!(
                    out,
                    "  {:+7.1}s {:?} {}: {} -> {} (read back {}){}",
                    at,
                    k.action,
                    Esc(&k.id),
                    Esc(&k.old),
                    Esc(&k.new),
                    Esc(&k.read_back),
                    k.label
                        .as_deref()
                        .map(|l| format!(" [{}]", Esc(l)))
                        .unwrap_or_default()
                );
            }
            if self.knobs_total > self.knobs.len() {
                let _ = writeln!(
                    out,
                    "  … and {} more knob changes (the first {} are listed)",
                    self.knobs_total - self.knobs.len(),
                    self.knobs.len()
                );
            }
        }
        if !self.markers.is_empty() {
            let _ = writeln!(out, "\nMarkers (seconds from the start)");
            for m in &self.markers {
                let at = m.unix_ns.saturating_sub(h.start_unix_ns) as f64 / 1e9;
                let after = m.after_seq.map_or_else(
                    || "before the first snapshot".into(),
                    |s| format!("after #{s}"),
                );
                let _ = writeln!(out, "  {at:+7.1}s {:<24} {after}", Esc(&m.label));
            }
            if self.markers_total > self.markers.len() {
                let _ = writeln!(
                    out,
                    "  … and {} more markers (the first {} are listed, and the split below is at them)",
                    self.markers_total - self.markers.len(),
                    self.markers.len()
                );
            }
        }
        if self.snapshots == 0 {
            return out;
        }
        for (name, n) in &self.notes {
            let _ = writeln!(out, "  source {}: {}", Esc(name), Esc(n));
        }
        out.push_str(&self.schedulers.section(self.t0.unwrap_or(0)));
        out.push_str(&self.cache_aware.section(self.t0.unwrap_or(0)));
        out.push_str(&self.no_preference());
        out.push_str(&self.off_preferred());
        out.push_str(&self.shared_memory());
        out.push_str(&self.wakeups());
        out.push_str(&self.thread_wakeups());

        out.push_str(&self.findings());

        for t in self.tables() {
            out.push_str(&t.text());
            // What each L3 held follows how busy each LLC was.
            if t.id == "busy-by-llc"
                && let Ok(l3) = self.l3.section(&h.topology, self.snapshots)
            {
                out.push_str(&l3);
            }
        }
        out
    }

    /// The advisor's episodes over the recording's snapshots (findings::advisor), with
    /// their evidence and what to try; the blind spots last.
    fn findings(&self) -> String {
        let adv = &self.trail.advisor;
        let mut out = String::new();
        let problems = self.problems();
        let _ = writeln!(
            out,
            "\nFindings ({}{})",
            problems.len(),
            if problems.len() > 1 {
                "; the most harmful first"
            } else {
                ""
            }
        );
        if problems.is_empty() {
            let _ = writeln!(out, "  none");
        }
        for e in &problems {
            let f = e.latest();
            let until = e
                .cleared_seq
                .map_or("end".to_string(), |c| format!("{:+.1}s", self.at(c)));
            let _ = writeln!(
                out,
                "  {:+.1}s..{until} {} {}{}",
                self.at(e.fired_seq),
                e.worst().label().to_uppercase(),
                f.kind.title(),
                f.kind
                    .seed()
                    .map(|s| format!(" [seed {s}]"))
                    .unwrap_or_default()
            );
            let _ = writeln!(out, "      {}", Esc(&f.summary));
            let _ = writeln!(out, "      {}", Esc(&f.cost_line()));
            let facts: Vec<String> = f
                .facts
                .iter()
                .map(|x| format!("{} {}", Esc(&x.label), Esc(&x.shown())))
                .collect();
            let _ = writeln!(
                out,
                "      evidence (snapshots {}..={}): {}",
                f.first_seq,
                f.last_seq,
                facts.join(" · ")
            );
            if let Some(s) = &f.suggestion {
                let _ = writeln!(
                    out,
                    "      {}: {} — {}",
                    s.lead(),
                    Esc(&s.command),
                    Esc(&s.why)
                );
            }
        }
        let blind: Vec<&str> = adv
            .episodes
            .iter()
            .filter(|e| e.kind() == Kind::BlindSpots)
            .map(|e| e.latest().summary.as_str())
            .collect();
        if let Some(b) = blind.last() {
            let _ = writeln!(out, "  cannot be judged here: {}", Esc(b));
        }
        if !self.recorded_findings.is_empty() {
            // The findings as listed above (notes on what cannot be judged aside).
            let recorded: Vec<(u64, Kind, &str)> = self
                .recorded_findings
                .iter()
                .filter(|l| l.state == State::Fired && l.finding.kind != Kind::BlindSpots)
                .map(|l| (l.seq, l.finding.kind, l.finding.key.as_str()))
                .collect();
            let found: Vec<(u64, Kind, &str)> = adv
                .problems()
                .map(|e| (e.fired_seq, e.kind(), e.updates[0].key.as_str()))
                .collect();
            if recorded != found {
                let _ = writeln!(
                    out,
                    "  note: {} finding{} fired while recording; read again, the recording gives the {} above (the recording was made by a llctop with other thresholds, or cut at its start)",
                    recorded.len(),
                    if recorded.len() == 1 { "" } else { "s" },
                    found.len()
                );
            }
        }
        out
    }
}

/// `items` joined by `sep` in lines of at most `width` columns, each line after `indent`.
fn wrap_items(items: &[String], sep: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for it in items {
        if !line.is_empty() && line.chars().count() + sep.len() + it.chars().count() > width {
            out.push_str(indent);
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push_str(sep);
        }
        line.push_str(it);
    }
    if !line.is_empty() {
        out.push_str(indent);
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The report of a recording read as a stream (constant memory in its length): one
/// thread reads and gunzips the file, others parse the lines, this one folds them in.
pub fn render_stream(stream: super::reader::Stream) -> Result<String, super::RecordError> {
    fold_stream(stream).map(Summary::render)
}

/// The fold of a recording read as a stream: what the text report and the HTML page
/// (record/html) both render.
pub fn fold_stream(stream: super::reader::Stream) -> Result<Summary, super::RecordError> {
    let mut sum = Summary::new(stream.header.clone());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4));
    let mut lines = stream.parallel(workers);
    for line in &mut lines {
        sum.add(line?);
    }
    sum.truncated = lines.truncated();
    sum.skipped_lines = lines.skipped_lines();
    Ok(sum)
}

/// The report of a recording in memory.
pub fn render(rec: &Recording) -> String {
    fold(rec).render()
}

/// The fold of a recording in memory (markers first, so that each snapshot's stretch is
/// known).
pub fn fold(rec: &Recording) -> Summary {
    use super::Line;
    let mut sum = Summary::new(rec.header.clone());
    sum.truncated = rec.truncated;
    sum.skipped_lines = rec.skipped_lines;
    for m in &rec.markers {
        sum.add(Line::Marker(m.clone()));
    }
    for s in &rec.snapshots {
        sum.snapshot(s);
        sum.trail.push(&sum.header.topology, s);
    }
    for k in &rec.knobs {
        sum.add(Line::Knob(k.clone()));
    }
    for f in &rec.findings {
        sum.add(Line::Finding(Box::new(f.clone())));
    }
    sum
}

/// The experiment of an `llctop ab` recording and its verdict, recomputed from its
/// windows and snapshots (the text and the HTML page both show it).
pub fn verdict_of(
    rec: &Recording,
) -> Result<
    (
        &crate::experiment::Experiment,
        crate::experiment::verdict::Verdict,
    ),
    String,
> {
    let exp = rec
        .experiment
        .as_ref()
        .ok_or("not a recording of `llctop ab`: it has no experiment line")?;
    exp.check_windows(&rec.windows)
        .map_err(|e| format!("the recording's window lines make no sense: {e}"))?;
    Ok((
        exp,
        crate::experiment::verdict::compute(exp, &rec.windows, &rec.snapshots),
    ))
}

/// `llctop report --compare`: the verdict of an `llctop ab` recording, recomputed from its
/// windows and snapshots (the table, or JSON).
pub fn compare(rec: &Recording, json: bool) -> Result<String, String> {
    let (exp, v) = verdict_of(rec)?;
    if json {
        let j = serde_json::json!({"experiment": exp, "verdict": v});
        return serde_json::to_string_pretty(&j)
            .map(|t| t + "\n")
            .map_err(|e| e.to_string());
    }
    let mut out = crate::experiment::verdict::render(exp, &v);
    if rec.verdict.as_ref().is_some_and(|live| *live != v) {
        out.push_str("note: the verdict written by the live run differs from this one\n");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Header, Marker};
    use crate::snapshot::{Migrations, Snapshot, SourceStatus};

    fn rec_with_marker() -> Recording {
        let topo = crate::topology::synthetic(1, 2, 2);
        let snaps: Vec<Snapshot> = (0..6u64)
            .map(|seq| {
                let mut s = crate::collect::empty_snapshot(&topo);
                s.seq = seq;
                s.time.interval_ns = 1_000_000_000;
                s.time.mono_ns = (seq + 1) * 1_000_000_000;
                s.system.busy = Some(if seq < 3 { 0.2 } else { 0.6 });
                let mut m = Migrations {
                    llc_matrix: vec![vec![0; 2]; 2],
                    ..Default::default()
                };
                m.by_distance.cross_llc = if seq < 3 { 10 } else { 2 };
                s.migrations = Some(m);
                s.sources = vec![SourceStatus::absent(
                    crate::snapshot::SourceName::ProcfsSchedstat,
                    "schedstat unavailable (CONFIG_SCHEDSTATS off)",
                )];
                s
            })
            .collect();
        let header = Header {
            format: crate::record::FORMAT.into(),
            version: 1,
            llctop_version: "t".into(),
            host: None,
            kernel: None,
            start_unix_ns: 1_000_000_000_000,
            interval_ns: 1_000_000_000,
            topology: topo,
            sources: vec![],
            command: vec![],
            knobs: Default::default(),
            boot_id: None,
        };
        let mut rec = Recording::of(header, snaps);
        rec.markers.push(Marker {
            after_seq: Some(2),
            unix_ns: 1_000_000_000_000 + 3_000_000_000,
            mono_ns: 3_000_000_000,
            label: "knob flipped".into(),
        });
        rec
    }

    #[test]
    fn shared_memory_is_the_newest_read_that_found_pairs_and_a_later_empty_one_is_named() {
        use crate::snapshot::{SharedPair, Sharing};
        let read = |seq: u64, pairs: bool| Sharing {
            seq,
            processes: 2,
            pairs: if pairs {
                vec![SharedPair {
                    a: 10,
                    b: 20,
                    bytes: 16 << 20,
                    objects: 1,
                    object: "/memfd:ring (deleted)".into(),
                }]
            } else {
                Vec::new()
            },
        };
        let mut rec = rec_with_marker();
        rec.snapshots[1].sharing = Some(read(1, true));
        rec.snapshots[4].sharing = Some(read(4, false));
        let r = render(&rec);
        assert!(
            r.contains("read at snapshot 1; the read at snapshot 4 found none)"),
            "{r}"
        );
        assert!(
            r.contains("(10, –) and (20, –): 16.0 MiB in 1 object"),
            "{r}"
        );
        // A newer read with pairs replaces both.
        rec.snapshots[5].sharing = Some(read(5, true));
        let r = render(&rec);
        assert!(r.contains("read at snapshot 5)"), "{r}");
        assert!(!r.contains("found none"), "{r}");
        // No read with pairs: no section.
        for s in &mut rec.snapshots {
            s.sharing = s.sharing.take().map(|sh| read(sh.seq, false));
        }
        assert!(!render(&rec).contains("Processes that share memory"));
    }

    #[test]
    fn markers_split_the_recording_and_a_missing_balance_says_why() {
        let r = render(&rec_with_marker());
        assert!(r.contains("Markers (seconds from the start)"), "{r}");
        assert!(r.contains("   +3.0s knob flipped"), "{r}");
        assert!(r.contains("after #2"), "{r}");
        assert!(
            r.contains("Load balancing: not recorded (absent: schedstat unavailable"),
            "{r}"
        );
        // Before the marker: 3 s at 20 % busy, 10 cross-LLC moves/s; after: 60 %, 2/s.
        let line = |from: &str| {
            r.lines()
                .find(|l| l.trim_start().starts_with(from))
                .unwrap_or_default()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            line("start → knob flipped"),
            "start → knob flipped 3.0 20% 0.0 0.0 10.0 0.0",
            "{r}"
        );
        assert_eq!(
            line("knob flipped → end"),
            "knob flipped → end 3.0 60% 0.0 0.0 2.0 0.0",
            "{r}"
        );
    }

    #[test]
    fn wakeups_are_each_pair_both_ways_per_second_with_their_llcs() {
        use crate::snapshot::{ProcessStats, ProcessTable, ThreadWake, WakePair, Wakeups};
        let mut rec = rec_with_marker();
        assert!(
            !render(&rec).contains("wake each other"),
            "not counted: no section"
        );
        for s in &mut rec.snapshots {
            let row = |pid: u32, llc: usize| {
                let mut per_llc = vec![0u64; 2];
                per_llc[llc] = 500_000_000;
                ProcessStats {
                    pid,
                    comm: format!("p{pid}\x1b"),
                    cpu_time_ns: 500_000_000,
                    runtime_per_llc_ns: per_llc,
                    ..Default::default()
                }
            };
            s.processes = Some(ProcessTable {
                rows: vec![row(10, 0), row(20, 1), row(30, 1)],
                ..Default::default()
            });
            let pair = |waker, wakee, count| WakePair {
                waker,
                wakee,
                count,
            };
            let t = |waker, wakee, count| ThreadWake {
                pid: 30,
                waker,
                wakee,
                count,
            };
            s.wakeups = Some(Wakeups {
                pairs: vec![pair(10, 20, 300), pair(20, 10, 290), pair(30, 20, 5)],
                paired: 595,
                interrupt: 7,
                within: 150,
                threads: vec![t(31, 30, 100), t(30, 31, 50)],
                ..Default::default()
            });
        }
        let r = render(&rec);
        assert!(
            r.contains(
                "over 6 s: 3570 wakeups between processes; 42 in interrupt context went to no pair)"
            ),
            "{r}"
        );
        assert!(
            r.contains(
                "  p10\\x1b (10, llc0) → p20\\x1b (20, llc1): 300/s, back 290/s — on different LLCs"
            ),
            "{r}"
        );
        assert!(
            r.contains("  p20\\x1b (20, llc1) → p30\\x1b (30, llc1): 0/s, back 5/s\n"),
            "{r}"
        );
        // Threads of one process: each pair once, both ways.
        assert!(
            r.contains("Threads that wake each other within a process (over 6 s: 900 wakeups)"),
            "{r}"
        );
        assert!(
            r.contains("  p30\\x1b (30): thread 30 → 31: 50/s, back 100/s\n"),
            "{r}"
        );
    }
}
