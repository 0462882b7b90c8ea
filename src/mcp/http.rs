//! `llctop mcp --listen ADDR`: the same server over MCP's streamable HTTP transport
//! (rmcp's `StreamableHttpService`, served by hyper as `serve` is), at `/mcp`. Each client
//! gets its own session; every session shares the one collector, the tools and the
//! helpers. A loopback port is reachable by every local user, so:
//! - **A bearer token** (`--token-file`, or `[mcp] token_file`: a 0600 file of root's) is
//!   required of every request when given — and must be given with `--allow-writes`.
//!   Compared in constant time; a request without it gets 401.
//! - **Sessions are bounded** ([`Capped`]): at most `[mcp] max_sessions` at once, a quarter
//!   of them per client address; a session idle for [`IDLE`] with no open stream is closed
//!   and its memory returned (rmcp's own manager keeps an expired session's entry for
//!   good). A new session past the bound gets 503 with a JSON-RPC error and Retry-After.
//! - **Origins are checked**: a request carrying `Origin` (a browser page) is refused unless
//!   `[mcp] allowed_origins` lists it; on loopback the `Host` header must name loopback or
//!   the address served (a page resolving its own name to 127.0.0.1 cannot reach it: DNS
//!   rebinding); with `--allow-remote` any `Host` is taken, and reaching the port is the
//!   operator's to guard.
//! - Bounded as `serve` is: connections capped at half the descriptors left (at most 256;
//!   the excess is closed at once), a request's line and headers 8 KiB and 10 s; a body
//!   as rmcp bounds it.

use std::collections::HashMap;
use std::net::{IpAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt as _};
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{SessionId, SessionManager};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::Server;

/// The path the server answers on.
pub const PATH: &str = "/mcp";
/// A session with no request and no open stream for this long is closed.
pub const IDLE: Duration = Duration::from_secs(120);

/// How the HTTP side is told to end.
pub(super) struct Stop(CancellationToken);

impl Stop {
    pub fn now(&self) {
        self.0.cancel();
    }
}

tokio::task_local! {
    /// The address of the client whose request is being served.
    static PEER: IpAddr;
}

/// What the HTTP side is given.
pub(super) struct Http {
    pub allow_remote: bool,
    pub token: Option<String>,
    pub allowed_origins: Vec<String>,
    pub max_sessions: usize,
}

#[derive(Debug)]
struct Entry {
    peer: Option<IpAddr>,
    last: Instant,
    /// Streams of the session still open (an SSE GET, a request's answer).
    streams: Arc<AtomicUsize>,
}

/// rmcp's session manager with a bound on sessions, per client too, and idle ones closed.
pub(super) struct Capped {
    inner: LocalSessionManager,
    book: std::sync::Mutex<HashMap<SessionId, Entry>>,
    max: usize,
    per_client: usize,
    idle: Duration,
}

