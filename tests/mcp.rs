//! `llctop mcp` against the official MCP Python SDK (PyPI `mcp`, installed by
//! scripts/deps.sh) as its client, in real stdio sessions (tests/mcp_client.py): every
//! resource, tool and prompt with the results validated against their advertised schemas
//! by the SDK, bad input, 100 concurrent requests; as root, `watch` against a `llctop
//! record` of the same seconds under a workload of known migrations, and `ab` — refused
//! without --allow-writes, with it a verdict and the knob as it began, and restored when
//! the client cancels the call (and serves on) or dies mid-experiment.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_llctop");
const WORKLOAD: &str = env!("CARGO_BIN_EXE_llctop-workload");

fn client(case: &str, args: &[&str], env: &[(&str, &str)]) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_client.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(case)
        .arg(BIN)
        .args(args)
        .envs(env.iter().copied())
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .expect("python3 tests/mcp_client.py (scripts/deps.sh installs the mcp package)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "mcp_client.py {case} failed ({:?})\n--- stdout\n{stdout}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("the client's JSON")
}

#[test]
fn every_resource_tool_and_prompt_through_the_python_sdk_and_bad_input_answered() {
    let dir = tempfile::tempdir().unwrap();
    let recs = dir.path().join("recs");
    std::fs::create_dir(&recs).unwrap();
    // A recording that is cut short (gzip of a few bytes), among the server's own.
    let corrupt = recs.join("corrupt.jsonl.gz");
    let mut f = std::fs::File::create(&corrupt).unwrap();
    f.write_all(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0x00, 0x12])
        .unwrap();
    let v = client(
        "session",
        &[
            "--source",
            "procfs",
            "--interval",
            "500ms",
            "mcp",
            "--dir",
            recs.to_str().unwrap(),
        ],
        &[("CORRUPT", corrupt.to_str().unwrap())],
    );
    println!("{v:#}");
    assert_eq!(v["server"], "llctop");
    let path = v["record"]["path"].as_str().unwrap();
    assert!(path.starts_with(recs.to_str().unwrap()), "{path}");
    assert!(std::path::Path::new(path).is_file());
    // 2 s at 500 ms: at least 4 snapshots.
    assert!(v["record"]["snapshots"].as_u64().unwrap() >= 4, "{v}");
    assert!(v["watch"]["seconds"].as_f64().unwrap() >= 2.0 - 1e-3);
    assert_eq!(v["concurrent"], 100);
    assert!(v["after_seq"].as_u64() >= v["snapshot_seq"].as_u64());
    // As root the trace tool traced a second (BPF); without root it said why.
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } == 0 {
        let t = v["trace"]["path"].as_str().expect("a trace");
        let len = std::fs::metadata(t).map(|m| m.len()).unwrap_or(0);
        assert!(
            len > 0 && len == v["trace"]["bytes"].as_u64().unwrap(),
            "{v}"
        );
    }
    let rec = llctop::record::reader::open(std::path::Path::new(path)).unwrap();
    assert_eq!(
        rec.snapshots.len() as u64,
        v["record"]["snapshots"].as_u64().unwrap()
    );
}

