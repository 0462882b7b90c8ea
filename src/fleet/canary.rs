//! Canary A/B across hosts (`llctop diff --fleet A B`): hosts are the unit. Each host's
//! recordings reduce, streaming, to one small summary — per metric (the experiment's
//! keys, units and directions: experiment/metrics.rs), the median of its windows'
//! values — so a thousand hosts need a thousand small maps, never their recordings in
//! memory. The two groups of hosts are then compared per metric with the experiment's
//! statistics (rank-sum test, bootstrap interval of the change in the hosts' medians),
//! the p-values adjusted across the metrics by Holm's method (family-wise error at
//! [`stats::ALPHA`]), and judged with `ab`'s verdict words. A file that is not a
//! recording, a host too short to judge and a host missing a metric are dropped and
//! named, the rest compared.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::experiment::metrics;
use crate::experiment::stats::{self, Comparison};
use crate::experiment::verdict;
use crate::record::reader::Stream;
use crate::record::{Line, RecordError};
use crate::text::Esc;

use super::window::{Metrics, WINDOW_SNAPSHOTS, Windower};

/// Windows a host needs to be judged: with fewer its median is one or two windows' noise.
pub const MIN_WINDOWS: usize = 3;
/// Hosts per arm a metric needs to be compared.
pub const MIN_HOSTS: usize = 2;
/// Decompressed bytes read from one recording at most (as `report` reads).
const MAX_FILE: u64 = 16 << 30;

/// One host's summary: per metric, the median of its windows' values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostSummary {
    /// The recordings' host name (their file name where the header has none).
    pub host: String,
    pub files: Vec<String>,
    /// Windows of [`WINDOW_SNAPSHOTS`] snapshots over all its recordings.
    pub windows: usize,
    pub metrics: Metrics,
}

/// One side: its hosts, and what was dropped and why (one line each).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Arm {
    pub hosts: Vec<HostSummary>,
    pub dropped: Vec<String>,
}

/// One metric compared across the hosts of both arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub metric: String,
    pub unit: String,
    /// Medians of the hosts' values, the change in them, its interval and the rank-sum
    /// test's p (n_a, n_b: hosts).
    #[serde(flatten)]
    pub stats: Comparison,
    /// `p` adjusted across the rows by Holm's method.
    pub p_holm: f64,
    pub verdict: String,
    /// Hosts left out of this metric: they lack it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

/// The fleet verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetVerdict {
    pub hosts_a: usize,
    pub hosts_b: usize,
    pub rows: Vec<Row>,
    /// Files and hosts dropped, each with its reason.
    pub dropped: Vec<String>,
    /// Metrics not compared: too few hosts have them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_compared: Vec<String>,
}

/// The median of each metric over these windows' values.
pub fn summarize(windows: &[Metrics]) -> Metrics {
    let mut by: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for w in windows {
        for (k, v) in w {
            by.entry(k).or_default().push(*v);
        }
    }
    by.into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), stats::median(&v)?)))
        .collect()
}

/// Holm's step-down adjustment of `p` (in the order given): the k-th smallest is
/// multiplied by (m − k + 1), kept at least its predecessor's and at most 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (k, &i) in order.iter().enumerate() {
        running = running.max(((m - k) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// One recording's windows' metrics, read streaming (a window's snapshots at most in
/// memory), its host name and its run id (the export's `run_id`).
pub fn windows_of(path: &Path) -> Result<(Option<String>, String, Vec<Metrics>), RecordError> {
    let mut stream = Stream::open(path, MAX_FILE)?;
    let host = stream.header.host.clone();
    let run = super::tables::Ctx::of(&stream.header).run_id;
    let mut out = Vec::new();
    let mut cut = Windower::default();
    for line in &mut stream {
        if let Line::Snapshot(s) = line? {
            out.extend(cut.push(s).map(|w| w.metrics));
        }
    }
    Ok((host, run, out))
}

/// Whether `p` names a Parquet file (the export's `fleet_windows`).
fn is_parquet(p: &Path) -> bool {
    p.extension().is_some_and(|x| x == "parquet")
}

/// The files an argument names: a file; or a directory's recordings (`*.jsonl`,
/// `*.jsonl.gz`) and Parquet files (`*.parquet`: a `fleet_windows` directory), and those
/// of its `fleet_windows/` (an export's directory) — not other subdirectories — sorted.
fn inputs(path: &Path) -> Result<Vec<PathBuf>, String> {
    let meta = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", Esc(&path.display().to_string())))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let list = |d: &Path| -> Result<Vec<PathBuf>, String> {
        let dir =
            std::fs::read_dir(d).map_err(|e| format!("{}: {e}", Esc(&d.display().to_string())))?;
        Ok(dir
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                (name.ends_with(".jsonl") || name.ends_with(".jsonl.gz") || is_parquet(p))
                    && p.is_file()
            })
            .collect())
    };
    let mut v = list(path)?;
    let export = path.join(super::tables::FLEET_WINDOWS.name);
    if export.is_dir() {
        v.extend(list(&export)?.into_iter().filter(|p| is_parquet(p)));
    }
    v.sort();
    Ok(v)
}

