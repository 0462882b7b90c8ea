//! `llctop serve` scraped for real: its /metrics passes `promtool check metrics`, speaks
//! OpenMetrics to a scraper that asks for it, and a real Prometheus server (Debian's
//! `prometheus` package, installed by scripts/deps.sh) scrapes it and answers queries for
//! migrations by distance and per-LLC busy time. Non-loopback addresses are refused
//! without --allow-remote.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::serve::{Kill, free_port};

const BIN: &str = env!("CARGO_BIN_EXE_llctop");

fn get(url: &str, accept: Option<&str>) -> Result<(u16, String, String), String> {
    let mut req = ureq::get(url);
    if let Some(a) = accept {
        req = req.header("Accept", a);
    }
    match req.call() {
        Ok(mut r) => {
            let ctype = r
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let body = r.body_mut().read_to_string().map_err(|e| e.to_string())?;
            Ok((r.status().as_u16(), ctype, body))
        }
        Err(ureq::Error::StatusCode(c)) => Ok((c, String::new(), String::new())),
        Err(e) => Err(e.to_string()),
    }
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < timeout, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A Prometheus server on a free loopback port scraping 127.0.0.1:`target` every second,
/// its data under `dir`: (its port, the process).
fn prometheus(dir: &std::path::Path, target: u16) -> (u16, Kill) {
    let cfg = dir.join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: llctop\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
        ),
    )
    .expect("config");
    let pport = free_port();
    let p = Kill(
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{pport}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (scripts/deps.sh installs it)"),
    );
    (pport, p)
}

fn serve(port: u16) -> Kill {
    Kill(
        Command::new(BIN)
            .args([
                "--source",
                "procfs",
                "--interval",
                "500ms",
                "serve",
                "--listen",
            ])
            .arg(format!("127.0.0.1:{port}"))
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("llctop serve"),
    )
}