/// The forced hops: `llctop-workload hop 0 1 N` makes exactly N migrations once told.
fn hopper(n: u32) -> std::process::Child {
    Command::new(WORKLOAD)
        .args(["hop", "0", "1", &n.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("llctop-workload hop")
}

/// The watch's length in the test below (s).
const WATCH_SECONDS: &str = "8";

#[test]
#[ignore = "needs root"]
fn watch_agrees_with_a_recording_of_the_same_seconds_and_counts_the_hops() {
    common::require_root();
    let dir = tempfile::tempdir().unwrap();
    let rec_path = dir.path().join("r.jsonl");
    let mut hop = hopper(400);
    let go_file = dir.path().join("go");
    let mut rec = Command::new(BIN)
        .args([
            "--source",
            "bpf",
            "--interval",
            "1s",
            "record",
            "--duration",
            "30s",
            "-o",
        ])
        .arg(&rec_path)
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .stderr(Stdio::null())
        .spawn()
        .expect("llctop record");
    // The hops start once both watch: the client creates GO_FILE a second into its
    // 8 s watch (whenever that is on a loaded machine), and the hopper is told to go;
    // the recording runs on around it and is stopped after.
    let go = {
        let go_file = go_file.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while !go_file.exists() && t0.elapsed() < Duration::from_secs(120) {
                std::thread::sleep(Duration::from_millis(20));
            }
            if let Some(mut i) = hop.stdin.take() {
                let _ = i.write_all(b"go\n");
            }
            hop.wait_with_output()
        })
    };
    let v = client(
        "watch",
        &["--source", "bpf", "--interval", "1s", "mcp"],
        &[
            ("WATCH_SECONDS", WATCH_SECONDS),
            ("GO_FILE", go_file.to_str().unwrap()),
        ],
    );
    let hop_out = go.join().unwrap().expect("the hopper");
    // Two more snapshots after the watch ended, then the recording stops (SIGTERM: it
    // finishes its file).
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(rec.id() as i32, libc::SIGTERM) };
    let st = rec.wait().unwrap();
    assert!(
        st.success() || st.code() == Some(143),
        "llctop record: {st:?}"
    );
    let done = String::from_utf8_lossy(&hop_out.stdout).to_string();
    assert!(done.contains("done 400"), "{done}");
    let w = &v["watch"];
    println!("watch: {w:#}");
    let r = llctop::record::reader::open(&rec_path).unwrap();
    let per: Vec<u64> = r
        .snapshots
        .iter()
        .map(|s| s.migrations.as_ref().map_or(0, |m| m.total()))
        .collect();
    let mine = ["smt", "llc", "cross_llc", "cross_node"]
        .iter()
        .map(|k| w["migrations"][k].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(w["migrations_precision"], "exact");
    // The hops fell inside both windows: at least 400 moves in each.
    assert!(mine >= 400, "watch counted {mine}");
    // Any WATCH_SECONDS consecutive snapshots of the recording against the watch, within
    // one interval's worth at each edge (the two collectors' intervals are not aligned).
    let n: usize = WATCH_SECONDS.parse().unwrap();
    let sums: Vec<u64> = per.windows(n).map(|x| x.iter().sum()).collect();
    let edge = per.iter().copied().max().unwrap_or(0);
    let (lo, hi) = (
        sums.iter().copied().min().unwrap_or(0),
        sums.iter().copied().max().unwrap_or(0),
    );
    println!("recording {n}-interval sums {sums:?} (largest interval {edge}); watch {mine}");
    assert!(
        mine + edge >= lo && mine <= hi + edge,
        "watch {mine} against the recording's {lo}..={hi} ± {edge}"
    );
}

/// A server that may write knobs: its own journal, recordings in `dir`.
fn writer_args<'a>(journal: &'a std::path::Path, dir: &'a std::path::Path) -> [&'a str; 8] {
    [
        "--journal",
        journal.to_str().unwrap(),
        "--interval",
        "500ms",
        "mcp",
        "--allow-writes",
        "--dir",
        dir.to_str().unwrap(),
    ]
}

/// The tests that write numa_balancing take turns: llctop's per-knob lock refuses a second
/// writer (as it should), and the tests of one binary run in parallel.
fn knob_turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

fn numa_balancing() -> String {
    std::fs::read_to_string("/proc/sys/kernel/numa_balancing")
        .unwrap()
        .trim()
        .to_string()
}

#[test]
#[ignore = "needs root"]
fn ab_with_allow_writes_gives_a_verdict_and_the_knob_ends_as_it_began() {
    common::require_root();
    let _turn = knob_turn();
    let before = numa_balancing();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.json");
    let v = client("ab", &writer_args(&journal, dir.path()), &[]);
    println!("{}", v["text"].as_str().unwrap_or(""));
    assert_eq!(numa_balancing(), before, "the knob as it began");
    let ab = &v["ab"];
    assert!(ab["verdict"].is_object(), "{ab}");
    assert!(std::path::Path::new(ab["path"].as_str().unwrap()).is_file());
    // One progress notification per measured window (2 values × 1 round).
    assert_eq!(v["progress"].as_array().map(Vec::len), Some(2), "{v}");
}

