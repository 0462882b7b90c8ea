//! The `scheduler` knob's registry side: which schedulers can be chosen here — `eevdf`
//! (no BPF scheduler: the kernel's fair class) and each sched_ext scheduler binary found
//! on `PATH` (`scx_*`) or named in config.toml's `[schedulers]` with its arguments — and
//! the knob's value as the kernel says it (`/sys/kernel/sched_ext/state` and `root/ops`).
//! Starting and stopping one is the session's business (session/scheduler.rs).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Access, Family, Knob, KnobType, ValueNote};
use crate::kroot::KernelRoot;
use crate::kstate::sched_ext;
use crate::snapshot::{EEVDF, SchedExt, ops_matches_binary, ops_short_name};

/// The knob's id.
pub const ID: &str = "scheduler";

/// A scheduler llctop can start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Binary {
    /// The value that selects it: the binary's name (`scx_bpfland`) or the config's key.
    pub name: String,
    pub path: PathBuf,
    pub args: Vec<String>,
    /// `PATH` or `config.toml`.
    pub from: &'static str,
}

fn executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `scx_*` executables in the directories of `path_var` (the first of a name wins, as a
/// shell would run it), by name.
pub fn on_path(path_var: &str) -> Vec<Binary> {
    let mut found: BTreeMap<String, Binary> = BTreeMap::new();
    for dir in path_var.split(':').filter(|d| !d.is_empty()) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.len() > 4 && name.starts_with("scx_") && !found.contains_key(&name) {
                let path = e.path();
                if executable(&path) {
                    found.insert(
                        name.clone(),
                        Binary {
                            name,
                            path,
                            args: Vec::new(),
                            from: "PATH",
                        },
                    );
                }
            }
        }
    }
    found.into_values().collect()
}

/// The program a command names: a path as it is, a bare name looked up in `path_var`.
fn resolve(program: &str, path_var: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    path_var
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| executable(p))
}

/// config.toml's `[schedulers]`: name → `[program, args…]`. A name must not be `eevdf`;
/// the program is looked up in `path_var` when it has no `/`.
pub fn configured(
    table: &BTreeMap<String, Vec<String>>,
    path_var: &str,
) -> Result<Vec<Binary>, String> {
    let mut out = Vec::new();
    for (name, cmd) in table {
        if name == EEVDF || name.is_empty() || name.contains(['=', ',', ' ']) {
            return Err(format!(
                "[schedulers] {name:?}: not a name a scheduler may have (eevdf is the fair class; no '=', ',' or spaces)"
            ));
        }
        let Some((program, args)) = cmd.split_first() else {
            return Err(format!("[schedulers] {name}: empty command"));
        };
        let path = resolve(program, path_var)
            .ok_or_else(|| format!("[schedulers] {name}: {program} is not on PATH"))?;
        out.push(Binary {
            name: name.clone(),
            path,
            args: args.to_vec(),
            from: "config.toml",
        });
    }
    Ok(out)
}

/// The knob's value from what the kernel says: `eevdf` while no BPF scheduler is
/// enabled; while one is, the chosen name whose binary loads it — `started` (the one
/// llctop started) first — else `scx_NAME` after its ops name. A state in transition is
/// an error (read again).
pub fn value_of(s: &SchedExt, bins: &[Binary], started: Option<&str>) -> Result<String, String> {
    match s.state.as_str() {
        "disabled" => return Ok(EEVDF.into()),
        "enabled" => {}
        other => return Err(format!("sched_ext is {other} (in transition)")),
    }
    let ops = s.ops.as_deref().unwrap_or("");
    let matches = |b: &&Binary| ops_matches_binary(ops, &b.path.to_string_lossy());
    if let Some(b) = started
        .and_then(|n| bins.iter().find(|b| b.name == n))
        .filter(matches)
    {
        return Ok(b.name.clone());
    }
    if let Some(b) = bins.iter().find(matches) {
        return Ok(b.name.clone());
    }
    Ok(format!("scx_{}", ops_short_name(ops)))
}

