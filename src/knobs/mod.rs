//! Kernel policy knobs: what exists on this kernel ([`registry`]), what each knob means
//! ([`catalog`]), and the one code path that writes to the kernel ([`session`]), with its
//! crash journal ([`journal`]) and named bundles of settings ([`profile`]).
//!
//! This module owns the knob model: [`Knob`] (id, kernel path, type, current value,
//! writability with the reason, description) and [`KnobType`], which validates an
//! operator's value and translates between the canonical value llctop shows and the bytes
//! the kernel file takes. Canonical values are strings: `on`/`off` for sched features,
//! `0`/`1` for booleans, decimal integers for integers and bitmasks, the kernel's own word
//! for enums.

pub mod access;
pub mod catalog;
pub mod cgroup;
pub mod cli;
pub mod domains;
pub mod features;
pub mod journal;
pub mod owner;
pub mod profile;
pub mod registry;
pub mod render;
pub mod scheduler;
pub mod session;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use registry::Registry;
pub use session::Session;

/// Which group a knob belongs to (the order the list and the TUI show them in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// `/sys/kernel/debug/sched/features`.
    Feature,
    /// relax_domain_level and the sched-domain debug switch.
    Domain,
    /// NUMA balancing, system-wide and per cgroup.
    Numa,
    /// Cache-aware scheduling (v7.2+ `llc_balancing/`).
    LlcBalancing,
    /// Other balance tunables.
    Tunable,
    /// Which scheduler is in charge: the fair class or a sched_ext BPF scheduler.
    Scheduler,
}

impl Family {
    pub fn label(self) -> &'static str {
        match self {
            Family::Feature => "sched features",
            Family::Domain => "sched domains",
            Family::Numa => "NUMA balancing",
            Family::LlcBalancing => "cache-aware scheduling",
            Family::Tunable => "balance tunables",
            Family::Scheduler => "scheduler (sched_ext)",
        }
    }

    /// Knobs of the fair class (CFS/EEVDF and its load balancer): they do not steer the
    /// tasks a sched_ext scheduler schedules. NUMA balancing is partly so (its page
    /// migration goes on; its task placement is the fair class's).
    pub fn fair_class(self) -> Option<&'static str> {
        match self {
            Family::Feature | Family::Domain | Family::LlcBalancing | Family::Tunable => {
                Some("not in effect")
            }
            Family::Numa => {
                Some("partly in effect (pages still migrate; task placement is the fair class's)")
            }
            Family::Scheduler => None,
        }
    }
}

/// One bit of a bitmask knob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bit {
    pub value: u64,
    pub name: String,
}

/// The type of a knob: what values are valid and how they are written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum KnobType {
    /// A sched feature: `on`/`off`, written as `NAME` / `NO_NAME` to the features file.
    Feature { name: String },
    /// `0`/`1` (the file may show `Y`/`N`).
    Bool,
    /// A decimal integer in `[min, max]`.
    Int { min: i64, max: i64 },
    /// A decimal value made of the listed bits (any combination).
    Bitmask { bits: Vec<Bit> },
    /// One of the listed words. `numbered` enums are written and shown as their index
    /// (e.g. `tunable_scaling`: 0 none, 1 log, 2 linear); otherwise as the word.
    Enum {
        choices: Vec<String>,
        numbered: bool,
    },
    /// The scheduler in charge: `eevdf` or a sched_ext scheduler's name; set by starting
    /// or stopping a process, not by writing a file (session/scheduler.rs).
    Scheduler { choices: Vec<String> },
}