#[test]
#[ignore = "needs root"]
fn a_client_killed_mid_experiment_leaves_the_knob_restored() {
    common::require_root();
    let _turn = knob_turn();
    let before = numa_balancing();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.json");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_client.py");
    let out = Command::new("python3")
        .args([script, "cancel", BIN])
        .args([
            "--journal",
            journal.to_str().unwrap(),
            "--interval",
            "500ms",
            "mcp",
            "--allow-writes",
            "--dir",
        ])
        .arg(dir.path())
        .env("CANCEL_AFTER", "6")
        .output()
        .expect("python3");
    let during = String::from_utf8_lossy(&out.stdout).trim().to_string();
    println!("numa_balancing before {before}, while the experiment ran {during}");
    assert_ne!(
        during, before,
        "the experiment had changed the knob when the client died"
    );
    // The server saw its stdin close: it stops the experiment, which restores the knob.
    let t0 = Instant::now();
    while numa_balancing() != before && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(numa_balancing(), before, "restored after the client died");
    // And nothing of it is left running.
    let left = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
            .any(|c| String::from_utf8_lossy(&c).contains(dir.path().to_str().unwrap()))
    };
    let t0 = Instant::now();
    while left() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!left(), "no llctop mcp or llctop ab left running");
}

#[test]
#[ignore = "needs root"]
fn a_cancelled_experiment_restores_the_knob_and_the_server_serves_on() {
    common::require_root();
    let _turn = knob_turn();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.json");
    let v = client(
        "cancel-request",
        &writer_args(&journal, dir.path()),
        &[("CANCEL_AFTER", "6")],
    );
    println!("{v}");
    assert_ne!(
        v["during"], v["before"],
        "the experiment had changed the knob"
    );
    assert_eq!(v["after"], v["before"], "restored after the cancel");
    assert_eq!(v["still_serving"], true);
}

/// A raw HTTP/1.1 request to `addr`; the status line's code.
fn http_status(addr: &str, request: &str) -> u16 {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut buf = [0u8; 512];
    let n = s.read(&mut buf).unwrap_or(0);
    let head = String::from_utf8_lossy(&buf[..n]);
    head.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status: {head:?}"))
}

/// `llctop mcp --listen`: the same session as on stdio — every resource, tool and prompt,
/// bad input, 100 concurrent requests — through the Python SDK's streamable HTTP client;
/// only /mcp answers; a `Host` that is not loopback is refused (DNS rebinding); an
/// address other machines reach needs --allow-remote; SIGTERM ends the server.
#[test]
fn the_same_session_over_streamable_http_and_the_listener_guarded() {
    let dir = tempfile::tempdir().unwrap();
    let recs = dir.path().join("recs");
    std::fs::create_dir(&recs).unwrap();
    let corrupt = recs.join("corrupt.jsonl.gz");
    std::fs::write(&corrupt, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff]).unwrap();
    let refused = Command::new(BIN)
        .args(["--source", "procfs", "mcp", "--listen", "0.0.0.0:0"])
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && err.contains("--allow-remote"),
        "{err}"
    );
    let mut server = Command::new(BIN)
        .args(["--source", "procfs", "--interval", "500ms", "mcp", "--dir"])
        .arg(&recs)
        .args(["--listen", "127.0.0.1:0"])
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(server.stderr.take().unwrap()));
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("http://"))
                .map(str::to_string)
        })
        .expect("the server says where it listens");
    // The rest of its stderr drained, so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    assert!(url.ends_with("/mcp"), "{url}");
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let v = client(
        "session",
        &[],
        &[
            ("MCP_URL", url.as_str()),
            ("CORRUPT", corrupt.to_str().unwrap()),
        ],
    );
    assert_eq!(v["server"], "llctop");
    assert_eq!(v["concurrent"], 100);
    let path = v["record"]["path"].as_str().unwrap();
    assert!(path.starts_with(recs.to_str().unwrap()), "{path}");
    assert!(v["after_seq"].as_u64() >= v["snapshot_seq"].as_u64());
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let post = |host: &str, path: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{init}",
            init.len()
        )
    };
    assert_eq!(http_status(&addr, &post(&addr, "/mcp")), 200);
    assert_eq!(http_status(&addr, &post(&addr, "/other")), 404);
    // A request head over 8 KiB is refused, as serve refuses it.
    let huge = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(16 * 1024)
    );
    assert_eq!(http_status(&addr, &huge), 431);
    let rebound = http_status(&addr, &post("attacker.example", "/mcp"));
    assert!(
        (400..500).contains(&rebound),
        "a non-loopback Host: {rebound}"
    );
    // A browser page's request (it carries Origin) is refused: no origin is allowed.
    let from_page = post(&addr, "/mcp").replacen(
        "Connection: close",
        "Origin: http://evil.example\r\nConnection: close",
        1,
    );
    assert_eq!(http_status(&addr, &from_page), 403, "a request with Origin");
    // SAFETY: our own child.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = server.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "SIGTERM ignored");
        std::thread::sleep(Duration::from_millis(50));
    };
    println!(
        "mcp over HTTP at {url}: session done, a rebound Host got {rebound}, ended by SIGTERM in {:?} ({status:?})",
        t0.elapsed()
    );
}