/// The current value read from the kernel.
pub fn read(root: &KernelRoot, bins: &[Binary], started: Option<&str>) -> Result<String, String> {
    match sched_ext::read(root) {
        Ok(Some(s)) => value_of(&s, bins, started),
        Ok(None) => Err(sched_ext::ABSENT.into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Why this process may not start a BPF scheduler, if so.
fn access() -> Access {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        Access::Writable
    } else {
        Access::ReadOnly(
            "loading a BPF scheduler needs root (CAP_SYS_ADMIN and CAP_BPF for the scheduler llctop starts)"
                .into(),
        )
    }
}

/// The knob, on a kernel with sched_ext; `None` without.
pub fn knob(root: &KernelRoot, bins: &[Binary], started: Option<&str>) -> Option<Knob> {
    if !root.exists(sched_ext::STATE) {
        return None;
    }
    let (value, value_reason) = match read(root, bins, started) {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e)),
    };
    let mut choices = vec![EEVDF.to_string()];
    choices.extend(bins.iter().map(|b| b.name.clone()));
    let mut notes = vec![ValueNote {
        value: EEVDF.into(),
        meaning: "no BPF scheduler: the kernel's fair class (EEVDF) schedules every task".into(),
    }];
    notes.extend(bins.iter().map(|b| ValueNote {
        value: b.name.clone(),
        meaning: format!(
            "start {}{} (from {}) as llctop's child; stopped with SIGINT when set back",
            b.path.display(),
            b.args.iter().map(|a| format!(" {a}")).collect::<String>(),
            b.from
        ),
    }));
    Some(Knob {
        id: ID.into(),
        family: Family::Scheduler,
        path: PathBuf::from(sched_ext::STATE),
        kind: KnobType::Scheduler { choices },
        value,
        value_source: None,
        value_reason,
        default: Some(EEVDF.into()),
        access: access(),
        description: "Which scheduler is in charge: the kernel's fair class (eevdf) or a sched_ext BPF scheduler (scx_lavd, scx_bpfland, …; several are built for LLC locality). llctop starts the chosen one as its child, waits until /sys/kernel/sched_ext/state says enabled and root/ops names it, and stops it (SIGINT, then SIGTERM) when set back — never one it did not start. While one runs for every task, the fair-class knobs do not steer those tasks.".into(),
        reference: Some("Documentation/scheduler/sched-ext.rst; https://github.com/sched-ext/scx".into()),
        notes,
        aliases: Vec::new(),
        not_in_effect: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(name: &str) -> Binary {
        Binary {
            name: name.into(),
            path: PathBuf::from(format!("/usr/bin/{name}")),
            args: Vec::new(),
            from: "PATH",
        }
    }

    fn enabled(ops: &str) -> SchedExt {
        SchedExt {
            state: "enabled".into(),
            ops: Some(ops.into()),
            switch_all: Some(true),
            ..Default::default()
        }
    }

    #[test]
    fn the_value_names_the_binary_that_loads_the_ops() {
        let bins = [bin("scx_bpfland"), bin("scx_lavd")];
        let off = SchedExt {
            state: "disabled".into(),
            ..Default::default()
        };
        assert_eq!(value_of(&off, &bins, None).unwrap(), "eevdf");
        assert_eq!(
            value_of(&enabled("lavd_1.1.4_x86_64"), &bins, None).unwrap(),
            "scx_lavd"
        );
        // One nobody listed: named after its ops.
        assert_eq!(
            value_of(&enabled("rusty_1.0.0_x"), &bins, None).unwrap(),
            "scx_rusty"
        );
        // A configured variant llctop started wins over the plain binary.
        let mut lowlat = bin("lowlat");
        lowlat.path = PathBuf::from("/usr/bin/scx_bpfland");
        let bins = [bin("scx_bpfland"), lowlat];
        let on = enabled("bpfland_1.1.4");
        assert_eq!(value_of(&on, &bins, Some("lowlat")).unwrap(), "lowlat");
        assert_eq!(value_of(&on, &bins, None).unwrap(), "scx_bpfland");
        let moving = SchedExt {
            state: "enabling".into(),
            ..Default::default()
        };
        assert!(
            value_of(&moving, &bins, None)
                .unwrap_err()
                .contains("enabling")
        );
    }

    #[test]
    fn path_and_config_find_schedulers() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        for (dir, name, mode) in [
            (&a, "scx_bpfland", 0o755),
            (&b, "scx_bpfland", 0o755),
            (&b, "scx_lavd", 0o755),
            (&b, "scx_notes.txt", 0o644),
            (&b, "bpftool", 0o755),
        ] {
            let p = dir.join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let path_var = format!("{}:{}", a.display(), b.display());
        let found = on_path(&path_var);
        let names: Vec<_> = found.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["scx_bpfland", "scx_lavd"]);
        assert_eq!(found[0].path, a.join("scx_bpfland"));
        let mut table = BTreeMap::new();
        table.insert(
            "lowlat".to_string(),
            vec!["scx_bpfland".to_string(), "-m".into(), "performance".into()],
        );
        let c = configured(&table, &path_var).unwrap();
        assert_eq!(
            (c[0].path.clone(), c[0].args.len()),
            (a.join("scx_bpfland"), 2)
        );
        table.insert("eevdf".into(), vec!["x".into()]);
        assert!(configured(&table, &path_var).is_err());
        let mut bad = BTreeMap::new();
        bad.insert("x".to_string(), vec!["scx_nowhere".to_string()]);
        assert!(
            configured(&bad, &path_var)
                .unwrap_err()
                .contains("not on PATH")
        );
    }
}
