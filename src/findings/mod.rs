//! Findings: the seeds' situations recognised in what llctop recorded. Each detector is a
//! pure function over a [`Window`] of snapshots (the newest last), so the TUI, a replay
//! and `llctop report` find the same things in the same data; [`advisor::Advisor`] runs
//! them over a stream of snapshots and gives each finding a life: it fires once, updates
//! while it holds and clears with hysteresis. A finding carries its evidence as
//! [`Fact`]s, each citing the snapshot field it was computed from ([`Cite`]), and the
//! knob or profile the seed proposes, as an A/B experiment to run — never a write.
//! Thresholds are named constants in each detector; docs/advisor.md says why each value.

pub mod advisor;
pub mod blind;
pub mod cache_aware;
pub mod cite;
pub mod conserve;
pub mod harm;
pub mod newidle;
pub mod numa;
pub mod pileup;
pub mod scatter;
pub mod scx;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::snapshot::{Snapshot, SourceState};
use crate::topology::Topology;

pub use cite::{Agg, Cite};

/// The trailing time a window covers (at least one snapshot).
pub const WINDOW_NS: u64 = 5_000_000_000;
/// How far before its window a detector may look: a pile-up's start began at most one
/// start gap before its first placement in the window; a scattered process is more than
/// info only once it has run through the window before this one too (scatter.rs).
pub const LOOK_BEHIND_NS: u64 = WINDOW_NS;
/// Snapshots a window holds even when they cover more than [`WINDOW_NS`] (long
/// intervals): an event and its sequel (a placement and the thread's first run) may fall in
/// consecutive snapshots, and a window must see both.
pub const MIN_WINDOW_SNAPSHOTS: usize = 3;
/// The shortest window the rate and state detectors judge (the start of a run): one
/// interval is a moment, not a state.
pub const MIN_JUDGED_NS: u64 = 2_000_000_000;

/// What was recognised; each comes from one seed (shared/seeds/).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Threads of a process placed on one CPU while allowed CPUs sat idle (seed 001).
    PileUp,
    /// Newidle balancing / cross-LLC migrations with short slices (seed 004).
    NewidleChurn,
    /// A process that fits one LLC runs spread over several (seed 000).
    Scattered,
    /// CPUs of an LLC idle while tasks wait on another CPU of it (seed 002).
    NotConserved,
    /// NUMA balancing moving memory, or memory used from the other node (seed 003).
    Numa,
    /// The 7.2 cache-aware scheduler: enabled but not active, a process gathered on a
    /// saturated preferred LLC while CPUs of other LLCs idle, or two processes that share
    /// memory on two LLCs, which it never groups (seed 000).
    CacheAware,
    /// Which of the above cannot be judged here, and why.
    BlindSpots,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::PileUp,
        Kind::NewidleChurn,
        Kind::Scattered,
        Kind::NotConserved,
        Kind::Numa,
        Kind::CacheAware,
        Kind::BlindSpots,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Kind::PileUp => "placement pile-up",
            Kind::NewidleChurn => "newidle / cross-LLC churn",
            Kind::Scattered => "threads scattered over LLCs",
            Kind::NotConserved => "work not conserved in an LLC",
            Kind::Numa => "NUMA balancing / remote memory",
            Kind::CacheAware => "cache-aware scheduling",
            Kind::BlindSpots => "cannot be judged here",
        }
    }

    /// The seed thread it comes from (shared/seeds/NNN_*.txt).
    pub fn seed(self) -> Option<&'static str> {
        match self {
            Kind::Scattered => Some("000 cache-aware scheduling"),
            Kind::PileUp => Some("001 stream placement pile-up"),
            Kind::NotConserved => Some("002 shared runqueue"),
            Kind::Numa => Some("003 per-cgroup NUMA balancing"),
            Kind::CacheAware => Some("000 cache-aware scheduling"),
            Kind::NewidleChurn => Some("004 newidle migrations on small CCXs"),
            Kind::BlindSpots => None,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Kind::PileUp => "pile_up",
            Kind::NewidleChurn => "newidle_churn",
            Kind::Scattered => "scattered",
            Kind::NotConserved => "not_conserved",
            Kind::Numa => "numa",
            Kind::CacheAware => "cache_aware",
            Kind::BlindSpots => "blind_spots",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// About the machine or the data, or a seed's pattern whose measured cost is too small
    /// to act on (e.g. a pile-up the balancer ended within milliseconds).
    Info,
    /// A seed's situation whose measured cost reached its warning threshold (harm.rs).
    Warning,
    /// The same, its cost past the critical threshold (harm.rs, docs/advisor.md).
    Critical,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// How a fact's number reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Nanoseconds (shown as s/ms).
    Ns,
    /// 0.0–1.0 (shown as %).
    Fraction,
    Count,
    PerSec,
    /// CPUs' worth of time (CPU-seconds per second).
    Cpus,
    /// Bytes (shown in binary units).
    Bytes,
    /// Bytes per second (shown in decimal units).
    BytesPerSec,
}