/// Start `llctop ARGS… mcp …` serving HTTP; its address (`HOST:PORT`), from its stderr.
fn http_server(args: &[&str]) -> (std::process::Child, String) {
    let mut server = Command::new(BIN)
        .args(args)
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(server.stderr.take().unwrap()));
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("http://"))
                .map(str::to_string)
        })
        .expect("the server says where it listens");
    std::thread::spawn(move || lines.for_each(drop));
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    (server, addr)
}

/// A raw POST of an `initialize` to `addr` with these extra header lines; the status.
fn initialize(addr: &str, headers: &str) -> u16 {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    http_status(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{init}",
            init.len()
        ),
    )
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

fn sigterm_and_wait(mut c: std::process::Child) {
    // SAFETY: our own child.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let t0 = Instant::now();
    while c.try_wait().unwrap().is_none() {
        assert!(t0.elapsed() < Duration::from_secs(30), "SIGTERM ignored");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Over HTTP a loopback port is every local user's: with --allow-writes a bearer token is
/// required (the server refuses to start without one), every request without it is 401;
/// sessions are bounded — 5,000 initialize requests leave the server far under 100 MB,
/// the excess told 503 with Retry-After; any loopback address serves (127.0.0.2).
#[test]
fn http_needs_a_token_to_write_and_bounds_its_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let recs = dir.path().join("recs");
    let refused = Command::new(BIN)
        .args(["--source", "procfs", "mcp", "--allow-writes", "--dir"])
        .arg(&recs)
        .args(["--listen", "127.0.0.1:0"])
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && err.contains("--token-file"),
        "{err}"
    );
    // A token another user could read is refused too.
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cr3t-t0ken-of-the-operator-0123\n").unwrap();
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let loose = Command::new(BIN)
        .args([
            "--source",
            "procfs",
            "mcp",
            "--allow-writes",
            "--token-file",
        ])
        .arg(&token)
        .args(["--dir"])
        .arg(&recs)
        .args(["--listen", "127.0.0.1:0"])
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&loose.stderr);
    assert!(!loose.status.success() && err.contains("0600"), "{err}");
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let (server, addr) = http_server(&[
        "--source",
        "procfs",
        "--interval",
        "500ms",
        "mcp",
        "--allow-writes",
        "--token-file",
        token.to_str().unwrap(),
        "--dir",
        recs.to_str().unwrap(),
        "--listen",
        "127.0.0.2:0",
    ]);
    assert!(addr.starts_with("127.0.0.2:"), "{addr}");
    let bearer = "Authorization: Bearer s3cr3t-t0ken-of-the-operator-0123\r\n";
    assert_eq!(initialize(&addr, ""), 401, "no token");
    assert_eq!(initialize(&addr, "Authorization: Bearer wrong\r\n"), 401);
    assert_eq!(
        initialize(&addr, bearer),
        200,
        "127.0.0.2 answers, with the token"
    );
    // The official SDK with the token.
    let v = client(
        "ping",
        &[],
        &[
            ("MCP_URL", format!("http://{addr}/mcp").as_str()),
            ("MCP_TOKEN", "s3cr3t-t0ken-of-the-operator-0123"),
        ],
    );
    assert_eq!(v["server"], "llctop");
    assert_eq!(v["tools"], 12);
    let before = rss_kib(server.id());
    let (mut ok, mut full) = (0, 0);
    let t0 = Instant::now();
    for _ in 0..5000 {
        match initialize(&addr, bearer) {
            200 => ok += 1,
            503 => full += 1,
            s => panic!("status {s}"),
        }
    }
    let after = rss_kib(server.id());
    println!(
        "5000 initialize requests in {:?}: {ok} sessions, {full} told 503; resident {before} KiB -> {after} KiB",
        t0.elapsed()
    );
    assert!(full > 0, "the bound was reached");
    assert!(after < 100 * 1024, "{after} KiB resident");
    sigterm_and_wait(server);
}

