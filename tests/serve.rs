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

// ---- The flight recorder (`serve --flight-recorder DIR`) ----

/// `llctop --source procfs --interval INTERVAL serve --listen 127.0.0.1:PORT
/// --flight-recorder DIR ARGS…`, its stderr appended to [`err_of`]`(tmp)`.
fn recorder(
    port: u16,
    tmp: &std::path::Path,
    dir: &std::path::Path,
    interval: &str,
    args: &[&str],
) -> Kill {
    let err = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(err_of(tmp))
        .expect("stderr file");
    Kill(
        Command::new(BIN)
            .args([
                "--source",
                "procfs",
                "--interval",
                interval,
                "serve",
                "--listen",
            ])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--flight-recorder")
            .arg(dir)
            .args(args)
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .expect("llctop serve"),
    )
}

fn err_of(tmp: &std::path::Path) -> std::path::PathBuf {
    tmp.join("serve.err")
}

fn said(tmp: &std::path::Path) -> String {
    std::fs::read_to_string(err_of(tmp)).unwrap_or_default()
}

/// A series' value in a classic-format scrape (the first sample whose name and labels
/// start with `prefix`).
fn sample(body: &str, prefix: &str) -> Option<f64> {
    body.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn scrape(port: u16) -> String {
    get(&format!("http://127.0.0.1:{port}/metrics"), None)
        .map(|r| r.2)
        .unwrap_or_default()
}

/// Bytes of the regular files directly in `dir` (the segments; dumps are in dumps/).
fn kept_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn dumps(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("dumps"))
        .map(|rd| rd.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    v.retain(|p: &std::path::PathBuf| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("dump-"))
    });
    v.sort();
    v
}

/// The names in `dir` (none when it cannot be read).
fn names_in(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[test]
fn the_flight_recorder_keeps_the_last_seconds_and_dumps_them_on_sigusr1_and_post() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fr");
    let port = free_port();
    let mut srv = recorder(port, tmp.path(), &dir, "1s", &["--keep", "20s"]);
    // 26 snapshots: past --keep, so the oldest have gone.
    wait_for("26 snapshots", Duration::from_secs(120), || {
        sample(&scrape(port), "llctop_snapshots_total").is_some_and(|n| n >= 26.0)
    });
    let metrics = scrape(port);
    let oldest = sample(&metrics, "llctop_flight_recorder_oldest_seconds").unwrap();
    assert!(
        (20.0..=24.0).contains(&oldest),
        "{oldest} s kept for --keep 20s"
    );
    assert_eq!(
        sample(
            &metrics,
            "llctop_flight_recorder_state{state=\"recording\"}"
        ),
        Some(1.0)
    );
    let signalled = unix_ns();
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(srv.0.id() as i32, libc::SIGUSR1) }, 0);
    wait_for("the SIGUSR1 dump", Duration::from_secs(20), || {
        dumps(&dir).len() == 1
    });
    let d = &dumps(&dir)[0];
    assert!(
        d.to_string_lossy().ends_with("-signal.jsonl.gz"),
        "{}",
        d.display()
    );
    let rec = llctop::record::reader::open(d).expect("the dump is a recording");
    let seqs: Vec<u64> = rec.snapshots.iter().map(|s| s.seq).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let first_end = rec.snapshots[0].time.unix_ns;
    println!(
        "dump {}: {} snapshots, the first ending {:.1} s before the signal",
        d.display(),
        seqs.len(),
        (signalled - first_end) as f64 / 1e9
    );
    assert!(
        signalled - first_end >= 15_000_000_000,
        "the history before the signal"
    );
    // `report` reads it as it reads any recording.
    let out = Command::new(BIN)
        .arg("report")
        .arg(d)
        .output()
        .expect("llctop report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // POST answers with the dump's name; GET is not a dump.
    let url = format!("http://127.0.0.1:{port}/flight-recorder/dump");
    let mut r = ureq::post(&url).send_empty().expect("POST");
    let body = r.body_mut().read_to_string().unwrap();
    assert!(
        std::path::Path::new(body.trim()).is_file() && body.contains("-http.jsonl.gz"),
        "{body}"
    );
    assert_eq!(get(&url, None).unwrap().0, 405);
    // Counted at the next snapshot.
    for reason in ["signal", "http"] {
        let name = format!("llctop_flight_recorder_dumps_total{{reason=\"{reason}\"}}");
        wait_for(&name, Duration::from_secs(10), || {
            sample(&scrape(port), &name) == Some(1.0)
        });
    }
    // The directory is llctop's own.
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    drop(srv.0.kill());
}