/// Why a value was refused before anything was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl KnobType {
    /// Validate an operator's input and return the canonical value.
    pub fn parse_input(&self, input: &str) -> Result<String, Invalid> {
        let s = input.trim();
        match self {
            KnobType::Feature { name } => {
                if s == name {
                    return Ok("on".into());
                }
                if s.strip_prefix("NO_") == Some(name) {
                    return Ok("off".into());
                }
                parse_bool(s)
                    .map(|b| if b { "on" } else { "off" }.to_string())
                    .ok_or_else(|| Invalid(format!("{s:?}: expected on/off, {name} or NO_{name}")))
            }
            KnobType::Bool => parse_bool(s)
                .map(|b| if b { "1" } else { "0" }.to_string())
                .ok_or_else(|| Invalid(format!("{s:?}: expected 0/1 (or on/off, Y/N)"))),
            KnobType::Int { min, max } => {
                let v: i64 = s
                    .parse()
                    .map_err(|_| Invalid(format!("{s:?}: not an integer")))?;
                if v < *min || v > *max {
                    return Err(Invalid(format!("{v}: outside {min}..={max}")));
                }
                Ok(v.to_string())
            }
            KnobType::Bitmask { bits } => {
                let allowed = bits.iter().fold(0u64, |a, b| a | b.value);
                let v = s
                    .parse::<u64>()
                    .ok()
                    .or_else(|| bits_by_name(bits, s))
                    .ok_or_else(|| {
                        Invalid(format!(
                            "{s:?}: expected a number or bit names joined by + ({})",
                            bits.iter()
                                .map(|b| format!("{}={}", b.value, b.name))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })?;
                if v & !allowed != 0 {
                    return Err(Invalid(format!(
                        "{v}: has bits this kernel does not support (allowed mask {allowed})"
                    )));
                }
                Ok(v.to_string())
            }
            KnobType::Enum { choices, numbered } => {
                let idx = choices
                    .iter()
                    .position(|c| c == s)
                    .or_else(|| {
                        s.parse::<usize>()
                            .ok()
                            .filter(|&i| *numbered && i < choices.len())
                    })
                    .ok_or_else(|| {
                        Invalid(format!("{s:?}: expected one of {}", choices.join(", ")))
                    })?;
                Ok(if *numbered {
                    idx.to_string()
                } else {
                    choices[idx].clone()
                })
            }
            KnobType::Scheduler { choices } => {
                let long = format!("scx_{s}");
                choices
                    .iter()
                    .find(|c| *c == s || **c == long)
                    .cloned()
                    .ok_or_else(|| {
                        Invalid(format!(
                            "{s:?}: no such scheduler here (choices: {}; llctop finds scx_* on PATH and [schedulers] in config.toml){}",
                            choices.join(", "),
                            crate::suggest::did_you_mean(s, choices.iter().map(String::as_str))
                        ))
                    })
            }
        }
    }

    /// The bytes written to the kernel file for a canonical value.
    pub fn encode(&self, canonical: &str) -> String {
        match self {
            KnobType::Feature { name } if canonical == "on" => name.clone(),
            KnobType::Feature { name } => format!("NO_{name}"),
            _ => canonical.to_string(),
        }
    }

    /// The canonical value from a kernel file's content, `None` if the content is not a
    /// value of this type (or, for a feature, does not mention it).
    pub fn decode(&self, raw: &str) -> Option<String> {
        let s = raw.trim();
        match self {
            KnobType::Feature { name } => {
                features::state_in(raw, name).map(|on| if on { "on" } else { "off" }.to_string())
            }
            KnobType::Bool => parse_bool(s).map(|b| if b { "1" } else { "0" }.to_string()),
            KnobType::Int { .. } => s.parse::<i64>().ok().map(|v| v.to_string()),
            KnobType::Bitmask { .. } => s.parse::<u64>().ok().map(|v| v.to_string()),
            KnobType::Enum { choices, numbered } => {
                // `preempt`-style files list every choice and bracket the current one.
                let word = match (s.find('('), s.find(')')) {
                    (Some(a), Some(b)) if a < b => &s[a + 1..b],
                    _ => s.split_whitespace().next().unwrap_or(""),
                };
                let word = word.trim_matches(|c| c == '[' || c == ']');
                if *numbered {
                    let i: usize = word.parse().ok()?;
                    (i < choices.len()).then(|| i.to_string())
                } else {
                    choices.iter().any(|c| c == word).then(|| word.to_string())
                }
            }
            // Read from two files (knobs::scheduler::read), never decoded from one.
            KnobType::Scheduler { .. } => None,
        }
    }

    /// The value the one-key toggle moves to: the other boolean / feature state, the next
    /// enum choice; `None` for integers and bitmasks (they are edited).
    pub fn toggled(&self, current: &str) -> Option<String> {
        match self {
            KnobType::Feature { .. } => Some(if current == "on" { "off" } else { "on" }.into()),
            KnobType::Bool => Some(if current == "1" { "0" } else { "1" }.into()),
            KnobType::Enum { choices, numbered } => {
                let i = if *numbered {
                    current.parse::<usize>().ok()?
                } else {
                    choices.iter().position(|c| c == current)?
                };
                let next = (i + 1) % choices.len().max(1);
                Some(if *numbered {
                    next.to_string()
                } else {
                    choices.get(next)?.clone()
                })
            }
            KnobType::Scheduler { choices } => {
                let i = choices
                    .iter()
                    .position(|c| c == current)
                    .map_or(0, |i| i + 1);
                choices.get(i % choices.len().max(1)).cloned()
            }
            KnobType::Int { .. } | KnobType::Bitmask { .. } => None,
        }
    }

    /// Short human form: `bool`, `int -1..=5`, …
    pub fn summary(&self) -> String {
        match self {
            KnobType::Feature { .. } => "feature".into(),
            KnobType::Bool => "bool".into(),
            KnobType::Int { min, max } => format!("int {min}..={max}"),
            KnobType::Bitmask { bits } => format!(
                "bitmask {}",
                bits.iter()
                    .map(|b| format!("{}={}", b.value, b.name))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            KnobType::Enum { choices, .. } => format!("enum {}", choices.join("|")),
            KnobType::Scheduler { choices } => format!("scheduler {}", choices.join("|")),
        }
    }
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "y" | "yes" | "on" | "true" | "enable" | "enabled" => Some(true),
        "0" | "n" | "no" | "off" | "false" | "disable" | "disabled" => Some(false),
        _ => None,
    }
}

fn bits_by_name(bits: &[Bit], s: &str) -> Option<u64> {
    if s == "off" || s == "none" {
        return Some(0);
    }
    let mut v = 0;
    for part in s.split('+') {
        v |= bits.iter().find(|b| b.name == part.trim())?.value;
    }
    Some(v)
}

/// Whether llctop may write a knob, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "access", content = "reason")]
pub enum Access {
    Writable,
    ReadOnly(String),
}

impl Access {
    pub fn is_writable(&self) -> bool {
        matches!(self, Access::Writable)
    }
}

/// What one value of a knob means on this machine and kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueNote {
    pub value: String,
    pub meaning: String,
}

