//! The `scheduler` knob on fixture trees that a fake sched_ext scheduler drives like a
//! kernel: the fake (a shell script, tests write it) writes `enabled` and its ops name
//! into the tree's /sys/kernel/sched_ext when it starts, `disabled` when SIGINT or SIGTERM
//! ends it, and plays the kernel's watchdog ejection on SIGUSR1. Checked: the knob starts
//! and stops it with the state read back; the journal names the process and `knobs
//! restore` stops it after a SIGKILLed llctop (and nothing else); a scheduler llctop did
//! not start is left alone; bad input (an unknown name, a binary that exits at once, one
//! that never attaches) ends with a clear error and nothing running; an ejection spoils
//! an experiment's window with the scheduler's own reason; fair-class knobs are marked
//! while one runs. Writing this knob needs root (it starts a process that loads BPF).

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{llctop, put, require_root, writable_root};
use llctop::knobs::journal::Journal;
use llctop::knobs::scheduler;
use llctop::knobs::session::{KnobError, Options};
use llctop::knobs::{Registry, Session};
use llctop::kroot::KernelRoot;

const SCX: &str = "sys/kernel/sched_ext";

/// A fake scheduler: `scx_fake DIR OPS [never|exit|fork|chatty|sticky]` — `fork` starts
/// the scheduler in the background and exits (the first process is not the one that
/// attaches), `chatty` logs without pause, `sticky` ends on a stop signal without
/// detaching (the kernel would still run it).
const FAKE: &str = r#"#!/bin/sh
d=$1
case "$3" in
  exit) echo "fake: refusing to load"; exit 3 ;;
  never) exec sleep 60 ;;
  fork) "$0" "$1" "$2" & exit 0 ;;
esac
if [ "$3" = sticky ]; then
  trap 'exit 0' INT TERM
else
  trap 'echo disabled > "$d/state"; rm -f "$d/root/ops"; echo "fake: unregistered from user space"; exit 0' INT TERM
fi
trap 'echo disabled > "$d/state"; rm -f "$d/root/ops"; echo "EXIT: runnable task stall (fake watchdog)"; exit 1' USR1
sleep 0.2
echo "$2" > "$d/root/ops"
echo 1 > "$d/switch_all"
echo enabled > "$d/state"
echo "fake: attached"
if [ "$3" = chatty ]; then
  while :; do echo "fake: a scheduler that says a great deal about every decision it takes, all the time"; done
fi
while :; do sleep 0.05; done
"#;

struct Fixture {
    dir: tempfile::TempDir,
    root: KernelRoot,
    journal: PathBuf,
    /// A directory with `scx_fake` in it (for PATH).
    bin: PathBuf,
}

impl Fixture {
    fn new(state: &str, ops: Option<&str>) -> Fixture {
        let (dir, root, _) = writable_root("qemu-lab-2s2llc");
        let d = dir.path();
        put(d, "proc/sys/kernel/osrelease", "7.2.13+deb14-amd64\n");
        put(d, &format!("{SCX}/state"), &format!("{state}\n"));
        put(d, &format!("{SCX}/switch_all"), "0\n");
        put(d, &format!("{SCX}/nr_rejected"), "0\n");
        put(d, &format!("{SCX}/enable_seq"), "0\n");
        put(
            d,
            "sys/kernel/debug/sched/features",
            "PLACE_LAG TTWU_QUEUE \n",
        );
        fs::create_dir_all(d.join(format!("{SCX}/root"))).unwrap();
        if let Some(o) = ops {
            put(d, &format!("{SCX}/root/ops"), &format!("{o}\n"));
            put(d, &format!("{SCX}/switch_all"), "1\n");
        }
        let bin = d.join("bin");
        fs::create_dir_all(&bin).unwrap();
        let fake = bin.join("scx_fake");
        fs::write(&fake, FAKE).unwrap();
        fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
        Fixture {
            journal: d.join("journal.json"),
            bin,
            root,
            dir,
        }
    }

    fn state(&self) -> String {
        fs::read_to_string(self.root.path(format!("/{SCX}/state")))
            .unwrap()
            .trim()
            .to_string()
    }