#[test]
fn the_flight_recorder_never_passes_its_cap_and_drops_the_oldest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fr");
    let port = free_port();
    let cap = 256 * 1024;
    let _srv = recorder(
        port,
        tmp.path(),
        &dir,
        "100ms",
        &["--keep", "1h", "--max-size", "256KiB"],
    );
    let t = Instant::now();
    let mut peak = 0;
    // Until the first segment has been dropped to make room.
    loop {
        peak = peak.max(kept_bytes(&dir));
        assert!(peak <= cap, "{peak} bytes on disk, over the cap of {cap}");
        let names = names_in(&dir);
        let segs = names.iter().filter(|n| n.starts_with("seg-")).count();
        if segs >= 2 && !names.iter().any(|n| n.starts_with("seg-0000000000-")) {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(240),
            "no segment dropped in 240 s: {names:?} ({peak} bytes at most)\n{}",
            said(tmp.path())
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    let m = scrape(port);
    let bytes = sample(&m, "llctop_flight_recorder_bytes").unwrap();
    println!(
        "dropped the oldest after {:.0} s; at most {peak} bytes on disk, {bytes} now (cap {cap})",
        t.elapsed().as_secs_f64()
    );
    assert!(bytes <= cap as f64);
}

#[test]
fn a_killed_flight_recorder_drops_its_torn_segment_and_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fr");
    let port = free_port();
    let mut srv = recorder(port, tmp.path(), &dir, "500ms", &["--keep", "8s"]);
    // Segments of 1 s: wait for two whole ones and a part being written.
    wait_for("segments and a part", Duration::from_secs(60), || {
        let names = names_in(&dir);
        names.iter().filter(|n| n.starts_with("seg-")).count() >= 2
            && names.iter().any(|n| n.ends_with(".part"))
    });
    srv.0.kill().unwrap();
    srv.0.wait().unwrap();
    let kept_before: Vec<String> = names_in(&dir)
        .into_iter()
        .filter(|n| n.starts_with("seg-"))
        .collect();
    let port = free_port();
    let _srv = recorder(port, tmp.path(), &dir, "500ms", &["--keep", "8s"]);
    wait_for(
        "the restart's first snapshots",
        Duration::from_secs(60),
        || sample(&scrape(port), "llctop_snapshots_total").is_some_and(|n| n >= 2.0),
    );
    let text = said(tmp.path());
    assert!(
        text.contains("a segment being written when llctop stopped") && text.contains("dropped"),
        "{text}"
    );
    assert!(
        text.contains(&format!("{} segments kept", kept_before.len())),
        "{text}"
    );
    let url = format!("http://127.0.0.1:{port}/flight-recorder/dump");
    let mut r = ureq::post(&url).send_empty().expect("POST");
    let path = r.body_mut().read_to_string().unwrap();
    let rec = llctop::record::reader::open(std::path::Path::new(path.trim())).unwrap();
    let seqs: Vec<u64> = rec.snapshots.iter().map(|s| s.seq).collect();
    // Both runs' snapshots, numbered on across the restart.
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let gap = rec
        .snapshots
        .windows(2)
        .map(|w| w[1].time.mono_ns - w[0].time.mono_ns)
        .max()
        .unwrap();
    assert!(
        gap > 700_000_000,
        "the restart's gap is in the dump: {seqs:?}"
    );
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_full_disk_keeps_the_exporter_answering_and_says_so() {
    common::require_root();
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs"])
        .arg(&mnt)
        .status()
        .expect("mount");
    assert!(st.success(), "mount a tmpfs");
    struct Umount(std::path::PathBuf);
    impl Drop for Umount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    let _umount = Umount(mnt.clone());
    // All but ~8 KiB taken: the first segment does not fit.
    let filler = mnt.join("filler");
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=4k", "count=126"])
        .arg(format!("of={}", filler.display()))
        .stderr(Stdio::null())
        .status();
    let dir = mnt.join("fr");
    let port = free_port();
    let _srv = recorder(
        port,
        tmp.path(),
        &dir,
        "200ms",
        &["--keep", "10s", "--max-size", "1MiB"],
    );
    wait_for("the disk_full state", Duration::from_secs(60), || {
        sample(
            &scrape(port),
            "llctop_flight_recorder_state{state=\"disk_full\"}",
        ) == Some(1.0)
    });
    // Still answering: metrics and health.
    let snaps = sample(&scrape(port), "llctop_snapshots_total").unwrap();
    wait_for("more snapshots", Duration::from_secs(30), || {
        sample(&scrape(port), "llctop_snapshots_total").is_some_and(|n| n >= snaps + 5.0)
    });
    assert_eq!(
        get(&format!("http://127.0.0.1:{port}/healthz"), None)
            .unwrap()
            .0,
        200
    );
    assert!(
        said(tmp.path()).contains("disk full"),
        "{}",
        said(tmp.path())
    );
    // Room again: recording again.
    std::fs::remove_file(&filler).unwrap();
    wait_for("recording again", Duration::from_secs(60), || {
        sample(
            &scrape(port),
            "llctop_flight_recorder_state{state=\"recording\"}",
        ) == Some(1.0)
    });
    assert!(
        said(tmp.path()).contains("recording again"),
        "{}",
        said(tmp.path())
    );
}
