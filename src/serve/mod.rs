//! `llctop serve`: a headless collector — the same sources and snapshots as `record` and
//! the TUI — exposing its figures to Prometheus on `/metrics` (OpenMetrics when the
//! scraper asks for it, the classic text format otherwise; [`metrics`]) and `/healthz`.
//! Read-only: it never writes a knob, it reports their values. It listens on loopback
//! unless told `--allow-remote`, logs each change of a source's state on stderr, and
//! stops on SIGTERM like every other run.

pub mod metrics;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    let server = tiny_http::Server::http(listen)
        .map_err(|e| Error::from(format!("listen on {listen}: {e}")))?;
    let server = Arc::new(server);
    let mut run = Run::start(opts, root, topo, None)?;
    let shared = Arc::new(Mutex::new(Shared {
        exporter: Exporter::new(topo).with_process_series(process_series),
        last_mono_ns: 0,
        interval: opts.interval,
    }));
    eprintln!(
        "llctop serve: http://{}/metrics every {} ({})",
        server.server_addr(),
        humantime::format_duration(opts.interval),
        topo.summary()
    );
    log_sources(&[], &run.sources);
    let http = {
        let (server, shared) = (Arc::clone(&server), Arc::clone(&shared));
        std::thread::Builder::new()
            .name("llctop-http".into())
            .spawn(move || {
                for req in server.incoming_requests() {
                    answer(req, &shared);
                }
            })?
    };
    let mut prev = run.sources.clone();
    let mut n = 0u64;
    // Discovered once (discovery reads /proc/kallsyms and the kernel's BTF); only the
    // values are re-read afterwards.
    let mut registry = crate::knobs::Registry::discover(root, Some(topo));
    run.each(|snap, _| {
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
    server.unblock();
    let _ = http.join();
    eprintln!("llctop serve: stopped");
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
        eprintln!(
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

fn header(name: &str, value: &str) -> Option<tiny_http::Header> {
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
}

fn answer(req: tiny_http::Request, shared: &Mutex<Shared>) {
    let openmetrics = req.headers().iter().any(|h| {
        h.field.equiv("Accept") && h.value.as_str().contains("application/openmetrics-text")
    });
    let (code, body, ctype) = match (req.method(), req.url()) {
        (tiny_http::Method::Get, "/metrics") => match shared.lock() {
            Ok(s) => {
                let om = s.exporter.openmetrics();
                if openmetrics {
                    (
                        200,
                        om,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )
                } else {
                    (
                        200,
                        metrics::classic(&om),
                        "text/plain; version=0.0.4; charset=utf-8",
                    )
                }
            }
            Err(_) => (500, "collector failed\n".into(), "text/plain"),
        },
        (tiny_http::Method::Get, "/healthz") => match shared.lock() {
            Ok(s) => {
                let age = crate::clock::mono_ns().saturating_sub(s.last_mono_ns);
                let fresh =
                    s.last_mono_ns > 0 && Duration::from_nanos(age) <= s.interval.saturating_mul(3);
                if fresh {
                    (200, "ok\n".into(), "text/plain")
                } else {
                    (503, "no recent snapshot\n".into(), "text/plain")
                }
            }
            Err(_) => (500, "collector failed\n".into(), "text/plain"),
        },
        (tiny_http::Method::Get, "/") => (
            200,
            "llctop serve: /metrics (Prometheus), /healthz\n".into(),
            "text/plain",
        ),
        _ => (404, "not found: /metrics, /healthz\n".into(), "text/plain"),
    };
    let mut resp = tiny_http::Response::from_string(body).with_status_code(code);
    if let Some(h) = header("Content-Type", ctype) {
        resp = resp.with_header(h);
    }
    // A scraper that went away is its own business.
    let _ = req.respond(resp);
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
