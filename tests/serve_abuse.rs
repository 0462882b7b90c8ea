//! `llctop serve` under abuse (issue "Reliability II"), each against the running binary:
//! - out of file descriptors (RLIMIT_NOFILE 64, 100 idle connections): the listener
//!   lives, refuses the excess, and answers a scrape once they close;
//! - a 16 MB header stream is cut off at 8 KiB with 431 and leaves serve's RSS under
//!   64 MB; a 1 MB header is 431, not 200;
//! - HEAD and a query string are answered, another method is 405, `HTTP/2.0` is 505 and
//!   closed, a client that sends nothing is dropped after the head timeout.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::serve::{Kill, free_port};

const BIN: &str = env!("CARGO_BIN_EXE_llctop");

/// `llctop serve` on a free port (its stderr drained to a string the caller may read at
/// the end), with the descriptor limit `nofile` if given.
fn serve(nofile: Option<u64>) -> (Kill, u16, std::thread::JoinHandle<String>) {
    let port = free_port();
    let mut c = Command::new(BIN);
    c.args([
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
    .stderr(Stdio::piped());
    if let Some(n) = nofile {
        // SAFETY: setrlimit(2) between fork and exec, async-signal-safe.
        unsafe {
            c.pre_exec(move || {
                let r = libc::rlimit {
                    rlim_cur: n,
                    rlim_max: n,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = c.spawn().expect("llctop serve");
    let mut err = child.stderr.take().expect("stderr");
    let log = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let k = Kill(child);
    wait_for("healthz", Duration::from_secs(60), || {
        request(port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .is_ok_and(|r| r.starts_with("HTTP/1.1 200"))
    });
    (k, port, log)
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < timeout, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One request on a new connection (closed after it); the whole response.
fn request(port: u16, text: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(15)))?;
    let close = text.replacen("\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1);
    s.write_all(close.as_bytes())?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn out_of_descriptors_the_listener_lives_and_answers_once_the_connections_close() {
    let (k, port, log) = serve(Some(64));
    let mut idle = Vec::new();
    let mut refused = 0;
    for _ in 0..100 {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => idle.push(s),
            Err(_) => refused += 1,
        }
    }
    std::thread::sleep(Duration::from_secs(2));
    // Some were answered 503 and closed at once (the cap) or refused at the limit.
    let mut answered_503 = 0;
    for s in &mut idle {
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let mut buf = [0u8; 64];
        if let Ok(n) = s.read(&mut buf)
            && buf[..n].starts_with(b"HTTP/1.1 503")
        {
            answered_503 += 1;
        }
    }
    println!(
        "connect refused {refused}, 503 {answered_503}, held {}",
        idle.len()
    );
    assert!(answered_503 + refused > 0, "the excess is refused");
    drop(idle);
    // The listener is still there and answers.
    wait_for(
        "a scrape after the idle connections closed",
        Duration::from_secs(30),
        || {
            request(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                .is_ok_and(|r| r.starts_with("HTTP/1.1 200") && r.contains("llctop_"))
        },
    );
    let health = request(port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(health.contains("refused"), "{health}");
    drop(k);
    let log = log.join().unwrap();
    println!("{log}");
}

#[test]
fn header_floods_are_cut_off_and_memory_stays_bounded() {
    let (k, port, _log) = serve(None);
    let pid = k.0.id();
    let before = rss_kib(pid);
    // 16 MB of one header line, as fast as the server takes it.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(15))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Flood: ")
        .unwrap();
    let chunk = vec![b'a'; 64 * 1024];
    let mut sent = 0usize;
    while sent < 16 << 20 {
        match s.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    let after = rss_kib(pid);
    println!("sent {sent} bytes before the server cut it off; RSS {before} -> {after} KiB");
    assert!(sent < 16 << 20, "the connection was cut off");
    assert!(after < 64 * 1024, "RSS {after} KiB");
    // A 1 MB header is refused with 431, not answered 200.
    let big = format!(
        "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "b".repeat(1 << 20)
    );
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let _ = s.write_all(big.as_bytes());
    let mut head = [0u8; 64];
    let n = s.read(&mut head).unwrap_or(0);
    let head = String::from_utf8_lossy(&head[..n]);
    assert!(head.starts_with("HTTP/1.1 431"), "{head}");
}

#[test]
fn methods_queries_and_versions_are_answered_as_http_says() {
    let (_k, port, _log) = serve(None);
    let head = request(port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|v| v.trim().parse().ok())
        .expect("HEAD has the GET's length");
    assert!(len > 100, "{head}");
    assert!(head.ends_with("\r\n\r\n"), "no body: {head:?}");
    let q = request(port, "GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(
        q.starts_with("HTTP/1.1 200") && q.contains("llctop_"),
        "{q}"
    );
    let post = request(
        port,
        "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
    )
    .unwrap();
    assert!(
        post.starts_with("HTTP/1.1 405") && post.contains("allow: GET, HEAD"),
        "{post}"
    );
    let none = request(port, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(none.starts_with("HTTP/1.1 404"), "{none}");
    // HTTP/2.0 in an HTTP/1 request line: 505 and closed (read_to_end returns).
    let t = Instant::now();
    let v2 = request(port, "GET /metrics HTTP/2.0\r\n\r\n").unwrap();
    assert!(v2.starts_with("HTTP/1.1 505"), "{v2}");
    assert!(t.elapsed() < Duration::from_secs(5), "closed at once");
    // A client that connects and says nothing is dropped after the head timeout.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let t = Instant::now();
    let mut buf = [0u8; 16];
    let n = s.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "closed without an answer");
    assert!(
        t.elapsed() >= Duration::from_secs(9) && t.elapsed() < Duration::from_secs(25),
        "{:?}",
        t.elapsed()
    );
}
