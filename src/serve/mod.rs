//! `llctop serve`: a headless collector — the same sources and snapshots as `record` and
//! the TUI — exposing its figures to Prometheus on `/metrics` (OpenMetrics when the
//! scraper asks for it, the classic text format otherwise; [`metrics`]) and `/healthz`
//! (the snapshot's age and the listener's health), over a listener that holds under
//! abuse ([`http`]).
//! Read-only: it never writes a knob, it reports their values. It listens on loopback
//! unless told `--allow-remote`, logs each change of a source's state on stderr, and
//! stops on SIGTERM like every other run.

pub mod http;
pub mod metrics;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use crate::kroot::KernelRoot;
use crate::run::{Error, Options, Run};
use crate::snapshot::{SourceState, SourceStatus};
use crate::topology::Topology;
use metrics::Exporter;

/// Snapshots between two reads of the knobs' values (one file read per knob).
const KNOBS_EVERY: u64 = 10;

/// What the HTTP thread answers from.
struct Shared {
    exporter: Exporter,
    /// CLOCK_MONOTONIC at the last snapshot (0: none yet).
    last_mono_ns: u64,
    interval: Duration,
}

/// Whether `addr` may be listened on: loopback always, anything else only when asked.
pub fn check_listen(addr: &SocketAddr, allow_remote: bool) -> Result<(), String> {
    if addr.ip().is_loopback() || allow_remote {
        Ok(())
    } else {
        Err(format!(
            "{addr} is not a loopback address: llctop's metrics describe this machine's scheduler; pass --allow-remote to serve them beyond it"
        ))
    }
}

pub fn run(
    opts: &Options,
    root: &KernelRoot,
    topo: &Topology,
    listen: SocketAddr,
    allow_remote: bool,
    process_series: usize,
) -> Result<(), Error> {
    check_listen(&listen, allow_remote)?;
    let mut run = Run::start(opts, root, topo, None)?;
    let (_, kernel) = crate::record::host_and_kernel(root);
    let shared = Arc::new(Mutex::new(Shared {
        exporter: Exporter::new(topo)
            .with_kernel(kernel.as_deref())
            .with_process_series(process_series),
        last_mono_ns: 0,
        interval: opts.interval,
    }));
    // Bound after the sources load (their descriptors count against the connection cap).
    let health: Arc<OnceLock<Arc<http::ListenerHealth>>> = Arc::new(OnceLock::new());
    let handler: http::Handler = {
        let (shared, health) = (Arc::clone(&shared), Arc::clone(&health));
        Arc::new(move |req| answer(req, &shared, health.get().map(|h| h.as_ref())))
    };
    let mut server = http::Server::start(listen, handler)
        .map_err(|e| Error::from(format!("listen on {listen}: {e}")))?;
    let _ = health.set(Arc::clone(&server.health));
    crate::say!(
        "llctop serve: http://{}/metrics every {} ({}; at most {} connections)",
        server.local_addr(),
        humantime::format_duration(opts.interval),
        topo.summary(),
        server.health.cap.load(std::sync::atomic::Ordering::Relaxed)
    );
    log_sources(&[], &run.sources);
    let mut prev = run.sources.clone();
    let mut n = 0u64;
    // Discovered once (discovery reads /proc/kallsyms and the kernel's BTF); only the
    // values are re-read afterwards.
    let mut registry = crate::knobs::Registry::discover(root, Some(topo));
    // The advisor, judging every snapshot as `record` does (findings as series).
    let mut trail = crate::findings::advisor::Trail::new();
    run.each(|snap, _| {
        let lines = trail.push(topo, snap);
        log_sources(&prev, &snap.sources);
        prev.clone_from(&snap.sources);
        let knobs = n.is_multiple_of(KNOBS_EVERY).then(|| {
            if n > 0 {
                registry.refresh_values();
            }
            crate::record::Header::knob_values(&registry)
        });
        n += 1;
        match shared.lock() {
            Ok(mut s) => {
                s.exporter.update(snap);
                s.exporter.findings(&lines, &trail.advisor);
                if let Some(k) = &knobs {
                    s.exporter.knobs(k);
                }
                s.last_mono_ns = snap.time.mono_ns;
                true
            }
            // The HTTP thread panicked holding the lock: nothing can be served.
            Err(_) => false,
        }
    });
    server.stop();
    crate::say!("llctop serve: stopped");
    Ok(())
}

