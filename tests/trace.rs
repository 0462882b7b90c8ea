//! `llctop trace` and `llctop export --perfetto`, each trace decoded by Perfetto's own
//! generated Python classes (tests/perfetto_decode.py), never by llctop's code:
//! - a workload that hops between CPU 0 and CPU 1 N times under `llctop trace -- CMD`: its
//!   migrations in the trace equal the kernel's own count (`se.nr_migrations`), every one
//!   perf's `sched:sched_migrate_task` saw for its pid is one of them (same CPUs, same
//!   moment) and perf lacks none but what it lost, each named by the distance sysfs gives those
//!   CPUs; its switches in the trace are its context switches as getrusage counts them
//!   (plus its exit); its name and command line are right; the track tree is the
//!   machine's; llctop exits with the command's status;
//! - SIGINT/SIGTERM/SIGHUP mid-trace leave a whole trace and exit 128+sig; a full disk
//!   cuts it at a whole packet with a one-line error; an unwritable output is refused;
//! - export: every counter of a recording's trace is the recording's figure.
//!
//! (perf's `sched:sched_switch` is no oracle for switches per CPU on this VM: its kernel
//! skips that event for perf when a CPU leaves idle — docs/timeline.md.)

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::require_root;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_llctop");
const WORKLOAD: &str = env!("CARGO_BIN_EXE_llctop-workload");

/// The distance of a move between CPUs `a` and `b` as sysfs describes them.
fn sysfs_distance(a: u32, b: u32) -> &'static str {
    let read = |p: String| std::fs::read_to_string(p).unwrap_or_default();
    let list =
        |p: String| -> Vec<u32> { llctop::cpulist::parse(read(p).trim()).unwrap_or_default() };
    let cpu = |c: u32, f: &str| format!("/sys/devices/system/cpu/cpu{c}/{f}");
    if list(cpu(a, "topology/thread_siblings_list")).contains(&b) {
        return "smt";
    }
    let node = |c: u32| {
        std::fs::read_dir(format!("/sys/devices/system/cpu/cpu{c}"))
            .ok()
            .and_then(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .find(|n| n.starts_with("node"))
            })
    };
    if node(a) != node(b) {
        return "cross_node";
    }
    // The last level of cache.
    let mut shared = Vec::new();
    for i in 0..8 {
        let l = list(cpu(a, &format!("cache/index{i}/shared_cpu_list")));
        if !l.is_empty() {
            shared = l;
        }
    }
    if shared.contains(&b) {
        "llc"
    } else {
        "cross_llc"
    }
}

/// perf's `sched:sched_migrate_task` per pid in `data` — each as (CLOCK_MONOTONIC ns,
/// orig_cpu, dest_cpu), perf recording with `-k mono` — and the events perf lost (its
/// buffer overflowed).
type Migration = (u64, u64, u64);
fn perf_migrations(data: &Path) -> (BTreeMap<u32, Vec<Migration>>, u64) {
    let out = Command::new("perf")
        .args([
            "script",
            "--ns",
            "--show-lost-events",
            "-F",
            "time,event,trace",
            "-i",
        ])
        .arg(data)
        .output()
        .expect("perf (linux-perf, installed by scripts/deps.sh)");
    let (mut m, mut lost) = (BTreeMap::<u32, Vec<Migration>>::new(), 0);
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        // `PERF_RECORD_LOST lost 3` (and `PERF_RECORD_LOST_SAMPLES`, --show-lost-events):
        // perf's buffer overflowed.
        if l.contains("PERF_RECORD_LOST") {
            let n = l
                .split_whitespace()
                .skip_while(|w| *w != "lost")
                .nth(1)
                .and_then(|n| n.parse::<u64>().ok());
            lost += n.unwrap_or(1);
            continue;
        }
        if !l.contains("sched_migrate_task") {
            continue;
        }
        // `60600.512965541: sched:sched_migrate_task: comm=… pid=8446 prio=120 orig_cpu=0 dest_cpu=1`
        let field = |k: &str| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .and_then(|v| v.parse::<u64>().ok())
        };
        let time = l.split_whitespace().next().and_then(|t| {
            let (s, ns) = t.trim_end_matches(':').split_once('.')?;
            Some(s.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?)
        });
        if let (Some(pid), Some(t), Some(o), Some(d)) =
            (field("pid="), time, field("orig_cpu="), field("dest_cpu="))
        {
            m.entry(pid as u32).or_default().push((t, o, d));
        }
    }
    (m, lost)
}