#[derive(Debug, thiserror::Error)]
pub(super) enum CappedError {
    #[error(transparent)]
    Inner(#[from] LocalSessionManagerError),
    #[error("too many sessions")]
    Full,
}

/// Keeps a session's open-stream count while its stream lives.
struct StreamGuard {
    streams: Arc<AtomicUsize>,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.streams.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Capped {
    pub fn new(max: usize, idle: Duration) -> Capped {
        let mut inner = LocalSessionManager::default();
        // rmcp's own idle limit: the worker ends (its entry is closed by `reclaim`).
        inner.session_config.keep_alive = Some(idle);
        Capped {
            inner,
            book: std::sync::Mutex::new(HashMap::new()),
            max: max.max(1),
            per_client: (max / 4).max(1),
            idle,
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Entry>> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn touch(&self, id: &SessionId) {
        if let Some(e) = self.book().get_mut(id) {
            e.last = Instant::now();
        }
    }

    /// Sessions now.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.book().len()
    }

    /// Close the sessions idle past the limit (no request, no open stream); how many.
    pub async fn reclaim(&self) -> usize {
        let stale: Vec<SessionId> = {
            let mut book = self.book();
            let ids: Vec<SessionId> = book
                .iter()
                .filter(|(_, e)| {
                    e.streams.load(Ordering::Relaxed) == 0 && e.last.elapsed() >= self.idle
                })
                .map(|(id, _)| id.clone())
                .collect();
            for id in &ids {
                book.remove(id);
            }
            ids
        };
        for id in &stale {
            let _ = self.inner.close_session(id).await;
        }
        if !stale.is_empty() {
            // The sessions' memory back to the system (glibc keeps freed arenas).
            // SAFETY: malloc_trim has no preconditions.
            unsafe {
                libc::malloc_trim(0);
            }
        }
        stale.len()
    }

    /// Whether a new session for `peer` fits, after reclaiming idle ones; why not.
    pub async fn admit(&self, peer: IpAddr) -> Result<(), String> {
        self.reclaim().await;
        let book = self.book();
        let mine = book.values().filter(|e| e.peer == Some(peer)).count();
        if book.len() >= self.max {
            return Err(format!(
                "this server holds {} sessions, its most (a session idle for {} s is closed; close yours with DELETE)",
                book.len(),
                self.idle.as_secs()
            ));
        }
        if mine >= self.per_client {
            return Err(format!(
                "{peer} holds {mine} sessions, the most for one client (a session idle for {} s is closed; close yours with DELETE)",
                self.idle.as_secs()
            ));
        }
        Ok(())
    }

    fn guard(&self, id: &SessionId) -> StreamGuard {
        let streams = self
            .book()
            .get(id)
            .map(|e| Arc::clone(&e.streams))
            .unwrap_or_default();
        streams.fetch_add(1, Ordering::Relaxed);
        StreamGuard { streams }
    }

    fn tracked<S: Stream<Item = ServerSseMessage> + Send + Sync + 'static>(
        &self,
        id: &SessionId,
        s: S,
    ) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
        let g = self.guard(id);
        s.map(move |m| {
            let _ = &g;
            m
        })
    }
}

impl SessionManager for Capped {
    type Error = CappedError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        if self.book().len() >= self.max {
            self.reclaim().await;
            if self.book().len() >= self.max {
                return Err(CappedError::Full);
            }
        }
        let (id, t) = self.inner.create_session().await?;
        self.book().insert(
            id.clone(),
            Entry {
                peer: PEER.try_with(|p| *p).ok(),
                last: Instant::now(),
                streams: Arc::default(),
            },
        );
        Ok((id, t))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.book().contains_key(id) && self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.book().remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        let s = self.inner.create_stream(id, message).await?;
        Ok(self.tracked(id, s))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        let s = self.inner.create_standalone_stream(id).await?;
        Ok(self.tracked(id, s))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        let s = self.inner.resume(id, last_event_id).await?;
        Ok(self.tracked(id, s))
    }
}

/// The transport's configuration: loopback `Host` names and the address served (unless
/// remote clients are allowed: then none is checked); `Origin` checked always.
fn config(h: &Http, at: std::net::SocketAddr) -> StreamableHttpServerConfig {
    let c = StreamableHttpServerConfig::default()
        .with_allowed_origins(h.allowed_origins.clone())
        .enforce_origin_validation();
    if h.allow_remote {
        c.disable_allowed_hosts()
    } else {
        c.with_allowed_hosts([
            "localhost".to_string(),
            "127.0.0.1".into(),
            "::1".into(),
            at.ip().to_string(),
        ])
    }
}