    /// The fake with its arguments (`mode`: "", "never", "exit") as config.toml gives it.
    fn configured(&self, name: &str, mode: &str) -> scheduler::Binary {
        let mut args = vec![
            self.root.path(format!("/{SCX}")).display().to_string(),
            "fake_0.1.0_x86_64_unknown_linux_gnu".to_string(),
        ];
        if !mode.is_empty() {
            args.push(mode.into());
        }
        scheduler::Binary {
            name: name.into(),
            path: self.bin.join("scx_fake"),
            args,
            from: "config.toml",
        }
    }

    fn session(&self, modes: &[(&str, &str)], opts: Options) -> Session {
        let mut reg = Registry::discover(&self.root, None);
        reg.add_schedulers(modes.iter().map(|(n, m)| self.configured(n, m)).collect());
        Session::new(reg, Journal::new(&self.journal), opts)
            .with_owners(self.dir.path().join("owners"))
    }

    fn journaled(&self) -> Option<String> {
        Journal::new(&self.journal)
            .get(self.root.root(), "scheduler")
            .unwrap()
            .map(|e| e.restore_bytes)
    }

    fn config(&self) -> PathBuf {
        self.config_with(&[("scx_fake", "")])
    }

    /// A config.toml with these schedulers (name, mode).
    fn config_with(&self, modes: &[(&str, &str)]) -> PathBuf {
        let mut text = String::from("[schedulers]\n");
        for (name, mode) in modes {
            let f = self.configured(name, mode);
            let args: Vec<String> = f.args.iter().map(|a| format!("{a:?}")).collect();
            text += &format!(
                "{name} = [{:?}, {}]\n",
                f.path.display().to_string(),
                args.join(", ")
            );
        }
        let p = self.dir.path().join("config.toml");
        fs::write(&p, text).unwrap();
        p
    }

    /// The scheduler logs beside the journal.
    fn logs(&self) -> Vec<(PathBuf, u64)> {
        fs::read_dir(self.dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("scheduler-"))
            .map(|e| (e.path(), e.metadata().map_or(0, |m| m.len())))
            .collect()
    }

    /// Processes running a fake of this fixture's.
    fn fakes(&self) -> usize {
        let me = self.dir.path().to_string_lossy().into_owned();
        fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.parse::<u32>().is_ok_and(alive))
            })
            .filter_map(|e| fs::read_to_string(e.path().join("cmdline")).ok())
            .filter(|c| c.contains(&me) && c.contains("scx_fake"))
            .count()
    }
}

