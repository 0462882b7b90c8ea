//! Children that never outlive llctop: every program llctop starts — `trace -- CMD`'s and
//! `ab`'s commands, the TUI's and MCP's `llctop` helpers, a sched_ext scheduler — is started
//! by [`spawn`], which gives it
//! - its own process group, so that a stop reaches everything it started and the
//!   terminal's Ctrl-C reaches llctop alone, which stops it in order;
//! - a parent-death signal (`PR_SET_PDEATHSIG`): if llctop dies however it dies (SIGKILL
//!   included), the child is told — SIGKILL for a workload, SIGTERM for an `llctop` helper
//!   so that it restores its knob first; a child whose parent died before the signal was
//!   set exits at once;
//! - the stop signals at their defaults (a shell starting llctop in the background ignores
//!   SIGINT for it, and an ignored signal stays ignored across exec);
//! - optionally another user ([`RunAs`]): groups, gid, then uid, before exec — an MCP
//!   client's allow-listed command never runs as root.
//!
//! [`stop`] ends one: SIGTERM to its group, then SIGKILL after a stated grace — at once on a
//! second stop signal (a second Ctrl-C) — and what is left of the group is killed after
//! the leader ends. Callers restore knobs and detach BPF *before* waiting, so a child that
//! ignores SIGTERM cannot hold the kernel changed.
//!
//! The parent-death signal follows the *thread* that forked: children are started from
//! threads that live as long as the child is wanted (the main thread, a runtime worker).

use std::ffi::CString;
use std::io;
use std::os::unix::process::CommandExt as _;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long a child is given to end after SIGTERM before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(20);

/// Which signal a child gets when llctop dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnParentDeath {
    /// A workload: killed.
    Kill,
    /// An `llctop` helper or a scheduler: asked to stop (it restores what it changed).
    Term,
    /// Nothing: a scheduler kept on purpose past llctop's end (`--keep-changes`, a
    /// one-shot `llctop knobs set`), journaled for `llctop knobs restore`.
    Keep,
}

/// A user to run a child as (never root: [`RunAs::lookup`] refuses uid 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    pub home: String,
}

impl RunAs {
    /// The user `name` from the password database, with its supplementary groups.
    pub fn lookup(name: &str) -> Result<RunAs, String> {
        let c = CString::new(name).map_err(|_| format!("user {name:?}: not a user name"))?;
        let mut buf = vec![0u8; 16384];
        // SAFETY: passwd is plain data that getpwnam_r fills, pointing into buf.
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut res: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: valid pointers to a passwd, a buffer of the length given and a result.
        let rc = unsafe {
            libc::getpwnam_r(
                c.as_ptr(),
                &mut pw,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut res,
            )
        };
        if rc != 0 || res.is_null() {
            return Err(format!("user {name:?}: no such user"));
        }
        if pw.pw_uid == 0 {
            return Err(format!(
                "user {name:?} is root: commands are never run as root (name an unprivileged user)"
            ));
        }
        // SAFETY: pw_dir points into buf, NUL-terminated by getpwnam_r.
        let home = unsafe { std::ffi::CStr::from_ptr(pw.pw_dir) }
            .to_string_lossy()
            .into_owned();
        let mut groups = vec![0 as libc::gid_t; 256];
        let mut n = groups.len() as libc::c_int;
        // SAFETY: a valid name, and a buffer of n gids.
        let rc = unsafe { libc::getgrouplist(c.as_ptr(), pw.pw_gid, groups.as_mut_ptr(), &mut n) };
        groups.truncate(if rc < 0 { 0 } else { n.max(0) as usize });
        groups.retain(|&g| g != 0 || pw.pw_gid == 0);
        Ok(RunAs {
            name: name.to_string(),
            uid: pw.pw_uid,
            gid: pw.pw_gid,
            groups,
            home,
        })
    }
}

/// Make `cmd` a child that cannot outlive llctop (see the module doc), as `user` if given.
/// Spawn it with the usual `Command::spawn`.
pub fn prepare(cmd: &mut Command, on_death: OnParentDeath, user: Option<&RunAs>) {
    cmd.process_group(0);
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let sig = match on_death {
        OnParentDeath::Kill => libc::SIGKILL,
        OnParentDeath::Term => libc::SIGTERM,
        OnParentDeath::Keep => 0,
    };
    let user = user.cloned();
    if let Some(u) = &user {
        cmd.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &u.home)
            .env("USER", &u.name)
            .env("LOGNAME", &u.name)
            .current_dir("/");
    }
    // SAFETY: between fork and exec only async-signal-safe calls run (prctl, getppid,
    // signal, setgroups, setgid, setuid, _exit), on the child's own state; nothing
    // allocates (the groups were collected before the fork).
    unsafe {
        cmd.pre_exec(move || {
            if sig != 0 && libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent died before the signal was set: nobody will stop this child.
            if sig != 0 && libc::getppid() != parent {
                libc::_exit(1);
            }
            for s in [
                libc::SIGINT,
                libc::SIGTERM,
                libc::SIGQUIT,
                libc::SIGHUP,
                libc::SIGPIPE,
            ] {
                libc::signal(s, libc::SIG_DFL);
            }
            if let Some(u) = &user {
                if libc::setgroups(u.groups.len(), u.groups.as_ptr()) != 0
                    || libc::setgid(u.gid) != 0
                    || libc::setuid(u.uid) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                // setuid(2) from root drops every capability; the death signal is reset
                // by a change of credentials: set it again.
                if sig != 0
                    && libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                if sig != 0 && libc::getppid() != parent {
                    libc::_exit(1);
                }
            }
            Ok(())
        });
    }
}

