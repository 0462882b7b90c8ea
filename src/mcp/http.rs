//! `llctop mcp --listen ADDR`: the same server over MCP's streamable HTTP transport
//! (rmcp's `StreamableHttpService`, served by hyper as `serve` is), at `/mcp`. Each client
//! gets its own session; every session shares the one collector, the tools and the
//! experiment guard. Loopback only unless `--allow-remote` (the address check is
//! `serve`'s); on loopback the `Host` header must name loopback too (a web page that
//! resolves its own name to 127.0.0.1 cannot reach the server: DNS rebinding); with
//! `--allow-remote` any `Host` is taken, and reaching the port is the operator's to guard.
//! Bounded as `serve` is: connections capped at half the descriptors left (at most 256;
//! the excess is closed at once), a request's line and headers 8 KiB and 10 s; a body
//! as rmcp bounds it.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use tokio_util::sync::CancellationToken;

use super::Server;

/// The path the server answers on.
pub const PATH: &str = "/mcp";

/// How the HTTP side is told to end.
pub(super) struct Stop(CancellationToken);

impl Stop {
    pub fn now(&self) {
        self.0.cancel();
    }
}

/// The transport's configuration: loopback `Host` names only, unless remote clients are
/// allowed (then none is checked).
fn config(allow_remote: bool) -> StreamableHttpServerConfig {
    let c = StreamableHttpServerConfig::default();
    if allow_remote {
        c.disable_allowed_hosts()
    } else {
        c
    }
}

/// Serves `server` on `listener` until [`Stop::now`]; returns at once with the stop
/// handle and the future to run on a tokio runtime.
pub(super) fn serve(
    listener: TcpListener,
    server: Server,
    allow_remote: bool,
) -> Result<(Stop, impl std::future::Future<Output = Result<(), String>>), String> {
    let cfg = config(allow_remote);
    let stop = cfg.cancellation_token.clone();
    let handle = Stop(stop.clone());
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("listener: {e}"))?;
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        cfg,
    );
    let (limit, used) = crate::serve::http::descriptors();
    let cap = crate::serve::http::cap_for(limit, used);
    let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let fut = async move {
        let listener =
            tokio::net::TcpListener::from_std(listener).map_err(|e| format!("listener: {e}"))?;
        let mut said = None::<std::time::Instant>;
        loop {
            let accepted = tokio::select! {
                _ = stop.cancelled() => return Ok(()),
                a = listener.accept() => a,
            };
            match accepted {
                Ok((sock, _)) => {
                    use std::sync::atomic::Ordering;
                    if open.fetch_add(1, Ordering::Relaxed) >= cap {
                        open.fetch_sub(1, Ordering::Relaxed);
                        drop(sock);
                        continue;
                    }
                    let open = Arc::clone(&open);
                    let inner = TowerToHyperService::new(service.clone());
                    let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                        let fut = (req.uri().path() == PATH)
                            .then(|| hyper::service::Service::call(&inner, req));
                        async move {
                            match fut {
                                Some(f) => f.await,
                                None => Ok(not_found()),
                            }
                        }
                    });
                    let stop = stop.clone();
                    tokio::spawn(async move {
                        let conn = hyper::server::conn::http1::Builder::new()
                            .timer(hyper_util::rt::TokioTimer::new())
                            .header_read_timeout(crate::serve::http::HEAD_TIMEOUT)
                            .max_buf_size(crate::serve::http::MAX_HEAD)
                            .serve_connection(TokioIo::new(sock), svc);
                        tokio::pin!(conn);
                        tokio::select! {
                            _ = conn.as_mut() => {}
                            _ = stop.cancelled() => conn.as_mut().graceful_shutdown(),
                        }
                        open.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                    });
                }
                // Out of descriptors (or another accept error): say so at most every
                // 10 s, back off, and keep serving the connections already open.
                Err(e) => {
                    if said.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                        eprintln!("llctop mcp: accept: {e} (retrying)");
                        said = Some(std::time::Instant::now());
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    };
    Ok((handle, fut))
}

/// Anything but [`PATH`].
fn not_found() -> Response<BoxBody<Bytes, std::convert::Infallible>> {
    let body = http_body_util::Full::new(Bytes::from_static(b"not found: MCP is at /mcp\n"));
    let mut r = Response::new(body.boxed());
    *r.status_mut() = StatusCode::NOT_FOUND;
    r
}
