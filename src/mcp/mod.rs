//! `llctop mcp`: the live machine, its recordings and knob experiments as a Model Context
//! Protocol server over stdio, or streamable HTTP with `--listen` ([`http`]) (the official
//! Rust SDK, `rmcp`), for agents. One collector
//! inside — the same sources, snapshots and advisor as every other command ([`live`]) —
//! and, over it, resources (topology, the newest snapshot, the findings, the knobs, the
//! metric definitions), tools ([`tools`], and [`ab`], which writes a knob and so only with
//! `--allow-writes`) and prompts. docs/agents.md says how to register it.

pub mod ab;
pub mod config;
pub mod docs;
pub mod files;
pub mod helper;
mod http;
pub mod live;
pub mod reply;
mod stdio;
pub mod store;
pub mod summary;
pub mod tools;
pub mod trace;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as Content,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument,
    PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::kroot::KernelRoot;
use crate::run::pipeline::{Ctl, Pipeline, Sink, Tick};
use crate::run::{Error, Options};
use crate::topology::Topology;
use helper::Helpers;
use live::Live;

/// How long the server's end waits for its helpers to stop when a signal ended it (an
/// `llctop ab` restores its knob first); when the client went away, a second at most in
/// all (they go on restoring by themselves).
const HELPERS_GRACE: Duration = Duration::from_secs(10);
const GONE_GRACE: Duration = Duration::from_millis(700);

pub struct McpOptions {
    pub allow_writes: bool,
    /// Where `record`, `trace` and `ab` write.
    pub dir: PathBuf,
    /// The global options this server was started with (for `llctop` helpers).
    pub global: Vec<String>,
    /// Serve streamable HTTP on this address instead of stdio, and whether it may be one
    /// other machines reach.
    pub listen: Option<(std::net::SocketAddr, bool)>,
    /// The config file's `[mcp]`, checked.
    pub config: config::Config,
    /// The bearer token HTTP requests must carry.
    pub token: Option<String>,
}

/// The default directory of the server's recordings: the state directory's `mcp/`
/// (root: /var/lib/llctop/mcp).
pub fn default_dir() -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return PathBuf::from("/var/lib/llctop/mcp");
    }
    crate::config::state_dir()
        .unwrap_or_else(|| PathBuf::from("llctop"))
        .join("mcp")
}

#[derive(Clone)]
struct Server {
    tools: Arc<tools::Tools>,
    helpers: Arc<Helpers>,
}

pub fn run(opts: &Options, root: &KernelRoot, topo: &Topology, m: McpOptions) -> Result<(), Error> {
    if m.listen.is_some() && m.allow_writes && m.token.is_none() {
        return Err("mcp: --listen with --allow-writes needs a bearer token (--token-file FILE, a 0600 file of root's): a loopback port is reachable by every local user".into());
    }
    let store = store::Store::new(
        m.dir.clone(),
        m.config.recordings.clone(),
        m.config.max_dir_bytes,
    );
    store.ensure().map_err(|e| format!("mcp: {e}"))?;
    let mut p = Pipeline::start(opts, root, topo, None, crate::run::stop_flag()?)?;
    let live = Arc::new(Live::new(topo.clone()));
    let helpers = Arc::new(Helpers::new(
        m.allow_writes,
        std::env::current_exe()?,
        m.global,
        store.clone(),
        Arc::new(m.config.clone()),
    ));
    let server = Server {
        tools: Arc::new(tools::Tools {
            live: Arc::clone(&live),
            store,
        }),
        helpers: Arc::clone(&helpers),
    };
    // Set when the stdio client went away (the server then ends within a second).
    let gone = Arc::new(AtomicBool::new(false));
    let mode = match (m.allow_writes, m.config.commands.len()) {
        (false, _) => "read-only".to_string(),
        (true, 0) => "ab may write knobs; no commands allowed".into(),
        (true, n) => format!("ab may write knobs and run {n} allowed commands"),
    };
    // Over HTTP: the listener is bound here, so a taken port or a refused address is
    // said before anything runs.
    let (http_stop, serving) = match m.listen {
        Some((addr, allow_remote)) => {
            crate::serve::check_listen(&addr, allow_remote)?;
            let listener = std::net::TcpListener::bind(addr)
                .map_err(|e| format!("mcp: cannot listen on {addr}: {e}"))?;
            let at = listener.local_addr()?;
            let (stop, fut) = http::serve(
                listener,
                server,
                http::Http {
                    allow_remote,
                    token: m.token.clone(),
                    allowed_origins: m.config.allowed_origins.clone(),
                    max_sessions: m.config.max_sessions,
                },
            )?;
            (
                Some(stop),
                (
                    format!("http://{at}{}", http::PATH),
                    Proto::Http(Box::pin(fut)),
                ),
            )
        }
        None => (None, ("stdio".to_string(), Proto::Stdio(server))),
    };
    let (on, proto) = serving;
    let proto = {
        let gone = Arc::clone(&gone);
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build();
            let res = match rt {
                Ok(rt) => rt.block_on(async move {
                    match proto {
                        Proto::Stdio(server) => stdio::serve(server, gone).await,
                        Proto::Http(fut) => fut.await,
                    }
                }),
                Err(e) => Err(e.to_string()),
            };
            // The protocol side ended (rmcp's service closed): the server ends too.
            crate::signals::request();
            res
        })
    };
    crate::say!(
        "llctop mcp: serving on {on} ({}; {mode}, recordings in {}{})",
        topo.summary(),
        m.dir.display(),
        if m.token.is_some() {
            "; a bearer token required"
        } else {
            ""
        }
    );
    let res = p.drive(&mut [&mut Shared {
        live: Arc::clone(&live),
    }]);
    // Tools waiting on the collector return now.
    live.end();
    if let Some(stop) = &http_stop {
        stop.now();
    }
    // Helpers still running are stopped (`llctop ab` restores its knob) and waited for —
    // briefly when the client went away: they finish restoring by themselves.
    let pids: Vec<u32> = helpers
        .children
        .lock()
        .map(|c| c.clone())
        .unwrap_or_default();
    for &p in &pids {
        helper::stop(p);
    }
    let client_gone = gone.load(Ordering::Relaxed);
    let limit = if client_gone {
        GONE_GRACE
    } else {
        HELPERS_GRACE
    };
    let t0 = Instant::now();
    while t0.elapsed() < limit
        && pids
            .iter()
            .any(|&p| std::path::Path::new(&format!("/proc/{p}")).exists() && !zombie(p))
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(p);
    res?;
    if client_gone {
        // rmcp may still hold a tool call (a report's read): the process ends without it.
        return Ok(());
    }
    match proto.join() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("mcp: {e}").into()),
        Err(_) => Err("mcp: the protocol thread panicked".into()),
    }
}