/// One line on stderr per source whose state changed (or that starts degraded).
fn log_sources(prev: &[SourceStatus], now: &[SourceStatus]) {
    for s in now {
        let before = prev.iter().find(|p| p.name == s.name).map(|p| p.state);
        if before == Some(s.state) || (before.is_none() && s.state == SourceState::Active) {
            continue;
        }
        let from = before.map_or("start".to_string(), |b| format!("{b:?}").to_lowercase());
        crate::say!(
            "llctop serve: source {} {from} → {}{}",
            s.name,
            format!("{:?}", s.state).to_lowercase(),
            s.reason
                .as_deref()
                .map(|r| format!(": {}", crate::text::Esc(r)))
                .unwrap_or_default()
        );
    }
}

/// A plain response.
fn reply(code: u16, ctype: &str, body: String, head_only: bool) -> Response<Full<Bytes>> {
    let len = body.len();
    let body = if head_only { String::new() } else { body };
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(ctype) {
        h.insert(header::CONTENT_TYPE, v);
    }
    // HEAD: the length the GET would have.
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    resp
}

/// What `serve` answers: GET or HEAD of `/metrics`, `/healthz` and `/` (a query string is
/// ignored); another method on them is 405, another path 404.
fn answer(
    req: &Request<Incoming>,
    shared: &Mutex<Shared>,
    listener: Option<&http::ListenerHealth>,
) -> Response<Full<Bytes>> {
    const TEXT: &str = "text/plain; charset=utf-8";
    let path = req.uri().path();
    let known = matches!(path, "/metrics" | "/healthz" | "/");
    let head = req.method() == Method::HEAD;
    if !known {
        return reply(404, TEXT, "not found: /metrics, /healthz\n".into(), head);
    }
    if req.method() != Method::GET && !head {
        let mut r = reply(405, TEXT, "method not allowed: GET, HEAD\n".into(), false);
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let openmetrics = req.headers().get_all(header::ACCEPT).iter().any(|v| {
        v.to_str()
            .is_ok_and(|s| s.contains("application/openmetrics-text"))
    });
    let Ok(s) = shared.lock() else {
        return reply(500, TEXT, "collector failed\n".into(), head);
    };
    match path {
        "/metrics" => {
            let om = s.exporter.openmetrics();
            if openmetrics {
                reply(
                    200,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    om,
                    head,
                )
            } else {
                reply(
                    200,
                    "text/plain; version=0.0.4; charset=utf-8",
                    metrics::classic(&om),
                    head,
                )
            }
        }
        "/healthz" => {
            let age = crate::clock::mono_ns().saturating_sub(s.last_mono_ns);
            let fresh =
                s.last_mono_ns > 0 && Duration::from_nanos(age) <= s.interval.saturating_mul(3);
            let listener = listener
                .map(http::ListenerHealth::describe)
                .unwrap_or_default();
            if fresh {
                let body = format!("ok: snapshot {:.1} s old; {listener}\n", age as f64 / 1e9);
                reply(200, TEXT, body, head)
            } else {
                reply(503, TEXT, format!("no recent snapshot; {listener}\n"), head)
            }
        }
        _ => reply(
            200,
            TEXT,
            "llctop serve: /metrics (Prometheus), /healthz\n".into(),
            head,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_without_allow_remote() {
        let lo: SocketAddr = "127.0.0.1:9464".parse().unwrap();
        let v6: SocketAddr = "[::1]:9464".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:9464".parse().unwrap();
        assert!(check_listen(&lo, false).is_ok());
        assert!(check_listen(&v6, false).is_ok());
        let e = check_listen(&any, false).unwrap_err();
        assert!(e.contains("--allow-remote"), "{e}");
        assert!(check_listen(&any, true).is_ok());
    }
}