fn alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn pid_of(bytes: &str) -> u32 {
    bytes
        .split(' ')
        .find_map(|w| w.strip_prefix("pid="))
        .and_then(|p| p.parse().ok())
        .unwrap()
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(30), "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_knob_lists_what_can_be_chosen_and_marks_fair_knobs_while_one_runs() {
    let f = Fixture::new("disabled", None);
    let reg = Registry::discover(&f.root, None);
    let k = reg
        .get("scheduler")
        .expect("a kernel with sched_ext has the knob");
    assert_eq!(k.value.as_deref(), Some("eevdf"));
    assert!(
        reg.get("feature.TTWU_QUEUE")
            .unwrap()
            .not_in_effect
            .is_none()
    );

    let f = Fixture::new("enabled", Some("lavd_1.1.4_x86_64_unknown_linux_gnu"));
    let mut reg = Registry::discover(&f.root, None);
    reg.add_schedulers(vec![f.configured("scx_fake", "")]);
    let k = reg.get("scheduler").unwrap();
    assert_eq!(k.value.as_deref(), Some("scx_lavd"), "named after its ops");
    let why = reg.get("feature.TTWU_QUEUE").unwrap().not_in_effect.clone();
    assert_eq!(
        why.as_deref(),
        Some("not in effect for the tasks sched_ext schedules (scheduler lavd, all tasks)")
    );
    assert!(reg.get("scheduler").unwrap().not_in_effect.is_none());
    // `knobs list` says it too.
    let out = llctop(&f.root, &f.journal, &["knobs", "list"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("not in effect"), "{text}");

    // Without sched_ext: no knob, and why.
    let (_d, root, _) = writable_root("qemu-lab-2s2llc");
    let reg = Registry::discover(&root, None);
    assert!(reg.get("scheduler").is_none());
    let m = reg.missing.iter().find(|m| m.what == "scheduler").unwrap();
    assert!(m.reason.contains("no sched_ext"), "{}", m.reason);
}

#[test]
fn an_unknown_name_gets_a_did_you_mean_and_nothing_starts() {
    let f = Fixture::new("disabled", None);
    let mut s = f.session(&[("scx_fake", "")], Options::default());
    let e = s.set("scheduler", "scx_fak").unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, KnobError::Invalid { .. }), "{msg}");
    assert!(msg.contains("did you mean scx_fake?"), "{msg}");
    assert_eq!(f.state(), "disabled");
    assert_eq!(f.journaled(), None);
    // The short form is the scheduler too (checked, not started).
    assert_eq!(s.check("scheduler", "fake").unwrap().1, "scx_fake");
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn set_starts_it_and_unset_stops_it_with_the_state_read_back() {
    require_root();
    let f = Fixture::new("disabled", None);
    let mut s = f.session(&[("scx_fake", "")], Options::default());
    let c = s.set("scheduler", "scx_fake").unwrap();
    assert_eq!((c.old.as_str(), c.new.as_str()), ("eevdf", "scx_fake"));
    assert_eq!(f.state(), "enabled");
    let pid = pid_of(&f.journaled().expect("journaled while it runs"));
    assert!(alive(pid));
    let ev = s.take_events();
    assert!(ev[0].written.starts_with("start "), "{:?}", ev[0]);
    assert_eq!(ev[0].read_back, "scx_fake");
    s.set("scheduler", "eevdf").unwrap();
    assert_eq!(f.state(), "disabled");
    assert!(!alive(pid), "stopped");
    assert_eq!(f.journaled(), None);
    // Again, and the session's end stops it.
    s.set("scheduler", "scx_fake").unwrap();
    let pid = pid_of(&f.journaled().unwrap());
    let (restored, failed) = s.finish();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(restored, ["scheduler"]);
    assert!(!alive(pid) && f.state() == "disabled");
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn one_that_exits_or_never_attaches_is_an_error_with_nothing_left_running() {
    require_root();
    let f = Fixture::new("disabled", None);
    let mut s = f
        .session(&[("quits", "exit"), ("stuck", "never")], Options::default())
        .with_scheduler_timeout(Duration::from_millis(1500));
    let e = s.set("scheduler", "quits").unwrap_err().to_string();
    assert!(e.contains("exited (exit status: 3)"), "{e}");
    assert!(e.contains("fake: refusing to load"), "its own words: {e}");
    let e = s.set("scheduler", "stuck").unwrap_err().to_string();
    assert!(e.contains("not attached within 1.5 s"), "{e}");
    assert_eq!(f.state(), "disabled");
    assert_eq!(f.journaled(), None, "nothing journaled");
    assert_eq!(
        s.registry()
            .read_value(s.registry().get("scheduler").unwrap())
            .unwrap(),
        "eevdf"
    );
    let (restored, failed) = s.finish();
    assert!(
        restored.is_empty() && failed.is_empty(),
        "{restored:?} {failed:?}"
    );
    // No `sleep 60` of ours is left.
    let left = fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| fs::read_to_string(e.path().join("cmdline")).ok())
        .filter(|c| c.contains(&*f.dir.path().to_string_lossy()))
        .count();
    assert_eq!(left, 0, "a fake scheduler is still running");
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_scheduler_llctop_did_not_start_is_never_stopped() {
    require_root();
    let f = Fixture::new("disabled", None);
    let (prog, mut args) = {
        let b = f.configured("x", "");
        (b.path, b.args)
    };
    args[1] = "lavd_1.1.4_x86_64_unknown_linux_gnu".into();
    let mut theirs = std::process::Command::new(prog)
        .args(args)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("their scheduler attached", || f.state() == "enabled");
    let mut s = f.session(&[("scx_fake", "")], Options::default());
    let k = s.registry().get("scheduler").unwrap();
    assert_eq!(s.registry().read_value(k).unwrap(), "scx_lavd");
    for v in ["eevdf", "scx_fake"] {
        let e = s.set("scheduler", v);
        let msg = format!("{e:?}");
        assert!(msg.contains("llctop did not start it"), "{v}: {msg}");
    }
    s.finish();
    assert!(theirs.try_wait().unwrap().is_none(), "left running");
    assert_eq!(f.state(), "enabled");
    // SIGTERM: a test harness started in the background may ignore SIGINT for its
    // children, and a shell script cannot trap an ignored signal.
    // SAFETY: our own child.
    unsafe { libc::kill(theirs.id() as i32, libc::SIGTERM) };
    theirs.wait().unwrap();
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn an_ejection_spoils_the_window_with_the_schedulers_own_reason() {
    require_root();
    let f = Fixture::new("disabled", None);
    let mut s = f.session(&[("scx_fake", "")], Options::default());
    s.hold("scheduler").unwrap();
    s.set("scheduler", "scx_fake").unwrap();
    assert!(s.drifted(&["scheduler".into()]).is_empty());
    let pid = pid_of(&f.journaled().unwrap());
    // SAFETY: the fake scheduler this session started.
    unsafe { libc::kill(pid as i32, libc::SIGUSR1) };
    wait_for("ejected", || f.state() == "disabled");
    let d = s.drifted(&["scheduler".into()]).join("; ");
    assert!(d.contains("now eevdf, not the scx_fake"), "{d}");
    assert!(d.contains("runnable task stall (fake watchdog)"), "{d}");
    s.unhold("scheduler");
    let (_, failed) = s.finish();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(f.journaled(), None, "nothing left to restore");
}

/// A run with `--set scheduler=NAME` (config from `cfg`), its output dropped.
fn run_with(f: &Fixture, cfg: &std::path::Path, name: &str, extra: &[&str]) -> std::process::Child {
    let set = format!("scheduler={name}");
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "--config".as_ref(),
        cfg.as_os_str(),
        "live".as_ref(),
        "--source".as_ref(),
        "procfs".as_ref(),
        "--interval".as_ref(),
        "200ms".as_ref(),
        "--set".as_ref(),
        set.as_ref(),
    ];
    args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
    llctop(&f.root, &f.journal, &args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_sigkilled_llctop_takes_its_scheduler_with_it_and_knobs_restore_clears_the_rest() {
    require_root();
    let f = Fixture::new("disabled", None);
    let cfg = f.config();
    let mut run = run_with(&f, &cfg, "scx_fake", &[]);
    wait_for("started", || {
        f.state() == "enabled" && f.journaled().is_some()
    });
    let pid = pid_of(&f.journaled().unwrap());
    run.kill().unwrap(); // SIGKILL: no chance to stop it
    run.wait().unwrap();
    // Its parent-death signal stops it (SIGTERM: it detaches, as on any stop).
    wait_for("stopped by its death signal", || {
        !alive(pid) && f.state() == "disabled"
    });
    assert!(f.journaled().is_some(), "the journal still names it");
    let out = llctop(
        &f.root,
        &f.journal,
        &[
            "--config".as_ref(),
            cfg.as_os_str(),
            "knobs".as_ref(),
            "restore".as_ref(),
        ],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("is gone; nothing stopped"), "{err}");
    assert_eq!(f.journaled(), None);
    assert!(f.logs().is_empty(), "its log removed: {:?}", f.logs());
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_kept_scheduler_outlives_a_one_shot_set_and_knobs_restore_stops_it() {
    require_root();
    let f = Fixture::new("disabled", None);
    let cfg = f.config();
    let out = llctop(
        &f.root,
        &f.journal,
        &[
            "--config".as_ref(),
            cfg.as_os_str(),
            "knobs".as_ref(),
            "set".as_ref(),
            "scheduler".as_ref(),
            "scx_fake".as_ref(),
        ],
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid = pid_of(&f.journaled().expect("journaled"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(alive(pid) && f.state() == "enabled", "kept on purpose");
    let out = llctop(
        &f.root,
        &f.journal,
        &[
            "--config".as_ref(),
            cfg.as_os_str(),
            "knobs".as_ref(),
            "restore".as_ref(),
        ],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("scheduler: scx_fake -> eevdf (restored)"),
        "{said}"
    );
    wait_for("stopped", || !alive(pid));
    assert_eq!(f.state(), "disabled");
    assert_eq!(f.journaled(), None);
    assert!(f.logs().is_empty(), "its log removed: {:?}", f.logs());
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_scheduler_that_forks_is_followed_by_its_process_group() {
    require_root();
    let f = Fixture::new("disabled", None);
    let cfg = f.config_with(&[("forker", "fork")]);
    let run = run_with(&f, &cfg, "forker", &[]);
    wait_for("the forked scheduler attached", || f.state() == "enabled");
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(f.fakes(), 1, "the first process exited, its fork runs");
    assert!(
        f.journaled().is_some(),
        "still the knob's while its group runs"
    );
    // SIGTERM: the run ends and stops the group, the fork included.
    // SAFETY: kill(2) of our child.
    unsafe { libc::kill(run.id() as i32, libc::SIGTERM) };
    let out = run.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("restored scheduler"), "{err}");
    wait_for("the fork stopped", || f.fakes() == 0);
    assert_eq!(f.state(), "disabled");
    assert_eq!(f.journaled(), None);
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_chatty_schedulers_log_is_capped_and_removed_with_it() {
    require_root();
    let f = Fixture::new("disabled", None);
    let cfg = f.config_with(&[("chatty", "chatty")]);
    let run = run_with(&f, &cfg, "chatty", &[]);
    wait_for("attached", || f.state() == "enabled");
    // Long enough to write several times the cap.
    let t = Instant::now();
    let mut most = 0;
    while t.elapsed() < Duration::from_secs(4) {
        most = most.max(f.logs().iter().map(|l| l.1).sum::<u64>());
        std::thread::sleep(Duration::from_millis(50));
    }
    let cap = llctop::knobs::session::scheduler::LOG_CAP;
    assert!(most > cap / 2, "it logged ({most} bytes)");
    assert!(
        most <= 2 * cap + 128 * 1024,
        "{most} bytes of log, cap {cap}"
    );
    // SAFETY: kill(2) of our child.
    unsafe { libc::kill(run.id() as i32, libc::SIGTERM) };
    let out = run.wait_with_output().unwrap();
    assert!(out.status.code() == Some(143), "{:?}", out.status);
    wait_for("the logs removed", || f.logs().is_empty());
    assert_eq!(f.fakes(), 0);
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_restore_that_fails_ends_the_run_with_a_failing_status() {
    require_root();
    let f = Fixture::new("disabled", None);
    let cfg = f.config_with(&[("sticky", "sticky")]);
    let run = run_with(&f, &cfg, "sticky", &["--duration", "1s"]);
    let out = run.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("could not restore"), "{err}");
    assert_eq!(out.status.code(), Some(6), "{err}");
    // What it left: the kernel's state (the fake's) says it still runs; knobs restore
    // says so too, and the journal keeps it for a later try.
    assert_eq!(f.state(), "enabled");
    fs::write(f.root.path(format!("/{SCX}/state")), "disabled\n").unwrap();
}

#[test]
#[ignore = "needs root: run scripts/test as root (or cargo test -- --include-ignored)"]
fn a_journaled_pid_that_is_another_process_now_is_left_alone() {
    require_root();
    let f = Fixture::new("disabled", None);
    let mut other = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let j = Journal::new(&f.journal);
    j.record(llctop::knobs::journal::Entry {
        root: f.root.root().to_path_buf(),
        id: "scheduler".into(),
        path: f.bin.join("scx_fake"),
        original: "eevdf".into(),
        // The right pid, the wrong start time: the pid was reused.
        restore_bytes: format!("stop pid={} start=1", other.id()),
        changed_unix_ns: 0,
        pid: 1,
        kept: false,
    })
    .unwrap();
    let out = llctop(&f.root, &f.journal, &["knobs", "restore"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("is gone; nothing stopped"), "{err}");
    assert!(
        other.try_wait().unwrap().is_none(),
        "another process is never stopped"
    );
    assert_eq!(f.journaled(), None);
    other.kill().unwrap();
    other.wait().unwrap();
}
