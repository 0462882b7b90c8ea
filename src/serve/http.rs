//! The HTTP listener of `llctop serve` (hyper on a one-thread tokio runtime): it holds
//! under abuse. An accept error never ends it — out of file descriptors (EMFILE/ENFILE)
//! or buffers it backs off (10 ms doubling to 1 s), refuses the waiting connection
//! through a spare descriptor kept for that, says so on stderr (once per 10 s) and keeps
//! accepting. Connections are capped (the excess gets `503` and is closed at once); a
//! request's line and headers are capped at 8 KiB (`431`); a client has 10 s to send
//! them, on a new connection and between keep-alive requests; a first request of another
//! HTTP version than 1.0 or 1.1 is answered `505` and closed. What it answers is the caller's ([`Handler`]); the
//! listener's own health is in [`ListenerHealth`] for `/healthz`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

/// The most a request line and its headers may take (hyper's smallest buffer).
pub const MAX_HEAD: usize = 8192;
/// How long a client has to send a request's head (also: idle between requests).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a connection lives, however busy.
const MAX_LIFETIME: Duration = Duration::from_secs(300);
/// The most connections served at once (fewer when the descriptor limit is low).
const MAX_CONNECTIONS: usize = 256;
/// Between two stderr lines about accept errors.
const SAY_EVERY: Duration = Duration::from_secs(10);

/// Answers one request (called on the HTTP thread).
pub type Handler = Arc<dyn Fn(&Request<Incoming>) -> Response<Full<Bytes>> + Send + Sync>;

/// The listener's health, for `/healthz` and the log.
#[derive(Debug, Default)]
pub struct ListenerHealth {
    pub open: AtomicUsize,
    pub cap: AtomicUsize,
    pub accepted: AtomicU64,
    /// Connections refused at the cap or for want of descriptors.
    pub refused: AtomicU64,
    pub accept_errors: AtomicU64,
    /// The last accept error and when (CLOCK_MONOTONIC ns).
    pub last_error: Mutex<Option<(String, u64)>>,
}

impl ListenerHealth {
    /// One line: connections open of the cap, accepted, refused, accept errors (the last
    /// with its age).
    pub fn describe(&self) -> String {
        let mut s = format!(
            "listener: {} of {} connections open, {} accepted, {} refused",
            self.open.load(Ordering::Relaxed),
            self.cap.load(Ordering::Relaxed),
            self.accepted.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
        );
        let errors = self.accept_errors.load(Ordering::Relaxed);
        if errors > 0 {
            s.push_str(&format!(", {errors} accept errors"));
            if let Ok(g) = self.last_error.lock()
                && let Some((e, at)) = g.as_ref()
            {
                let age = crate::clock::mono_ns().saturating_sub(*at) as f64 / 1e9;
                s.push_str(&format!(" (last: {e}, {age:.0} s ago)"));
            }
        }
        s
    }
}

/// The connection cap for a descriptor limit of `limit` with `used` open: half of what is
/// left (the other half for llctop's own files), at most [`MAX_CONNECTIONS`], at least 4.
pub fn cap_for(limit: u64, used: u64) -> usize {
    let free = limit.saturating_sub(used) / 2;
    usize::try_from(free)
        .unwrap_or(usize::MAX)
        .clamp(4, MAX_CONNECTIONS)
}

/// This process's soft descriptor limit and the descriptors open now.
pub fn descriptors() -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid rlimit to fill.
    let limit = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 {
        r.rlim_cur
    } else {
        1024
    };
    let used = std::fs::read_dir("/proc/self/fd").map_or(64, |d| d.count() as u64);
    (limit, used)
}

