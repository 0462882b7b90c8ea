//! `llctop live`: one summary line per interval on stdout (the default when stdout is not
//! a terminal), with the sources' reasons first, until the duration or a signal.

use std::time::Duration;

use super::{Changes, Error, Options, Run};
use crate::kroot::KernelRoot;
use crate::snapshot::Snapshot;
use crate::topology::{Distance, Topology};

pub fn run(
    opts: &Options,
    root: &KernelRoot,
    topo: &Topology,
    duration: Option<Duration>,
    changes: &Changes,
) -> Result<(), Error> {
    println!("{}", topo.summary());
    let mut run = Run::start(opts, root, topo, duration)?;
    run.change_knobs(opts, root, topo, changes)?;
    let mut first = true;
    run.each(|snap, _| {
        if first {
            for s in &snap.sources {
                if let Some(r) = &s.reason {
                    println!("  {} {:?}: {}", s.name, s.state, r);
                }
            }
            first = false;
        }
        println!("{}", summary_line(snap));
        true
    });
    run.finish();
    Ok(())
}

/// One line per tick: busy overall and per LLC, migrations by distance, top process.
pub fn summary_line(s: &Snapshot) -> String {
    let pct = |x: Option<f64>| x.map_or("  -".into(), |b| format!("{:3.0}", b * 100.0));
    let llcs: Vec<String> = s.llcs.iter().take(16).map(|g| pct(g.busy)).collect();
    let mut line = format!(
        "#{:<4} busy {}% [llc {}]",
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
            .map(|&d| format!("{} {}", d.label(), m.by_distance.get(d)))
            .collect();
        line.push_str(&format!(
            " | mig{} {}",
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
        line.push_str(&format!(" | cs {c}"));
    }
    if let Some(top) = s.processes.as_ref().and_then(|t| t.rows.first()) {
        let interval = s.time.interval_ns.max(1) as f64;
        line.push_str(&format!(
            " | top {}({}) {:.0}%",
            top.comm,
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
        snap.migrations = Some(crate::snapshot::Migrations {
            llc_matrix: vec![vec![0; 16]; 16],
            ..Default::default()
        });
        crate::collect::aggregate(&t, &mut snap);
        let line = summary_line(&snap);
        assert!(line.contains("mig~ smt 0 llc 0 xllc 0 xnode 0"), "{line}");
        assert!(
            line.contains("busy -% [llc "),
            "no busy value is shown as -, not 0: {line}"
        );
    }
}
