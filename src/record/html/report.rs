//! The page of one recording (`llctop report --html`): the machine, the heatmaps, the
//! time charts, the findings, the knob changes and markers, and the figures it drew.

use std::fmt::Write as _;

use serde_json::json;

use super::charts::{self, Annotation, Heat, Line};
use super::{annotations, busy_heatmap, chart, esc, llc_rows, missing, page, section};
use crate::record::summary::Summary;
use crate::snapshot::Cause;
use crate::topology::Distance;

/// `llctop report --html`: the page of a fold.
pub fn report(sum: &Summary) -> String {
    let h = &sum.header;
    let topo = &h.topology;
    let series = &sum.series;
    let anns = annotations(sum);
    let mut body = String::new();
    let _ = write!(
        body,
        "<p>host {} · kernel {} · {} · {} snapshots over {:.1} s (interval {:.3} s){}</p>",
        esc(h.host.as_deref().unwrap_or("?")),
        esc(h.kernel.as_deref().unwrap_or("?")),
        esc(&topo.summary()),
        sum.snapshots,
        sum.secs,
        h.interval_ns as f64 / 1e9,
        if sum.truncated {
            " · file truncated after the last complete line"
        } else {
            ""
        }
    );
    let _ = write!(
        body,
        "<p class=\"note\">Time charts: {} columns of {} snapshot{} each (shares and waits: the mean of the column's snapshots; counts: their sum over the column's seconds; p99: the column's worst). Dashed lines: knob changes (blue), markers (grey), findings (red) — hover for their text.</p>",
        series.columns.len(),
        series.width,
        if series.width == 1 { "" } else { "s" }
    );
    section(
        &mut body,
        "topology",
        "Topology",
        &if topo.llcs.is_empty() {
            missing("the recording's topology has no LLCs")
        } else {
            chart(charts::topology(topo))
        },
    );
    if sum.snapshots == 0 {
        section(
            &mut body,
            "charts",
            "Charts",
            &missing("the recording holds no snapshot: nothing to draw over time"),
        );
    } else {
        section(&mut body, "busy", "Busy", &busy_heatmap(sum, &anns));
        time_charts(&mut body, sum, &anns);
    }
    findings(&mut body, sum);
    totals(&mut body, sum);
    events(&mut body, sum);
    start_knobs(&mut body, sum);
    page(
        &format!("llctop report · {}", h.host.as_deref().unwrap_or("?")),
        &body,
        &data(sum, &anns),
    )
}

/// The totals over the recording: the text report's tables (record/tables.rs).
fn totals(body: &mut String, sum: &Summary) {
    let tables = sum.tables();
    if tables.is_empty() {
        return;
    }
    let inner: String = tables.iter().map(super::table).collect();
    section(body, "totals", "Totals over the recording", &inner);
}

