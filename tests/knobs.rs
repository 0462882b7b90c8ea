//! Knobs against writable fixture trees: the registry, every type toggled through the safe
//! write path, validation refusals, read-back mismatch, the journal, undo, profiles,
//! restore on exit / panic / SIGTERM / after SIGKILL, cgroup path escapes, and the
//! lockdown fallback that decodes `sysctl_sched_features` with BTF enumerators.
//! The last test runs `llctop knobs list` on this machine's real kernel.

mod common;

use common::llctop;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{put, writable_root};
use llctop::knobs::journal::Journal;
use llctop::knobs::session::{KnobAction, KnobError, Options};
use llctop::knobs::{Access, Registry, Session};
use llctop::kroot::KernelRoot;

const FEATURES: &str = "PLACE_LAG NO_NEXT_BUDDY TTWU_QUEUE SIS_UTIL NO_LB_MIN \n";

/// The lab machine's topology plus a debugfs sched dir, sysctls, cgroups and mountinfo
/// as a 6.12 kernel with a cgroup v1 cpuset mount has them.
fn fixture() -> (tempfile::TempDir, KernelRoot) {
    let (dir, root, _) = writable_root("qemu-lab-2s2llc");
    let d = dir.path();
    put(
        d,
        "proc/sys/kernel/osrelease",
        "6.12.48+deb13-cloud-amd64\n",
    );
    put(d, "proc/cmdline", "console=ttyS0 quiet\n");
    put(
        d,
        "proc/self/mountinfo",
        "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n\
         31 1 0:27 / /sys/fs/cpuset rw - cgroup cgroup rw,cpuset\n\
         32 1 0:7 / /sys/kernel/debug rw - debugfs debugfs rw\n",
    );
    let s = "sys/kernel/debug/sched";
    put(d, &format!("{s}/features"), FEATURES);
    put(d, &format!("{s}/verbose"), "N\n");
    put(d, &format!("{s}/migration_cost_ns"), "500000\n");
    put(d, &format!("{s}/nr_migrate"), "32\n");
    put(d, &format!("{s}/base_slice_ns"), "3000000\n");
    put(d, &format!("{s}/tunable_scaling"), "1\n");
    put(d, &format!("{s}/preempt"), "none voluntary (full) lazy\n");
    put(d, &format!("{s}/numa_balancing/scan_delay_ms"), "1000\n");
    put(d, &format!("{s}/numa_balancing/scan_size_mb"), "256\n");
    put(d, &format!("{s}/llc_balancing/enabled"), "1\n");
    put(d, &format!("{s}/llc_balancing/imb_pct"), "20\n");
    put(d, "proc/sys/kernel/numa_balancing", "1\n");
    put(d, "proc/sys/kernel/sched_schedstats", "0\n");
    put(d, "sys/fs/cpuset/cpuset.sched_relax_domain_level", "-1\n");
    put(
        d,
        "sys/fs/cpuset/db/cpuset.sched_relax_domain_level",
        "-1\n",
    );
    put(d, "sys/fs/cgroup/cpu.numa_load_balance", "0\n");
    put(d, "sys/fs/cgroup/db/cpu.numa_load_balance", "0\n");
    put(d, "sys/fs/cgroup/web/cgroup.procs", "");
    fs::create_dir_all(d.join("etc")).unwrap();
    put(d, "etc/cpu.numa_load_balance", "0\n");
    std::os::unix::fs::symlink(d.join("etc"), d.join("sys/fs/cgroup/out")).unwrap();
    // The kernel's domains as sched/verbose=Y shows them on 6.12 (levels exact).
    for (m, name, level, flags) in [
        (
            0,
            "MC",
            2,
            "SD_BALANCE_NEWIDLE SD_BALANCE_EXEC SD_BALANCE_FORK SD_WAKE_AFFINE SD_SHARE_LLC SD_PREFER_SIBLING",
        ),
        (
            1,
            "NUMA",
            5,
            "SD_BALANCE_NEWIDLE SD_BALANCE_EXEC SD_BALANCE_FORK SD_WAKE_AFFINE SD_SERIALIZE SD_NUMA",
        ),
    ] {
        let p = format!("{s}/domains/cpu0/domain{m}");
        put(d, &format!("{p}/name"), &format!("{name}\n"));
        put(d, &format!("{p}/level"), &format!("{level}\n"));
        put(d, &format!("{p}/flags"), &format!("{flags}\n"));
    }
    (dir, root)
}

fn read(root: &KernelRoot, p: &str) -> String {
    fs::read_to_string(root.path(p)).unwrap()
}

fn session(root: &KernelRoot, journal: &Path, opts: Options) -> Session {
    let topo = llctop::topology::discover(root).unwrap();
    Session::new(
        Registry::discover(root, Some(&topo)),
        Journal::new(journal),
        opts,
    )
}