/// A raw stdio session with `llctop mcp` (no SDK: to send what an SDK would not).
struct Raw {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Raw {
    fn start(args: &[&str]) -> Raw {
        let mut child = Command::new(BIN)
            .args(args)
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(Result::ok)
            {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut r = Raw {
            child,
            stdin,
            lines,
        };
        r.send(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#);
        let init = r.recv();
        assert_eq!(init["result"]["serverInfo"]["name"], "llctop", "{init}");
        r.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        r
    }

    fn send(&mut self, line: &[u8]) {
        let w = self.stdin.as_mut().unwrap();
        w.write_all(line).unwrap();
        w.write_all(b"\n").unwrap();
        w.flush().unwrap();
    }

    fn recv(&self) -> Value {
        let l = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .expect("an answer within 60 s");
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}"))
    }
}

/// What is not a JSON-RPC message gets a JSON-RPC error, never silence: invalid UTF-8,
/// invalid JSON, a batch, a message past the 4 MiB bound; the server then answers on.
#[test]
fn every_bad_message_on_stdio_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = Raw::start(&[
        "--source",
        "procfs",
        "--interval",
        "500ms",
        "mcp",
        "--dir",
        dir.path().join("recs").to_str().unwrap(),
    ]);
    r.send(b"\xff\xfe not utf-8");
    assert_eq!(r.recv()["error"]["code"], -32700);
    r.send(b"{\"jsonrpc\":\"2.0\",\"id\":5,");
    assert_eq!(r.recv()["error"]["code"], -32700);
    r.send(b"[1,2,3]");
    assert_eq!(r.recv()["error"]["code"], -32600);
    let big = vec![b'x'; 5 << 20];
    r.send(&big);
    let e = r.recv();
    assert_eq!(e["error"]["code"], -32600, "{e}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("at most"),
        "{e}"
    );
    r.send(br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#);
    let pong = r.recv();
    assert_eq!(pong["id"], 9, "answers on: {pong}");
    drop(r.stdin.take());
    let _ = r.child.wait();
}

/// The client goes away (stdin closes) while a `watch(120)` waits: the server ends within
/// about a second, not when the watch would have.
#[test]
fn a_stdio_server_ends_when_stdin_closes_whatever_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = Raw::start(&[
        "--source",
        "procfs",
        "--interval",
        "500ms",
        "mcp",
        "--dir",
        dir.path().join("recs").to_str().unwrap(),
    ]);
    r.send(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"watch","arguments":{"seconds":120}}}"#);
    std::thread::sleep(Duration::from_millis(1500));
    let t0 = Instant::now();
    drop(r.stdin.take());
    while r.child.try_wait().unwrap().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "still up 10 s after stdin closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("the server ended {:?} after its stdin closed", t0.elapsed());
}

/// A config of allowed commands as root: its file and directory root's, not writable by
/// others; `w` is a directory anyone may write (the command's user writes there).
fn allow_list(dir: &std::path::Path, commands: &str) -> std::path::PathBuf {
    let conf = dir.join("conf");
    std::fs::create_dir(&conf).unwrap();
    let file = conf.join("config.toml");
    std::fs::write(
        &file,
        format!("[mcp]\nuser = \"nobody\"\ntimeout = \"60s\"\n\n[mcp.commands]\n{commands}"),
    )
    .unwrap();
    file
}

