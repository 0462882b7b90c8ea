//! Which scheduler is in charge: the sched_ext state of the interval (procfs source,
//! `/sys/kernel/sched_ext`), and the names llctop gives it.

use serde::{Deserialize, Serialize};

/// The name llctop gives the kernel's own fair scheduler (no BPF scheduler loaded).
pub const EEVDF: &str = "eevdf";

/// sched_ext's state (/sys/kernel/sched_ext/state), as the kernel spells it in
/// `scx_enable_state_str[]`; a word this version does not know is kept as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ScxState {
    Enabled,
    #[default]
    Disabled,
    Enabling,
    Disabling,
    Prepping,
    Other(String),
}

impl ScxState {
    pub fn as_str(&self) -> &str {
        match self {
            ScxState::Enabled => "enabled",
            ScxState::Disabled => "disabled",
            ScxState::Enabling => "enabling",
            ScxState::Disabling => "disabling",
            ScxState::Prepping => "prepping",
            ScxState::Other(s) => s,
        }
    }
}

impl From<&str> for ScxState {
    fn from(s: &str) -> ScxState {
        match s {
            "enabled" => ScxState::Enabled,
            "disabled" => ScxState::Disabled,
            "enabling" => ScxState::Enabling,
            "disabling" => ScxState::Disabling,
            "prepping" => ScxState::Prepping,
            x => ScxState::Other(x.to_string()),
        }
    }
}

impl From<String> for ScxState {
    fn from(s: String) -> ScxState {
        ScxState::from(s.as_str())
    }
}

impl From<ScxState> for String {
    fn from(s: ScxState) -> String {
        s.as_str().to_string()
    }
}

impl std::fmt::Display for ScxState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `/sys/kernel/sched_ext` at the end of the interval. `None` in the snapshot on kernels
/// without sched_ext (the source status says why).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedExt {
    /// `state`: the kernel's word for where sched_ext is.
    pub state: ScxState,
    /// `root/ops`: the running BPF scheduler's ops name (e.g.
    /// `bpfland_1.1.4_x86_64_unknown_linux_gnu`), while one is loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops: Option<String>,
    /// `switch_all`: the scheduler takes every fair task (1), or only SCHED_EXT ones (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_all: Option<bool>,
    /// `nr_rejected`: tasks the scheduler refused to take (kernel's count since enable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr_rejected: Option<u64>,
    /// `enable_seq`: BPF schedulers enabled since boot; a change means a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_seq: Option<u64>,
    /// When llctop first saw this scheduler enabled (wall clock, ns since the epoch); with
    /// `since_before_run` it was already running when the run began, so it is a bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_unix_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub since_before_run: bool,
}

impl SchedExt {
    /// A BPF scheduler is loaded and running.
    pub fn enabled(&self) -> bool {
        self.state == ScxState::Enabled
    }

    /// A BPF scheduler schedules the fair-class tasks (every one of them: `switch_all`),
    /// so the fair class's knobs do not steer them.
    pub fn runs_fair_tasks(&self) -> bool {
        self.enabled() && self.switch_all != Some(false)
    }

    /// The scheduler's short name: the ops name up to its version (`bpfland_1.1.4_x86…` →
    /// `bpfland`); `eevdf` when none is loaded.
    pub fn short_name(&self) -> &str {
        match (&self.ops, self.enabled()) {
            (Some(ops), true) => ops_short_name(ops),
            _ => EEVDF,
        }
    }

    /// One line for a header or a report: `eevdf`, `scx bpfland (all tasks)`,
    /// `scx lavd (SCHED_EXT tasks only)`, `sched_ext enabling`.
    pub fn describe(&self) -> String {
        if self.enabled() {
            let scope = match self.switch_all {
                Some(true) => " (all tasks)",
                Some(false) => " (SCHED_EXT tasks only)",
                None => "",
            };
            format!("scx {}{scope}", self.short_name())
        } else if self.state == ScxState::Disabled {
            EEVDF.to_string()
        } else {
            format!("sched_ext {}", self.state)
        }
    }
}

/// The ops name without its version suffix: scx schedulers name their ops
/// `NAME_VERSION_TARGET`; the name ends before the first `_` followed by a digit.
pub fn ops_short_name(ops: &str) -> &str {
    let b = ops.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' && b.get(i + 1).is_some_and(u8::is_ascii_digit) && i > 0 {
            return &ops[..i];
        }
    }
    ops
}

/// The scheduler a binary loads, by the scx convention: `scx_NAME` loads ops `NAME…`.
/// Does `ops` name the scheduler of binary `bin`?
pub fn ops_matches_binary(ops: &str, bin: &str) -> bool {
    let base = bin.rsplit('/').next().unwrap_or(bin);
    let want = base.strip_prefix("scx_").unwrap_or(base);
    ops_short_name(ops) == want || ops == want
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(ops: &str, all: Option<bool>) -> SchedExt {
        SchedExt {
            state: "enabled".into(),
            ops: Some(ops.into()),
            switch_all: all,
            ..Default::default()
        }
    }

    #[test]
    fn short_names_drop_the_version() {
        assert_eq!(
            ops_short_name("bpfland_1.1.4_x86_64_unknown_linux_gnu"),
            "bpfland"
        );
        assert_eq!(
            ops_short_name("lavd_1.1.4_x86_64_unknown_linux_gnu"),
            "lavd"
        );
        assert_eq!(ops_short_name("simple"), "simple");
        assert_eq!(ops_short_name("rusty_v2"), "rusty_v2");
        assert_eq!(ops_short_name("_1"), "_1");
    }

    #[test]
    fn a_binary_matches_its_ops() {
        assert!(ops_matches_binary("bpfland_1.1.4_x86_64", "scx_bpfland"));
        assert!(ops_matches_binary(
            "bpfland_1.1.4_x86_64",
            "/usr/bin/scx_bpfland"
        ));
        assert!(ops_matches_binary("simple", "scx_simple"));
        assert!(!ops_matches_binary("lavd_1.1.4", "scx_bpfland"));
        assert!(!ops_matches_binary("bpfland_x", "scx_bpf"));
    }

    #[test]
    fn who_is_in_charge() {
        let off = SchedExt {
            state: "disabled".into(),
            ..Default::default()
        };
        assert_eq!(
            (off.describe().as_str(), off.short_name()),
            ("eevdf", "eevdf")
        );
        assert!(!off.runs_fair_tasks());
        let all = running("bpfland_1.1.4_x86_64_unknown_linux_gnu", Some(true));
        assert_eq!(all.describe(), "scx bpfland (all tasks)");
        assert!(all.runs_fair_tasks());
        let partial = running("lavd_1.1.4", Some(false));
        assert_eq!(partial.describe(), "scx lavd (SCHED_EXT tasks only)");
        assert!(!partial.runs_fair_tasks());
        let enabling = SchedExt {
            state: "enabling".into(),
            ..Default::default()
        };
        assert_eq!(enabling.describe(), "sched_ext enabling");
        assert_eq!(enabling.short_name(), "eevdf");
    }
}