/// The fixture, its journal path and a writable session on it.
fn fixture_session() -> (tempfile::TempDir, KernelRoot, PathBuf, Session) {
    let (dir, root) = fixture();
    let j = dir.path().join("journal.json");
    let s = session(&root, &j, Options::default());
    (dir, root, j, s)
}

#[test]
fn registry_lists_every_kind_with_values_and_reasons() {
    let (dir, root) = fixture();
    let reg = Registry::discover(&root, None);
    let ids: Vec<&str> = reg.knobs.iter().map(|k| k.id.as_str()).collect();
    for id in [
        "feature.PLACE_LAG",
        "feature.NEXT_BUDDY",
        "feature.LB_MIN",
        "sched.verbose",
        "relax_domain_level",
        "relax_domain_level@/db",
        "numa_balancing",
        "cgroup.numa_load_balance@/",
        "cgroup.numa_load_balance@/db",
        "numa_balancing.scan_delay_ms",
        "llc_balancing.enabled",
        "llc_balancing.imb_pct",
        "sched.migration_cost_ns",
        "sched.nr_migrate",
        "sched.base_slice_ns",
        "sched.tunable_scaling",
        "sched.preempt",
        "kernel.sched_schedstats",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    assert_eq!(
        reg.knobs
            .iter()
            .filter(|k| k.id.starts_with("feature."))
            .count(),
        5,
        "exactly the features the kernel lists"
    );
    let g = |id: &str| reg.get(id).unwrap();
    assert_eq!(g("feature.NEXT_BUDDY").value.as_deref(), Some("off"));
    assert_eq!(g("sched.verbose").value.as_deref(), Some("0"), "N is 0");
    assert_eq!(g("sched.preempt").value.as_deref(), Some("full"));
    assert_eq!(g("numa_balancing").value.as_deref(), Some("1"));
    assert!(
        g("numa_balancing").kind.summary().contains("4=cgroup"),
        "mode 4 offered only because cgroups have cpu.numa_load_balance"
    );
    let relax = g("relax_domain_level");
    assert_eq!(
        relax.path,
        PathBuf::from("/sys/fs/cpuset/cpuset.sched_relax_domain_level")
    );
    assert!(relax.access.is_writable());
    let llc = relax.aliases.iter().find(|a| a.meaning == "llc").unwrap();
    assert_eq!(llc.value, "3", "6.12: MC (level 2) kept by 3");
    assert!(
        relax
            .notes
            .iter()
            .any(|n| n.value == "3" && n.meaning.contains("kept in MC(L2); cleared in NUMA(L5)")),
        "{:?}",
        relax.notes
    );
    assert!(!g("feature.PLACE_LAG").description.is_empty());
    // A seed's feature mainline never took is said to be absent, with why.
    let shared = reg
        .missing
        .iter()
        .find(|m| m.what == "feature.SHARED_RUNQ")
        .expect("SHARED_RUNQ reported absent");
    assert!(shared.reason.contains("never merged"), "{shared:?}");
    drop(dir);
}

#[test]
fn every_kind_toggles_through_the_safe_path_and_restores_on_drop() {
    let (dir, root) = fixture();
    let j = dir.path().join("state/journal.json");
    {
        let mut s = session(&root, &j, Options::default());
        let c = s.set("feature.TTWU_QUEUE", "off").unwrap();
        assert_eq!((c.old.as_str(), c.new.as_str()), ("on", "off"));
        assert_eq!(
            read(&root, "/sys/kernel/debug/sched/features"),
            "NO_TTWU_QUEUE"
        );
        s.set("llc_balancing.enabled", "off").unwrap();
        assert_eq!(
            read(&root, "/sys/kernel/debug/sched/llc_balancing/enabled"),
            "0"
        );
        s.set("sched.migration_cost_ns", "0").unwrap();
        s.set("numa_balancing", "normal+memory_tiering").unwrap();
        assert_eq!(read(&root, "/proc/sys/kernel/numa_balancing"), "3");
        s.set("sched.tunable_scaling", "linear").unwrap();
        assert_eq!(read(&root, "/sys/kernel/debug/sched/tunable_scaling"), "2");
        s.set("relax_domain_level", "llc").unwrap();
        assert_eq!(
            read(&root, "/sys/fs/cpuset/cpuset.sched_relax_domain_level"),
            "3"
        );
        s.set("cgroup.numa_load_balance@/db", "1").unwrap();
        // Every original is journaled before the change.
        let entries = Journal::new(&j).entries_for(root.root()).unwrap();
        assert_eq!(entries.len(), 7);
        let e = entries
            .iter()
            .find(|e| e.id == "feature.TTWU_QUEUE")
            .unwrap();
        assert_eq!(
            (e.original.as_str(), e.restore_bytes.as_str()),
            ("on", "TTWU_QUEUE")
        );
        let events = s.take_events();
        assert_eq!(events.len(), 7);
        assert!(
            events
                .iter()
                .all(|e| e.action == KnobAction::Set && e.new == e.read_back)
        );
    }
    // Dropped: everything back, journal empty.
    assert_eq!(
        read(&root, "/sys/kernel/debug/sched/features"),
        "TTWU_QUEUE"
    );
    assert_eq!(
        read(&root, "/sys/kernel/debug/sched/llc_balancing/enabled"),
        "1"
    );
    assert_eq!(
        read(&root, "/sys/kernel/debug/sched/migration_cost_ns"),
        "500000"
    );
    assert_eq!(read(&root, "/proc/sys/kernel/numa_balancing"), "1");
    assert_eq!(read(&root, "/sys/kernel/debug/sched/tunable_scaling"), "1");
    assert_eq!(
        read(&root, "/sys/fs/cpuset/cpuset.sched_relax_domain_level"),
        "-1"
    );
    assert_eq!(read(&root, "/sys/fs/cgroup/db/cpu.numa_load_balance"), "0");
    assert!(Journal::new(&j).entries().unwrap().is_empty());
}

#[test]
fn invalid_values_are_refused_before_anything_is_written() {
    let (_dir, root, j, mut s) = fixture_session();
    let before = read(&root, "/proc/sys/kernel/numa_balancing");
    for (id, v, why) in [
        ("numa_balancing", "8", "allowed mask 7"),
        ("numa_balancing", "lots", "expected a number"),
        ("sched.migration_cost_ns", "-5", "outside 0..="),
        ("relax_domain_level", "7", "outside -1..=6"),
        ("feature.TTWU_QUEUE", "NO_SIS_UTIL", "expected on/off"),
        (
            "sched.tunable_scaling",
            "3",
            "expected one of none, log, linear",
        ),
        (
            "sched.preempt",
            "rt",
            "expected one of none, voluntary, full, lazy",
        ),
        ("sched.verbose", "maybe", "expected 0/1"),
        // 7.2's files take any u32; llctop keeps to the values that mean something.
        ("llc_balancing.imb_pct", "5000", "outside 0..=1000"),
        ("llc_balancing.enabled", "2", "expected 0/1"),
    ] {
        let e = s.set(id, v).unwrap_err();
        assert!(matches!(e, KnobError::Invalid { .. }), "{id}={v}: {e}");
        assert!(e.to_string().contains(why), "{id}={v}: {e}");
        assert_eq!(e.exit_code(), 4);
    }
    assert!(matches!(
        s.set("feature.NOPE", "on").unwrap_err(),
        KnobError::NotFound(_)
    ));
    assert_eq!(read(&root, "/proc/sys/kernel/numa_balancing"), before);
    assert!(!j.exists() || Journal::new(&j).entries().unwrap().is_empty());
    assert!(s.take_events().is_empty());
}

#[test]
fn cgroup_paths_cannot_escape_the_mount() {
    let (dir, root, _j, mut s) = fixture_session();
    for (id, why) in [
        ("cgroup.numa_load_balance@/../../etc", "`..`"),
        ("cgroup.numa_load_balance@/out", "outside the cgroup mount"),
        (
            "cgroup.numa_load_balance@/web",
            "has no cpu.numa_load_balance",
        ),
        ("cgroup.numa_load_balance@/nope", "No such file"),
        ("relax_domain_level@/../../../etc", "`..`"),
    ] {
        let e = s.set(id, "1").unwrap_err();
        assert!(e.to_string().contains(why), "{id}: {e}");
        assert_eq!(e.exit_code(), 3);
    }
    assert_eq!(read(&root, "/etc/cpu.numa_load_balance"), "0\n");
    // A cgroup outside the walked list but inside the mount is resolved and allowed.
    put(
        dir.path(),
        "sys/fs/cgroup/db/late/cpu.numa_load_balance",
        "0\n",
    );
    let c = s.set("cgroup.numa_load_balance@/db//late/", "1").unwrap();
    assert_eq!(c.id, "cgroup.numa_load_balance@/db/late");
    assert_eq!(
        read(&root, "/sys/fs/cgroup/db/late/cpu.numa_load_balance"),
        "1"
    );
}

#[test]
fn undo_steps_back_single_changes_and_whole_profiles() {
    let (_dir, root, j, mut s) = fixture_session();
    s.set("sched.nr_migrate", "8").unwrap();
    s.set("sched.nr_migrate", "4").unwrap();
    s.apply(
        "test-profile",
        &[
            ("relax_domain_level".into(), "llc".into()),
            ("sched.migration_cost_ns".into(), "0".into()),
        ],
    )
    .unwrap();
    assert_eq!(
        read(&root, "/sys/kernel/debug/sched/migration_cost_ns"),
        "0"
    );
    let step = s.undo().unwrap().unwrap();
    assert_eq!(step.label, "test-profile");
    assert_eq!(
        read(&root, "/sys/kernel/debug/sched/migration_cost_ns"),
        "500000"
    );
    assert_eq!(
        read(&root, "/sys/fs/cpuset/cpuset.sched_relax_domain_level"),
        "-1"
    );
    s.undo().unwrap();
    assert_eq!(read(&root, "/sys/kernel/debug/sched/nr_migrate"), "8");
    // The journal keeps the first original (32), not the intermediate 8.
    let e = Journal::new(&j)
        .get(root.root(), "sched.nr_migrate")
        .unwrap()
        .unwrap();
    assert_eq!(e.original, "32");
    s.undo().unwrap();
    assert_eq!(read(&root, "/sys/kernel/debug/sched/nr_migrate"), "32");
    assert!(
        Journal::new(&j).entries().unwrap().is_empty(),
        "back at originals"
    );
    assert!(s.undo().unwrap().is_none());

    // A profile whose second write fails leaves nothing of the first behind.
    fs::remove_file(root.path("/sys/kernel/debug/sched/base_slice_ns")).unwrap();
    fs::create_dir(root.path("/sys/kernel/debug/sched/base_slice_ns")).unwrap();
    let e = s
        .apply(
            "broken",
            &[
                ("sched.nr_migrate".into(), "16".into()),
                ("sched.base_slice_ns".into(), "1000000".into()),
            ],
        )
        .unwrap_err();
    assert!(e.to_string().contains("base_slice_ns"), "{e}");
    assert_eq!(read(&root, "/sys/kernel/debug/sched/nr_migrate"), "32");
}

#[test]
fn shipped_profiles_apply_on_the_fixture() {
    let (_dir, root, _j, mut s) = fixture_session();
    let p = llctop::knobs::profile::find("newidle-in-llc", None).unwrap();
    let (plan, skipped) = p.plan(s.registry_mut());
    assert_eq!(
        plan,
        vec![("relax_domain_level".to_string(), "llc".to_string())]
    );
    assert_eq!(
        skipped.len(),
        1,
        "NI_RANDOM is not in this kernel's list: {skipped:?}"
    );
    s.apply(&p.name, &plan).unwrap();
    assert_eq!(
        read(&root, "/sys/fs/cpuset/cpuset.sched_relax_domain_level"),
        "3"
    );
}

#[test]
fn read_only_sessions_and_read_only_knobs_refuse() {
    let (dir, root) = fixture();
    let j = dir.path().join("journal.json");
    let mut s = session(
        &root,
        &j,
        Options {
            read_only: true,
            keep_changes: false,
        },
    );
    let e = s.set("sched.nr_migrate", "4").unwrap_err();
    assert!(matches!(e, KnobError::ReadOnlySession { .. }), "{e}");
    assert_eq!(e.exit_code(), 5);
    assert_eq!(read(&root, "/sys/kernel/debug/sched/nr_migrate"), "32\n");
}

#[test]
fn a_kernel_that_reads_back_something_else_is_an_error() {
    // /proc/PID/coredump_filter is a real kernel file that reads back in hex what was
    // written in decimal: 16 reads back as 00000010. It is bind-mounted over the
    // fixture's knob in a mount namespace of its own (a symlink out of the tree would be
    // refused: knob writes under --sysroot never leave it), and the shell then becomes
    // llctop, so that llctop writes its own process's filter. Unprivileged, the
    // namespace is a user namespace's (unshare -Urm).
    let (dir, root) = fixture();
    let p = root.path("/sys/kernel/debug/sched/nr_migrate");
    let j = dir.path().join("journal.json");
    // SAFETY: no preconditions.
    let ns = if unsafe { libc::geteuid() } == 0 {
        "-m"
    } else {
        "-Urm"
    };
    let out = Command::new("unshare")
        .args([ns, "sh", "-c"])
        .arg("mount --bind /proc/$$/coredump_filter \"$1\" && exec \"$2\" --sysroot \"$3\" --journal \"$4\" knobs set sched.nr_migrate 16")
        .arg("sh")
        .arg(&p)
        .arg(env!("CARGO_BIN_EXE_llctop"))
        .arg(root.root())
        .arg(&j)
        .output()
        .expect("unshare (util-linux) runs");
    let err = String::from_utf8_lossy(&out.stderr);
    println!("{err}");
    assert_eq!(out.status.code(), Some(7), "a read-back mismatch: {err}");
    assert!(err.contains("read back \"10\""), "{err}");
    // The change stays journaled so that it can be put back.
    assert!(
        Journal::new(&j)
            .get(root.root(), "sched.nr_migrate")
            .unwrap()
            .is_some()
    );
}

#[test]
fn a_panic_unwinds_through_the_session_and_restores() {
    let (dir, root) = fixture();
    let j = dir.path().join("journal.json");
    let r = root.clone();
    let jj = j.clone();
    let res = std::panic::catch_unwind(move || {
        let mut s = session(&r, &jj, Options::default());
        s.set("sched.nr_migrate", "4").unwrap();
        assert_eq!(read(&r, "/sys/kernel/debug/sched/nr_migrate"), "4");
        panic!("boom");
    });
    assert!(res.is_err());
    assert_eq!(read(&root, "/sys/kernel/debug/sched/nr_migrate"), "32");
}

// ---- the binary: exit codes, keep-changes, SIGTERM, SIGKILL + knobs restore ----

fn run(c: &mut Command) -> (i32, String, String) {
    let o = c.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn cli_exit_codes_and_restore_after_keep() {
    let (dir, root) = fixture();
    let j = dir.path().join("journal.json");
    let (code, out, _) = run(&mut llctop(&root, &j, &["knobs", "get", "numa_balancing"]));
    assert_eq!((code, out.trim()), (0, "1"));
    assert_eq!(run(&mut llctop(&root, &j, &["knobs", "get", "nope"])).0, 3);
    let (code, _, err) = run(&mut llctop(
        &root,
        &j,
        &["knobs", "set", "numa_balancing", "9"],
    ));
    assert_eq!(code, 4, "{err}");
    let (code, _, err) = run(&mut llctop(
        &root,
        &j,
        &["--read-only", "knobs", "set", "numa_balancing", "0"],
    ));
    assert_eq!(code, 5, "{err}");
    // `knobs set` keeps its change, journaled; `knobs restore` puts it back.
    let (code, out, err) = run(&mut llctop(
        &root,
        &j,
        &["knobs", "set", "numa_balancing", "0"],
    ));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("numa_balancing: 1 -> 0"), "{out}");
    assert_eq!(read(&root, "/proc/sys/kernel/numa_balancing"), "0");
    let (code, out, _) = run(&mut llctop(&root, &j, &["knobs", "restore"]));
    assert_eq!(code, 0);
    assert!(out.contains("numa_balancing: 0 -> 1 (restored)"), "{out}");
    assert_eq!(read(&root, "/proc/sys/kernel/numa_balancing"), "1");
    let (_, out, _) = run(&mut llctop(&root, &j, &["knobs", "restore"]));
    assert!(out.contains("nothing to restore"), "{out}");
    let (code, out, _) = run(&mut llctop(&root, &j, &["knobs", "list", "--json"]));
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["knobs"].as_array().unwrap().len() > 15);
}