fn time_charts(body: &mut String, sum: &Summary, anns: &[Annotation]) {
    let topo = &sum.header.topology;
    let cols = &sum.series.columns;
    let span = sum.series.span();
    let mid = |c: &crate::record::series::Column| (c.from + c.to) / 2.0;
    // Run-queue wait heatmap: tasks waiting per CPU (scale: 1 waiting per CPU = dark).
    let wait_mean = |i: usize| {
        let (s, n) = cols.iter().fold((0.0, 0u32), |(s, n), c| {
            (s + c.wait[i].sum, n + c.wait[i].n)
        });
        (n > 0).then(|| s / f64::from(n))
    };
    let inner = if topo.llcs.is_empty() || (0..topo.llcs.len()).all(|i| wait_mean(i).is_none()) {
        missing("run-queue wait was not recorded (it needs the BPF source or schedstat)")
    } else {
        chart(charts::heatmap(
            &Heat {
                title: "Run-queue wait per LLC (tasks waiting per CPU)",
                unit: " waiting/CPU",
                scale: 1.0,
                full: "1 waiting per CPU",
                cells: cols
                    .iter()
                    .map(|c| (c.from, c.to, c.wait.iter().map(|m| m.get()).collect()))
                    .collect(),
                rows: llc_rows(topo, wait_mean),
                span,
            },
            anns,
        ))
    };
    section(body, "wait", "Run-queue wait", &inner);

    // Migrations by distance (stacked) and by cause.
    let by = |get: &dyn Fn(&crate::record::series::Column) -> Option<f64>| -> Vec<(f64, f64)> {
        cols.iter()
            .filter_map(|c| get(c).map(|v| (mid(c), v)))
            .collect()
    };
    let dist: Vec<Line> = Distance::ALL
        .iter()
        .enumerate()
        .map(|(k, d)| Line {
            name: d.label().to_string(),
            points: by(&|c| c.by_distance.rates(c.secs).map(|r| r[k])),
        })
        .collect();
    let mut inner = if dist.iter().all(|l| l.points.is_empty()) {
        missing("migrations were not recorded")
    } else {
        chart(charts::series(
            "Migrations per second by distance (stacked)",
            "per second",
            &dist,
            span,
            true,
            anns,
        ))
    };
    let cause: Vec<Line> = Cause::ALL
        .iter()
        .enumerate()
        .map(|(k, c)| Line {
            name: c.label().to_string(),
            points: by(&|col| col.by_cause.rates(col.secs).map(|r| r[k])),
        })
        .collect();
    inner.push_str(&if cause.iter().all(|l| l.points.is_empty()) {
        missing("migration causes were not recorded (they need the BPF source)")
    } else {
        chart(charts::series(
            "Migrations per second by cause",
            "per second",
            &cause,
            span,
            false,
            anns,
        ))
    });
    section(body, "migrations", "Migrations", &inner);

    let hit = vec![Line {
        name: "preferred-LLC hit".into(),
        points: by(&|c| c.preferred_hit.get().map(|h| 100.0 * h)),
    }];
    section(
        body,
        "preferred",
        "Preferred-LLC hit",
        &if hit[0].points.is_empty() {
            missing("no process rows with a preferred LLC (they need the BPF source)")
        } else {
            chart(charts::series(
                "Preferred-LLC hit (runtime-weighted)",
                "%",
                &hit,
                span,
                false,
                anns,
            ))
        },
    );

    let mut waits: Vec<Line> = Vec::new();
    for (i, l) in topo.llcs.iter().enumerate() {
        waits.push(Line {
            name: format!("llc{} p99", l.id),
            points: by(&|c| c.p99.get(i).copied().flatten().map(|v| v as f64 / 1e3)),
        });
        waits.push(Line {
            name: format!("llc{} p50", l.id),
            points: by(&|c| c.p50.get(i).and_then(|m| m.get()).map(|v| v / 1e3)),
        });
    }
    waits.retain(|l| !l.points.is_empty());
    section(
        body,
        "latency",
        "Wait latency per LLC",
        &if waits.is_empty() {
            missing("wait percentiles were not recorded (they need the BPF source)")
        } else {
            chart(charts::series(
                "Run-queue wait p50 and p99 per LLC (tops of log2 buckets: each value is at most this)",
                "µs",
                &waits,
                span,
                false,
                anns,
            ))
        },
    );

    let levels: std::collections::BTreeSet<u32> = cols
        .iter()
        .flat_map(|c| c.balance.keys().copied())
        .collect();
    let bal: Vec<Line> = levels
        .iter()
        .map(|l| Line {
            name: format!("domain{l}"),
            points: by(&|c| {
                c.balance.get(l).map(|n| {
                    if c.secs > 0.0 {
                        *n as f64 / c.secs
                    } else {
                        0.0
                    }
                })
            }),
        })
        .collect();
    let mut inner = if bal.is_empty() {
        missing("load balancing was not recorded (it needs /proc/schedstat)")
    } else {
        chart(charts::series(
            "Load-balance attempts per second per domain level",
            "per second",
            &bal,
            span,
            false,
            anns,
        ))
    };
    let numa: Vec<Line> = ["pages migrated", "hinting faults"]
        .iter()
        .enumerate()
        .map(|(k, n)| Line {
            name: (*n).into(),
            points: by(&|c| c.numa.rates(c.secs).map(|r| r[k])),
        })
        .collect();
    inner.push_str(&if numa.iter().all(|l| l.points.is_empty()) {
        missing("NUMA balancing was not recorded")
    } else {
        chart(charts::series(
            "NUMA balancing per second",
            "per second",
            &numa,
            span,
            false,
            anns,
        ))
    });
    section(body, "balancing", "Load balancing and NUMA", &inner);

    // resctrl: what each L3 holds, the memory traffic behind it.
    let occ: Vec<Line> = topo
        .llcs
        .iter()
        .enumerate()
        .map(|(i, l)| Line {
            name: format!("llc{}", l.id),
            points: by(&|c| {
                c.occupancy
                    .get(i)
                    .and_then(|m| m.get())
                    .map(|b| b / 1048576.0)
            }),
        })
        .filter(|l| !l.points.is_empty())
        .collect();
    let mut inner = if occ.is_empty() {
        missing("L3 occupancy was not recorded (it needs resctrl: Intel RDT or AMD PQoS)")
    } else {
        chart(charts::series(
            "L3 occupancy per LLC",
            "MiB",
            &occ,
            span,
            false,
            anns,
        ))
    };
    let bw: Vec<Line> = ["local", "remote"]
        .iter()
        .enumerate()
        .map(|(k, n)| Line {
            name: (*n).into(),
            points: by(&|c| c.membw.rates(c.secs).map(|r| r[k] / 1e6)),
        })
        .collect();
    inner.push_str(&if bw.iter().all(|l| l.points.is_empty()) {
        missing("memory bandwidth was not recorded (it needs resctrl with mbm_total_bytes and mbm_local_bytes)")
    } else {
        chart(charts::series("Memory bandwidth, local and remote (stacked)", "MB/s", &bw, span, true, anns))
    });
    section(body, "resctrl", "L3 occupancy and memory bandwidth", &inner);
}