#[test]
fn metrics_pass_promtool_and_a_real_prometheus_scrapes_them() {
    let port = free_port();
    let _serve = serve(port);
    let base = format!("http://127.0.0.1:{port}");
    wait_for("healthz", Duration::from_secs(30), || {
        get(&format!("{base}/healthz"), None).is_ok_and(|r| r.0 == 200)
    });
    // The classic format, linted by Prometheus's own tool.
    let (code, ctype, classic) = get(&format!("{base}/metrics"), None).expect("scrape");
    assert_eq!(code, 200);
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (scripts/deps.sh installs prometheus)");
    lint.stdin
        .take()
        .expect("stdin")
        .write_all(classic.as_bytes())
        .expect("write");
    let out = lint.wait_with_output().expect("promtool");
    assert!(
        out.status.success(),
        "promtool: {}{}\n{classic}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // OpenMetrics for a scraper that asks.
    let (_, ctype, om) = get(
        &format!("{base}/metrics"),
        Some("application/openmetrics-text; version=1.0.0"),
    )
    .expect("scrape");
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    assert!(om.ends_with("# EOF\n"));
    for m in [
        "llctop_migrations_total{distance=\"xllc\"}",
        "llctop_llc_busy_seconds_total{",
        "llctop_source_up{source=\"procfs.stat\"} 1",
        "llctop_context_switches_total",
    ] {
        assert!(om.contains(m), "{m} in\n{om}");
    }
    assert_eq!(get(&format!("{base}/nothing"), None).map(|r| r.0), Ok(404));

    // A real Prometheus scraping it every second.
    let dir = tempfile::tempdir().expect("tempdir");
    let (pport, _prom) = prometheus(dir.path(), port);
    let query = |q: &str| -> serde_json::Value {
        ureq::get(&format!("http://127.0.0.1:{pport}/api/v1/query"))
            .query("query", q)
            .call()
            .ok()
            .and_then(|mut r| r.body_mut().read_to_string().ok())
            .and_then(|b| serde_json::from_str(&b).ok())
            .unwrap_or(serde_json::Value::Null)
    };
    let results =
        |v: &serde_json::Value| v["data"]["result"].as_array().cloned().unwrap_or_default();
    // Two scrapes or more: the counters have a rate.
    wait_for("two scrapes in Prometheus", Duration::from_secs(90), || {
        results(&query("count_over_time(llctop_snapshots_total[1m])"))
            .first()
            .and_then(|r| r["value"][1].as_str()?.parse::<f64>().ok())
            .is_some_and(|n| n >= 2.0)
    });
    let up = results(&query("up{job=\"llctop\"}"));
    assert_eq!(
        up.first().map(|r| r["value"][1].clone()),
        Some("1".into()),
        "{up:?}"
    );
    // The build: llctop's version and this kernel's release, as Prometheus reads them.
    let build = results(&query("llctop_build_info"));
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    assert_eq!(
        build.first().map(|r| (
            r["metric"]["version"].clone(),
            r["metric"]["kernel"].clone()
        )),
        Some((
            env!("CARGO_PKG_VERSION").into(),
            release.trim().to_string().into()
        )),
        "{build:?}"
    );
    let rates = results(&query("rate(llctop_migrations_total[1m])"));
    let mut distances: Vec<String> = rates
        .iter()
        .filter_map(|r| r["metric"]["distance"].as_str().map(String::from))
        .collect();
    distances.sort();
    assert_eq!(distances, ["llc", "smt", "xllc", "xnode"], "{rates:?}");
    let busy = results(&query(
        "rate(llctop_llc_busy_seconds_total[1m]) / llctop_llc_cpus",
    ));
    assert!(!busy.is_empty(), "per-LLC busy");
    for b in &busy {
        let v: f64 = b["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or(-1.0);
        assert!((0.0..=1.0001).contains(&v), "busy fraction {v}: {b}");
    }
}

#[test]
fn a_non_loopback_address_needs_allow_remote() {
    let out = Command::new(BIN)
        .args(["--source", "procfs", "serve", "--listen", "0.0.0.0:0"])
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .expect("llctop");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-remote"), "{err}");
}

/// A 256-CPU host's snapshot with every part filled: migrations with causes, two
/// balancing levels, NUMA counters and a cgroup, processes with a preference.
fn full_snapshot(topo: &llctop::topology::Topology) -> llctop::snapshot::Snapshot {
    use llctop::snapshot::*;
    let mut s = llctop::collect::empty_snapshot(topo);
    s.time.interval_ns = 1_000_000_000;
    for c in &mut s.cpus {
        c.busy = Some(0.5);
        c.rq_wait_ns = Some(1000);
        c.migrations_in = Some(1);
        c.migrations_out = Some(1);
    }
    let n = topo.llcs.len();
    let mut m = Migrations {
        llc_matrix: vec![vec![0; n]; n],
        precision: Precision::Exact,
        by_cause: Some(ByCause::default()),
        ..Default::default()
    };
    m.by_distance.cross_llc = 5;
    s.migrations = Some(m);
    s.system.ctx_switches = Some(1000);
    s.system.forks = Some(3);
    s.balance = Some(Balance {
        version: 17,
        domains: (0..3)
            .map(|level| DomainBalance {
                level,
                name: Some(["SMT", "MC", "NUMA"][level as usize].into()),
                cpus: 2,
                ..Default::default()
            })
            .collect(),
    });
    s.numa = Some(NumaStats {
        balancing_mode: Some(1),
        vmstat: [("numa_hint_faults", 3), ("numa_pages_migrated", 1)]
            .map(|(k, v)| (k.to_string(), v))
            .into_iter()
            .collect(),
        nodes: vec![],
        cgroups: vec![CgroupNuma {
            path: "/db".into(),
            numa_pages_migrated: Some(1),
            numa_pte_updates: Some(2),
            numa_hint_faults: Some(3),
        }],
    });
    s.processes = Some(ProcessTable {
        precision: Precision::Exact,
        total: 1,
        rows: vec![ProcessStats {
            pid: 42,
            comm: "stream".into(),
            cpu_time_ns: 500_000_000,
            preferred_llc: Some(0),
            preferred_hit: Some(0.8),
            ..Default::default()
        }],
        ..Default::default()
    });
    s.sources = vec![
        SourceStatus::active(llctop::snapshot::SourceName::Bpf),
        SourceStatus::absent(llctop::snapshot::SourceName::Perf, "no PMU"),
    ];
    // resctrl: the root group's reading of every LLC's L3.
    let mon = llctop::snapshot::CacheMon {
        occupancy_bytes: Some(8 << 20),
        mbm_total_bytes: Some(3_000_000),
        mbm_local_bytes: Some(2_000_000),
        ..Default::default()
    };
    s.resctrl = Some(llctop::snapshot::Resctrl {
        total: mon,
        groups: vec![llctop::snapshot::ResctrlGroup {
            path: String::new(),
            kind: llctop::snapshot::GroupKind::Root,
            pid: None,
            total: mon,
            domains: topo
                .llcs
                .iter()
                .map(|l| llctop::snapshot::DomainMon {
                    l3: l.cache_id.unwrap_or(l.id),
                    node: None,
                    llc: Some(l.id),
                    mon,
                })
                .collect(),
        }],
        ..Default::default()
    });
    llctop::collect::aggregate(topo, &mut s);
    s
}

/// Every query of the Grafana dashboard names a metric `serve` exposes, and the series a
/// 256-CPU / 16-LLC host produces are counted (README: cardinality).
#[test]
fn the_dashboard_queries_only_exposed_metrics_and_a_256_cpu_host_is_counted() {
    let root = llctop::kroot::KernelRoot::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/topology/epyc-7763-2s"
    ));
    let topo = llctop::topology::discover(&root).expect("fixture");
    let mut e = llctop::serve::metrics::Exporter::new(&topo);
    e.update(&full_snapshot(&topo));
    let mut knobs = std::collections::BTreeMap::new();
    knobs.insert("numa_balancing".to_string(), "1".to_string());
    e.knobs(&knobs);
    let om = e.openmetrics();
    let classic = llctop::serve::metrics::classic(&om);
    // Names as Prometheus stores them: every sample's name.
    let exposed: std::collections::BTreeSet<String> = classic
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next().map(String::from))
        .collect();
    let samples = classic
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .count();
    println!(
        "256 CPUs / {} LLCs: {samples} series ({} names)",
        topo.llcs.len(),
        exposed.len()
    );
    assert!(samples < 2 * topo.cpus.len() + 400, "{samples} series");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/dist/grafana/llctop.json"
    ))
    .expect("dashboard");
    let dash: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let mut exprs: Vec<String> = Vec::new();
    for p in dash["panels"].as_array().expect("panels") {
        for t in p["targets"].as_array().expect("targets") {
            exprs.push(t["expr"].as_str().expect("expr").to_string());
        }
    }
    for a in dash["annotations"]["list"].as_array().expect("annotations") {
        exprs.push(a["expr"].as_str().expect("expr").to_string());
    }
    assert!(exprs.len() >= 9, "{exprs:?}");
    let mut used = 0;
    for e in &exprs {
        let mut rest = e.as_str();
        while let Some(i) = rest.find("llctop_") {
            let name: String = rest[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            assert!(exposed.contains(&name), "{name} (in {e}) is not exposed");
            used += 1;
            rest = &rest[i + name.len()..];
        }
    }
    assert!(used >= exprs.len(), "every query names an llctop metric");
    let vars = dash["templating"]["list"].as_array().expect("variables");
    assert!(vars.iter().any(|v| v["name"] == "host"), "a host variable");
}