/// Busy CPU-seconds of a snapshot: system busy × online CPUs × interval.
fn busy_cpu_secs(s: &Snapshot) -> f64 {
    let online = s.cpus.iter().filter(|c| c.online).count() as f64;
    s.system.busy.unwrap_or(0.0) * online * s.time.interval_secs()
}

/// One number of the evidence, with where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    pub label: String,
    pub value: f64,
    pub unit: Unit,
    /// The snapshot field it is computed from; `None`: derived from the cited facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cite: Option<Cite>,
}

impl Fact {
    pub fn derived(label: impl Into<String>, value: f64, unit: Unit) -> Fact {
        Fact {
            label: label.into(),
            value,
            unit,
            cite: None,
        }
    }

    /// `value`, the aggregate `agg` of `field` over the window, computed by the detector
    /// from the typed snapshots; the cite lets a check recompute it independently.
    pub fn cited(
        label: impl Into<String>,
        value: f64,
        unit: Unit,
        w: &Window,
        field: String,
        agg: Agg,
    ) -> Fact {
        Fact {
            label: label.into(),
            value,
            unit,
            cite: Some(Cite {
                field,
                agg,
                first_seq: w.first_seq(),
                last_seq: w.last_seq(),
            }),
        }
    }

    /// The value as shown: `1.23 s`, `45.0%`, `12.5/s`.
    pub fn shown(&self) -> String {
        let v = self.value;
        match self.unit {
            Unit::Ns if v >= 1e9 => format!("{:.2} s", v / 1e9),
            Unit::Ns if v >= 1e6 => format!("{:.1} ms", v / 1e6),
            Unit::Ns => format!("{:.0} µs", v / 1e3),
            Unit::Fraction => format!("{:.1}%", v * 100.0),
            Unit::Count => format!("{v:.0}"),
            Unit::PerSec => format!("{v:.1}/s"),
            Unit::Cpus => format!("{v:.2} CPUs"),
            Unit::Bytes => crate::units::bytes(v.max(0.0) as u64),
            Unit::BytesPerSec => crate::units::bytes_per_sec(v.max(0.0) as u64, 1.0),
        }
    }
}

/// What to try: the seed's knob or profile, as an A/B experiment (never applied by the
/// advisor). `knob`/`value` is what the TUI's A/B opens with (B: `value`, A: the value
/// now); `command` the same as an `llctop ab` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suggestion {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knob: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The `llctop ab` command line (or, with nothing to set, what to do instead).
    pub command: String,
    pub why: String,
}

impl Suggestion {
    /// Whether it is a command line to run (an experiment), not advice in words.
    pub fn is_command(&self) -> bool {
        self.knob.is_some() || self.profile.is_some() || self.command.starts_with("llctop ")
    }

    /// The word that leads it: `try` for a command, `what to do` for advice — one sentence
    /// either way, never "try: no knob …".
    pub fn lead(&self) -> &'static str {
        if self.is_command() {
            "try"
        } else {
            "what to do"
        }
    }
}

/// One recognised situation at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: Kind,
    /// What it is about, unique per kind: `pid 4242`, `llc1`, `system`.
    pub key: String,
    pub severity: Severity,
    /// Plain words with the numbers.
    pub summary: String,
    pub facts: Vec<Fact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub llcs: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<u32>,
    /// The snapshots of the evidence.
    pub first_seq: u64,
    pub last_seq: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<Suggestion>,
    /// What it cost, measured: the figure its severity comes from (harm.rs), said next to
    /// the severity. `None`: not measured (the severity is then info).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Fact>,
}