/// `ours` and `perf` paired one to one — the same CPUs, times within `slack` ns, in order:
/// (ours perf lacks, perf's ours lacks).
fn match_migrations(
    ours: &[Migration],
    perf: &[Migration],
    slack: u64,
) -> (Vec<Migration>, Vec<Migration>) {
    let mut taken = vec![false; ours.len()];
    let mut unmatched = Vec::new();
    for p in perf {
        let hit = ours
            .iter()
            .enumerate()
            .find(|(i, o)| !taken[*i] && o.1 == p.1 && o.2 == p.2 && o.0.abs_diff(p.0) <= slack);
        match hit {
            Some((i, _)) => taken[i] = true,
            None => unmatched.push(*p),
        }
    }
    let missed = ours
        .iter()
        .zip(&taken)
        .filter(|(_, t)| !**t)
        .map(|(o, _)| *o)
        .collect();
    (missed, unmatched)
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_hopping_workload_is_traced_exactly_against_the_kernel_and_perf() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("hop.pftrace");
    let data = dir.path().join("perf.data");
    // perf records from the moment it acknowledges "enable" on its control FIFO (not
    // after a sleep: on a busy machine its start took longer than a second and the
    // first migration was missed, CI 2026-11-26).
    let (ctl, ack) = (dir.path().join("perf.ctl"), dir.path().join("perf.ack"));
    for f in [&ctl, &ack] {
        let c = std::ffi::CString::new(f.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path of our own temporary directory.
        assert_eq!(
            unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
            0,
            "mkfifo {f:?}"
        );
    }
    let mut perf = Command::new("perf")
        .args(["record", "-q", "-m", "1024", "-D", "-1", "--control"])
        .arg(format!("fifo:{},{}", ctl.display(), ack.display()))
        .args(["-k", "mono", "-e", "sched:sched_migrate_task", "-a", "-o"])
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("perf record");
    // Open the control FIFO once perf has (without blocking: a perf that failed to
    // start fails the test instead of hanging it).
    let started = Instant::now();
    let mut ctl_w = loop {
        use std::os::unix::fs::OpenOptionsExt;
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&ctl)
        {
            Ok(c) => break c,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                assert!(perf.try_wait().unwrap().is_none(), "perf record exited");
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "perf record never started"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("perf's control FIFO: {e}"),
        }
    };
    ctl_w.write_all(b"enable\n").expect("perf's control FIFO");
    let mut acked = String::new();
    BufReader::new(std::fs::File::open(&ack).expect("perf's ack FIFO"))
        .read_line(&mut acked)
        .expect("perf's ack");
    assert_eq!(acked.trim(), "ack", "perf enabled its events");
    let hops = 200u64;
    let mut t = Command::new(BIN)
        .args(["--interval", "500ms", "trace", "-o"])
        .arg(&trace)
        .args(["--", WORKLOAD, "hop", "0", "1", &hops.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let tracer = t.id();
    let mut out = BufReader::new(t.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    writeln!(t.stdin.take().unwrap(), "go").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    let st = t.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut t.stderr.take().unwrap(), &mut err).unwrap();
    println!("{line}{err}");
    assert!(st.success(), "{err}");
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(perf.id() as i32, libc::SIGINT) };
    perf.wait().unwrap();
    drop(ctl_w);
    // done N migrations M switches V I
    let w: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(w.first(), Some(&"done"), "{line}");
    let kernel_migs: u64 = w[3].parse().expect("se.nr_migrations");
    let switches: u64 = w[5].parse::<u64>().unwrap() + w[6].parse::<u64>().unwrap();
    assert!(kernel_migs >= hops, "{line}");

    let d = common::perfetto_decode(&trace);
    assert_eq!(d["cut"], 0, "a whole trace");
    assert!(
        d["lost_end"].as_array().unwrap().iter().all(|n| n == 0),
        "nothing lost: {}",
        d["lost_end"]
    );
    // Who the workload is: the child of `llctop trace` whose command line runs the hops
    // (the trace is machine-wide: the other tests here run workloads of their own).
    let hop_args = [WORKLOAD, "hop", "0", "1", &hops.to_string()].map(|a| a.to_string());
    let (pid, _) = d["processes"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, v)| {
            v[0] == tracer
                && v[1].as_array().is_some_and(|c| {
                    c.iter()
                        .map(|a| a.as_str().unwrap_or(""))
                        .eq(hop_args.iter().map(String::as_str))
                })
        })
        .expect("the workload's process, with its command line and parent");
    let pid: u32 = pid.parse().unwrap();
    assert_eq!(d["threads"][pid.to_string()], "llctop-workload", "its name");
    // Its migrations: on its own thread track, each with its distance and a flow.
    let migs: Vec<&Value> = d["instants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["categories"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c == "migration")
                && e["args"]["tid"] == pid
                && e["flow_out"].as_array().unwrap().is_empty()
                && e["flow_in"].as_array().unwrap().is_empty()
        })
        .collect();
    let (perf, perf_lost) = perf_migrations(&data);
    let perf = perf.get(&pid).cloned().unwrap_or_default();
    println!(
        "workload {pid}: trace {} migrations, kernel {kernel_migs}, perf {} (perf lost {perf_lost} events machine-wide)",
        migs.len(),
        perf.len()
    );
    assert_eq!(migs.len() as u64, kernel_migs, "the kernel's own count");
    // perf, beside it: every migration perf recorded is one of the trace's — between the
    // same CPUs at the same moment (both probes run in the one tracepoint call; the
    // trace's time is CLOCK_MONOTONIC + BOOTTIME's offset, its clock snapshot says which).
    let clock = |id: &str| d["clock"][id].as_i64().expect("the trace's clock snapshot");
    let offset = clock("6") - clock("3");
    let ours: Vec<Migration> = migs
        .iter()
        .map(|e| {
            let n = |k: &str| e["args"][k].as_u64().unwrap_or(u64::MAX);
            let ts = e["ts"].as_u64().unwrap_or(0);
            (
                ts.saturating_add_signed(-offset),
                n("from_cpu"),
                n("to_cpu"),
            )
        })
        .collect();
    let (missed, unmatched) = match_migrations(&ours, &perf, 1_000_000);
    assert!(
        unmatched.is_empty(),
        "perf recorded migrations the trace lacks (mono ns, from, to): {unmatched:?}"
    );
    // perf's own count falls short of the exact figure by what its buffer lost — and,
    // once in a CI run of a loaded machine, by one event perf dropped with no loss
    // recorded (201 of the kernel's and the trace's 202, 2026-11-28). The kernel's count
    // above is the exact oracle; perf's shortfall is printed, at most its losses + 1%.
    if !missed.is_empty() {
        println!(
            "perf lacks {} of the trace's migrations (mono ns, from, to): {missed:?}",
            missed.len()
        );
    }
    assert!(
        missed.len() as u64 <= perf_lost + migs.len() as u64 / 100,
        "perf's sched_migrate_task {} (+ {perf_lost} lost) against {}",
        perf.len(),
        migs.len()
    );
    let hop_dist = sysfs_distance(0, 1);
    let between: Vec<&&Value> = migs
        .iter()
        .filter(|e| {
            let (f, t) = (&e["args"]["from_cpu"], &e["args"]["to_cpu"]);
            (f == 0 && t == 1) || (f == 1 && t == 0)
        })
        .collect();
    assert!(
        between.len() as u64 >= hops,
        "{} hops between 0 and 1",
        between.len()
    );
    for e in between {
        assert_eq!(e["args"]["distance"], hop_dist, "{e}");
        assert!(e["name"].as_str().unwrap().starts_with(hop_dist), "{e}");
    }
    // Every migration flows from its source CPU's track to its destination's.
    let flows_out = d["instants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["flow_out"].as_array().unwrap().is_empty())
        .count();
    let flows_in = d["instants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["flow_in"].as_array().unwrap().is_empty())
        .count();
    assert_eq!(flows_out, flows_in);
    assert!(flows_out as u64 >= kernel_migs);
    // Its switches: every switch-out getrusage counted when it printed followed a
    // switch-in, and it was running then: at least one more switch-in than that count —
    // with the switches this VM's kernel makes without sched_switch put back at the
    // task's own arrival (docs/timeline.md, "Switches the kernel does not report"); before
    // they were, 1 run in 3 had one or two fewer. After the print, its write and exit
    // may be switched out and in again — more often on a loaded machine (222 against 218
    // with two QEMU guests busy on both CPUs, 2026-11-28): at most 7 more.
    let ins = d["switch_next_pids"][pid.to_string()].as_u64().unwrap_or(0);
    println!("switch-ins {ins}, getrusage {switches}");
    assert!(
        (switches + 1..=switches + 8).contains(&ins),
        "switch-ins {ins} vs getrusage {switches} (+ the one it printed in, + its exit's)"
    );
    // The track tree: every online CPU under the LLC track that lists it.
    let tracks = d["tracks"].as_object().unwrap();
    let online = llctop::cpulist::parse(
        std::fs::read_to_string("/sys/devices/system/cpu/online")
            .unwrap()
            .trim(),
    )
    .unwrap();
    for c in online {
        let (_, t) = tracks
            .iter()
            .find(|(_, t)| t["name"] == format!("CPU {c}"))
            .unwrap_or_else(|| panic!("a track for CPU {c}"));
        let parent = tracks[&t["parent"].to_string()]["name"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(parent.contains("LLC"), "CPU {c} under {parent}");
    }
    // The command's status is llctop's.
    let st = Command::new(BIN)
        .args(["trace", "-o"])
        .arg(dir.path().join("seven.pftrace"))
        .args(["--", "sh", "-c", "exit 7"])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(7));
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_signal_mid_trace_leaves_a_whole_trace() {
    require_root();
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("sig.pftrace");
        let mut t = Command::new(BIN)
            .args(["--interval", "200ms", "trace", "-o"])
            .arg(&trace)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(t.stderr.take().unwrap());
        let mut line = String::new();
        err.read_line(&mut line).unwrap();
        assert!(line.contains("tracing to"), "{line}");
        std::thread::sleep(Duration::from_millis(1500));
        // SAFETY: kill(2) of our own child.
        unsafe { libc::kill(t.id() as i32, sig) };
        let st = t.wait().unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
        assert_eq!(st.code(), Some(128 + sig), "{rest}");
        assert!(rest.contains("switches"), "the summary: {rest}");
        let d = common::perfetto_decode(&trace);
        assert_eq!(d["cut"], 0);
        assert!(d["lost_end"].is_array(), "the end statistics are there");
        assert!(d["kinds"]["ftrace_events"].as_u64().unwrap_or(0) > 0);
    }
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_full_disk_cuts_the_trace_at_a_whole_packet() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(ok.success(), "mount a small tmpfs");
    struct Umount(std::path::PathBuf);
    impl Drop for Umount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Umount(mnt.clone());
    let trace = mnt.join("full.pftrace");
    let t0 = Instant::now();
    let out = Command::new(BIN)
        .args([
            "--interval",
            "200ms",
            "trace",
            "--cpu-counters",
            "--duration",
            "20s",
            "-o",
        ])
        .arg(&trace)
        .args(["--", WORKLOAD, "churn", "20"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    println!("{err}");
    assert!(!out.status.success(), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(30));
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains("No space left") && last.contains("cut at its last whole packet"),
        "{last}"
    );
    let d = common::perfetto_decode(&trace);
    assert_eq!(d["cut"], 0, "ends at a whole packet");
    assert!(d["packets"].as_u64().unwrap() > 10);
    // The summary counts what the file holds, not what was traced before the disk filled.
    let said: u64 = err
        .lines()
        .find_map(|l| {
            l.split_once(": ")
                .and_then(|(_, r)| r.split_once(" switches"))
        })
        .and_then(|(n, _)| n.rsplit(' ').next()?.parse().ok())
        .expect("the summary's switches");
    let held: u64 = d["switches"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(serde_json::Value::as_u64)
        .sum();
    assert_eq!(said, held, "the summary's switches against the file's");
}

#[test]
fn an_unwritable_output_is_refused_in_one_line() {
    let out = Command::new(BIN)
        .args([
            "trace",
            "-o",
            "/nonexistent-dir/x.pftrace",
            "--duration",
            "1s",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent-dir/x.pftrace"), "{err}");
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recordings")
        .join(name)
}

/// The recording's lines of `kind`.
fn lines(rec: &Path, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(rec)
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == kind)
        .collect()
}

#[test]
fn an_exported_recording_holds_its_figures() {
    for name in [
        "placement-7.2-bpf.jsonl",
        "ab-7.2.jsonl",
        "numa-6.1-procfs.jsonl",
        "newidle-6.1-procfs.jsonl",
    ] {
        let rec = fixture(name);
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("x.pftrace");
        let out = Command::new(BIN)
            .args(["export", "--perfetto"])
            .arg(&rec)
            .arg("-o")
            .arg(&trace)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let d = common::perfetto_decode(&trace);
        assert_eq!(d["cut"], 0);
        let tracks = d["tracks"].as_object().unwrap();
        // The counter track of LLC `l` named `metric`.
        let counter = |llc: u64, metric: &str| -> Option<&Vec<Value>> {
            let (uuid, _) = tracks.iter().find(|(_, t)| {
                t["name"] == metric
                    && t["counter"].is_string()
                    && tracks
                        .get(&t["parent"].to_string())
                        .and_then(|p| p["name"].as_str())
                        .is_some_and(|n| n.contains(&format!("LLC {llc} ")))
            })?;
            d["counters"][uuid].as_array()
        };
        let snaps = lines(&rec, "snapshot");
        let mut checked = 0;
        for s in &snaps {
            let start =
                s["time"]["mono_ns"].as_u64().unwrap() - s["time"]["interval_ns"].as_u64().unwrap();
            let secs = s["time"]["interval_ns"].as_f64().unwrap() / 1e9;
            let at = |series: &Vec<Value>| -> Option<f64> {
                series
                    .iter()
                    .find(|p| p[0] == start)
                    .and_then(|p| p[1].as_f64())
            };
            for g in s["llcs"].as_array().unwrap() {
                let id = g["id"].as_u64().unwrap();
                if let Some(b) = g["busy"].as_f64() {
                    let v = at(counter(id, "busy").expect("busy track")).expect("a value");
                    assert!(
                        (v - 100.0 * b).abs() < 1e-9,
                        "{name} llc{id} busy {v} vs {b}"
                    );
                    checked += 1;
                }
                if let Some(w) = g["rq_wait_ns"].as_f64() {
                    let v =
                        at(counter(id, "run-queue wait").expect("wait track")).expect("a value");
                    assert!((v - w / 1e6 / secs).abs() < 1e-9, "{name} llc{id} wait");
                    checked += 1;
                }
            }
            // In and out of each LLC, from the recording's own matrix.
            if let Some(m) = s["migrations"]["llc_matrix"].as_array() {
                let llcs = s["llcs"].as_array().unwrap();
                for (to, g) in llcs.iter().enumerate() {
                    let id = g["id"].as_u64().unwrap();
                    let inbound: u64 = m
                        .iter()
                        .enumerate()
                        .filter(|(from, _)| *from != to)
                        .map(|(_, row)| row[to].as_u64().unwrap())
                        .sum();
                    let got: f64 = ["in cross_llc", "in cross_node"]
                        .iter()
                        .filter_map(|k| counter(id, k).and_then(at))
                        .sum();
                    assert!(
                        (got - inbound as f64 / secs).abs() < 1e-6,
                        "{name} llc{id} in: {got} vs {inbound}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 0, "{name}: something to check");
        // Every detail migration, knob change, window and fired finding is there.
        let recorded_migs: usize = snaps
            .iter()
            .flat_map(|s| {
                s["events"]["events"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|e| e["kind"] == "migration")
            .count();
        let traced_migs = d["instants"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| {
                e["categories"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c == "migration")
                    && e["flow_out"].as_array().unwrap().is_empty()
                    && e["flow_in"].as_array().unwrap().is_empty()
            })
            .count();
        assert_eq!(traced_migs, recorded_migs, "{name}: migrations");
        let knobs = d["instants"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["categories"][0] == "knob")
            .count();
        assert_eq!(knobs, lines(&rec, "knob").len(), "{name}: knob changes");
        let begins = |cat: &str| {
            d["slices"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["kind"] == "begin" && e["categories"][0] == cat)
                .count()
        };
        assert_eq!(
            begins("experiment"),
            lines(&rec, "window").len(),
            "{name}: windows"
        );
        let fired = lines(&rec, "finding")
            .iter()
            .filter(|f| f["state"] == "fired")
            .count();
        assert!(
            begins("finding") >= fired,
            "{name}: findings {} vs {fired}",
            begins("finding")
        );
        println!("{name}: {checked} counter values checked, {recorded_migs} migrations");
    }
}

/// The BPF programs process `pid` holds (its descriptors' fdinfo naming a program type).
fn programs_held(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains("prog_type:"))
                })
                .count()
        })
        .unwrap_or(0)
}

fn numa_balancing() -> String {
    std::fs::read_to_string("/proc/sys/kernel/numa_balancing")
        .unwrap()
        .trim()
        .to_string()
}

/// `trace -- CMD` where CMD ignores SIGTERM: after SIGINT the knob `--set` changed is put
/// back and the BPF programs are let go *at once*, while llctop gives the command its
/// grace; then it is killed (with what it started) and llctop exits — never a wait for ever.
#[test]
#[ignore = "needs root"]
fn a_command_that_ignores_sigterm_holds_neither_knob_nor_programs() {
    require_root();
    let before = numa_balancing();
    let other = if before == "0" { "1" } else { "0" };
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("llctop-stubborn-trace-{}", std::process::id());
    let mut child = Command::new(BIN)
        .args(["--journal"])
        .arg(dir.path().join("journal.json"))
        .args(["trace", "-o"])
        .arg(dir.path().join("t.pftrace"))
        .args([
            "--set",
            &format!("numa_balancing={other}"),
            "--",
            "bash",
            "-c",
        ])
        .arg(format!("trap '' TERM; exec -a {marker} sleep 600"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while numa_balancing() == before || programs_held(child.id()) == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the trace never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) of our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    let mut freed = None;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if freed.is_none() && numa_balancing() == before && programs_held(child.id()) == 0 {
            freed = Some(t0.elapsed());
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "still running 10 s after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let ended = t0.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    println!(
        "{err}knob and programs let go {freed:?} after SIGINT; llctop ended after {ended:?} ({status:?})"
    );
    let freed =
        freed.expect("knob restored and programs released while the command was given its grace");
    assert!(freed < ended, "released before the wait");
    assert!(err.contains("did not end on SIGTERM: killed"), "{err}");
    assert_eq!(numa_balancing(), before);
    let left = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|c| String::from_utf8_lossy(&c).contains(&marker));
    assert!(!left, "the command outlived llctop");
    assert_eq!(status.code(), Some(130));
}

/// `trace -o EXISTING` whose run never starts — a knob that does not exist, a value the
/// knob refuses, a command that is not there — leaves the file as it was.
#[test]
fn a_trace_that_never_starts_leaves_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("old.pftrace");
    std::fs::write(&f, b"an old trace").unwrap();
    for (args, why) in [
        (vec!["--set", "nosuchknob=1"], "nosuchknob"),
        (vec!["--set", "numa_balancing=banana"], "numa_balancing"),
        (vec!["--", "/no/such/program"], "no such program"),
    ] {
        let out = Command::new(BIN)
            .args(["--journal"])
            .arg(dir.path().join("j.json"))
            .args(["trace", "--duration", "1s", "-o"])
            .arg(&f)
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(why),
            "{args:?}: {err}"
        );
        assert!(!err.contains("tracing to"), "{args:?}: {err}");
        assert_eq!(std::fs::read(&f).unwrap(), b"an old trace", "{args:?}");
        let others: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n != "old.pftrace" && n != "j.json")
            .collect();
        assert!(others.is_empty(), "{args:?}: {others:?}");
    }
}
