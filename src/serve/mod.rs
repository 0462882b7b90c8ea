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

use crate::knobs::session::KnobEvent;
use crate::kroot::KernelRoot;
use crate::run::pipeline::{Ctl, Pipeline, Sink, SourceChange, Tick};
use crate::run::{Error, Options};
use crate::snapshot::SourceState;
use crate::topology::Topology;
use metrics::Exporter;

/// What the HTTP thread answers from.
struct Shared {
    exporter: Exporter,
    /// CLOCK_MONOTONIC at the last snapshot (0: none yet).
    last_mono_ns: u64,
    interval: Duration,
    /// The flight recorder (its own lock), for `POST /flight-recorder/dump`.
    flight: Option<Arc<Mutex<crate::flight::Recorder>>>,
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

/// What `serve` is asked to do.
#[derive(Debug, Clone)]
pub struct Plan {
    pub listen: SocketAddr,
    pub allow_remote: bool,
    pub process_series: usize,
    /// The flight recorder's settings, when it is on.
    pub flight: Option<crate::flight::Settings>,
}

pub fn run(opts: &Options, root: &KernelRoot, topo: &Topology, plan: &Plan) -> Result<(), Error> {
    check_listen(&plan.listen, plan.allow_remote)?;
    // The recorder's directory is checked (and what a killed run left read) before the
    // sources load: a bad directory is refused at once.
    let (host, kernel) = crate::record::host_and_kernel(root);
    let recorder = match &plan.flight {
        Some(s) => {
            // Sources and knob values come with the run's first snapshots.
            let header = crate::record::Header::new(
                (host.clone(), kernel.clone()),
                opts.interval,
                topo.clone(),
                Vec::new(),
            )
            .with_boot_id(root);
            let (r, found) = crate::flight::Recorder::open(s.clone(), header, opts.interval)?;
            for d in &found.dropped {
                crate::say!("llctop serve: flight recorder: {d}");
            }
            Some((r, found))
        }
        None => None,
    };
    let mut p = Pipeline::start(opts, root, topo, None, crate::run::stop_flag()?)?;
    let flight = recorder.map(|(mut r, found)| {
        if let Some(seq) = found.last_seq {
            p.continue_after(seq);
        }
        r.set_sources(&p.sources);
        crate::say!(
            "llctop serve: flight recorder in {}: the last {} (at most {}), {} segments kept; dump: kill -USR1 {} or POST /flight-recorder/dump",
            crate::text::Esc(&r.dir().display().to_string()),
            humantime::format_duration(r.settings().keep),
            crate::units::bytes(r.settings().max_size),
            found.segments,
            std::process::id()
        );
        Arc::new(Mutex::new(r))
    });
    let shared = Arc::new(Mutex::new(Shared {
        exporter: Exporter::new(topo)
            .with_kernel(kernel.as_deref())
            .with_process_series(plan.process_series),
        last_mono_ns: 0,
        interval: opts.interval,
        flight: flight.clone(),
    }));
    // Bound after the sources load (their descriptors count against the connection cap).
    let health: Arc<OnceLock<Arc<http::ListenerHealth>>> = Arc::new(OnceLock::new());
    let handler: http::Handler = {
        let (shared, health) = (Arc::clone(&shared), Arc::clone(&health));
        Arc::new(move |req| answer(req, &shared, health.get().map(|h| h.as_ref())))
    };
    let listen = plan.listen;
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
    for c in crate::run::pipeline::source_changes(&[], &p.sources) {
        log_source(&c);
    }
    let usr1 = flight
        .as_ref()
        .map(|f| on_usr1(Arc::clone(f)))
        .transpose()?;
    let res = p.drive(&mut [&mut Exported { shared, flight }]);
    if let Some(h) = usr1 {
        h.close();
    }
    server.stop();
    crate::say!("llctop serve: stopped");
    res
}

/// SIGUSR1 dumps the flight recorder's history (on a thread of its own, as it comes).
fn on_usr1(
    flight: Arc<Mutex<crate::flight::Recorder>>,
) -> Result<signal_hook::iterator::Handle, Error> {
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGUSR1])
        .map_err(|e| Error::from(format!("SIGUSR1: {e}")))?;
    let handle = signals.handle();
    std::thread::Builder::new()
        .name("llctop-usr1".into())
        .spawn(move || {
            for _ in signals.forever() {
                let _ = dump(&flight, "signal");
            }
        })
        .map_err(|e| Error::from(format!("SIGUSR1: {e}")))?;
    Ok(handle)
}

