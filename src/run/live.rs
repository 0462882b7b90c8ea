//! `llctop live`: one summary line per interval on stdout (the default when stdout is not
//! a terminal) — local time, snapshot number, busy, rates per second — and a line when
//! one of the advisor's findings fires or clears, until the duration or a signal. The
//! topology and the sources' reasons go to stderr, so piped output is the lines alone.

use std::time::Duration;

use super::pipeline::{Ctl, Pipeline, Sink, SourceChange, Tick};
use super::{Changes, Error, Options};
use crate::findings::Kind;
use crate::findings::advisor::{FindingLine, State};
use crate::kroot::KernelRoot;
use crate::snapshot::Snapshot;
use crate::text::Esc;
use crate::topology::{Distance, Topology};

/// `live`'s sink: a line per tick and per finding on stdout, source changes on stderr.
struct Lines;

impl Sink for Lines {
    fn tick(&mut self, t: &Tick, _: &mut Ctl) -> Result<bool, Error> {
        for c in &t.sources {
            say_source(c);
        }
        crate::outln!("{}", summary_line(&t.snap));
        for l in t
            .lines
            .iter()
            .filter(|l| l.finding.kind != Kind::BlindSpots)
        {
            crate::outln!("{}", finding_line(l));
        }
        Ok(true)
    }
}

/// `  bpf degraded: reason` on stderr.
fn say_source(c: &SourceChange) {
    let s = &c.now;
    crate::say!(
        "  {} {:?}{}",
        s.name,
        s.state,
        s.reason
            .as_deref()
            .map(|r| format!(": {}", Esc(r)))
            .unwrap_or_default()
    );
}

pub fn run(
    opts: &Options,
    root: &KernelRoot,
    topo: &Topology,
    duration: Option<Duration>,
    changes: &Changes,
) -> Result<(), Error> {
    crate::say!("{}", topo.summary());
    let mut p = Pipeline::start(opts, root, topo, duration, super::stop_flag()?)?;
    // The sources with a reason at the start; later changes as they come.
    for s in p.sources.iter().filter(|s| s.reason.is_some()) {
        say_source(&SourceChange {
            before: None,
            now: s.clone(),
        });
    }
    p.change_knobs(opts, root, topo, changes)?;
    p.drive(&mut [&mut Lines])
}

/// `  ⚑ fired WARNING newidle / cross-LLC churn: … — try: llctop ab …`
pub fn finding_line(l: &FindingLine) -> String {
    let f = &l.finding;
    let state = match l.state {
        State::Fired => "fired",
        State::Cleared => "cleared",
    };
    let mut line = format!("  ⚑ {state} {} {}", f.severity_tag(), Esc(&f.headline()));
    if let (State::Fired, Some(s)) = (l.state, &f.suggestion) {
        line.push_str(&format!(" — {}: {}", s.lead(), Esc(&s.command)));
    }
    line
}