impl Finding {
    /// A finding of `kind` about `key` over window `w` (facts and the rest added after).
    pub fn new(kind: Kind, key: impl Into<String>, w: &Window, summary: String) -> Finding {
        Finding {
            kind,
            key: key.into(),
            severity: Severity::Warning,
            summary,
            facts: Vec::new(),
            cpus: Vec::new(),
            llcs: Vec::new(),
            pids: Vec::new(),
            first_seq: w.first_seq(),
            last_seq: w.last_seq(),
            suggestion: None,
            cost: None,
        }
    }

    pub fn id(&self) -> (Kind, String) {
        (self.kind, self.key.clone())
    }

    /// `kind key: summary`, one line.
    pub fn headline(&self) -> String {
        format!("{}: {}", self.kind.title(), self.summary)
    }

    /// The severity with the cost it comes from: `WARNING (0.27 CPUs)`; `INFO (cost not
    /// measured)` when there is none.
    pub fn severity_tag(&self) -> String {
        let sev = self.severity.label().to_uppercase();
        match &self.cost {
            Some(c) => format!("{sev} ({})", c.shown()),
            None if self.about_the_machine() => sev,
            None => format!("{sev} (cost not measured)"),
        }
    }

    /// A finding about the machine or the data, not a situation with a cost: the blind
    /// spots, cache-aware scheduling enabled but not active.
    pub fn about_the_machine(&self) -> bool {
        self.kind == Kind::BlindSpots
            || (self.kind == Kind::CacheAware && self.key == cache_aware::STATE_KEY)
    }

    /// What it cost, in words: `cost: 0.27 CPUs — wait the idle sibling could have
    /// spared, per second`.
    pub fn cost_line(&self) -> String {
        match &self.cost {
            Some(c) => format!("cost: {} — {}", c.shown(), c.label),
            None if self.about_the_machine() => "cost: none — a fact about the machine".into(),
            None => "cost: not measured".into(),
        }
    }
}

/// The snapshots a detector judges: the trailing [`WINDOW_NS`] of a run, newest last.
pub struct Window<'a> {
    pub snaps: &'a [Snapshot],
    /// The window preceded by up to [`LOOK_BEHIND_NS`] of the run's earlier snapshots (as
    /// far as they are kept): where a detector looks for what began before the window
    /// (a pile-up's start whose first placements fell before it).
    pub context: &'a [Snapshot],
    pub topo: &'a Topology,
    /// The window begins at the run's first snapshot (seq 0: nothing earlier was cut off).
    pub from_start: bool,
    /// Findings held now: their detectors judge them by the clear thresholds.
    pub held: &'a BTreeSet<(Kind, String)>,
}

/// Where the trailing window over `len` snapshots (oldest first, `interval(i)` the
/// interval of the `i`th) starts, and where its look-behind starts: the newest snapshots
/// covering [`WINDOW_NS`], at least [`MIN_WINDOW_SNAPSHOTS`], then [`LOOK_BEHIND_NS`]
/// before them. Only `behind_start..` is read (the TUI keeps just that much parsed).
pub fn trailing_bounds(len: usize, interval: impl Fn(usize) -> u64) -> (usize, usize) {
    let mut start = len;
    let mut ns = 0u64;
    while start > 0 {
        let iv = interval(start - 1);
        if len - start >= MIN_WINDOW_SNAPSHOTS && ns.saturating_add(iv) > WINDOW_NS {
            break;
        }
        ns = ns.saturating_add(iv);
        start -= 1;
    }
    let mut behind_start = start;
    let mut behind = 0u64;
    while behind_start > 0 && behind < LOOK_BEHIND_NS {
        behind_start -= 1;
        behind = behind.saturating_add(interval(behind_start));
    }
    (start, behind_start)
}