/// MCP's sink: each tick into the state the tools answer from.
struct Shared {
    live: Arc<Live>,
}

impl Sink for Shared {
    fn tick(&mut self, t: &Tick, ctl: &mut Ctl) -> Result<bool, Error> {
        let registry = ctl
            .registry
            .map(|r| serde_json::to_value(r).unwrap_or_default());
        self.live.push(t, registry);
        Ok(true)
    }
}

/// Whether process `pid` has ended and waits to be reaped.
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

/// What the protocol thread serves.
enum Proto {
    Stdio(Server),
    Http(std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>>),
}

fn text_resource(uri: &str, mime: &str, text: String) -> ReadResourceResult {
    ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
        uri: uri.into(),
        mime_type: Some(mime.into()),
        text,
        meta: None,
    }])
}

const RESOURCES: &[(&str, &str, &str)] = &[
    (
        "llctop://topology",
        "topology",
        "CPUs, LLCs (cache level, size, CPUs) and NUMA nodes of this machine",
    ),
    (
        "llctop://snapshot/latest",
        "latest snapshot",
        "The newest snapshot (process rows cut to 20, events left out)",
    ),
    (
        "llctop://findings",
        "findings",
        "The advisor's findings now, with their measured cost and what to try",
    ),
    (
        "llctop://knobs",
        "knobs",
        "Every scheduler knob: value, writable or why not, in effect or not",
    ),
    (
        "llctop://metrics",
        "metric definitions",
        "Every figure's definition, source and unit (docs/metrics.md, docs/advisor.md)",
    ),
];

impl Server {
    fn read(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let json = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
        match uri {
            "llctop://topology" => Ok(text_resource(
                uri,
                "application/json",
                serde_json::to_string_pretty(&self.tools.live.topo).unwrap_or_default(),
            )),
            "llctop://snapshot/latest" => {
                let (v, _) = self.tools.call("snapshot", None)?;
                Ok(text_resource(uri, "application/json", json(&v)))
            }
            "llctop://findings" => {
                let (v, _) = self.tools.call("findings", None)?;
                Ok(text_resource(uri, "application/json", json(&v)))
            }
            "llctop://knobs" => {
                let st = self
                    .tools
                    .live
                    .wait_past(None, std::time::Duration::from_secs(10));
                Ok(text_resource(uri, "application/json", json(&st.registry)))
            }
            "llctop://metrics" => Ok(text_resource(
                uri,
                "application/json",
                serde_json::to_string_pretty(docs::all()).unwrap_or_default(),
            )),
            _ => Err(ErrorData::resource_not_found(
                format!("no resource {uri}; see resources/list"),
                None,
            )),
        }
    }
}

const PROMPTS: &[(&str, &str)] = &[
    (
        "cache-local",
        "Is work cache-local on this machine? Look at where processes run, how they migrate and what the advisor finds.",
    ),
    (
        "prove-knob",
        "Prove whether a scheduler knob helps: find its current value, run a guarded A/B and read the verdict.",
    ),
    (
        "explain-recording",
        "Explain a recording: what happened, what the advisor found, and what to try.",
    ),
];