fn findings(body: &mut String, sum: &Summary) {
    let problems = sum.problems();
    let mut inner = String::new();
    if problems.is_empty() {
        inner.push_str("<p>none</p>");
    }
    for e in problems {
        let f = e.latest();
        let sev = e.worst().label();
        let facts: Vec<String> = f
            .facts
            .iter()
            .map(|x| {
                format!(
                    "<tr><td>{}</td><td>{}</td></tr>",
                    esc(&x.label),
                    esc(&x.shown())
                )
            })
            .collect();
        let _ = write!(
            inner,
            "<div class=\"finding\" data-severity=\"{sev}\"><p><span class=\"sev-{sev}\">{}</span> {} at {:+.1} s{}</p><p>{}</p><p>{}</p><table><tr><th>evidence (snapshots {}..={})</th><th></th></tr>{}</table>{}</div>",
            sev.to_uppercase(),
            esc(f.kind.title()),
            sum.at(e.fired_seq),
            f.kind
                .seed()
                .map(|s| format!(" [seed {s}]"))
                .unwrap_or_default(),
            esc(&f.summary),
            esc(&f.cost_line()),
            f.first_seq,
            f.last_seq,
            facts.join(""),
            f.suggestion
                .as_ref()
                .map(|s| if s.is_command() {
                    format!(
                        "<p>try: <code>{}</code> — {}</p>",
                        esc(&s.command),
                        esc(&s.why)
                    )
                } else {
                    format!("<p>what to do: {} — {}</p>", esc(&s.command), esc(&s.why))
                })
                .unwrap_or_default()
        );
    }
    section(
        body,
        "findings",
        "Findings (the most harmful first)",
        &inner,
    );
}