/// One knob as discovered on this kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knob {
    /// Stable id: `feature.NAME`, `relax_domain_level`, `numa_balancing`, … Knobs of a
    /// cgroup carry its path: `cgroup.numa_load_balance@/db`.
    pub id: String,
    pub family: Family,
    /// Kernel path (absolute, without the sysroot).
    pub path: PathBuf,
    #[serde(flatten)]
    pub kind: KnobType,
    /// Canonical current value; `None` when it cannot be read (`value_reason` says why).
    pub value: Option<String>,
    /// Where the value came from when not from `path` itself (e.g. the lockdown fallback).
    pub value_source: Option<String>,
    pub value_reason: Option<String>,
    /// The kernel's default, when known.
    pub default: Option<String>,
    #[serde(flatten)]
    pub access: Access,
    /// What it does and which problem it addresses.
    pub description: String,
    /// Upstream commit or LKML thread.
    pub reference: Option<String>,
    /// What values mean here (e.g. relax_domain_level levels with this machine's domains).
    #[serde(default)]
    pub notes: Vec<ValueNote>,
    /// Named values accepted as input (`llc` → the level that keeps balancing in the LLC).
    #[serde(default)]
    pub aliases: Vec<ValueNote>,
    /// Why the knob does not steer (all) the tasks now: a fair-class knob while a
    /// sched_ext scheduler schedules every task. `None`: in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_in_effect: Option<String>,
}

impl Knob {
    /// Validate input (aliases first) and return the canonical value.
    pub fn parse_input(&self, input: &str) -> Result<String, Invalid> {
        let s = input.trim();
        if let Some(a) = self.aliases.iter().find(|a| a.meaning == s) {
            return self.kind.parse_input(&a.value);
        }
        self.kind.parse_input(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_parse_encode_decode() {
        let t = KnobType::Feature {
            name: "TTWU_QUEUE".into(),
        };
        assert_eq!(t.parse_input("off").unwrap(), "off");
        assert_eq!(t.parse_input("NO_TTWU_QUEUE").unwrap(), "off");
        assert_eq!(t.parse_input("TTWU_QUEUE").unwrap(), "on");
        assert!(t.parse_input("NO_TTWU").is_err());
        assert_eq!(t.encode("off"), "NO_TTWU_QUEUE");
        assert_eq!(t.encode("on"), "TTWU_QUEUE");
        assert_eq!(
            t.decode("PLACE_LAG NO_TTWU_QUEUE WA_IDLE \n").as_deref(),
            Some("off")
        );
        assert_eq!(t.decode("PLACE_LAG TTWU_QUEUE_X\n"), None);
        assert_eq!(t.toggled("off").as_deref(), Some("on"));
    }

    #[test]
    fn ints_bitmasks_enums_bools() {
        let i = KnobType::Int { min: -1, max: 5 };
        assert_eq!(i.parse_input(" 3 ").unwrap(), "3");
        assert!(i.parse_input("6").unwrap_err().0.contains("outside -1..=5"));
        assert!(i.parse_input("x").is_err());
        assert_eq!(i.toggled("3"), None);

        let b = KnobType::Bitmask {
            bits: vec![
                Bit {
                    value: 1,
                    name: "normal".into(),
                },
                Bit {
                    value: 2,
                    name: "tiering".into(),
                },
            ],
        };
        assert_eq!(b.parse_input("3").unwrap(), "3");
        assert_eq!(b.parse_input("normal+tiering").unwrap(), "3");
        assert_eq!(b.parse_input("off").unwrap(), "0");
        assert!(b.parse_input("4").unwrap_err().0.contains("allowed mask 3"));

        let e = KnobType::Enum {
            choices: vec!["none".into(), "voluntary".into(), "full".into()],
            numbered: false,
        };
        assert_eq!(e.decode("none voluntary (full)\n").as_deref(), Some("full"));
        assert_eq!(e.parse_input("none").unwrap(), "none");
        assert!(e.parse_input("1").is_err());
        assert_eq!(e.toggled("full").as_deref(), Some("none"));
        let n = KnobType::Enum {
            choices: vec!["none".into(), "log".into(), "linear".into()],
            numbered: true,
        };
        assert_eq!(n.parse_input("linear").unwrap(), "2");
        assert_eq!(n.decode("1\n").as_deref(), Some("1"));
        assert_eq!(n.decode("3\n"), None);

        assert_eq!(KnobType::Bool.decode("Y\n").as_deref(), Some("1"));
        assert_eq!(KnobType::Bool.parse_input("off").unwrap(), "0");
        assert!(KnobType::Bool.parse_input("2").is_err());
    }
}