/// A dump of the flight recorder, said on stderr: its path, or why there is none.
fn dump(
    flight: &Mutex<crate::flight::Recorder>,
    reason: &str,
) -> Result<std::path::PathBuf, String> {
    let res = match flight.lock() {
        Ok(mut r) => r.dump(reason),
        Err(_) => Err("the recorder failed".into()),
    };
    match &res {
        Ok(p) => crate::say!(
            "llctop serve: flight recorder: {reason}: dumped the history to {}",
            crate::text::Esc(&p.display().to_string())
        ),
        Err(e) => crate::say!(
            "llctop serve: flight recorder: {reason}: no dump: {}",
            crate::text::Esc(e)
        ),
    }
    res
}

/// `serve`'s sink: each tick into the exporter (the advisor's findings as series, the
/// knob values when re-read) and the flight recorder, each source change logged.
struct Exported {
    shared: Arc<Mutex<Shared>>,
    flight: Option<Arc<Mutex<crate::flight::Recorder>>>,
}

impl Sink for Exported {
    fn tick(&mut self, t: &Tick, _: &mut Ctl) -> Result<bool, Error> {
        for c in &t.sources {
            log_source(c);
        }
        // The recorder first (its own lock): what it reports goes out with this tick.
        let status = self.flight.as_ref().and_then(|f| {
            let mut r = f.lock().ok()?;
            for line in r.tick(t) {
                crate::say!("llctop serve: {line}");
            }
            Some(r.status())
        });
        match self.shared.lock() {
            Ok(mut s) => {
                s.exporter.tick(t);
                if let Some(st) = &status {
                    s.exporter.flight(st);
                }
                s.last_mono_ns = t.snap.time.mono_ns;
                Ok(true)
            }
            // The HTTP thread panicked holding the lock: nothing can be served.
            Err(_) => Err("serve: the HTTP side failed".into()),
        }
    }

    fn finish(&mut self, _: &[KnobEvent]) -> Result<(), Error> {
        if let Some(f) = &self.flight
            && let Ok(mut r) = f.lock()
            && let Some(line) = r.close()
        {
            crate::say!("llctop serve: {line}");
        }
        Ok(())
    }
}

/// One line on stderr for a source whose state changed (or that starts degraded or
/// absent).
fn log_source(c: &SourceChange) {
    let s = &c.now;
    if c.before.is_none() && s.state == SourceState::Active {
        return;
    }
    let from = c
        .before
        .map_or("start".to_string(), |b| format!("{b:?}").to_lowercase());
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

/// Where a POST dumps the flight recorder's history.
pub const DUMP_PATH: &str = "/flight-recorder/dump";

/// `POST /flight-recorder/dump`: the dump's path (200), or why not — no recorder (404),
/// nothing kept yet or a write that failed (503); another method is 405. Reachable from
/// loopback only unless `--allow-remote` (where the listener is).
fn dump_answer(req: &Request<Incoming>, shared: &Mutex<Shared>) -> Response<Full<Bytes>> {
    const TEXT: &str = "text/plain; charset=utf-8";
    if req.method() != Method::POST {
        let mut r = reply(405, TEXT, "method not allowed: POST\n".into(), false);
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        return r;
    }
    let flight = match shared.lock() {
        Ok(s) => s.flight.clone(),
        Err(_) => return reply(500, TEXT, "collector failed\n".into(), false),
    };
    let Some(flight) = flight else {
        return reply(
            404,
            TEXT,
            "no flight recorder: start serve with --flight-recorder DIR\n".into(),
            false,
        );
    };
    match dump(&flight, "http") {
        Ok(p) => reply(200, TEXT, format!("{}\n", p.display()), false),
        Err(e) => reply(503, TEXT, format!("no dump: {e}\n"), false),
    }
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
    if path == DUMP_PATH {
        return dump_answer(req, shared);
    }
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