/// Whether `req` carries the bearer token (compared in constant time).
fn authorized(req: &Request<Incoming>, token: &str) -> bool {
    let Some(given) = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (given.trim().as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

type Body = BoxBody<Bytes, std::convert::Infallible>;

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut r =
        Response::new(http_body_util::Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *r.status_mut() = status;
    r
}

/// 503 with a JSON-RPC error a client can read.
fn full(why: &str) -> Response<Body> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": -32000, "message": format!("no new session: {why}")}});
    let mut r = Response::new(http_body_util::Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r.headers_mut().insert(
        hyper::header::RETRY_AFTER,
        hyper::header::HeaderValue::from_static("30"),
    );
    r
}

/// Serves `server` on `listener` until [`Stop::now`]; returns at once with the stop
/// handle and the future to run on a tokio runtime.
pub(super) fn serve(
    listener: TcpListener,
    server: Server,
    h: Http,
) -> Result<(Stop, impl std::future::Future<Output = Result<(), String>>), String> {
    let at = listener
        .local_addr()
        .map_err(|e| format!("listener: {e}"))?;
    let cfg = config(&h, at);
    let stop = cfg.cancellation_token.clone();
    let handle = Stop(stop.clone());
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("listener: {e}"))?;
    let sessions = Arc::new(Capped::new(h.max_sessions, IDLE));
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::clone(&sessions), cfg);
    let (limit, used) = crate::serve::http::descriptors();
    let cap = crate::serve::http::cap_for(limit, used);
    let open = Arc::new(AtomicUsize::new(0));
    let token = h.token.map(Arc::new);
    let fut = async move {
        let listener =
            tokio::net::TcpListener::from_std(listener).map_err(|e| format!("listener: {e}"))?;
        // Idle sessions are closed even when no new one comes.
        {
            let (sessions, stop) = (Arc::clone(&sessions), stop.clone());
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(IDLE / 4) => { sessions.reclaim().await; }
                    }
                }
            });
        }
        let mut said = None::<Instant>;
        loop {
            let accepted = tokio::select! {
                _ = stop.cancelled() => return Ok(()),
                a = listener.accept() => a,
            };
            match accepted {
                Ok((sock, peer)) => {
                    if open.fetch_add(1, Ordering::Relaxed) >= cap {
                        open.fetch_sub(1, Ordering::Relaxed);
                        drop(sock);
                        continue;
                    }
                    let open = Arc::clone(&open);
                    let inner = TowerToHyperService::new(service.clone());
                    let (sessions, token) = (Arc::clone(&sessions), token.clone());
                    let peer = peer.ip();
                    let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                        let (inner, sessions, token) =
                            (inner.clone(), Arc::clone(&sessions), token.clone());
                        async move {
                            if req.uri().path() != PATH {
                                return Ok(plain(
                                    StatusCode::NOT_FOUND,
                                    "not found: MCP is at /mcp\n",
                                ));
                            }
                            if let Some(t) = &token
                                && !authorized(&req, t)
                            {
                                let mut r = plain(
                                    StatusCode::UNAUTHORIZED,
                                    "a bearer token is required (Authorization: Bearer TOKEN; the server's --token-file)\n",
                                );
                                r.headers_mut().insert(
                                    hyper::header::WWW_AUTHENTICATE,
                                    hyper::header::HeaderValue::from_static("Bearer"),
                                );
                                return Ok(r);
                            }
                            let new_session = req.method() == hyper::Method::POST
                                && !req.headers().contains_key("mcp-session-id");
                            if new_session && let Err(why) = sessions.admit(peer).await {
                                return Ok(full(&why));
                            }
                            PEER.scope(peer, hyper::service::Service::call(&inner, req))
                                .await
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
                        open.fetch_sub(1, Ordering::Relaxed);
                    });
                }
                // Out of descriptors (or another accept error): say so at most every
                // 10 s, back off, and keep serving the connections already open.
                Err(e) => {
                    if said.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                        crate::say!("llctop mcp: accept: {e} (retrying)");
                        said = Some(Instant::now());
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    };
    Ok((handle, fut))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_capped_per_server_and_client_and_idle_ones_reclaimed() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let c = Capped::new(8, Duration::from_millis(200));
            let me: IpAddr = "127.0.0.1".parse().unwrap();
            let other: IpAddr = "127.0.0.2".parse().unwrap();
            for _ in 0..2 {
                PEER.scope(me, async { c.create_session().await.unwrap() })
                    .await;
            }
            // A quarter of 8 per client.
            assert!(
                c.admit(me)
                    .await
                    .unwrap_err()
                    .contains("most for one client")
            );
            assert!(c.admit(other).await.is_ok());
            for _ in 0..6 {
                PEER.scope(other, async { c.create_session().await.unwrap() })
                    .await;
            }
            assert_eq!(c.len(), 8);
            assert!(c.admit(other).await.unwrap_err().contains("its most"));
            assert!(matches!(c.create_session().await, Err(CappedError::Full)));
            tokio::time::sleep(Duration::from_millis(250)).await;
            assert_eq!(c.reclaim().await, 8);
            assert_eq!(c.len(), 0);
            assert!(c.admit(me).await.is_ok());
        });
    }
}
