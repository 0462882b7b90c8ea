//! `llctop report FILE`: a text summary of a recording — knob changes and markers with
//! their times, per-LLC busy, migrations by distance (with their precision), the same
//! split at each marker, load balancing by domain level (or why there is none),
//! placements and their pile-ups (findings::pileup), top processes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::Recording;
use crate::cpulist;
use crate::findings::advisor::{Advisor, State};
use crate::findings::{Kind, pileup};
use crate::snapshot::SatSum;
use crate::snapshot::{ByDistance, EventKind, Precision, SourceState};
use crate::topology::Distance;

fn pct(x: f64) -> String {
    format!("{:5.1}%", x * 100.0)
}

/// Mean of the `Some` values, or None.
fn mean(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let (s, n) = v.flatten().fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

pub fn render(rec: &Recording) -> String {
    let h = &rec.header;
    let snaps = &rec.snapshots;
    let mut out = String::new();
    let secs: f64 = snaps.iter().map(|s| s.time.interval_secs()).sum();
    let _ = writeln!(
        out,
        "llctop recording v{}: host {} · kernel {} · {}",
        h.version,
        h.host.as_deref().unwrap_or("?"),
        h.kernel.as_deref().unwrap_or("?"),
        h.topology.summary()
    );
    let _ = writeln!(
        out,
        "{} snapshots over {:.1} s (interval {:.3} s){}{}",
        snaps.len(),
        secs,
        h.interval_ns as f64 / 1e9,
        if rec.truncated {
            " · file truncated after the last complete line"
        } else {
            ""
        },
        if rec.skipped_lines > 0 {
            format!(" · {} lines of unknown type skipped", rec.skipped_lines)
        } else {
            String::new()
        }
    );
    if !rec.knobs.is_empty() {
        let _ = writeln!(out, "\nKnob changes (seconds from the start)");
        for k in &rec.knobs {
            let at = k.unix_ns.saturating_sub(h.start_unix_ns) as f64 / 1e9;
            let _ = writeln!(
                out,
                "  {:+7.1}s {:?} {}: {} -> {} (read back {}){}",
                at,
                k.action,
                k.id,
                k.old,
                k.new,
                k.read_back,
                k.label
                    .as_deref()
                    .map(|l| format!(" [{l}]"))
                    .unwrap_or_default()
            );
        }
    }
    if !rec.markers.is_empty() {
        let _ = writeln!(out, "\nMarkers (seconds from the start)");
        for m in &rec.markers {
            let at = m.unix_ns.saturating_sub(h.start_unix_ns) as f64 / 1e9;
            let after = m.after_seq.map_or_else(
                || "before the first snapshot".into(),
                |s| format!("after #{s}"),
            );
            let _ = writeln!(out, "  {at:+7.1}s {:<24} {after}", m.label);
        }
    }
    if snaps.is_empty() {
        return out;
    }

    // Sources that were not fully active at some point.
    let mut notes: BTreeMap<String, String> = BTreeMap::new();
    for s in snaps {
        for st in &s.sources {
            if st.state != SourceState::Active {
                let state = format!("{:?}", st.state).to_lowercase();
                notes.insert(
                    st.name.clone(),
                    format!("{state}: {}", st.reason.as_deref().unwrap_or("")),
                );
            }
        }
    }
    for (name, n) in &notes {
        let _ = writeln!(out, "  source {name}: {n}");
    }

    out.push_str(&findings(rec));

    let _ = writeln!(out, "\nBusy by LLC (mean over the recording)");
    let sys = mean(snaps.iter().map(|s| s.system.busy));
    if let Some(b) = sys {
        let _ = writeln!(out, "  all     {}", pct(b));
    }
    for llc in &h.topology.llcs {
        let b = mean(
            snaps
                .iter()
                .map(|s| s.llcs.get(llc.id as usize).and_then(|g| g.busy)),
        );
        let node = llc.node.map_or("-".into(), |n| n.to_string());
        let _ = writeln!(
            out,
            "  llc{:<4}{}  node {}  cpus {}",
            llc.id,
            b.map_or("     -".into(), pct),
            node,
            cpulist::format(&llc.cpus)
        );
    }

    let migs: Vec<_> = snaps.iter().filter_map(|s| s.migrations.as_ref()).collect();
    if !migs.is_empty() {
        let mut total = ByDistance::default();
        let mut unclassified = 0;
        for m in &migs {
            for d in Distance::ALL {
                total.add(d, m.by_distance.get(d));
            }
            unclassified = u64::saturating_add(unclassified, m.unclassified);
        }
        let sampled = migs.iter().any(|m| m.precision == Precision::Sampled);
        let _ = writeln!(
            out,
            "\nMigrations by distance ({})",
            if sampled {
                "SAMPLED: CPU changes seen between scans, a lower bound"
            } else {
                "exact"
            }
        );
        for d in Distance::ALL {
            let n = total.get(d);
            let _ = writeln!(
                out,
                "  {:<6}{:>10}  {:>9.1}/s",
                d.label(),
                n,
                n as f64 / secs.max(1e-9)
            );
        }
        if unclassified > 0 {
            let _ = writeln!(out, "  unclassified {unclassified}");
        }
    }

    let bal: Vec<_> = snaps.iter().filter_map(|s| s.balance.as_ref()).collect();
    if let Some(first) = bal.first() {
        let _ = writeln!(
            out,
            "\nLoad balancing (/proc/schedstat v{}), totals",
            first.version
        );
        let _ = writeln!(
            out,
            "  level name    busy(ok/fail)   idle(ok/fail)  newidle(ok/fail)  gained(b/i/n)"
        );
        let mut levels: BTreeMap<u32, (Option<String>, [u64; 9])> = BTreeMap::new();
        for b in &bal {
            for d in &b.domains {
                let e = levels.entry(d.level).or_insert((d.name.clone(), [0; 9]));
                for (i, lb) in [d.busy, d.idle, d.newidle].iter().enumerate() {
                    let ok = lb
                        .count
                        .saturating_sub(lb.balanced.saturating_add(lb.failed));
                    e.1[i * 2] = e.1[i * 2].saturating_add(ok);
                    e.1[i * 2 + 1] = e.1[i * 2 + 1].saturating_add(lb.failed);
                    e.1[6 + i] = e.1[6 + i].saturating_add(lb.gained);
                }
            }
        }
        for (lvl, (name, v)) in levels {
            let _ = writeln!(
                out,
                "  {:<5} {:<6} {:>7}/{:<7} {:>7}/{:<7} {:>7}/{:<7} {}/{}/{}",
                lvl,
                name.unwrap_or_else(|| "?".into()),
                v[0],
                v[1],
                v[2],
                v[3],
                v[4],
                v[5],
                v[6],
                v[7],
                v[8]
            );
        }
    }

    if bal.is_empty() {
        let why = notes
            .iter()
            .find(|(n, _)| n.contains("schedstat"))
            .map_or("no source recorded it", |(_, r)| r.as_str());
        let _ = writeln!(out, "\nLoad balancing: not recorded ({why})");
    }

    out.push_str(&segments(rec));

    let piles = pileup::find(snaps);
    let placed = snaps
        .iter()
        .filter_map(|s| s.events.as_ref())
        .flat_map(|l| &l.events)
        .filter(|e| e.kind == EventKind::Placement)
        .count();
    let dropped: u64 = snaps
        .iter()
        .filter_map(|s| s.events.as_ref())
        .map(|l| l.dropped)
        .sat_sum();
    if piles.is_empty() {
        if snaps.iter().any(|s| s.events.is_some()) {
            let _ = writeln!(out, "\nPlacements: {placed} new tasks, no pile-up");
        }
    } else {
        let _ = writeln!(out, "\nPlacements: {placed} new tasks");
        for p in &piles {
            let at = p.first_ns.saturating_sub(
                snaps[0]
                    .time
                    .mono_ns
                    .saturating_sub(snaps[0].time.interval_ns),
            ) as f64
                / 1e9;
            let _ = writeln!(out, "  {:+.1}s {}", at, p.describe());
        }
    }
    if dropped > 0 {
        let _ = writeln!(
            out,
            "  {dropped} detail events dropped (rate limit or full buffer): a thread without its placement and first run is not judged"
        );
    }

    // Top processes by CPU time over the recording.
    #[derive(Default)]
    struct P {
        comm: String,
        cpu: u64,
        migs: u64,
        xllc: u64,
        hit_num: f64,
        hit_den: f64,
    }
    let mut procs: BTreeMap<u32, P> = BTreeMap::new();
    let mut precision = None;
    for s in snaps {
        if let Some(t) = &s.processes {
            precision = Some(t.precision);
            for r in &t.rows {
                let p = procs.entry(r.pid).or_default();
                p.comm.clone_from(&r.comm);
                p.cpu = p.cpu.saturating_add(r.cpu_time_ns);
                p.migs = p.migs.saturating_add(r.migrations);
                p.xllc = p.xllc.saturating_add(r.cross_llc_migrations);
                if let Some(h) = r.preferred_hit {
                    p.hit_num += h * r.cpu_time_ns as f64;
                    p.hit_den += r.cpu_time_ns as f64;
                }
            }
        }
    }
    if !procs.is_empty() {
        let mut v: Vec<_> = procs.into_iter().collect();
        v.sort_by(|a, b| b.1.cpu.cmp(&a.1.cpu).then(a.0.cmp(&b.0)));
        let _ = writeln!(
            out,
            "\nTop processes by CPU time{}",
            if precision == Some(Precision::Sampled) {
                " (migrations sampled)"
            } else {
                ""
            }
        );
        let _ = writeln!(
            out,
            "  {:>8} {:<16} {:>9} {:>7} {:>6} {:>6}",
            "pid", "comm", "cpu s", "pref%", "migs", "xllc"
        );
        for (pid, p) in v.into_iter().take(10) {
            let hit = if p.hit_den > 0.0 {
                format!("{:5.1}%", 100.0 * p.hit_num / p.hit_den)
            } else {
                "-".into()
            };
            let _ = writeln!(
                out,
                "  {:>8} {:<16} {:>9.2} {:>7} {:>6} {:>6}",
                pid,
                p.comm.chars().take(16).collect::<String>(),
                p.cpu as f64 / 1e9,
                hit,
                p.migs,
                p.xllc
            );
        }
    }
    out
}

/// The recording split at its markers: per stretch between two markers (or the start
/// and end), its length, mean busy and migrations by distance per second — what changed
/// at each marker. Empty without markers.
fn segments(rec: &Recording) -> String {
    let snaps = &rec.snapshots;
    if rec.markers.is_empty() || snaps.is_empty() {
        return String::new();
    }
    // Stretch i holds the snapshots after marker i-1 and up to marker i.
    let mut cuts: Vec<(u64, &str)> = rec
        .markers
        .iter()
        .map(|m| (m.mono_ns, m.label.as_str()))
        .collect();
    cuts.sort_by_key(|c| c.0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nSplit at the markers (per second; busy is the mean)\n  {:<28} {:>7} {:>6} {}",
        "stretch",
        "secs",
        "busy",
        Distance::ALL
            .iter()
            .map(|d| format!("{:>8}", d.label()))
            .collect::<String>()
    );
    let mut from = "start".to_string();
    for i in 0..=cuts.len() {
        let lo = i.checked_sub(1).map(|j| cuts[j].0);
        let hi = cuts.get(i).map(|c| c.0);
        let part: Vec<_> = snaps
            .iter()
            .filter(|s| {
                lo.is_none_or(|l| s.time.mono_ns > l) && hi.is_none_or(|h| s.time.mono_ns <= h)
            })
            .collect();
        let to = cuts.get(i).map_or("end".to_string(), |c| c.1.to_string());
        let name: String = format!("{from} → {to}").chars().take(28).collect();
        from = to;
        if part.is_empty() {
            let _ = writeln!(out, "  {name:<28} no snapshots");
            continue;
        }
        let secs: f64 = part.iter().map(|s| s.time.interval_secs()).sum();
        let busy = mean(part.iter().map(|s| s.system.busy));
        let migs: Vec<String> = Distance::ALL
            .iter()
            .map(|&d| {
                let n: Option<u64> = part
                    .iter()
                    .map(|s| s.migrations.as_ref().map(|m| m.by_distance.get(d)))
                    .collect::<Option<Vec<u64>>>()
                    .map(|v| v.into_iter().sat_sum());
                n.map_or(format!("{:>8}", "-"), |n| {
                    format!("{:>8.1}", n as f64 / secs.max(1e-9))
                })
            })
            .collect();
        let _ = writeln!(
            out,
            "  {name:<28} {secs:>7.1} {:>6} {}",
            busy.map_or("-".into(), |b| format!("{:.0}%", b * 100.0)),
            migs.join("")
        );
    }
    out
}

/// Seconds from the recording's start to the end of snapshot `seq`.
fn at(rec: &Recording, seq: u64) -> f64 {
    let Some(first) = rec.snapshots.first() else {
        return 0.0;
    };
    let t0 = first.time.mono_ns.saturating_sub(first.time.interval_ns);
    rec.snapshots
        .iter()
        .find(|s| s.seq == seq)
        .map_or(0.0, |s| s.time.mono_ns.saturating_sub(t0) as f64 / 1e9)
}

/// The advisor's episodes over the recording's snapshots (findings::advisor), with their
/// evidence and what to try; the blind spots last.
pub fn findings(rec: &Recording) -> String {
    let adv = Advisor::over(&rec.header.topology, &rec.snapshots);
    let mut out = String::new();
    let problems: Vec<_> = adv.problems().collect();
    let _ = writeln!(out, "\nFindings ({})", problems.len());
    if problems.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for e in &problems {
        let f = e.latest();
        let until = e
            .cleared_seq
            .map_or("end".to_string(), |c| format!("{:+.1}s", at(rec, c)));
        let _ = writeln!(
            out,
            "  {:+.1}s..{until} {} {}{}",
            at(rec, e.fired_seq),
            e.worst().label().to_uppercase(),
            f.kind.title(),
            f.kind
                .seed()
                .map(|s| format!(" [seed {s}]"))
                .unwrap_or_default()
        );
        let _ = writeln!(out, "      {}", f.summary);
        let facts: Vec<String> = f
            .facts
            .iter()
            .map(|x| format!("{} {}", x.label, x.shown()))
            .collect();
        let _ = writeln!(
            out,
            "      evidence (snapshots {}..={}): {}",
            f.first_seq,
            f.last_seq,
            facts.join(" · ")
        );
        if let Some(s) = &f.suggestion {
            let _ = writeln!(out, "      try: {} — {}", s.command, s.why);
        }
    }
    let blind: Vec<&str> = adv
        .episodes
        .iter()
        .filter(|e| e.kind() == Kind::BlindSpots)
        .map(|e| e.latest().summary.as_str())
        .collect();
    if let Some(b) = blind.last() {
        let _ = writeln!(out, "  cannot be judged here: {b}");
    }
    if !rec.findings.is_empty() {
        let recorded: Vec<(u64, Kind, &str)> = rec
            .findings
            .iter()
            .filter(|l| l.state == State::Fired)
            .map(|l| (l.seq, l.finding.kind, l.finding.key.as_str()))
            .collect();
        let found: Vec<(u64, Kind, &str)> = adv
            .episodes
            .iter()
            .map(|e| (e.fired_seq, e.kind(), e.updates[0].key.as_str()))
            .collect();
        if recorded != found {
            let _ = writeln!(
                out,
                "  note: the findings written while recording ({}) differ from these ({})",
                recorded.len(),
                found.len()
            );
        }
    }
    out
}

/// `llctop report --compare`: the verdict of an `llctop ab` recording, recomputed from its
/// windows and snapshots (the table, or JSON).
pub fn compare(rec: &Recording, json: bool) -> Result<String, String> {
    let exp = rec
        .experiment
        .as_ref()
        .ok_or("not a recording of `llctop ab`: it has no experiment line")?;
    let v = crate::experiment::verdict::compute(exp, &rec.windows, &rec.snapshots);
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
                    "procfs.schedstat",
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
}