fn prompt_text(name: &str, args: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    let arg = |k: &str| {
        args.get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    Some(match name {
        "cache-local" => "Using llctop's tools: read llctop://topology, call watch(10), then top_processes(sort=cross_llc, n=10) and findings(). Say whether work stays on its LLC (migrations by distance, preferred-LLC hit of the busiest processes), name any process scattered over LLCs, and for every finding quote its measured cost and what to try. Use explain() for any figure you are unsure of.".into(),
        "prove-knob" => format!(
            "Prove whether the knob {:?} helps this workload. Read llctop://knobs for its current value and whether it is writable and in effect. Choose A = the current value and B = the value to test, then call ab(knob, a, b, window=10, rounds=3{}) (it needs a server started with --allow-writes; the knob is restored afterwards). Report the verdict per metric with its interval, and say when the result is noise.",
            arg("knob"),
            if arg("command").is_empty() { String::new() } else { format!(", command={:?}", arg("command")) }
        ),
        "explain-recording" => format!(
            "Call report(path={:?}). Summarise what the machine did (busy per LLC, migrations by distance and cause), each finding with its evidence and cost, and the experiment to try. If it is an A/B recording, also call compare on it and read the verdict.",
            arg("path")
        ),
        _ => return None,
    })
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
        .with_server_info(
            Implementation::new("llctop", env!("CARGO_PKG_VERSION"))
                .with_title("llctop: scheduler cache and NUMA behaviour"),
        )
        .with_instructions("llctop: Linux scheduler cache and NUMA behaviour, live. Resources: the topology, the newest snapshot, the findings, the knobs, metric definitions. Tools read the live machine and recordings; ab proves a knob with a guarded A/B (only with --allow-writes).")
    }

    async fn list_tools(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::list()))
    }

    async fn call_tool(
        &self,
        r: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = r.name.to_string();
        // A wrong argument or a failed call is a tool result with isError and a sentence
        // the model can act on (MCP asks it so: hosts often hide protocol errors from the
        // model); only an unknown tool is a protocol error.
        let as_result = |e: ErrorData| -> CallToolResponse {
            CallToolResult::error(vec![Content::text(
                crate::text::guard(&e.message).into_owned(),
            )])
            .into()
        };
        if name == "ab" {
            let p: ab::AbIn = match reply::args("ab", r.arguments) {
                Ok(p) => p,
                Err(e) => return Ok(as_result(e)),
            };
            return Ok(ab::run(&self.helpers, p, ctx)
                .await
                .map_or_else(as_result, Into::into));
        }
        if name == "trace" {
            let p: trace::TraceIn = match reply::args("trace", r.arguments) {
                Ok(p) => p,
                Err(e) => return Ok(as_result(e)),
            };
            return Ok(trace::run(&self.helpers, p, ctx)
                .await
                .map_or_else(as_result, Into::into));
        }
        let spec = tools::SPECS
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("unknown tool {name:?}; see tools/list"), None)
            })?;
        let t = Arc::clone(&self.tools);
        let args = r.arguments;
        let res = if spec.waits {
            match tokio::task::spawn_blocking(move || t.call(&name, args)).await {
                Ok(r) => r,
                Err(e) => Err(ErrorData::internal_error(e.to_string(), None)),
            }
        } else {
            t.call(&name, args)
        };
        Ok(match res {
            Ok((v, summary)) => reply::result(v, crate::text::guard(&summary).into_owned()).into(),
            Err(e) => as_result(e),
        })
    }

    async fn list_resources(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(
            RESOURCES
                .iter()
                .map(|(uri, name, d)| {
                    Resource::new(*uri, *name)
                        .with_description(*d)
                        .with_mime_type("application/json")
                })
                .collect(),
        ))
    }

    async fn read_resource(
        &self,
        r: ReadResourceRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = r.uri.clone();
        let s = self.clone();
        tokio::task::spawn_blocking(move || s.read(&uri))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
            .map(Into::into)
    }

    async fn list_prompts(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let args = |name: &str| -> Option<Vec<PromptArgument>> {
            match name {
                "prove-knob" => Some(vec![
                    PromptArgument::new("knob")
                        .with_description("a knob id (llctop://knobs)")
                        .with_required(true),
                    PromptArgument::new("command")
                        .with_description("a command to run in each window"),
                ]),
                "explain-recording" => Some(vec![
                    PromptArgument::new("path")
                        .with_description("a recording file")
                        .with_required(true),
                ]),
                _ => None,
            }
        };
        Ok(ListPromptsResult::with_all_items(
            PROMPTS
                .iter()
                .map(|(n, d)| Prompt::new(*n, Some(*d), args(n)))
                .collect(),
        ))
    }

    async fn get_prompt(
        &self,
        r: GetPromptRequestParams,
        _c: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = r.arguments.unwrap_or_default();
        let text = prompt_text(&r.name, &args).ok_or_else(|| {
            ErrorData::invalid_params(format!("unknown prompt {:?}", r.name), None)
        })?;
        let d = PROMPTS
            .iter()
            .find(|p| p.0 == r.name)
            .map(|p| p.1.to_string());
        let mut res = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
        res.description = d;
        Ok(res.into())
    }
}