/// Read one side: every recording and `fleet_windows` file summarized, grouped by host (a
/// host's windows together, from however many files), files that cannot be read and hosts
/// too short dropped.
pub fn arm(path: &Path) -> Result<Arm, String> {
    let files = inputs(path)?;
    if files.is_empty() {
        return Err(format!(
            "{}: no recordings (*.jsonl, *.jsonl.gz) or exported fleet_windows (*.parquet) in it",
            Esc(&path.display().to_string())
        ));
    }
    let mut by_host: BTreeMap<String, (Vec<String>, Vec<Metrics>)> = BTreeMap::new();
    let mut dropped = Vec::new();
    // Each run read once: a recording and its export side by side (`export -o .`) are
    // one run, not two.
    let mut runs: BTreeMap<String, String> = BTreeMap::new();
    let mut add = |host: String, run: String, name: &str, windows: Vec<Metrics>| {
        if let Some(first) = runs.get(&run) {
            return Some(format!(
                "{}: run {} already read from {}",
                Esc(name),
                Esc(&run),
                Esc(first)
            ));
        }
        runs.insert(run, name.to_string());
        let e = by_host.entry(host).or_default();
        e.0.push(name.to_string());
        e.1.extend(windows);
        None
    };
    for f in files {
        if crate::signals::requested() {
            return Err("stopped".into());
        }
        let name = f.display().to_string();
        if is_parquet(&f) {
            match super::read::windows_of(&f) {
                Ok(runs) => {
                    for ((host, run), windows) in runs {
                        dropped.extend(add(host, run, &name, windows));
                    }
                }
                Err(e) => dropped.push(format!("{}: {}", Esc(&name), Esc(&e))),
            }
            continue;
        }
        match windows_of(&f) {
            Ok((host, run, windows)) => {
                let host = host.filter(|h| !h.is_empty()).unwrap_or_else(|| {
                    f.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_else(|| name.clone())
                });
                dropped.extend(add(host, run, &name, windows));
            }
            // The error names the file.
            Err(e) => dropped.push(Esc(&e.to_string()).to_string()),
        }
    }
    let mut hosts = Vec::new();
    for (host, (files, windows)) in by_host {
        if windows.len() < MIN_WINDOWS {
            dropped.push(format!(
                "host {}: too short ({} windows of {WINDOW_SNAPSHOTS} snapshots; {MIN_WINDOWS} needed)",
                Esc(&host),
                windows.len()
            ));
            continue;
        }
        hosts.push(HostSummary {
            metrics: summarize(&windows),
            windows: windows.len(),
            host,
            files,
        });
    }
    Ok(Arm { hosts, dropped })
}

/// Compare the two arms' hosts per metric (pure).
pub fn compare(a: &Arm, b: &Arm) -> FleetVerdict {
    let keys: std::collections::BTreeSet<&String> = a
        .hosts
        .iter()
        .chain(&b.hosts)
        .flat_map(|h| h.metrics.keys())
        .collect();
    let values = |arm: &Arm, k: &str| -> (Vec<f64>, Vec<String>) {
        let mut v = Vec::new();
        let mut missing = Vec::new();
        for h in &arm.hosts {
            match h.metrics.get(k) {
                Some(x) => v.push(*x),
                None => missing.push(h.host.clone()),
            }
        }
        (v, missing)
    };
    let mut compared = Vec::new();
    let mut not_compared = Vec::new();
    for k in keys {
        let ((va, ma), (vb, mb)) = (values(a, k), values(b, k));
        if va.len() < MIN_HOSTS || vb.len() < MIN_HOSTS {
            not_compared.push(format!(
                "{}: {} hosts in A and {} in B have it ({MIN_HOSTS} each needed)",
                Esc(k),
                va.len(),
                vb.len()
            ));
            continue;
        }
        if let Some(c) = stats::compare(&va, &vb) {
            let missing = ma.into_iter().chain(mb).collect();
            compared.push((k.clone(), c, va, vb, missing));
        }
    }
    let adjusted = holm(&compared.iter().map(|r| r.1.p).collect::<Vec<_>>());
    let rows = compared
        .into_iter()
        .zip(adjusted)
        .map(|((metric, c, va, vb, missing), p_holm)| {
            let (unit, better) = metrics::describe(&metric);
            let ci_agrees = match (c.change, c.ci) {
                (Some(_), Some((lo, hi))) => lo > 0.0 || hi < 0.0,
                (Some(_), None) => false,
                (None, _) => true,
            };
            let significant = p_holm < stats::ALPHA && ci_agrees;
            Row {
                verdict: verdict::judged(significant, &c, better, &va, &vb).into(),
                unit: unit.into(),
                metric,
                stats: c,
                p_holm,
                missing,
            }
        })
        .collect();
    let dropped = a
        .dropped
        .iter()
        .map(|d| format!("A: {d}"))
        .chain(b.dropped.iter().map(|d| format!("B: {d}")))
        .collect();
    FleetVerdict {
        hosts_a: a.hosts.len(),
        hosts_b: b.hosts.len(),
        rows,
        dropped,
        not_compared,
    }
}