/// Whether an accept error means the process or system ran out of something (back off),
/// rather than one connection going wrong (go on at once).
fn exhausted(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// A running listener: stops when dropped or by [`Server::stop`].
pub struct Server {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub health: Arc<ListenerHealth>,
}

impl Server {
    /// Bind `addr` (errors now, e.g. the port in use) and serve on a thread of its own.
    pub fn start(addr: SocketAddr, handler: Handler) -> std::io::Result<Server> {
        let std_listener = std::net::TcpListener::bind(addr)?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let health = Arc::new(ListenerHealth::default());
        let (limit, used) = descriptors();
        health.cap.store(cap_for(limit, used), Ordering::Relaxed);
        let (stop, stopped) = watch::channel(false);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let h = Arc::clone(&health);
        let thread = std::thread::Builder::new()
            .name("llctop-http".into())
            .spawn(move || {
                rt.block_on(async move {
                    match tokio::net::TcpListener::from_std(std_listener) {
                        Ok(l) => accept_loop(l, handler, h, stopped).await,
                        Err(e) => crate::say!("llctop serve: listener: {e}"),
                    }
                });
            })?;
        Ok(Server {
            addr,
            stop,
            thread: Some(thread),
            health,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop accepting, end the connections, wait for the thread.
    pub fn stop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A descriptor kept free to refuse a connection with when the process has none left.
fn spare() -> Option<std::fs::File> {
    std::fs::File::open("/dev/null").ok()
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    handler: Handler,
    health: Arc<ListenerHealth>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut spare = spare();
    let mut backoff = Duration::from_millis(10);
    let mut said: Option<Instant> = None;
    let mut unsaid = 0u64;
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopped.changed() => return,
        };
        match accepted {
            Ok((sock, _peer)) => {
                backoff = Duration::from_millis(10);
                if spare.is_none() {
                    spare = self::spare();
                }
                let cap = health.cap.load(Ordering::Relaxed);
                if health.open.load(Ordering::Relaxed) >= cap {
                    health.refused.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(refuse(sock));
                    continue;
                }
                health.accepted.fetch_add(1, Ordering::Relaxed);
                health.open.fetch_add(1, Ordering::Relaxed);
                let (h, handler, stop) =
                    (Arc::clone(&health), Arc::clone(&handler), stopped.clone());
                tokio::spawn(async move {
                    serve_connection(sock, handler, stop).await;
                    h.open.fetch_sub(1, Ordering::Relaxed);
                });
            }
            Err(e) => {
                health.accept_errors.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut g) = health.last_error.lock() {
                    *g = Some((e.to_string(), crate::clock::mono_ns()));
                }
                let out = exhausted(&e);
                if said.is_none_or(|t| t.elapsed() >= SAY_EVERY) {
                    crate::say!(
                        "llctop serve: accept failed: {e}{}{}; still listening",
                        if unsaid > 0 {
                            format!(" ({unsaid} more since the last line)")
                        } else {
                            String::new()
                        },
                        if out {
                            format!(" (backing off {} ms)", backoff.as_millis())
                        } else {
                            String::new()
                        }
                    );
                    said = Some(Instant::now());
                    unsaid = 0;
                } else {
                    unsaid += 1;
                }
                if out {
                    // Free the spare descriptor to take the waiting connection off the
                    // queue and close it: the client is refused at once instead of
                    // hanging, and the queue does not wake this loop again for it.
                    if spare.take().is_some() {
                        // SAFETY: accept4 on the listener's own descriptor; the result
                        // is closed at once.
                        let fd = unsafe {
                            libc::accept4(
                                listener.as_raw_fd(),
                                std::ptr::null_mut(),
                                std::ptr::null_mut(),
                                libc::SOCK_CLOEXEC,
                            )
                        };
                        if fd >= 0 {
                            health.refused.fetch_add(1, Ordering::Relaxed);
                            // SAFETY: a descriptor accept4 just returned, closed once.
                            unsafe { libc::close(fd) };
                        }
                        spare = self::spare();
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = stopped.changed() => return,
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }
}

/// `503` and close: more connections than the cap.
async fn refuse(mut sock: tokio::net::TcpStream) {
    let body = "too many connections: try again\n";
    let text = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), sock.write_all(text.as_bytes())).await;
    let _ = sock.shutdown().await;
}

/// What the first request line says of its HTTP version.
#[derive(Debug, PartialEq)]
enum FirstLine {
    /// HTTP/1.0 or HTTP/1.1, or not a line hyper could not judge itself (too long,
    /// malformed): hyper answers it.
    Hyper,
    /// Another version (`HTTP/2.0`, the HTTP/2 preface `PRI * HTTP/2.0`, `HTTP/0.9`…).
    Unsupported,
    /// No complete line within [`HEAD_TIMEOUT`], or the client left.
    Gone,
}

/// The version a request line (without its line end) asks for.
fn line_version(line: &[u8]) -> FirstLine {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match line.rsplit(|b| *b == b' ').next() {
        Some(v) if v == b"HTTP/1.1" || v == b"HTTP/1.0" => FirstLine::Hyper,
        Some(v) if v.starts_with(b"HTTP/") => FirstLine::Unsupported,
        // No version at all (`GET /`, HTTP/0.9's form).
        _ if line.split(|b| *b == b' ').count() == 2 => FirstLine::Unsupported,
        _ => FirstLine::Hyper,
    }
}

/// Look at the first request line without taking it off the socket: hyper reads it
/// again. It usually comes in the first segment; a line dribbled slower is looked at
/// again every 10 ms until [`HEAD_TIMEOUT`].
async fn first_line(sock: &tokio::net::TcpStream) -> FirstLine {
    let deadline = Instant::now() + HEAD_TIMEOUT;
    let mut buf = vec![0u8; MAX_HEAD];
    loop {
        let n = match tokio::time::timeout_at(deadline.into(), sock.peek(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return FirstLine::Gone,
            Ok(Ok(n)) => n,
        };
        if let Some(end) = buf[..n].iter().position(|b| *b == b'\n') {
            return line_version(&buf[..end]);
        }
        if n == buf.len() {
            return FirstLine::Hyper;
        }
        if Instant::now() >= deadline {
            return FirstLine::Gone;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn serve_connection(
    mut sock: tokio::net::TcpStream,
    handler: Handler,
    mut stopped: watch::Receiver<bool>,
) {
    let _ = sock.set_nodelay(true);
    match first_line(&sock).await {
        FirstLine::Hyper => {}
        FirstLine::Gone => return,
        FirstLine::Unsupported => {
            let body = "HTTP/1.1 or HTTP/1.0 only\n";
            let text = format!(
                "HTTP/1.1 505 HTTP Version Not Supported\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ =
                tokio::time::timeout(Duration::from_secs(1), sock.write_all(text.as_bytes())).await;
            let _ = sock.shutdown().await;
            return;
        }
    }
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let resp = handler(&req);
        async move { Ok::<_, Infallible>(resp) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD)
        .serve_connection(TokioIo::new(sock), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = tokio::time::sleep(MAX_LIFETIME) => {}
        _ = stopped.changed() => {}
    }
    // A response under way is finished (within a second); an idle connection closes.
    conn.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(Duration::from_secs(1), conn).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_of_other_versions_are_told_apart() {
        assert_eq!(line_version(b"GET /metrics HTTP/1.1\r"), FirstLine::Hyper);
        assert_eq!(line_version(b"HEAD / HTTP/1.0"), FirstLine::Hyper);
        assert_eq!(
            line_version(b"GET /metrics HTTP/2.0\r"),
            FirstLine::Unsupported
        );
        assert_eq!(line_version(b"PRI * HTTP/2.0\r"), FirstLine::Unsupported);
        assert_eq!(
            line_version(b"GET /metrics HTTP/1.2"),
            FirstLine::Unsupported
        );
        assert_eq!(line_version(b"GET /metrics"), FirstLine::Unsupported);
        assert_eq!(line_version(b"garbage"), FirstLine::Hyper, "hyper's 400");
    }

    #[test]
    fn the_cap_leaves_descriptors_for_llctop() {
        assert_eq!(cap_for(1024, 40), 256);
        assert_eq!(cap_for(256, 40), 108);
        assert_eq!(cap_for(64, 40), 12);
        assert_eq!(cap_for(64, 70), 4);
    }

    #[test]
    fn out_of_descriptors_backs_off_a_bad_connection_does_not() {
        assert!(exhausted(&std::io::Error::from_raw_os_error(libc::EMFILE)));
        assert!(exhausted(&std::io::Error::from_raw_os_error(libc::ENFILE)));
        assert!(!exhausted(&std::io::Error::from_raw_os_error(
            libc::ECONNABORTED
        )));
    }
}
