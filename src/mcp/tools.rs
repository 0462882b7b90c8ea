//! `llctop mcp`'s tools as data: each one's name, description, input type (its JSON
//! schema generated from the type) and output type (likewise), and what it does over the
//! live state or a recording. Every result is structured (the output type) with a short
//! text summary; sizes are bounded and a cut says so (`truncated`). Bad input is a
//! JSON-RPC invalid-params error naming the field and the limit.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::files::{self, DiffIn, ExplainIn, ExplainOut, PathIn, TextOut};
use super::live::{Live, MAX_SECONDS};
use super::reply::{Outcome, args, value};
use super::summary::{self, FindingBrief, Watch};
use crate::snapshot::{ProcessStats, Snapshot};

/// The most rows `top_processes` returns.
pub const MAX_N: u32 = 200;
/// Process rows a `snapshot` answer keeps (the rest: `top_processes`).
pub const SNAPSHOT_ROWS: usize = 20;

pub struct Tools {
    pub live: Arc<Live>,
    /// Where `record` writes, and the recordings `report`/`diff`/`compare` may read.
    pub store: super::store::Store,
}

// ---- inputs ----

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotIn {
    /// Top-level fields to return (e.g. ["cpus", "llcs", "migrations"]); all when absent.
    pub fields: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SortBy {
    Cpu,
    Wait,
    Migrations,
    CrossLlc,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TopIn {
    /// Order: CPU time, run-queue wait, migrations, or cross-LLC migrations (descending).
    pub sort: Option<SortBy>,
    /// Rows (1–200, default 10).
    pub n: Option<u32>,
    /// Only processes whose command name contains this.
    pub filter: Option<String>,
    /// The next page: the `next_cursor` a previous answer gave (same sort and filter).
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PidIn {
    pub pid: u32,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecondsIn {
    /// Seconds from now (1–600).
    pub seconds: u64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

// ---- outputs ----

#[derive(Debug, Serialize, JsonSchema)]
pub struct SnapshotOut {
    pub seq: u64,
    /// Seconds since the snapshot was taken.
    pub age_s: f64,
    /// The snapshot (docs/recording-format.md), the fields asked for.
    pub snapshot: serde_json::Value,
    /// What was left out, if anything.
    pub truncated: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TopOut {
    pub seq: u64,
    /// Process rows (docs/recording-format.md, `processes.rows[]`), this page of them.
    pub rows: Vec<serde_json::Value>,
    /// Rows matching, all pages.
    pub matched: usize,
    /// Call again with `cursor` set to this (same sort and filter) for the next rows;
    /// none on the last page. It names the snapshot: a newer one starts over.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ProcessOut {
    pub pid: u32,
    pub seq: u64,
    /// Its row in the newest snapshot (runtime per LLC, preferred LLC and hit, waits).
    pub row: serde_json::Value,
    /// Placements of its threads over the kept history, per CPU: `[cpu, count]`.
    pub placements: Vec<[u64; 2]>,
    /// The processes it maps shared memory with (the newest read of /proc/PID/maps): each
    /// pair's pids, bytes both map, objects, whether both map one writable, and the object
    /// they share most of.
    pub shares_memory_with: Vec<serde_json::Value>,
    /// The newest snapshot's wakeup pairs it is in, as waker or wakee (`waker`, `wakee`,
    /// `count` in the interval; counted with the global `--wakeups` only).
    pub wakeups: Vec<serde_json::Value>,
    /// The newest snapshot's pairs of its own threads that woke each other (`pid`,
    /// `waker` and `wakee` thread ids, `count` in the interval; `--wakeups`).
    pub thread_wakeups: Vec<serde_json::Value>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FindingsOut {
    pub seq: Option<u64>,
    pub findings: Vec<FindingBrief>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RecordOut {
    pub path: String,
    pub snapshots: usize,
    pub first_seq: u64,
    pub last_seq: u64,
}

// ---- the table ----

pub struct Spec {
    pub name: &'static str,
    pub description: &'static str,
    pub input: fn() -> Arc<JsonObject>,
    pub output: fn() -> Arc<JsonObject>,
    /// Whether it waits (runs on a blocking thread).
    pub waits: bool,
}

fn schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_type::<T>()
}

fn out_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_output::<T>()
}

pub const SPECS: &[Spec] = &[
    Spec {
        name: "snapshot",
        description: "The newest snapshot of this machine (per-CPU, per-LLC and per-node busy and run-queue wait, migrations by distance and cause, processes, balancing, NUMA), optionally only some top-level fields; process rows cut to 20.",
        input: schema::<SnapshotIn>,
        output: out_schema::<SnapshotOut>,
        waits: false,
    },
    Spec {
        name: "top_processes",
        description: "The busiest processes of the newest snapshot, sorted by CPU time, run-queue wait, migrations or cross-LLC migrations, optionally filtered by command name.",
        input: schema::<TopIn>,
        output: out_schema::<TopOut>,
        waits: false,
    },
    Spec {
        name: "process",
        description: "One process: its CPU time per LLC, preferred LLC and hit ratio, waits and migrations (newest snapshot), and where its threads were placed (kept history).",
        input: schema::<PidIn>,
        output: out_schema::<ProcessOut>,
        waits: false,
    },
    Spec {
        name: "watch",
        description: "Watch the next N seconds and summarise them: per-LLC busy and run-queue wait, migrations by distance and cause, findings that fired or cleared.",
        input: schema::<SecondsIn>,
        output: out_schema::<Watch>,
        waits: true,
    },
    Spec {
        name: "findings",
        description: "The advisor's findings now (seed situations seen in the last 5 s), worst first, each with its measured cost and what to try.",
        input: schema::<Empty>,
        output: out_schema::<FindingsOut>,
        waits: false,
    },
    Spec {
        name: "explain",
        description: "The definition of a metric, field, finding or threshold: its rows in docs/metrics.md and docs/advisor.md (source, unit, reason).",
        input: schema::<ExplainIn>,
        output: out_schema::<ExplainOut>,
        waits: false,
    },
    Spec {
        name: "record",
        description: "Record the next N seconds of this machine to a new recording file (llctop's directory for them); returns its path for report/diff/compare.",
        input: schema::<SecondsIn>,
        output: out_schema::<RecordOut>,
        waits: true,
    },
    Spec {
        name: "report",
        description: "llctop report of a recording: summary, per-LLC figures, migrations, findings with evidence.",
        input: schema::<PathIn>,
        output: out_schema::<TextOut>,
        waits: true,
    },
    Spec {
        name: "diff",
        description: "llctop diff of two recordings: what moved between A and B, with noise bands and knob differences.",
        input: schema::<DiffIn>,
        output: out_schema::<TextOut>,
        waits: true,
    },
    Spec {
        name: "compare",
        description: "llctop report --compare of an A/B experiment recording: per-window values, medians, intervals and the verdict.",
        input: schema::<PathIn>,
        output: out_schema::<TextOut>,
        waits: true,
    },
];

pub fn list() -> Vec<Tool> {
    let mut v: Vec<Tool> = SPECS
        .iter()
        .map(|s| Tool::new(s.name, s.description, (s.input)()).with_raw_output_schema((s.output)()))
        .collect();
    v.push(super::ab::tool());
    v.push(super::trace::tool());
    v
}

impl Tools {
    pub fn call(&self, name: &str, a: Option<JsonObject>) -> Outcome {
        match name {
            "snapshot" => self.snapshot(args(name, a)?),
            "top_processes" => self.top(args(name, a)?),
            "process" => self.process(args(name, a)?),
            "watch" => self.watch(args(name, a)?),
            "findings" => {
                let _: Empty = args(name, a)?;
                self.findings()
            }
            "explain" => files::explain(args(name, a)?),
            "record" => self.record(args(name, a)?),
            "report" => files::report(&self.store, args(name, a)?),
            "diff" => files::diff(&self.store, args(name, a)?),
            "compare" => files::compare(&self.store, args(name, a)?),
            _ => Err(ErrorData::invalid_params(
                format!("unknown tool {name}"),
                None,
            )),
        }
    }

    fn newest(&self) -> Result<Snapshot, ErrorData> {
        let s = self.live.wait_past(None, Duration::from_secs(10));
        s.latest().cloned().ok_or_else(|| {
            ErrorData::internal_error(
                "no snapshot yet: the collector has not completed an interval",
                None,
            )
        })
    }

    fn snapshot(&self, p: SnapshotIn) -> Outcome {
        let mut s = self.newest()?;
        let mut cut = Vec::new();
        if let Some(t) = s.processes.as_mut()
            && t.rows.len() > SNAPSHOT_ROWS
        {
            cut.push(format!(
                "process rows cut to {SNAPSHOT_ROWS} of {} (top_processes gives more)",
                t.rows.len()
            ));
            t.rows.truncate(SNAPSHOT_ROWS);
        }
        if s.events.take().is_some_and(|e| !e.events.is_empty()) {
            cut.push("events left out (process gives a process's placements)".into());
        }
        let mut v = value(&s)?;
        if let (Some(fields), Some(obj)) = (&p.fields, v.as_object_mut()) {
            if let Some(bad) = fields.iter().find(|f| !obj.contains_key(f.as_str())) {
                let known: Vec<&String> = obj.keys().collect();
                return Err(ErrorData::invalid_params(
                    format!("snapshot: no field {bad:?}; fields: {known:?}"),
                    None,
                ));
            }
            obj.retain(|k, _| fields.iter().any(|f| f == k) || k == "seq");
        }
        let age = crate::clock::mono_ns().saturating_sub(s.time.mono_ns) as f64 / 1e9;
        let summary = format!(
            "snapshot #{} ({age:.1} s old){}",
            s.seq,
            if cut.is_empty() {
                String::new()
            } else {
                format!("; {}", cut.join("; "))
            }
        );
        let out = SnapshotOut {
            seq: s.seq,
            age_s: age,
            snapshot: v,
            truncated: (!cut.is_empty()).then(|| cut.join("; ")),
        };
        Ok((value(&out)?, summary))
    }

    fn top(&self, p: TopIn) -> Outcome {
        let n = p.n.unwrap_or(10);
        if n == 0 || n > MAX_N {
            return Err(ErrorData::invalid_params(
                format!("top_processes: n must be 1–{MAX_N}, not {n}"),
                None,
            ));
        }
        // The snapshot a cursor names (kept history: ten minutes at 1 s), else the newest.
        let want = p
            .cursor
            .as_deref()
            .and_then(|c| c.split_once(':'))
            .and_then(|(seq, _)| seq.parse::<u64>().ok());
        let s = match want {
            None => self.newest()?,
            Some(seq) => self
                .live
                .lock()
                .history
                .iter()
                .find(|x| x.seq == seq)
                .cloned()
                .ok_or_else(|| {
                    ErrorData::invalid_params(
                        format!("top_processes: snapshot #{seq} of that cursor is no longer kept: call without a cursor"),
                        None,
                    )
                })?,
        };
        let Some(t) = &s.processes else {
            return Err(ErrorData::internal_error(
                "no process rows: the source gives none (see the snapshot's sources)",
                None,
            ));
        };
        let key = |r: &ProcessStats| match p.sort.unwrap_or(SortBy::Cpu) {
            SortBy::Cpu => r.cpu_time_ns,
            SortBy::Wait => r.rq_wait_ns,
            SortBy::Migrations => r.migrations,
            SortBy::CrossLlc => r.cross_llc_migrations,
        };
        let mut rows: Vec<&ProcessStats> = t
            .rows
            .iter()
            .filter(|r| p.filter.as_deref().is_none_or(|f| r.comm.contains(f)))
            .collect();
        rows.sort_by_key(|r| (std::cmp::Reverse(key(r)), r.pid));
        let matched = rows.len();
        // A cursor is `SEQ:OFFSET`: pages of one snapshot, so rows never shift between them.
        let from = match p.cursor.as_deref() {
            None => 0,
            Some(c) => {
                let bad = || {
                    ErrorData::invalid_params(
                        format!(
                            "top_processes: cursor {c:?} is not one an answer gave (its next_cursor)"
                        ),
                        None,
                    )
                };
                let (seq, off) = c.split_once(':').ok_or_else(bad)?;
                if seq.parse::<u64>().ok() != Some(s.seq) {
                    return Err(bad());
                }
                off.parse::<usize>()
                    .ok()
                    .filter(|&o| o <= matched)
                    .ok_or_else(bad)?
            }
        };
        let rows: Vec<&ProcessStats> = rows.into_iter().skip(from).take(n as usize).collect();
        let next = from + rows.len();
        let next_cursor = (next < matched).then(|| format!("{}:{next}", s.seq));
        // The summary says the figure the rows are sorted by.
        let secs = s.time.interval_secs().max(1e-9);
        let figure = |r: &ProcessStats| match p.sort.unwrap_or(SortBy::Cpu) {
            SortBy::Cpu => format!("{:.2} CPU-s", r.cpu_time_ns as f64 / 1e9),
            SortBy::Wait => format!(
                "{:.1} ms/s run-queue wait",
                r.rq_wait_ns as f64 / 1e6 / secs
            ),
            SortBy::Migrations => format!("{:.1} migrations/s", r.migrations as f64 / secs),
            SortBy::CrossLlc => format!(
                "{:.1} cross-LLC migrations/s",
                r.cross_llc_migrations as f64 / secs
            ),
        };
        let summary = rows
            .iter()
            .take(5)
            .map(|r| format!("{} ({}) {}", r.comm, r.pid, figure(r)))
            .collect::<Vec<_>>()
            .join(", ");
        let out = TopOut {
            seq: s.seq,
            rows: rows.iter().map(value).collect::<Result<_, _>>()?,
            matched,
            next_cursor,
        };
        Ok((value(&out)?, format!("snapshot #{}: {summary}", s.seq)))
    }

    fn process(&self, p: PidIn) -> Outcome {
        let st = self.live.wait_past(None, Duration::from_secs(10));
        let s = st
            .latest()
            .ok_or_else(|| ErrorData::internal_error("no snapshot yet", None))?;
        let row = s
            .processes
            .as_ref()
            .and_then(|t| t.rows.iter().find(|r| r.pid == p.pid))
            .ok_or_else(|| {
                let (kept, total) = s
                    .processes
                    .as_ref()
                    .map_or((0, 0), |t| (t.rows.len(), t.total as usize));
                ErrorData::invalid_params(
                    format!(
                        "process: pid {} is not among the {kept} busiest processes the newest snapshot keeps (of {total}; the server's --top keeps more; top_processes lists them)",
                        p.pid
                    ),
                    None,
                )
            })?;
        let mut per_cpu: std::collections::BTreeMap<u64, u64> = Default::default();
        for e in st
            .history
            .iter()
            .filter_map(|s| s.events.as_ref())
            .flat_map(|l| &l.events)
        {
            if e.tgid == p.pid && e.kind == crate::snapshot::EventKind::Placement {
                *per_cpu
                    .entry(u64::try_from(e.to_cpu).unwrap_or(0))
                    .or_default() += 1;
            }
        }
        let summary = format!(
            "{} ({}): {:.2} CPU-s, preferred LLC {}, {} placements in the kept history",
            row.comm,
            row.pid,
            row.cpu_time_ns as f64 / 1e9,
            row.preferred_llc
                .map_or("none".into(), |l| format!("llc{l}")),
            per_cpu.values().sum::<u64>()
        );
        let out = ProcessOut {
            pid: p.pid,
            seq: s.seq,
            row: value(row)?,
            placements: per_cpu.into_iter().map(|(c, n)| [c, n]).collect(),
            shares_memory_with: s
                .sharing
                .iter()
                .flat_map(|sh| &sh.pairs)
                .filter(|x| x.a == p.pid || x.b == p.pid)
                .map(value)
                .collect::<Result<_, _>>()?,
            wakeups: s
                .wakeups
                .iter()
                .flat_map(|w| &w.pairs)
                .filter(|x| x.waker == p.pid || x.wakee == p.pid)
                .map(value)
                .collect::<Result<_, _>>()?,
            thread_wakeups: s
                .wakeups
                .iter()
                .flat_map(|w| &w.threads)
                .filter(|x| x.pid == p.pid)
                .map(value)
                .collect::<Result<_, _>>()?,
        };
        Ok((value(&out)?, summary))
    }

    /// Snapshots from the next one on until `seconds` of intervals are in (or the collector
    /// ended).
    fn window(&self, seconds: u64, what: &str) -> Result<Vec<Snapshot>, ErrorData> {
        if seconds == 0 || seconds > MAX_SECONDS {
            return Err(ErrorData::invalid_params(
                format!("{what}: seconds must be 1–{MAX_SECONDS}, not {seconds}"),
                None,
            ));
        }
        let start = self.live.lock().latest().map(|s| s.seq);
        let mut got: Vec<Snapshot> = Vec::new();
        let mut last = start;
        let want = seconds as f64;
        loop {
            let st = self.live.wait_past(last, Duration::from_secs(seconds + 30));
            let new: Vec<Snapshot> = st
                .history
                .iter()
                .filter(|s| last.is_none_or(|l| s.seq > l))
                .cloned()
                .collect();
            let ended = st.ended;
            drop(st);
            if new.is_empty() {
                if ended || !got.is_empty() {
                    break;
                }
                return Err(ErrorData::internal_error(
                    "no snapshot came: the collector stopped",
                    None,
                ));
            }
            last = new.last().map(|s| s.seq);
            got.extend(new);
            let covered: f64 = got.iter().map(|s| s.time.interval_secs()).sum();
            if covered >= want - 1e-3 || ended {
                break;
            }
        }
        Ok(got)
    }

    fn watch(&self, p: SecondsIn) -> Outcome {
        let snaps = self.window(p.seconds, "watch")?;
        let refs: Vec<&Snapshot> = snaps.iter().collect();
        let lines = self.live.lock().lines.iter().cloned().collect::<Vec<_>>();
        let lrefs: Vec<_> = lines.iter().collect();
        let w = summary::watch(&refs, &lrefs)
            .ok_or_else(|| ErrorData::internal_error("no snapshots", None))?;
        let m = &w.migrations_per_sec;
        let text = format!(
            "{:.0} s (#{}..=#{}): migrations/s smt {} llc {} xllc {} xnode {} ({}); busy {}; {} finding lines",
            w.seconds,
            w.first_seq,
            w.last_seq,
            m.smt,
            m.llc,
            m.cross_llc,
            m.cross_node,
            w.migrations_precision,
            w.llcs
                .iter()
                .map(|l| format!(
                    "llc{} {}",
                    l.llc,
                    l.busy.map_or("-".into(), |b| format!("{:.0}%", b * 100.0))
                ))
                .collect::<Vec<_>>()
                .join(" "),
            w.findings.len()
        );
        Ok((value(&w)?, text))
    }

    fn findings(&self) -> Outcome {
        let st = self.live.lock();
        let seq = st.latest().map(|s| s.seq);
        let findings: Vec<FindingBrief> = st
            .held
            .iter()
            .map(|f| {
                summary::brief(&crate::findings::advisor::FindingLine {
                    state: crate::findings::advisor::State::Fired,
                    seq: f.last_seq,
                    finding: f.clone(),
                })
            })
            .collect();
        let text = if findings.is_empty() {
            "no findings: no seed situation in the last 5 s".to_string()
        } else {
            st.held
                .iter()
                .map(|f| format!("{} {}", f.severity_tag(), f.headline()))
                .collect::<Vec<_>>()
                .join("\n")
        };
        Ok((value(&FindingsOut { seq, findings })?, text))
    }

    fn record(&self, p: SecondsIn) -> Outcome {
        let path = self
            .store
            .new_file("record", "jsonl.gz")
            .map_err(|e| ErrorData::internal_error(format!("record: {e}"), None))?;
        let snaps = self.window(p.seconds, "record")?;
        let (first, last) = match (snaps.first(), snaps.last()) {
            (Some(a), Some(b)) => (a.seq, b.seq),
            _ => return Err(ErrorData::internal_error("no snapshots", None)),
        };
        let st = self.live.lock();
        let lines: Vec<_> = st
            .lines
            .iter()
            .filter(|l| (first..=last).contains(&l.seq))
            .cloned()
            .collect();
        let knobs = st.knobs.clone();
        drop(st);
        // Through the pipeline's recording sink: the lines every recording has (the
        // knob values after the first snapshot, the findings after the one judged).
        let write = || -> Result<(), crate::record::RecordError> {
            let header = crate::record::Header::new(
                (None, None),
                Duration::from_nanos(snaps[0].time.interval_ns),
                self.live.topo.clone(),
                snaps[0].sources.clone(),
            );
            let w = crate::record::Writer::create(&path, &header)?;
            let mut rec = crate::run::record::Recording::new(w, Some(knobs));
            for s in &snaps {
                let mut t = crate::run::pipeline::Tick::of(s.clone());
                t.lines = lines.iter().filter(|l| l.seq == s.seq).cloned().collect();
                rec.write_tick(&t)?;
            }
            rec.close(&[]).map(|_| ())
        };
        write().map_err(|e| ErrorData::internal_error(format!("{}: {e}", path.display()), None))?;
        let out = RecordOut {
            path: path.display().to_string(),
            snapshots: snaps.len(),
            first_seq: first,
            last_seq: last,
        };
        Ok((
            value(&out)?,
            format!("wrote {} snapshots to {}", snaps.len(), path.display()),
        ))
    }
}