/// The text: what was compared and how, one line per metric (the ones that moved
/// first), then what was dropped.
pub fn render(v: &FleetVerdict, (a, b): (&str, &str)) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "fleet A/B: A = {} hosts ({}), B = {} hosts ({}); a host's value is the median of its windows of {WINDOW_SNAPSHOTS} snapshots; B vs A: change in the hosts' median, 95% bootstrap interval, rank-sum p; p adjusted across the {} metrics by Holm's method (family-wise error {:.0}%)",
        v.hosts_a,
        Esc(a),
        v.hosts_b,
        Esc(b),
        v.rows.len(),
        stats::ALPHA * 100.0
    );
    let _ = writeln!(
        out,
        "{:<28} {:>11} {:>11} {:>8} {:>18} {:>6} {:>7} {:>7}  verdict",
        "metric (hosts' median)", "A", "B", "B vs A", "95% CI", "p", "p Holm", "hosts"
    );
    let mut rows: Vec<&Row> = v.rows.iter().collect();
    rows.sort_by_key(|r| r.verdict.starts_with("no "));
    for r in rows {
        let c = &r.stats;
        let _ = writeln!(
            out,
            "{} {:>6.3} {:>7.3} {:>7}  {}",
            verdict::cells(&r.metric, c),
            c.p,
            r.p_holm,
            format!("{}/{}", c.n_a, c.n_b),
            r.verdict
        );
    }
    if v.rows.iter().any(|r| metrics::is_bound(&r.metric)) {
        let _ = writeln!(
            out,
            "rq_wait.p50/p99: tops of log2 histogram buckets (≤): they move in whole doublings"
        );
    }
    let smallest = |n_a: usize, n_b: usize| {
        2.0 / stats::choose((n_a + n_b) as u64, n_b.min(n_a) as u64).max(1) as f64
    };
    if v.hosts_a > 0 && v.hosts_b > 0 && smallest(v.hosts_a, v.hosts_b) >= stats::ALPHA {
        let _ = writeln!(
            out,
            "note: with {} and {} hosts the smallest possible p is {:.2}: no difference can be shown; add hosts",
            v.hosts_a,
            v.hosts_b,
            smallest(v.hosts_a, v.hosts_b)
        );
    }
    for r in v.rows.iter().filter(|r| !r.missing.is_empty()) {
        let _ = writeln!(
            out,
            "{}: left out the hosts without it: {}",
            Esc(&r.metric),
            r.missing
                .iter()
                .map(|h| Esc(h).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for n in &v.not_compared {
        let _ = writeln!(out, "not compared: {n}");
    }
    for d in &v.dropped {
        let _ = writeln!(out, "dropped: {d}");
    }
    out
}

/// `llctop diff --fleet A B`: both sides read, compared, and the verdict printed as text,
/// as JSON (with each host's summary) or written as a page (through the one output path:
/// no link followed, never over an input).
pub fn command(
    a: &Path,
    b: &Path,
    json: bool,
    html: Option<&Path>,
) -> Result<(), crate::run::Error> {
    if let Some(out) = html {
        crate::output::check(out, &[a, b])?;
    }
    let (arm_a, arm_b) = (arm(a)?, arm(b)?);
    let v = compare(&arm_a, &arm_b);
    let names = (a.display().to_string(), b.display().to_string());
    if let Some(out) = html {
        let p = page(&v, (&arm_a, &arm_b), (&names.0, &names.1));
        crate::record::html::write(out, &[a, b], &p)?;
    } else if json {
        let doc = serde_json::json!({
            "verdict": v,
            "hosts_a": arm_a.hosts,
            "hosts_b": arm_b.hosts,
        });
        crate::out!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        crate::out!("{}", crate::text::guard(&render(&v, (&names.0, &names.1))));
    }
    Ok(())
}

/// The page (`llctop diff --fleet --html`): the verdict table as the text has it (with
/// every note the text gives), then per metric each host's value as a dot and each
/// group's median; the figures as JSON for scripts.
pub fn page(v: &FleetVerdict, (a, b): (&Arm, &Arm), names: (&str, &str)) -> String {
    use crate::record::html::{chart, charts, esc, section};
    let mut body = format!(
        "<p>A = {} hosts ({}) · B = {} hosts ({}) · a host's value is the median of its windows of {WINDOW_SNAPSHOTS} snapshots · p adjusted across the {} metrics by Holm's method</p>",
        v.hosts_a,
        esc(names.0),
        v.hosts_b,
        esc(names.1),
        v.rows.len()
    );
    let mut table = String::from(
        "<table><tr><th>metric</th><th>A median</th><th>B median</th><th>change</th><th>95% interval</th><th>p</th><th>p (Holm)</th><th>hosts</th><th>verdict</th></tr>",
    );
    let mut dots = String::new();
    let mut rows = Vec::new();
    let of = |arm: &Arm, k: &str| -> Vec<f64> {
        arm.hosts
            .iter()
            .filter_map(|h| h.metrics.get(k).copied())
            .collect()
    };
    let mut sorted: Vec<&Row> = v.rows.iter().collect();
    sorted.sort_by_key(|r| r.verdict.starts_with("no "));
    for r in sorted {
        let c = &r.stats;
        let pct = |x: f64| format!("{:+.1}%", x * 100.0);
        let _ = write!(
            table,
            "<tr data-metric=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td><td>{}/{}</td><td>{}</td></tr>",
            esc(&r.metric),
            esc(&r.metric),
            esc(&metrics::shown(&r.metric, c.median_a)),
            esc(&metrics::shown(&r.metric, c.median_b)),
            c.change.map_or("-".into(), pct),
            c.ci.map_or("-".into(), |(lo, hi)| format!("{} .. {}", pct(lo), pct(hi))),
            c.p,
            r.p_holm,
            c.n_a,
            c.n_b,
            esc(&r.verdict)
        );
        let (va, vb) = (of(a, &r.metric), of(b, &r.metric));
        let _ = write!(
            dots,
            "<div class=\"ab\" data-metric=\"{}\" data-a=\"{}\" data-b=\"{}\">{}<p class=\"note\">{}</p></div>",
            esc(&r.metric),
            va.len(),
            vb.len(),
            chart(charts::ab_dots(&r.metric, &va, &vb)),
            esc(&r.verdict)
        );
        rows.push(
            serde_json::json!({"metric": r.metric, "a": va, "b": vb, "verdict": r.verdict,
            "p": c.p, "p_holm": r.p_holm, "median_a": c.median_a, "median_b": c.median_b}),
        );
    }
    table.push_str("</table>");
    // The text's notes after its table (what was left out and why), the same words.
    let text = render(v, names);
    for l in text.lines().skip(2 + v.rows.len()) {
        let _ = write!(table, "<p class=\"note\">{}</p>", esc(l));
    }
    section(&mut body, "verdict", "Verdict", &table);
    section(
        &mut body,
        "hosts",
        "Each host's value (dots), each group's median (bar)",
        &dots,
    );
    crate::record::html::page(
        &format!("llctop diff --fleet · {} vs {}", names.0, names.1),
        &body,
        &serde_json::json!({"hosts_a": v.hosts_a, "hosts_b": v.hosts_b, "rows": rows, "dropped": v.dropped}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn host(name: &str, m: &[(&str, f64)]) -> HostSummary {
        HostSummary {
            host: name.into(),
            files: vec![format!("{name}.jsonl")],
            windows: 10,
            metrics: m.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    /// `n` hosts with host-to-host noise (±10 %) on three metrics, cross-LLC migrations
    /// scaled by `shift`.
    fn hosts(rng: &mut ChaCha8Rng, tag: &str, n: usize, shift: f64) -> Arm {
        let mut noisy = |v: f64| v * (0.9 + 0.2 * rng.r#gen::<f64>());
        Arm {
            hosts: (0..n)
                .map(|i| {
                    let xllc = noisy(100.0) * shift;
                    host(
                        &format!("{tag}{i}"),
                        &[
                            ("migrations.xllc", xllc),
                            ("migrations.smt", noisy(40.0)),
                            ("busy", noisy(50.0)),
                        ],
                    )
                })
                .collect(),
            dropped: Vec::new(),
        }
    }

    #[test]
    fn holm_multiplies_by_the_remaining_count_and_stays_monotone() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.5]);
        // Sorted: 0.01×4 = 0.04, 0.03×3 = 0.09, 0.04×2 = 0.08 → kept at 0.09, 0.5×1.
        assert_eq!(adj.len(), 4);
        assert!((adj[0] - 0.04).abs() < 1e-12);
        assert!((adj[2] - 0.09).abs() < 1e-12);
        assert!((adj[1] - 0.09).abs() < 1e-12);
        assert!((adj[3] - 0.5).abs() < 1e-12);
        assert_eq!(holm(&[0.9, 0.8]), [1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn a_summary_is_each_metrics_median_over_the_windows_that_have_it() {
        let w = |pairs: &[(&str, f64)]| -> BTreeMap<String, f64> {
            pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        let s = summarize(&[
            w(&[("a", 1.0), ("b", 10.0)]),
            w(&[("a", 5.0)]),
            w(&[("a", 3.0), ("b", 30.0)]),
        ]);
        assert_eq!(s["a"], 3.0);
        assert_eq!(s["b"], 20.0);
    }

    #[test]
    fn a_shift_on_one_metric_is_called_and_the_others_are_not() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let a = hosts(&mut rng, "a", 12, 1.0);
        let b = hosts(&mut rng, "b", 12, 1.5);
        let v = compare(&a, &b);
        let word = |k: &str| {
            v.rows
                .iter()
                .find(|r| r.metric == k)
                .map(|r| r.verdict.clone())
                .unwrap_or_default()
        };
        assert_eq!(word("migrations.xllc"), "worse", "{v:#?}");
        assert_eq!(word("migrations.smt"), "no detectable difference");
        assert_eq!(word("busy"), "no detectable difference");
        assert_eq!((v.hosts_a, v.hosts_b), (12, 12));
        let text = render(&v, ("canary/", "control/"));
        assert!(text.contains("Holm"), "{text}");
        assert!(
            text.lines()
                .nth(2)
                .is_some_and(|l| l.starts_with("migrations.xllc")),
            "{text}"
        );
    }

    #[test]
    fn an_a_a_split_calls_nothing_at_the_stated_error_rate() {
        // 400 draws of two groups of 40 hosts from one population, three metrics each:
        // the family-wise error (any metric called) stays near or below ALPHA.
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let draws = 400;
        let mut any = 0;
        for _ in 0..draws {
            let a = hosts(&mut rng, "a", 40, 1.0);
            let b = hosts(&mut rng, "b", 40, 1.0);
            if compare(&a, &b)
                .rows
                .iter()
                .any(|r| !r.verdict.starts_with("no "))
            {
                any += 1;
            }
        }
        let rate = any as f64 / draws as f64;
        println!("A/A: some metric called in {any} of {draws} draws ({rate:.3})");
        assert!(rate <= 1.6 * stats::ALPHA, "family-wise error {rate}");
    }

    #[test]
    fn a_host_without_a_metric_is_left_out_of_it_and_named() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut a = hosts(&mut rng, "a", 6, 1.0);
        a.hosts[2].metrics.remove("busy");
        let b = hosts(&mut rng, "b", 6, 1.0);
        let v = compare(&a, &b);
        let busy = v.rows.iter().find(|r| r.metric == "busy").unwrap();
        assert_eq!(busy.missing, ["a2"]);
        assert_eq!((busy.stats.n_a, busy.stats.n_b), (5, 6));
        assert!(render(&v, ("a", "b")).contains("busy: left out the hosts without it: a2"));
        // A metric only one host has is not compared, and said so.
        a.hosts[0].metrics.insert("ipc".into(), 1.0);
        let v = compare(&a, &b);
        assert!(v.rows.iter().all(|r| r.metric != "ipc"));
        assert!(
            v.not_compared[0].starts_with("ipc: 1 hosts in A and 0 in B"),
            "{v:?}"
        );
    }

    #[test]
    fn too_few_hosts_say_no_difference_can_be_shown() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let v = compare(&hosts(&mut rng, "a", 2, 1.0), &hosts(&mut rng, "b", 2, 3.0));
        assert!(v.rows.iter().all(|r| r.verdict.starts_with("no ")));
        assert!(render(&v, ("a", "b")).contains("the smallest possible p is 0.33"));
    }
}