/// Send `sig` to the process group `pgid` (a child's pid, from [`prepare`]).
pub fn signal_group(pgid: u32, sig: i32) {
    if let Ok(p) = i32::try_from(pgid)
        && p > 1
    {
        // SAFETY: kill(2) of a process group llctop made; never 0, 1 or -1.
        unsafe { libc::kill(-p, sig) };
    }
}

/// Whether a living process of group `pgid` is left (zombies not counted: an orphan's
/// is reaped by init when init gets to it).
pub fn group_alive(pgid: u32) -> bool {
    match i32::try_from(pgid) {
        // SAFETY: signal 0 sends nothing; it tells whether the group exists.
        Ok(p) if p > 1 => (unsafe { libc::kill(-p, 0) }) == 0 && !group_members(pgid).is_empty(),
        _ => false,
    }
}

/// The living processes of group `pgid` (zombies left out): (pid, start time in clock
/// ticks since boot), from /proc.
pub fn group_members(pgid: u32) -> Vec<(u32, u64)> {
    use procfs_core::FromRead as _;
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| {
            let st = procfs_core::process::Stat::from_file(format!("/proc/{p}/stat")).ok()?;
            (u32::try_from(st.pgrp) == Ok(pgid) && st.state != 'Z' && st.state != 'X')
                .then_some((p, st.starttime))
        })
        .collect()
}

/// How a stop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It had ended already, or ended on SIGTERM within the grace.
    Ended,
    /// It had to be killed (after the grace, or at a second stop signal).
    Killed,
}

/// Stop the child whose group is `pgid`: SIGTERM to the group; `ended()` is polled until
/// it says the leader has ended — SIGKILL after `grace`, or at once when a further stop
/// signal arrives (a second Ctrl-C); then whatever is left of the group is killed. Waits
/// at most `grace` + 2 s.
pub fn stop(pgid: u32, grace: Duration, mut ended: impl FnMut() -> bool) -> Stopped {
    if ended() {
        if group_alive(pgid) {
            signal_group(pgid, libc::SIGKILL);
        }
        return Stopped::Ended;
    }
    let signals = crate::signals::count();
    signal_group(pgid, libc::SIGTERM);
    let t0 = Instant::now();
    let mut how = Stopped::Ended;
    while !ended() {
        if how == Stopped::Ended && (t0.elapsed() >= grace || crate::signals::count() > signals) {
            signal_group(pgid, libc::SIGKILL);
            how = Stopped::Killed;
        }
        if t0.elapsed() >= grace + Duration::from_secs(2) {
            break;
        }
        std::thread::sleep(POLL);
    }
    // The leader is gone; what it started in its group goes too.
    if group_alive(pgid) {
        signal_group(pgid, libc::SIGKILL);
    }
    how
}

/// Whether `prog` names a program that can be run: a path to an executable file, or a
/// name found on PATH. Checked before a run opens its output or loads anything.
pub fn check_program(prog: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let esc = crate::text::escape(prog);
    if prog.is_empty() {
        return Err("an empty command".into());
    }
    if prog.contains('/') {
        return if runnable(std::path::Path::new(prog)) {
            Ok(())
        } else {
            Err(format!("{esc}: no such program (or not executable)"))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|d| runnable(&d.join(prog))) {
        Ok(())
    } else {
        Err(format!("{esc}: command not found on PATH"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_that_ignores_sigterm_is_killed_after_the_grace_with_its_group() {
        let mut cmd = Command::new("sh");
        // The shell and a grandchild both ignore SIGTERM.
        cmd.args(["-c", "trap '' TERM; sleep 600 & wait"]);
        prepare(&mut cmd, OnParentDeath::Kill, None);
        let mut child = cmd.spawn().unwrap();
        let pgid = child.id();
        std::thread::sleep(Duration::from_millis(200));
        let t0 = Instant::now();
        let how = stop(pgid, Duration::from_millis(300), || {
            matches!(child.try_wait(), Ok(Some(_)))
        });
        assert_eq!(how, Stopped::Killed);
        assert!(t0.elapsed() < Duration::from_secs(5));
        // The grandchild went with the group.
        std::thread::sleep(Duration::from_millis(100));
        assert!(!group_alive(pgid), "a process of the group is left");
    }

    #[test]
    fn a_child_that_ends_on_sigterm_ends() {
        let mut cmd = Command::new("sleep");
        cmd.arg("600");
        prepare(&mut cmd, OnParentDeath::Kill, None);
        let mut child = cmd.spawn().unwrap();
        let pgid = child.id();
        let how = stop(pgid, Duration::from_secs(5), || {
            matches!(child.try_wait(), Ok(Some(_)))
        });
        assert_eq!(how, Stopped::Ended);
    }

    #[test]
    fn root_is_never_a_user_to_run_as() {
        assert!(
            RunAs::lookup("root")
                .unwrap_err()
                .contains("never run as root")
        );
        assert!(RunAs::lookup("no-such-user-llctop").is_err());
        assert!(RunAs::lookup("a\0b").is_err());
        if let Ok(n) = RunAs::lookup("nobody") {
            assert_ne!(n.uid, 0);
        }
    }

    #[test]
    fn programs_are_checked_before_a_run() {
        assert!(check_program("sh").is_ok());
        assert!(check_program("/bin/sh").is_ok());
        assert!(check_program("no-such-program-llctop").is_err());
        assert!(check_program("/etc/passwd").is_err());
        assert!(check_program("").is_err());
    }
}