/// A client never runs a program of its choosing: `ab`'s command is a name the operator
/// listed; it runs as the configured user (here nobody, read from the kernel's own view of
/// the process: /proc/self/status copied by the command), its printed output does not
/// spoil the verdict, and a name not listed or an argv is refused.
#[test]
#[ignore = "needs root"]
fn ab_runs_only_allow_listed_commands_as_the_configured_user() {
    common::require_root();
    let _turn = knob_turn();
    let before = numa_balancing();
    let dir = tempfile::tempdir().unwrap();
    // The command's user goes through to `w`.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let w = dir.path().join("w");
    std::fs::create_dir(&w).unwrap();
    std::fs::set_permissions(&w, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let copied = w.join("status");
    let config = allow_list(
        dir.path(),
        &format!(
            "copy = [\"/usr/bin/cp\", \"-v\", \"/proc/self/status\", {:?}]\n",
            copied.display().to_string()
        ),
    );
    let journal = dir.path().join("journal.json");
    let recs = dir.path().join("recs");
    let v = client(
        "ab-command",
        &[
            "--config",
            config.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
            "--interval",
            "500ms",
            "mcp",
            "--allow-writes",
            "--dir",
            recs.to_str().unwrap(),
        ],
        &[("AB_COMMAND", "copy")],
    );
    println!("{}", v["text"].as_str().unwrap_or(""));
    assert!(
        v["ab"]["verdict"].is_object(),
        "a verdict though the command prints: {v}"
    );
    assert_eq!(numa_balancing(), before, "the knob as it began");
    let nobody = llctop::child::RunAs::lookup("nobody").unwrap();
    let status = std::fs::read_to_string(&copied).expect("the command ran");
    let uid_line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    let uids: Vec<u32> = uid_line
        .split_whitespace()
        .skip(1)
        .map(|u| u.parse().unwrap())
        .collect();
    assert!(uids.iter().all(|&u| u == nobody.uid), "{uid_line}");
    let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&copied).unwrap());
    assert_eq!(owner, nobody.uid);
    assert!(
        v["not_allowed"]
            .as_str()
            .unwrap()
            .contains("this server allows: copy"),
        "{v}"
    );
    assert!(!std::path::Path::new("/tmp/llctop-pwned").exists());
}

/// One trace at a time: two at once, one runs and the other is told the server is busy;
/// the server's directory is kept under its cap, the oldest files removed.
#[test]
#[ignore = "needs root"]
fn trace_calls_are_one_at_a_time_and_their_directory_bounded() {
    common::require_root();
    let dir = tempfile::tempdir().unwrap();
    let recs = dir.path().join("recs");
    std::fs::create_dir(&recs).unwrap();
    // Old files of the server's, 3 MiB of them, older than any trace.
    for i in 0..3 {
        let p = recs.join(format!("mcp-trace-old-{i}.pftrace"));
        std::fs::write(&p, vec![0u8; 1 << 20]).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1000 + i))
            .unwrap();
    }
    let conf = dir.path().join("conf");
    std::fs::create_dir(&conf).unwrap();
    let config = conf.join("config.toml");
    std::fs::write(&config, "[mcp]\nmax_dir_bytes = \"2MiB\"\n").unwrap();
    let v = client(
        "trace-twice",
        &[
            "--config",
            config.to_str().unwrap(),
            "--interval",
            "500ms",
            "mcp",
            "--dir",
            recs.to_str().unwrap(),
        ],
        &[],
    );
    println!("{v}");
    assert_eq!(v["ran"].as_array().map(Vec::len), Some(1), "{v}");
    let busy = v["busy"].as_array().unwrap();
    assert_eq!(busy.len(), 1, "{v}");
    assert!(busy[0].as_str().unwrap().contains("busy"), "{v}");
    let total: u64 = std::fs::read_dir(&recs)
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(
        total <= 2 << 20 || std::fs::read_dir(&recs).unwrap().count() == 1,
        "{total} bytes kept"
    );
    assert!(
        !recs.join("mcp-trace-old-0.pftrace").exists(),
        "the oldest removed"
    );
}

/// SIGKILL of the server mid-experiment: its `llctop ab` is told by its parent-death
/// signal and restores the knob; `knobs restore` then finds the knob as it began (and no
/// run holding it).
#[test]
#[ignore = "needs root"]
fn a_server_killed_mid_experiment_leaves_the_knob_as_it_began() {
    common::require_root();
    let _turn = knob_turn();
    let before = numa_balancing();
    let other = if before == "0" { "1" } else { "0" };
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.json");
    let mut r = Raw::start(&[
        "--journal",
        journal.to_str().unwrap(),
        "--interval",
        "500ms",
        "mcp",
        "--allow-writes",
        "--dir",
        dir.path().join("recs").to_str().unwrap(),
    ]);
    r.send(
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"ab","arguments":{{"knob":"numa_balancing","a":"{other}","b":"{before}","window":5,"rounds":4}}}}}}"#
        )
        .as_bytes(),
    );
    let t0 = Instant::now();
    while numa_balancing() == before {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the experiment never changed the knob"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    r.child.kill().unwrap(); // SIGKILL
    r.child.wait().unwrap();
    let t0 = Instant::now();
    while numa_balancing() != before && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = Command::new(BIN)
        .args(["--journal", journal.to_str().unwrap(), "knobs", "restore"])
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "knobs restore: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(numa_balancing(), before, "the knob as it began");
}