/// The knob values the recording began with (its header, or its knob-values line).
fn start_knobs(body: &mut String, sum: &Summary) {
    let knobs = &sum.header.knobs;
    if knobs.is_empty() {
        return;
    }
    let mut rows = String::new();
    for (k, v) in knobs {
        let _ = write!(rows, "<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(v));
    }
    section(
        body,
        "knobs",
        &format!("Knob values at the start ({} knobs)", knobs.len()),
        &format!(
            "<details><summary>every knob's value when the recording began</summary><table><tr><th>knob</th><th>value</th></tr>{rows}</table></details>"
        ),
    );
}

fn events(body: &mut String, sum: &Summary) {
    let start = sum.header.start_unix_ns;
    let mut rows = String::new();
    for k in &sum.knobs {
        let _ = write!(
            rows,
            "<tr class=\"knob\"><td>{:+.1} s</td><td>knob</td><td>{}: {} → {} (read back {})</td></tr>",
            k.unix_ns.saturating_sub(start) as f64 / 1e9,
            esc(&k.id),
            esc(&k.old),
            esc(&k.new),
            esc(&k.read_back)
        );
    }
    for m in &sum.markers {
        let _ = write!(
            rows,
            "<tr class=\"marker\"><td>{:+.1} s</td><td>marker</td><td>{}</td></tr>",
            m.unix_ns.saturating_sub(start) as f64 / 1e9,
            esc(&m.label)
        );
    }
    for (what, listed, total) in [
        ("knob changes", sum.knobs.len(), sum.knobs_total),
        ("markers", sum.markers.len(), sum.markers_total),
    ] {
        if total > listed {
            let _ = write!(
                rows,
                "<tr class=\"more\"><td></td><td></td><td>… and {} more {what} (the first {listed} are listed and drawn)</td></tr>",
                total - listed
            );
        }
    }
    if !rows.is_empty() {
        section(
            body,
            "events",
            "Knob changes and markers",
            &format!("<table><tr><th>at</th><th></th><th></th></tr>{rows}</table>"),
        );
    }
}

/// The figures the page drew, beside the text report's (the same fold).
pub(super) fn data(sum: &Summary, anns: &[Annotation]) -> serde_json::Value {
    let topo = &sum.header.topology;
    let llcs: Vec<_> = topo
        .llcs
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let b = sum.busy_llc.get(i).and_then(|m| m.get());
            json!({"id": l.id, "node": l.node, "cpus": l.cpus.len(), "mean_busy": b})
        })
        .collect();
    let migs = sum.migs.as_ref().map(|t| {
        let mut m = serde_json::Map::new();
        for c in Distance::ALL {
            m.insert(c.label().into(), json!(t.by_distance.get(c)));
        }
        m.insert("unclassified".into(), json!(t.unclassified));
        m
    });
    json!({
        "snapshots": sum.snapshots,
        "secs": sum.secs,
        "columns": sum.series.columns.len(),
        "snapshots_per_column": sum.series.width,
        "llcs": llcs,
        "migrations": migs,
        "knob_changes": sum.knobs_total,
        "markers": sum.markers_total,
        "findings": sum.problems().len(),
        "annotations": anns.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Recording;

    fn recording(cache: bool) -> Recording {
        let topo = crate::topology::synthetic(1, 2, 2);
        let snaps = (0..5u64)
            .map(|seq| {
                let mut s = crate::collect::empty_snapshot(&topo);
                s.seq = seq;
                s.time.interval_ns = 1_000_000_000;
                s.time.mono_ns = (seq + 1) * 1_000_000_000;
                s.llcs = (0..2)
                    .map(|id| crate::snapshot::GroupStats {
                        id,
                        cpus: 2,
                        busy: Some(0.5),
                        cache: cache.then(|| crate::snapshot::CacheMon {
                            occupancy_bytes: Some(8 << 20),
                            mbm_total_bytes: Some(300_000_000),
                            mbm_local_bytes: Some(200_000_000),
                            ..Default::default()
                        }),
                        ..Default::default()
                    })
                    .collect();
                s
            })
            .collect();
        let header = crate::record::Header {
            format: crate::record::FORMAT.into(),
            version: 1,
            llctop_version: "t".into(),
            host: Some("<h>".into()),
            kernel: None,
            start_unix_ns: 0,
            interval_ns: 1_000_000_000,
            topology: topo,
            sources: vec![],
            command: vec![],
            knobs: Default::default(),
            boot_id: None,
        };
        Recording::of(header, snaps)
    }

    /// Every totals table's title, headings, cells and notes show in the text report
    /// and on the page — one model, two renderers — for each fixture recording.
    #[test]
    fn every_totals_row_shows_in_the_text_and_on_the_page() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
        let mut seen = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let rec = crate::record::reader::open(&e.unwrap().path()).unwrap();
            let sum = crate::record::report::fold(&rec);
            let tables = sum.tables();
            assert!(tables.len() >= 3, "busy, migrations or balance, …");
            let html = report(&crate::record::report::fold(&rec));
            let text = sum.render();
            for t in &tables {
                assert!(text.contains(&t.title), "text lacks {}", t.title);
                assert!(html.contains(&esc(&t.title)), "page lacks {}", t.title);
                // Headings are drawn over rows only.
                for c in t.cols.iter().filter(|_| !t.rows.is_empty()) {
                    assert!(
                        text.contains(c.name) && html.contains(&esc(c.name)),
                        "{}",
                        c.name
                    );
                }
                for r in &t.rows {
                    for v in r {
                        let shown = crate::text::cell(v, 16).trim_end().to_string();
                        assert!(text.contains(&shown), "text lacks {v:?} of {}", t.title);
                        assert!(
                            html.contains(&format!(">{}</td>", esc(v))),
                            "page lacks {v:?}"
                        );
                        seen += 1;
                    }
                }
                for n in &t.notes {
                    assert!(text.contains(n) && html.contains(&esc(n)), "{n}");
                }
            }
        }
        assert!(seen > 100, "{seen} cells");
    }

    #[test]
    fn resctrl_charts_when_recorded_and_why_not_otherwise() {
        let with = report(&crate::record::report::fold(&recording(true)));
        let s = &with[with.find("<section id=\"resctrl\">").unwrap()..];
        let s = &s[..s.find("</section>").unwrap()];
        assert!(
            s.contains("L3 occupancy per LLC") && s.contains("<svg"),
            "{s}"
        );
        assert!(s.contains("Memory bandwidth, local and remote"), "{s}");
        assert!(!s.contains("class=\"missing\""), "{s}");
        // The host name is text, never markup.
        assert!(with.contains("&lt;h&gt;") && !with.contains("<h>"));
        let without = report(&crate::record::report::fold(&recording(false)));
        assert!(without.contains("L3 occupancy was not recorded (it needs resctrl"));
        assert!(without.contains("memory bandwidth was not recorded"));
    }
}