#[test]
fn kernel_spellings_reach_the_knob_and_typos_get_suggestions() {
    let (dir, root) = fixture();
    let j = dir.path().join("journal.json");
    let features = "/sys/kernel/debug/sched/features";
    // sysctl(8)'s spelling, the end of a debugfs path, a feature named with NO_.
    for (name, want) in [
        ("kernel.numa_balancing", "1"),
        ("scan_delay_ms", "1000"),
        ("sched/migration_cost_ns", "500000"),
        ("NO_SIS_UTIL", "on"),
    ] {
        let (code, out, err) = run(&mut llctop(&root, &j, &["knobs", "get", name]));
        assert_eq!((code, out.trim()), (0, want), "{name}: {err}");
    }
    let (code, out, _) = run(&mut llctop(&root, &j, &["knobs", "describe", "LB_MIN"]));
    assert_eq!(code, 0);
    assert!(out.contains("feature.LB_MIN"), "{out}");
    // The features file's own syntax, with and without a value.
    for (args, now) in [
        (&["knobs", "set", "TTWU_QUEUE", "off"][..], "NO_TTWU_QUEUE"),
        (&["knobs", "set", "TTWU_QUEUE"][..], "TTWU_QUEUE"),
        (&["knobs", "set", "NO_TTWU_QUEUE"][..], "NO_TTWU_QUEUE"),
    ] {
        let (code, out, err) = run(&mut llctop(&root, &j, args));
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.starts_with("feature.TTWU_QUEUE: "), "{args:?}: {out}");
        assert!(
            read(&root, features).split_whitespace().any(|w| w == now),
            "{args:?}: {}",
            read(&root, features)
        );
    }
    assert_eq!(run(&mut llctop(&root, &j, &["knobs", "restore"])).0, 0);
    // (The fixture's features file holds what was written last, where the kernel's would
    // list every feature: only TTWU_QUEUE is a feature of the fixture from here on.)
    assert!(
        read(&root, features)
            .split_whitespace()
            .any(|w| w == "TTWU_QUEUE")
    );
    // A typo: unknown, with the closest ids.
    let (code, _, err) = run(&mut llctop(
        &root,
        &j,
        &["knobs", "set", "feature.TTWU_QEUE", "off"],
    ));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("did you mean feature.TTWU_QUEUE?"), "{err}");
    let (code, _, err) = run(&mut llctop(
        &root,
        &j,
        &["knobs", "get", "relax_domain_levle"],
    ));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("did you mean relax_domain_level"), "{err}");
    // A value is needed for anything but a feature.
    let (code, _, err) = run(&mut llctop(&root, &j, &["knobs", "set", "numa_balancing"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a value is needed"), "{err}");
    // Profiles too.
    let (code, _, err) = run(&mut llctop(&root, &j, &["knobs", "apply", "newidle-in-lc"]));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("did you mean newidle-in-llc?"), "{err}");
    assert!(
        !read(&root, features).contains("NO_TTWU_QUEUE"),
        "refused: nothing written"
    );
}

/// Start `llctop live --set` in the background and wait until the change is visible.
fn live_with_change(root: &KernelRoot, j: &Path) -> std::process::Child {
    let child = llctop(
        root,
        j,
        &[
            "live",
            "--source",
            "procfs",
            "--interval",
            "200ms",
            "--set",
            "sched.migration_cost_ns=0",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let t = Instant::now();
    while read(root, "/sys/kernel/debug/sched/migration_cost_ns") != "0" {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "change never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn sigterm_restores_and_sigkill_leaves_the_journal_for_knobs_restore() {
    let (dir, root) = fixture();
    let j = dir.path().join("journal.json");
    let p = "/sys/kernel/debug/sched/migration_cost_ns";

    let child = live_with_change(&root, &j);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "stopped by SIGTERM: {err}");
    assert!(err.contains("restored sched.migration_cost_ns"), "{err}");
    assert_eq!(read(&root, p), "500000");

    let mut child = live_with_change(&root, &j);
    child.kill().unwrap(); // SIGKILL: no chance to restore
    child.wait().unwrap();
    assert_eq!(read(&root, p), "0", "still changed after the crash");
    let e = Journal::new(&j)
        .get(root.root(), "sched.migration_cost_ns")
        .unwrap();
    assert_eq!(e.unwrap().original, "500000");
    let (code, out, err) = run(&mut llctop(&root, &j, &["knobs", "restore"]));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("sched.migration_cost_ns: 0 -> 500000 (restored)"),
        "{out}"
    );
    assert_eq!(read(&root, p), "500000");

    // --keep-changes leaves it (journaled) on a clean exit.
    let mut c = llctop(
        &root,
        &j,
        &[
            "--keep-changes",
            "live",
            "--source",
            "procfs",
            "--duration",
            "0.2",
            "--interval",
            "100ms",
            "--set",
            "sched.migration_cost_ns=0",
        ],
    );
    let (code, _, err) = run(&mut c);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("kept sched.migration_cost_ns"), "{err}");
    assert_eq!(read(&root, p), "0");
    assert_eq!(run(&mut llctop(&root, &j, &["knobs", "restore"])).0, 0);
    assert_eq!(read(&root, p), "500000");
}

#[test]
fn knob_changes_are_recorded_as_knob_lines() {
    let (dir, root) = fixture();
    let j = dir.path().join("journal.json");
    let rec = dir.path().join("r.jsonl");
    let (code, _, err) = run(&mut llctop(
        &root,
        &j,
        &[
            "record",
            "-o",
            rec.to_str().unwrap(),
            "--source",
            "procfs",
            "--duration",
            "0.2",
            "--interval",
            "100ms",
            "--profile",
            "newidle-in-llc",
        ],
    ));
    assert_eq!(code, 0, "{err}");
    let r = llctop::record::reader::open(&rec).unwrap();
    let k: Vec<(KnobAction, &str, &str, &str)> = r
        .knobs
        .iter()
        .map(|e| (e.action, e.id.as_str(), e.old.as_str(), e.new.as_str()))
        .collect();
    assert_eq!(
        k,
        vec![
            (KnobAction::Set, "relax_domain_level", "-1", "3"),
            (KnobAction::Restore, "relax_domain_level", "3", "-1"),
        ]
    );
    assert_eq!(r.knobs[0].label.as_deref(), Some("newidle-in-llc"));
    assert!(r.knobs[0].unix_ns >= r.header.start_unix_ns);
    let report = llctop::record::report::render(&r);
    assert!(
        report.contains("Knob changes (seconds from the start)"),
        "{report}"
    );
    assert!(
        report.contains("Set relax_domain_level: -1 -> 3 (read back 3) [newidle-in-llc]"),
        "{report}"
    );
}

// ---- relax_domain_level without a runtime interface; the lockdown fallback ----

#[test]
fn relax_domain_level_without_an_interface_shows_the_boot_value() {
    let (dir, root) = fixture();
    let d = dir.path();
    fs::remove_dir_all(d.join("sys/fs/cpuset")).unwrap();
    put(
        d,
        "proc/self/mountinfo",
        "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
    );
    put(d, "proc/cmdline", "quiet relax_domain_level=2\n");
    let reg = Registry::discover(&root, None);
    let k = reg.get("relax_domain_level").unwrap();
    assert_eq!(k.value.as_deref(), Some("2"));
    match &k.access {
        Access::ReadOnly(r) => assert!(
            r.contains("no runtime interface") && r.contains("cgroup v2"),
            "{r}"
        ),
        Access::Writable => panic!("must be read-only"),
    }
}

/// Raw BTF with one anonymous enum of `__SCHED_FEAT_*` enumerators (and `__SCHED_FEAT_NR`).
fn btf_with_features(names: &[&str]) -> Vec<u8> {
    let mut strs = vec![0u8];
    let mut members = Vec::new();
    let all: Vec<String> = names
        .iter()
        .map(|n| format!("__SCHED_FEAT_{n}"))
        .chain(std::iter::once("__SCHED_FEAT_NR".to_string()))
        .collect();
    for (i, n) in all.iter().enumerate() {
        members.push((strs.len() as u32, i as i32));
        strs.extend_from_slice(n.as_bytes());
        strs.push(0);
    }
    let mut types = Vec::new();
    types.extend_from_slice(&0u32.to_le_bytes()); // anonymous
    types.extend_from_slice(&((6u32 << 24) | members.len() as u32).to_le_bytes()); // ENUM
    types.extend_from_slice(&4u32.to_le_bytes()); // size
    for (off, val) in members {
        types.extend_from_slice(&off.to_le_bytes());
        types.extend_from_slice(&val.to_le_bytes());
    }
    let mut out = Vec::new();
    out.extend_from_slice(&0xeb9fu16.to_le_bytes());
    out.push(1); // version
    out.push(0); // flags
    out.extend_from_slice(&24u32.to_le_bytes()); // hdr_len
    out.extend_from_slice(&0u32.to_le_bytes()); // type_off
    out.extend_from_slice(&(types.len() as u32).to_le_bytes());
    out.extend_from_slice(&(types.len() as u32).to_le_bytes()); // str_off
    out.extend_from_slice(&(strs.len() as u32).to_le_bytes());
    out.extend_from_slice(&types);
    out.extend_from_slice(&strs);
    out
}

#[test]
fn features_decode_from_sched_debug_and_btf_when_the_file_refuses() {
    let (dir, root) = fixture();
    let d = dir.path();
    // The features file cannot be opened (a directory stands in for lockdown's EPERM,
    // which root cannot be given on a plain file; the EPERM wording is unit-tested and
    // checked live on a locked-down kernel below).
    let f = d.join("sys/kernel/debug/sched/features");
    fs::remove_file(&f).unwrap();
    fs::create_dir(&f).unwrap();
    put(
        d,
        "sys/kernel/debug/sched/debug",
        "Sched Debug Version: v0.11, 6.18.44 #1\nsysctl_sched\n  .sysctl_sched_base_slice                 : 1.400000\n  .sysctl_sched_features                   : 13\n",
    );
    fs::create_dir_all(d.join("sys/kernel/btf")).unwrap();
    fs::write(
        d.join("sys/kernel/btf/vmlinux"),
        btf_with_features(&["PLACE_LAG", "NEXT_BUDDY", "TTWU_QUEUE", "SIS_UTIL"]),
    )
    .unwrap();
    let reg = Registry::discover(&root, None);
    let states: Vec<(String, Option<String>)> = reg
        .knobs
        .iter()
        .filter(|k| k.id.starts_with("feature."))
        .map(|k| (k.id.clone(), k.value.clone()))
        .collect();
    // 13 = 0b1101: bits 0, 2, 3.
    assert_eq!(
        states,
        vec![
            ("feature.PLACE_LAG".into(), Some("on".into())),
            ("feature.NEXT_BUDDY".into(), Some("off".into())),
            ("feature.TTWU_QUEUE".into(), Some("on".into())),
            ("feature.SIS_UTIL".into(), Some("on".into())),
        ]
    );
    let k = reg.get("feature.NEXT_BUDDY").unwrap();
    assert!(!k.access.is_writable());
    assert!(
        k.value_source
            .as_deref()
            .unwrap()
            .contains("sysctl_sched_features")
    );

    // A mask with bits the BTF names do not cover: no values at all rather than wrong ones.
    put(
        d,
        "sys/kernel/debug/sched/debug",
        "  .sysctl_sched_features                   : 99\n",
    );
    let reg = Registry::discover(&root, None);
    assert!(reg.knobs.iter().all(|k| !k.id.starts_with("feature.")));
    let m = reg
        .missing
        .iter()
        .find(|m| m.what == "sched features")
        .unwrap();
    assert!(m.reason.contains("bits beyond"), "{}", m.reason);
}

#[test]
#[ignore = "needs root"]
fn live_kernel_lockdown_lists_features_read_only_with_the_reason() {
    // Reading /sys/kernel/debug needs root.
    common::require_root();
    let debug = common::sched_debugfs();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_llctop"))
        .args(["--read-only", "--journal"])
        .arg(dir.path().join("j.json"))
        .args(["knobs", "list", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let feats: Vec<&serde_json::Value> = v["knobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["id"].as_str().unwrap().starts_with("feature."))
        .collect();
    let locked = fs::File::open(debug.join("features"))
        .err()
        .and_then(|e| e.raw_os_error())
        == Some(libc::EPERM);
    println!(
        "live kernel: {} features, lockdown: {locked}, e.g. {}",
        feats.len(),
        feats.first().map(|f| f.to_string()).unwrap_or_default()
    );
    assert!(!feats.is_empty(), "the kernel lists features");
    if locked {
        for f in &feats {
            assert_eq!(f["access"], "read_only", "{f}");
            assert!(
                f["reason"].as_str().unwrap().contains("kernel lockdown"),
                "{f}"
            );
            let val = f["value"].as_str().unwrap();
            assert!(val == "on" || val == "off", "{f}");
        }
        // The decoded states agree with sysctl_sched_features bit by bit.
        let mask = llctop::knobs::features::sysctl_features(
            &fs::read_to_string(debug.join("debug")).unwrap(),
        )
        .unwrap();
        for (i, f) in feats.iter().enumerate() {
            assert_eq!(f["value"] == "on", mask & (1 << i) != 0, "{f}");
        }
        // The features file's syntax reaches the feature, refused for the lockdown (5),
        // not as an unknown knob (3).
        let name = feats[0]["id"]
            .as_str()
            .unwrap()
            .trim_start_matches("feature.");
        let out = Command::new(env!("CARGO_BIN_EXE_llctop"))
            .arg("--journal")
            .arg(dir.path().join("j.json"))
            .args(["knobs", "set", &format!("NO_{name}")])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{err}");
        assert!(err.contains("lockdown"), "{err}");
    } else {
        let text = fs::read_to_string(debug.join("features")).unwrap();
        assert_eq!(feats.len(), text.split_whitespace().count());
    }
}

#[test]
fn values_changed_behind_llctop_are_seen_at_the_next_refresh() {
    let (dir, root) = fixture();
    let topo = llctop::topology::discover(&root).unwrap();
    let mut reg = Registry::discover(&root, Some(&topo));
    assert!(reg.refresh_values().is_empty(), "nothing changed yet");
    let d = dir.path();
    put(d, "proc/sys/kernel/numa_balancing", "0\n");
    let features = read(&root, "/sys/kernel/debug/sched/features");
    put(
        d,
        "sys/kernel/debug/sched/features",
        &features.replace("TTWU_QUEUE", "NO_TTWU_QUEUE"),
    );
    fs::remove_file(d.join("sys/kernel/debug/sched/nr_migrate")).unwrap();
    let mut changed = reg.refresh_values();
    changed.sort();
    assert_eq!(
        changed,
        ["feature.TTWU_QUEUE", "numa_balancing", "sched.nr_migrate"]
    );
    let v = |id: &str| reg.get(id).and_then(|k| k.value.clone());
    assert_eq!(v("numa_balancing").as_deref(), Some("0"));
    assert_eq!(v("feature.TTWU_QUEUE").as_deref(), Some("off"));
    let gone = reg.get("sched.nr_migrate").unwrap();
    assert_eq!(gone.value, None);
    assert!(
        gone.value_reason
            .as_deref()
            .is_some_and(|r| r.contains("ENOENT")),
        "{gone:?}"
    );
}

/// `llc_balancing/enabled` reads 1 where the kernel cannot act on it: the knobs say so,
/// by the kernel's rule over the domain partitions (the lab's 2 LLCs of 2 CPUs).
#[test]
fn llc_balancing_knobs_say_when_cache_aware_scheduling_does_not_run() {
    let (dir, root) = fixture();
    let topo = llctop::topology::discover(&root).unwrap();
    let effect = |root: &KernelRoot, id: &str| {
        Registry::discover(root, Some(&topo))
            .get(id)
            .unwrap()
            .not_in_effect
            .clone()
    };
    assert_eq!(effect(&root, "llc_balancing.imb_pct"), None, "runs");
    // isolcpus=2-3: the top-level partition is cpus 0-1, one LLC.
    put(dir.path(), "sys/devices/system/cpu/isolated", "2-3\n");
    let why = effect(&root, "llc_balancing.enabled").unwrap_or_default();
    assert!(
        why.starts_with("enabled but not active: no sched-domain partition spans two LLCs")
            && why.contains("(partitions 0-1)"),
        "{why}"
    );
    assert_eq!(
        effect(&root, "llc_balancing.imb_pct").as_deref(),
        Some(why.as_str())
    );
    // Asked off: the other knobs steer nothing; `enabled` says so by its value.
    put(dir.path(), "sys/devices/system/cpu/isolated", "\n");
    put(
        dir.path(),
        "sys/kernel/debug/sched/llc_balancing/enabled",
        "0\n",
    );
    assert_eq!(effect(&root, "llc_balancing.enabled"), None);
    assert!(
        effect(&root, "llc_balancing.imb_pct")
            .is_some_and(|w| w.contains("cache-aware scheduling is off")),
    );
}