/// The shipped alerting rules pass promtool's check and its rule unit tests
/// (dist/prometheus/llctop-rules.test.yml), and name only series `serve` exposes.
#[test]
fn the_alerting_rules_pass_promtool_and_name_only_exposed_series() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/dist/prometheus");
    for args in [
        vec!["check", "rules", "llctop-rules.yml"],
        vec!["test", "rules", "llctop-rules.test.yml"],
    ] {
        let out = Command::new("promtool")
            .args(&args)
            .current_dir(dir)
            .output()
            .expect("promtool (scripts/deps.sh installs prometheus)");
        assert!(
            out.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let topo = llctop::topology::synthetic(1, 2, 2);
    let mut e = llctop::serve::metrics::Exporter::new(&topo);
    e.update(&full_snapshot(&topo));
    let mut knobs = std::collections::BTreeMap::new();
    knobs.insert("numa_balancing".to_string(), "1".to_string());
    e.knobs(&knobs);
    let classic = llctop::serve::metrics::classic(&e.openmetrics());
    let rules = std::fs::read_to_string(format!("{dir}/llctop-rules.yml")).expect("rules");
    let mut names = 0;
    for line in rules
        .lines()
        .filter(|l| l.trim_start().starts_with("expr:"))
    {
        let mut rest = line;
        while let Some(i) = rest.find("llctop_") {
            let name: String = rest[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            assert!(
                classic
                    .lines()
                    .any(|l| l.starts_with(&format!("{name}{{"))
                        || l.starts_with(&format!("{name} "))),
                "{name} is not exposed"
            );
            names += 1;
            rest = &rest[i + name.len()..];
        }
    }
    assert!(names >= 4, "every rule names a series");
}

/// What `serve` reports, as Prometheus stores it, agrees with `llctop record` over the
/// same window: a process hopping between CPUs 0 and 1 makes a steady stream of
/// migrations; Prometheus's increase() over the recording's span equals the recording's
/// sum within the scrape's sampling error (about one interval at each edge), and the
/// per-LLC busy fraction its mean. Root: both count with BPF, exactly.
#[test]
#[ignore = "needs root"]
fn prometheus_agrees_with_a_recording_of_the_same_window() {
    // SAFETY: no arguments.
    assert_eq!(unsafe { libc::geteuid() }, 0, "needs root: BPF");
    let port = free_port();
    let _serve = Kill(
        Command::new(BIN)
            .args(["--interval", "1s", "serve", "--listen"])
            .arg(format!("127.0.0.1:{port}"))
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("llctop serve"),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let (pport, _prom) = prometheus(dir.path(), port);
    let query = |q: &str, at: Option<f64>| -> Vec<serde_json::Value> {
        let mut r = ureq::get(&format!("http://127.0.0.1:{pport}/api/v1/query")).query("query", q);
        if let Some(t) = at {
            r = r.query("time", format!("{t:.3}"));
        }
        r.call()
            .ok()
            .and_then(|mut r| r.body_mut().read_to_string().ok())
            .and_then(|b| serde_json::from_str::<serde_json::Value>(&b).ok())
            .and_then(|v| v["data"]["result"].as_array().cloned())
            .unwrap_or_default()
    };
    let value = |r: &serde_json::Value| -> f64 {
        r["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or(f64::NAN)
    };
    wait_for("two scrapes", Duration::from_secs(90), || {
        query("count_over_time(llctop_snapshots_total[1m])", None)
            .first()
            .is_some_and(|r| value(r) >= 2.0)
    });
    let mut hop = Kill(
        Command::new(env!("CARGO_BIN_EXE_llctop-workload"))
            .args(["hop", "0", "1", "100000000"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("workload"),
    );
    std::thread::sleep(Duration::from_secs(2));
    let rec = dir.path().join("r.jsonl.gz");
    let out = Command::new(BIN)
        .args(["--interval", "1s", "record", "--duration", "12s", "-o"])
        .arg(&rec)
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .expect("llctop record");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = llctop::record::reader::open(&rec).expect("recording");
    let first = r.snapshots.first().expect("snapshots");
    let last = r.snapshots.last().expect("snapshots");
    let start_s = first.time.unix_ns.saturating_sub(first.time.interval_ns) as f64 / 1e9;
    let end_s = last.time.unix_ns as f64 / 1e9;
    let span = end_s - start_s;
    let recorded: u64 = r
        .snapshots
        .iter()
        .filter_map(|s| s.migrations.as_ref())
        .map(|m| {
            llctop::topology::Distance::ALL
                .iter()
                .map(|&d| m.by_distance.get(d))
                .sum::<u64>()
        })
        .sum();
    // Prometheus has scraped past the window's end.
    std::thread::sleep(Duration::from_secs(3));
    let _ = hop.0.kill();
    let prom = query(
        &format!(
            "sum(increase(llctop_migrations_total[{}ms]))",
            (span * 1000.0) as u64
        ),
        Some(end_s),
    )
    .first()
    .map_or(f64::NAN, value);
    let rate = recorded as f64 / span;
    println!(
        "{span:.1} s: recorded {recorded} migrations ({rate:.0}/s), Prometheus increase() {prom:.0}"
    );
    assert!(rate > 100.0, "the hops made a steady stream: {rate}/s");
    // One scrape interval at each edge.
    assert!(
        (prom - recorded as f64).abs() <= 2.0 * rate * 1.0 + 0.05 * recorded as f64,
        "Prometheus {prom} vs recorded {recorded}"
    );
    let busy_rec: f64 = r
        .snapshots
        .iter()
        .filter_map(|s| s.llcs[0].busy)
        .sum::<f64>()
        / r.snapshots.len() as f64;
    let busy_prom = query(
        &format!(
            "rate(llctop_llc_busy_seconds_total{{llc=\"0\"}}[{}ms]) / llctop_llc_cpus",
            (span * 1000.0) as u64
        ),
        Some(end_s),
    )
    .first()
    .map_or(f64::NAN, value);
    println!("LLC 0 busy: recorded mean {busy_rec:.3}, Prometheus {busy_prom:.3}");
    assert!(
        (busy_prom - busy_rec).abs() <= 0.1,
        "{busy_prom} vs {busy_rec}"
    );
}
