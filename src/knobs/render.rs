//! Text forms of the registry for `llctop knobs list` and `llctop knobs describe`; a
//! family not in effect now (the fair class's while a sched_ext scheduler runs) says so.

use std::fmt::Write as _;

use super::profile::Profile;
use super::registry::Registry;
use super::{Access, Family, Knob};
use crate::text::{Esc, escape};

fn value(k: &Knob) -> String {
    match &k.value {
        Some(v) => escape(v).into_owned(),
        None => "?".into(),
    }
}

/// The table of every knob, grouped by family. Read-only reasons are printed once per
/// family when all its knobs share one; values that differ from the default are marked `*`.
pub fn list(reg: &Registry) -> String {
    let mut out = String::new();
    let families = [
        Family::Feature,
        Family::Domain,
        Family::Numa,
        Family::LlcBalancing,
        Family::Tunable,
        Family::Scheduler,
    ];
    let w = reg.knobs.iter().map(|k| k.id.len()).max().unwrap_or(0);
    for fam in families {
        let ks: Vec<&Knob> = reg.knobs.iter().filter(|k| k.family == fam).collect();
        if ks.is_empty() {
            continue;
        }
        // Distinct reasons of the family, printed once and referred to as [n].
        let mut reasons: Vec<&str> = Vec::new();
        for k in &ks {
            for r in [
                access_reason(k),
                k.value
                    .is_none()
                    .then_some(k.value_reason.as_deref())
                    .flatten(),
            ]
            .into_iter()
            .flatten()
            {
                if !reasons.contains(&r) {
                    reasons.push(r);
                }
            }
        }
        let _ = writeln!(out, "{}", fam.label());
        if let Some(why) = ks.iter().find_map(|k| k.not_in_effect.as_deref()) {
            let _ = writeln!(out, "  ! {}", Esc(why));
        }
        let sources: Vec<&str> = ks
            .iter()
            .filter_map(|k| k.value_source.as_deref())
            .collect();
        if fam == Family::Feature && sources.len() == ks.len() {
            let _ = writeln!(out, "  values {}", sources[0]);
        }
        let idx = |r: &str| reasons.iter().position(|x| *x == r).map_or(0, |i| i + 1);
        for k in ks {
            let changed = match (&k.value, &k.default) {
                (Some(v), Some(d)) if v != d => "*",
                _ => " ",
            };
            let mut line = format!(
                "  {:<w$}  {:>8}{changed} {:<8}",
                Esc(&k.id),
                value(k),
                short_type(k)
            );
            match access_reason(k) {
                None => line.push_str(" rw"),
                Some(r) => line.push_str(&format!(" ro[{}]", idx(r))),
            }
            if k.value.is_none()
                && let Some(r) = &k.value_reason
                && access_reason(k) != Some(r.as_str())
            {
                line.push_str(&format!(" value unreadable[{}]", idx(r)));
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        for (i, r) in reasons.iter().enumerate() {
            let _ = writeln!(out, "    [{}] {}", i + 1, Esc(r));
        }
    }
    if !reg.missing.is_empty() {
        let _ = writeln!(out, "not available");
        for m in &reg.missing {
            let _ = writeln!(out, "  {}: {}", Esc(&m.what), Esc(&m.reason));
        }
    }
    let _ = writeln!(
        out,
        "(* differs from the kernel default; `llctop knobs describe ID` explains a knob)"
    );
    out
}

fn access_reason(k: &Knob) -> Option<&str> {
    match &k.access {
        Access::ReadOnly(r) => Some(r.as_str()),
        Access::Writable => None,
    }
}

fn short_type(k: &Knob) -> String {
    match &k.kind {
        super::KnobType::Feature { .. } => "feature".into(),
        super::KnobType::Bool => "bool".into(),
        super::KnobType::Int { .. } => "int".into(),
        super::KnobType::Bitmask { .. } => "bitmask".into(),
        super::KnobType::Enum { .. } => "enum".into(),
        super::KnobType::Scheduler { .. } => "scheduler".into(),
    }
}

/// Everything about one knob.
pub fn describe(k: &Knob) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}  ({})", Esc(&k.id), k.family.label());
    let _ = writeln!(out, "  path:    {}", Esc(&k.path.display().to_string()));
    let _ = writeln!(out, "  type:    {}", k.kind.summary());
    match (&k.value, &k.value_reason) {
        (Some(v), _) => {
            let _ = writeln!(out, "  value:   {}", Esc(v));
        }
        (None, Some(r)) => {
            let _ = writeln!(out, "  value:   unreadable: {}", Esc(r));
        }
        (None, None) => {
            let _ = writeln!(out, "  value:   unknown");
        }
    }
    if let Some(s) = &k.value_source {
        let _ = writeln!(out, "           ({})", Esc(s));
    }
    if let Some(d) = &k.default {
        let _ = writeln!(out, "  default: {d}");
    }
    match &k.access {
        Access::Writable => {
            let _ = writeln!(out, "  access:  writable");
        }
        Access::ReadOnly(r) => {
            let _ = writeln!(out, "  access:  read-only: {}", Esc(r));
        }
    }
    if let Some(why) = &k.not_in_effect {
        let _ = writeln!(out, "  effect:  {}", Esc(why));
    }
    let _ = writeln!(out, "  {}", k.description);
    if let Some(r) = &k.reference {
        let _ = writeln!(out, "  see: {r}");
    }
    if !k.notes.is_empty() {
        let _ = writeln!(out, "  values on this machine:");
        for n in &k.notes {
            let _ = writeln!(out, "    {:>9}  {}", n.value, n.meaning);
        }
    }
    if !k.aliases.is_empty() {
        let names: Vec<String> = k
            .aliases
            .iter()
            .map(|a| format!("{} = {}", a.meaning, a.value))
            .collect();
        let _ = writeln!(out, "  named values: {}", names.join(", "));
    }
    out
}

pub fn profiles(ps: &[Profile]) -> String {
    let mut out = String::new();
    for p in ps {
        let _ = writeln!(out, "{}  ({})", Esc(&p.name), Esc(&p.origin));
        let _ = writeln!(out, "  {}", Esc(&p.description));
        for (id, v) in &p.set {
            let _ = writeln!(out, "    set {} = {}", Esc(id), Esc(v));
        }
        for (id, v) in &p.optional {
            let _ = writeln!(out, "    set {} = {}  (where available)", Esc(id), Esc(v));
        }
        if let Some(r) = &p.reference {
            let _ = writeln!(out, "  see: {r}");
        }
    }
    out
}
