//! `llctop mcp`: the live machine, its recordings and knob experiments as a Model Context
//! Protocol server over stdio, or streamable HTTP with `--listen` ([`http`]) (the official
//! Rust SDK, `rmcp`), for agents. One collector
//! inside — the same sources, snapshots and advisor as every other command ([`live`]) —
//! and, over it, resources (topology, the newest snapshot, the findings, the knobs, the
//! metric definitions), tools ([`tools`], and [`ab`], which writes a knob and so only with
//! `--allow-writes`) and prompts. docs/agents.md says how to register it.

pub mod ab;
pub mod docs;
pub mod files;
mod http;
pub mod live;
pub mod reply;
pub mod summary;
pub mod tools;
pub mod trace;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, Role, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

use crate::kroot::KernelRoot;
use crate::run::{Error, Options, Run};
use crate::topology::Topology;
use live::Live;

/// Snapshots between two reads of the knobs' values (as `serve`).
const KNOBS_EVERY: u64 = 10;

pub struct McpOptions {
    pub allow_writes: bool,
    /// Where `record` and `ab` write their recordings.
    pub dir: PathBuf,
    /// The global options this server was started with (for `llctop ab` children).
    pub global: Vec<String>,
    /// Serve streamable HTTP on this address instead of stdio, and whether it may be one
    /// other machines reach.
    pub listen: Option<(std::net::SocketAddr, bool)>,
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
    ab: Arc<ab::Ab>,
}

pub fn run(opts: &Options, root: &KernelRoot, topo: &Topology, m: McpOptions) -> Result<(), Error> {
    let mut run = Run::start(opts, root, topo, None)?;
    let live = Arc::new(Live::new(topo.clone()));
    let children: ab::Children = Arc::new(Mutex::new(Vec::new()));
    let server = Server {
        tools: Arc::new(tools::Tools {
            live: Arc::clone(&live),
            dir: m.dir.clone(),
        }),
        ab: Arc::new(ab::Ab {
            allow_writes: m.allow_writes,
            exe: std::env::current_exe()?,
            global: m.global,
            dir: m.dir.clone(),
            children: Arc::clone(&children),
        }),
    };
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mode = if m.allow_writes {
        "ab may write knobs"
    } else {
        "read-only"
    };
    // Over HTTP: the listener is bound here, so a taken port or a refused address is
    // said before anything runs.
    let (http_stop, serving) = match m.listen {
        Some((addr, allow_remote)) => {
            crate::serve::check_listen(&addr, allow_remote)?;
            let listener = std::net::TcpListener::bind(addr)
                .map_err(|e| format!("mcp: cannot listen on {addr}: {e}"))?;
            let at = listener.local_addr()?;
            let (stop, fut) = http::serve(listener, server, allow_remote)?;
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
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build();
            let res = match rt {
                Ok(rt) => rt.block_on(async move {
                    match proto {
                        Proto::Stdio(server) => {
                            let service = server
                                .serve(rmcp::transport::stdio())
                                .await
                                .map_err(|e| e.to_string())?;
                            service.waiting().await.map_err(|e| e.to_string())?;
                        }
                        Proto::Http(fut) => fut.await?,
                    }
                    Ok::<(), String>(())
                }),
                Err(e) => Err(e.to_string()),
            };
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            res
        })
    };
    eprintln!(
        "llctop mcp: serving on {on} ({}; {mode}, recordings in {})",
        topo.summary(),
        m.dir.display()
    );
    let mut registry = crate::knobs::Registry::discover(root, Some(topo));
    let mut n = 0u64;
    run.each(|snap, _| {
        let knobs = n.is_multiple_of(KNOBS_EVERY).then(|| {
            if n > 0 {
                registry.refresh_values();
            }
            (
                crate::record::Header::knob_values(&registry),
                serde_json::to_value(&registry).unwrap_or_default(),
            )
        });
        n += 1;
        live.push(snap, knobs);
        !done.load(std::sync::atomic::Ordering::Relaxed)
    });
    live.end();
    // Over HTTP the server runs until a signal: its sessions end with the collector.
    if let Some(stop) = &http_stop {
        stop.now();
    }
    // Experiments still running: stopped (each restores its knob), and waited for.
    let pids: Vec<u32> = children.lock().map(|c| c.clone()).unwrap_or_default();
    for &p in &pids {
        ab::stop(p);
    }
    for p in pids {
        if let Ok(p) = i32::try_from(p) {
            let mut status = 0;
            // SAFETY: waitpid on our own child; status is a valid pointer.
            unsafe {
                libc::waitpid(p, &mut status, 0);
            }
        }
    }
    if done.load(std::sync::atomic::Ordering::Relaxed) || http_stop.is_some() {
        match proto.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("mcp: {e}").into()),
            Err(_) => return Err("mcp: the protocol thread panicked".into()),
        }
    }
    Ok(())
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
        if name == "ab" {
            let p: ab::AbIn = reply::args("ab", r.arguments)?;
            let ab = Arc::clone(&self.ab);
            return ab.run(p, ctx).await.map(Into::into);
        }
        if name == "trace" {
            let p: trace::TraceIn = reply::args("trace", r.arguments)?;
            return trace::run(&self.ab, p, ctx).await.map(Into::into);
        }
        let spec = tools::SPECS
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("unknown tool {name:?}; see tools/list"), None)
            })?;
        let t = Arc::clone(&self.tools);
        let args = r.arguments;
        let (v, summary) = if spec.waits {
            tokio::task::spawn_blocking(move || t.call(&name, args))
                .await
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))??
        } else {
            t.call(&name, args)?
        };
        Ok(reply::result(v, crate::text::guard(&summary).into_owned()).into())
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
        let me = Arc::clone(&self.tools);
        let ab = Arc::clone(&self.ab);
        let s = Server { tools: me, ab };
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