impl<'a> Window<'a> {
    /// The window ending at the last of `snaps` (all of a run so far, oldest first): the
    /// newest snapshots covering [`WINDOW_NS`], and at least [`MIN_WINDOW_SNAPSHOTS`].
    pub fn trailing(
        snaps: &'a [Snapshot],
        topo: &'a Topology,
        held: &'a BTreeSet<(Kind, String)>,
    ) -> Window<'a> {
        let (start, behind_start) = trailing_bounds(snaps.len(), |i| snaps[i].time.interval_ns);
        Window {
            snaps: &snaps[start..],
            context: &snaps[behind_start..],
            topo,
            from_start: snaps.get(start).is_none_or(|s| s.seq == 0),
            held,
        }
    }

    pub fn first_seq(&self) -> u64 {
        self.snaps.first().map_or(0, |s| s.seq)
    }

    pub fn last_seq(&self) -> u64 {
        self.snaps.last().map_or(0, |s| s.seq)
    }

    /// Seconds the window covers (the sum of its intervals).
    pub fn secs(&self) -> f64 {
        self.snaps.iter().map(|s| s.time.interval_secs()).sum()
    }

    /// CLOCK_MONOTONIC at the window's start (the start of its first interval).
    pub fn start_mono_ns(&self) -> u64 {
        self.snaps
            .first()
            .map_or(0, |s| s.time.mono_ns.saturating_sub(s.time.interval_ns))
    }

    pub fn holds(&self, kind: Kind, key: &str) -> bool {
        self.held.contains(&(kind, key.to_string()))
    }

    /// The reason of the newest snapshot's source `name` when it is not active.
    pub fn source_reason(&self, name: crate::snapshot::SourceName) -> Option<String> {
        let s = self.snaps.last()?.sources.iter().find(|s| s.is(name))?;
        (s.state != SourceState::Active).then(|| {
            s.reason
                .clone()
                .unwrap_or_else(|| format!("{name} not active"))
        })
    }
}

/// Fire threshold, or the clear threshold when the finding is held (hysteresis): a value
/// must cross `fire` to start a finding and fall back past `clear` to end it.
pub fn past(held: bool, value: f64, fire: f64, clear: f64, above: bool) -> bool {
    let t = if held { clear } else { fire };
    if above { value >= t } else { value <= t }
}

/// Every detector over one window.
pub fn detect(w: &Window) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(pileup::detect(w));
    if w.secs() * 1e9 >= MIN_JUDGED_NS as f64 {
        out.extend(newidle::detect(w));
        out.extend(scatter::detect(w));
        out.extend(conserve::detect(w));
        out.extend(numa::detect(w));
        out.extend(cache_aware::detect(w));
    }
    out.extend(blind::detect(w));
    scx::redirect(w, &mut out);
    // A situation whose measured cost is nothing harmed nothing: it is no finding (a
    // pile-up whose threads never waited beside the idle CPU, say). Not measured is not
    // nothing: those stay, at info.
    out.retain(|f| f.cost.as_ref().is_none_or(|c| c.value > 0.0));
    out
}

#[cfg(test)]
pub(crate) mod testing {
    //! Snapshot series for the detectors' tests.
    use crate::snapshot::{CpuStats, GroupStats, Snapshot, SnapshotTime, SystemStats};
    use crate::topology::Topology;

    /// A snapshot of `topo` at `seq` (1 s intervals): every CPU `busy`, no wait.
    pub fn snap(topo: &Topology, seq: u64, busy: f64) -> Snapshot {
        Snapshot {
            seq,
            time: SnapshotTime {
                unix_ns: 0,
                mono_ns: (seq + 1) * 1_000_000_000,
                interval_ns: 1_000_000_000,
                missed_ticks: 0,
            },
            system: SystemStats {
                busy: Some(busy),
                ctx_switches: Some(1000),
                ..Default::default()
            },
            cpus: topo
                .cpus
                .iter()
                .map(|c| CpuStats {
                    cpu: c.cpu,
                    online: true,
                    busy: Some(busy),
                    rq_wait_ns: Some(0),
                    ..Default::default()
                })
                .collect(),
            llcs: topo
                .llcs
                .iter()
                .map(|l| GroupStats {
                    id: l.id,
                    cpus: l.cpus.len() as u32,
                    busy: Some(busy),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    /// One detector over the trailing window of `snaps`, nothing held.
    pub fn judge(
        detect: fn(&super::Window) -> Vec<super::Finding>,
        topo: &Topology,
        snaps: &[Snapshot],
    ) -> Vec<super::Finding> {
        let held = std::collections::BTreeSet::new();
        detect(&super::Window::trailing(snaps, topo, &held))
    }

    /// Every fact's cited value equals its recomputation from the snapshot JSON.
    pub fn assert_cites(f: &super::Finding, snaps: &[Snapshot]) {
        for fact in &f.facts {
            if let Some(c) = &fact.cite {
                let v = c.resolve(snaps).unwrap_or_else(|| panic!("{c:?} resolves"));
                assert!(
                    (v - fact.value).abs() <= 1e-9 * v.abs().max(1.0),
                    "{}: {} vs cited {v}",
                    fact.label,
                    fact.value
                );
            }
        }
    }
}
