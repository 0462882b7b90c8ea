//! `llctop knobs …`: the subcommands over the knob session, and how a change is told to
//! the operator on a terminal (shared with `--set`/`--profile` runs).

use clap::Subcommand;

use super::{Session, profile, render, session};
use crate::text::Esc;

#[derive(Subcommand, Debug)]
pub enum KnobsCommand {
    /// Every knob of this kernel with its value and writability.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Print one knob's current value (`--json`: everything about it).
    Get {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// What a knob does, its values on this machine, and why it is read-only if it is.
    Describe { id: String },
    /// Change a knob. The original is journaled; `llctop knobs restore` puts it back.
    /// Kernel spellings are taken too: `TTWU_QUEUE off`, or the features file's own
    /// `NO_TTWU_QUEUE` / `TTWU_QUEUE` with no value; `kernel.numa_balancing 0`.
    Set { id: String, value: Option<String> },
    /// Put journaled originals back (all, or the given ids) — e.g. after a crash.
    Restore { ids: Vec<String> },
    /// The profiles available (shipped and $XDG_CONFIG_HOME/llctop/profiles).
    Profiles {
        #[arg(long)]
        json: bool,
    },
    /// Apply a profile as one step (journaled; `llctop knobs restore` reverts it).
    Apply { name: String },
}

fn fail(e: &dyn std::fmt::Display, code: u8) -> u8 {
    crate::say!("llctop: {}", Esc(&e.to_string()));
    code
}

fn print_json<T: serde::Serialize>(v: &T) -> u8 {
    match serde_json::to_string_pretty(v) {
        Ok(t) => {
            crate::outln!("{t}");
            0
        }
        Err(e) => fail(&e, 1),
    }
}

/// Run one `llctop knobs` command on `s` (a session that keeps its changes: the journal
/// remembers the originals). Prints results on stdout, errors on stderr; returns the exit
/// code (0 ok, 1 other error, 3 unknown knob, 4 invalid value, 5 not writable / read-only,
/// 6 the kernel refused or a read failed, 7 read-back mismatch, 8 journal error).
pub fn run(s: &mut Session, command: KnobsCommand) -> u8 {
    match command {
        KnobsCommand::List { json } => {
            if let Some(why) = s.read_domains() {
                s.registry_mut().missing.push(super::registry::Missing {
                    what: "sched domains".into(),
                    reason: format!("{why}; relax_domain_level levels estimated from topology"),
                });
            }
            if json {
                return print_json(s.registry());
            }
            crate::out!("{}", crate::text::guard(&render::list(s.registry())));
            0
        }
        KnobsCommand::Get { id, json } => {
            s.read_domains();
            let reg = s.registry_mut();
            let knob = match reg.resolve(&id) {
                Ok(k) => k.clone(),
                Err(e) => return fail(&e, 3),
            };
            if json {
                return print_json(&knob);
            }
            match reg.read_value(&knob) {
                Ok(v) => {
                    crate::outln!("{}", Esc(&v));
                    0
                }
                Err(e) => match &knob.value {
                    // The lockdown fallback knows the value without opening the file.
                    Some(v) if knob.value_source.is_some() => {
                        crate::outln!("{}", Esc(v));
                        0
                    }
                    _ => fail(&e, 6),
                },
            }
        }
        KnobsCommand::Describe { id } => {
            s.read_domains();
            match s.registry_mut().resolve(&id) {
                Ok(k) => {
                    crate::out!("{}", crate::text::guard(&render::describe(k)));
                    0
                }
                Err(e) => fail(&e, 3),
            }
        }
        KnobsCommand::Set { id, value } => {
            s.read_domains();
            let (id, value) = match value {
                Some(v) => (id, v),
                None => match s.registry().features_file_syntax(&id) {
                    Some((id, v)) => (id, v.to_string()),
                    None => {
                        return fail(
                            &format!(
                                "knobs set {id}: a value is needed (only sched features take the features file's NAME / NO_NAME without one){}",
                                s.registry()
                                    .kernel_spelling(&id)
                                    .map(|_| String::new())
                                    .unwrap_or_else(|| crate::suggest::did_you_mean(
                                        &id,
                                        s.registry().knobs.iter().map(|k| k.id.as_str())
                                    ))
                            ),
                            2,
                        );
                    }
                },
            };
            match s.set(&id, &value) {
                Ok(c) => {
                    print_change(s, &c);
                    0
                }
                Err(e) => fail(&e, e.exit_code()),
            }
        }
        KnobsCommand::Apply { name } => {
            let profile = match profile::find(&name, profile::user_dir().as_deref()) {
                Ok(p) => p,
                Err(e) => return fail(&e, 3),
            };
            s.read_domains();
            match apply_profile(s, &profile, &|l| {
                crate::outln!("{l}");
            }) {
                Ok(()) => 0,
                Err(e) => fail(&e, e.exit_code()),
            }
        }
        KnobsCommand::Restore { ids } => restore(s, &ids),
        KnobsCommand::Profiles { json } => {
            let (all, errors) = profile::load_all(profile::user_dir().as_deref());
            for e in &errors {
                crate::say!("llctop: {}", Esc(&e.to_string()));
            }
            if json {
                return print_json(&all).max(u8::from(!errors.is_empty()));
            }
            crate::out!("{}", crate::text::guard(&render::profiles(&all)));
            u8::from(!errors.is_empty())
        }
    }
}

fn restore(s: &mut Session, ids: &[String]) -> u8 {
    match s.restore_journal(ids) {
        Ok((ok, failed)) => {
            for e in s.take_events() {
                crate::outln!(
                    "{}: {} -> {} (restored)",
                    Esc(&e.id),
                    Esc(&e.old),
                    Esc(&e.new)
                );
            }
            // resctrl's groups and mount are undone, not set: no knob event.
            for id in ok
                .iter()
                .filter(|id| super::session::resctrl::is_resctrl_id(id))
            {
                let what = if id == super::session::resctrl::MOUNT_ID {
                    "unmounted"
                } else {
                    "removed"
                };
                crate::outln!("{}: {what} (restored)", Esc(id));
            }
            if ok.is_empty() && failed.is_empty() {
                crate::outln!(
                    "nothing to restore (journal {})",
                    Esc(&s.journal().path().display().to_string())
                );
            }
            let mut code = 0;
            for e in &failed {
                code = fail(e, e.exit_code());
            }
            code
        }
        Err(e) => fail(&e, e.exit_code()),
    }
}

/// What a change did, for the operator: the values, and whether it stays or is restored
/// on exit (escaped).
pub fn describe_change(s: &Session, c: &session::Change) -> String {
    let (id, old, new) = (Esc(&c.id), Esc(&c.old), Esc(&c.new));
    if c.old == c.new {
        format!("{id}: already {new}")
    } else if s.options().keep_changes {
        format!(
            "{id}: {old} -> {new} (read back; journaled in {}: `llctop knobs restore` puts back the original)",
            Esc(&s.journal().path().display().to_string())
        )
    } else {
        format!("{id}: {old} -> {new} (read back; restored on exit)")
    }
}

/// `llctop knobs`' output: what a change did, on stdout (the command's result).
pub fn print_change(s: &Session, c: &session::Change) {
    crate::outln!("{}", describe_change(s, c));
}

/// Apply a profile as one step, telling what was skipped and what changed (each line to
/// `tell`: stdout for `llctop knobs`, stderr for a run's `--profile`).
pub fn apply_profile(
    s: &mut Session,
    p: &profile::Profile,
    tell: &dyn Fn(&str),
) -> Result<(), session::KnobError> {
    let (plan, skipped) = p.plan(s.registry_mut());
    for sk in skipped {
        tell(&format!("{}: skipped {}", Esc(&p.name), Esc(&sk)));
    }
    for c in s.apply(&p.name, &plan)? {
        tell(&describe_change(s, &c));
    }
    Ok(())
}