/// One line per tick: local time and snapshot number, busy overall and per LLC,
/// migrations by distance per second, IPC and MPKI, context switches per second, the top
/// process.
pub fn summary_line(s: &Snapshot) -> String {
    let pct = |x: Option<f64>| x.map_or("  -".into(), |b| format!("{:3.0}", b * 100.0));
    let llcs: Vec<String> = s.llcs.iter().take(16).map(|g| pct(g.busy)).collect();
    let secs = s.time.interval_secs();
    let per_s = |n: u64| crate::units::rate(n, secs);
    let mut line = format!(
        "{} #{:<4} busy {}% [llc {}]",
        crate::clock::local_hms(s.time.unix_ns),
        s.seq,
        pct(s.system.busy).trim(),
        llcs.join(" ")
    );
    if s.llcs.len() > 16 {
        line.push_str(" …");
    }
    if let Some(m) = &s.migrations {
        let parts: Vec<String> = Distance::ALL
            .iter()
            .map(|&d| format!("{} {}", d.label(), per_s(m.by_distance.get(d))))
            .collect();
        line.push_str(&format!(
            " | mig{}/s {}",
            if m.precision == crate::snapshot::Precision::Sampled {
                "~"
            } else {
                ""
            },
            parts.join(" ")
        ));
    }
    if let Some(c) = crate::counters::sum(s.nodes.iter().filter_map(|n| n.counters.as_ref())) {
        let mut c = c;
        crate::counters::derive(&mut c, s.time.interval_secs());
        if let Some(ipc) = c.ipc {
            line.push_str(&format!(" | ipc {ipc:.2}"));
        }
        if let Some(mpki) = c.mpki {
            line.push_str(&format!(" mpki {mpki:.1}"));
        }
    }
    if let Some(c) = s.system.ctx_switches {
        line.push_str(&format!(" | cs/s {}", per_s(c)));
    }
    if let Some(top) = s.processes.as_ref().and_then(|t| t.rows.first()) {
        let interval = s.time.interval_ns.max(1) as f64;
        line.push_str(&format!(
            " | top {}({}) cpu {:.0}%",
            Esc(&top.comm),
            top.pid,
            100.0 * top.cpu_time_ns as f64 / interval
        ));
        if let (Some(p), Some(h)) = (top.preferred_llc, top.preferred_hit) {
            line.push_str(&format!(" pref llc{p} hit {:.0}%", h * 100.0));
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kroot::KernelRoot;
    use crate::topology;

    #[test]
    fn summary_line_marks_sampled_migrations() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/topology/epyc-7702p"
        );
        let t = topology::discover(&KernelRoot::new(fixture)).unwrap();
        let mut snap = crate::collect::empty_snapshot(&t);
        snap.time.interval_ns = 2_000_000_000;
        snap.migrations = Some(crate::snapshot::Migrations {
            llc_matrix: vec![vec![0; 16]; 16],
            ..Default::default()
        });
        if let Some(m) = snap.migrations.as_mut() {
            m.by_distance.cross_llc = 6;
        }
        crate::collect::aggregate(&t, &mut snap);
        let line = summary_line(&snap);
        assert!(line.contains("mig~/s smt 0 llc 0 xllc 3 xnode 0"), "{line}");
        assert!(
            line.contains("busy -% [llc "),
            "no busy value is shown as -, not 0: {line}"
        );
    }

    #[test]
    fn a_fired_finding_is_one_line_with_what_to_try() {
        let topo = topology::synthetic(1, 2, 2);
        let mut t = crate::run::pipeline::Ticker::new(&topo, &[]);
        let mut lines = Vec::new();
        for seq in 0..6 {
            let mut s = crate::findings::testing::snap(&topo, seq, 0.9);
            s.cpus[0].rq_wait_ns = Some(900_000_000);
            s.cpus[1].busy = Some(0.0);
            lines.extend(t.tick(s).lines);
        }
        let fired: Vec<String> = lines
            .iter()
            .filter(|l| l.finding.kind == Kind::NotConserved)
            .map(finding_line)
            .collect();
        assert_eq!(fired.len(), 1, "{fired:?}");
        assert!(
            fired[0].starts_with(
                "  ⚑ fired CRITICAL (0.90 CPUs) work not conserved in an LLC: llc0: tasks waited 1.80 s"
            ),
            "{}",
            fired[0]
        );
        assert!(fired[0].ends_with("— try: llctop ab --profile work-conserving -- <workload>"));

        // Advice in words is led as advice, never "try: give each thread…".
        let mut advice = lines
            .iter()
            .find(|l| l.finding.kind == Kind::NotConserved && l.state == State::Fired)
            .cloned()
            .expect("the fired line");
        advice.finding.suggestion = Some(crate::findings::Suggestion {
            knob: None,
            value: None,
            profile: None,
            command: "give each thread its own CPU set".into(),
            why: String::new(),
        });
        let line = finding_line(&advice);
        assert!(
            line.ends_with("— what to do: give each thread its own CPU set"),
            "{line}"
        );
        assert!(!line.contains("try:"), "{line}");
    }
}
