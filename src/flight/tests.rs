//! The recorder over a temporary directory: segments sealed, dropped for age and size, a
//! dump read back as an ordinary recording, a start after a kill, a planted link, the
//! automatic dump.

use super::*;
use crate::findings::advisor::FindingLine;
use crate::findings::{Finding, Kind};
use crate::topology::Topology;

const S: u64 = 1_000_000_000;
/// A wall clock for the snapshots' ends.
const T0: u64 = 1_800_000_000;

fn topo() -> Topology {
    crate::topology::synthetic(1, 2, 2)
}

fn header(boot: &str) -> Header {
    let mut h = crate::record::tests_header();
    h.topology = topo();
    h.boot_id = Some(boot.into());
    h
}

fn settings(dir: &std::path::Path, keep_s: u64, max: u64) -> Settings {
    Settings {
        dir: dir.to_path_buf(),
        keep: Duration::from_secs(keep_s),
        max_size: max,
        dump_after: Duration::from_secs(3),
        auto_per_hour: 2,
    }
}

fn tick(seq: u64) -> Tick {
    let mut s = crate::findings::testing::snap(&topo(), seq, 0.5);
    s.time.unix_ns = (T0 + seq + 1) * S;
    Tick::of(s)
}

fn open(dir: &std::path::Path, keep_s: u64, max: u64, boot: &str) -> (Recorder, Found) {
    Recorder::open(
        settings(dir, keep_s, max),
        header(boot),
        Duration::from_secs(1),
    )
    .unwrap()
}

fn segments(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("seg-"))
        .collect();
    v.sort();
    v
}

fn seqs(path: &std::path::Path) -> Vec<u64> {
    let rec = crate::record::reader::open(path).unwrap();
    rec.snapshots.iter().map(|s| s.seq).collect()
}

#[test]
fn history_is_kept_in_whole_segments_and_dropped_past_keep() {
    let d = tempfile::tempdir().unwrap();
    let (mut r, found) = open(d.path(), 16, 256 << 20, "b1");
    assert_eq!(found.segments, 0);
    for seq in 0..40 {
        assert!(r.tick(&tick(seq)).is_empty());
    }
    // Segments of 2 s (16 s / 8): the last 16 s and the one being written.
    let segs = segments(d.path());
    assert!((8..=10).contains(&segs.len()), "{segs:?}");
    let st = r.status();
    assert_eq!(st.state, State::Recording);
    assert!(st.oldest_seconds <= 16.0 + 2.0 + 1.0, "{st:?}");
    assert!(st.oldest_seconds >= 16.0, "{st:?}");
    let path = r.dump("signal").unwrap();
    assert!(path.starts_with(d.path().join("dumps")));
    let got = seqs(&path);
    // Contiguous, ending with the last tick.
    assert_eq!(got.last(), Some(&39));
    assert!(got.windows(2).all(|w| w[1] == w[0] + 1), "{got:?}");
    assert!(got.len() >= 16, "{got:?}");
    assert_eq!(r.status().dumps.get("signal"), Some(&1));
}

#[test]
fn the_size_cap_drops_the_oldest() {
    let d = tempfile::tempdir().unwrap();
    // 512 KiB: segments of at most 64 KiB; rows of random hex compress to about half.
    let cap = 512 << 10;
    let (mut r, _) = open(d.path(), 3600, cap, "b1");
    for seq in 0..100 {
        let mut t = tick(seq);
        t.snap.processes = Some(crate::snapshot::ProcessTable {
            rows: (0..30u64)
                .map(|i| {
                    // 480 hex digits a row.
                    let mut x = (seq << 20 | i).wrapping_mul(6_364_136_223_846_793_005) | 1;
                    let comm: String = (0..30)
                        .map(|_| {
                            x = x
                                .wrapping_mul(6_364_136_223_846_793_005)
                                .wrapping_add(1_442_695_040_888_963_407);
                            format!("{x:016x}")
                        })
                        .collect();
                    crate::snapshot::ProcessStats {
                        pid: i as u32,
                        comm,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        });
        r.tick(&t);
        let on_disk: u64 = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum();
        assert!(on_disk <= cap, "{on_disk} bytes at {seq}");
    }
    assert!(r.status().bytes <= cap);
    let got = seqs(&r.dump("http").unwrap());
    assert_eq!(got.last(), Some(&99));
    assert!(got.windows(2).all(|w| w[1] == w[0] + 1));
    assert!(*got.first().unwrap() > 0, "the oldest were dropped");
}

#[test]
fn a_start_drops_a_torn_part_and_numbers_go_on_in_the_same_boot() {
    let d = tempfile::tempdir().unwrap();
    let (mut r, _) = open(d.path(), 16, 256 << 20, "b1");
    for seq in 0..9 {
        r.tick(&tick(seq));
    }
    // Killed: the segment being written stays a part; and a whole segment torn by hand.
    std::mem::forget(r);
    let segs = segments(d.path());
    let last = segs.last().unwrap().clone();
    let bytes = std::fs::read(d.path().join(&last)).unwrap();
    std::fs::write(d.path().join(&last), &bytes[..bytes.len() - 9]).unwrap();
    let parts: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".part")
        })
        .collect();
    assert_eq!(parts.len(), 1);
    let (mut r, found) = open(d.path(), 16, 256 << 20, "b1");
    assert_eq!(found.dropped.len(), 2, "{:?}", found.dropped);
    assert!(found.dropped.iter().any(|m| m.contains("being written")));
    assert!(found.dropped.iter().any(|m| m.contains("not whole")));
    assert_eq!(found.segments, segs.len() - 1);
    let go_on = found.last_seq.unwrap();
    assert!(go_on < 8);
    for seq in go_on + 1..go_on + 6 {
        r.tick(&tick(seq + 100));
    }
    // Another boot's segments are kept but not dumped with this one's.
    drop(r);
    let (mut r, found) = open(d.path(), 16, 256 << 20, "b2");
    assert_eq!(found.last_seq, None, "another boot: numbers start again");
    r.tick(&tick(500));
    let got = seqs(&r.dump("signal").unwrap());
    assert_eq!(got, vec![500]);
}

#[test]
fn a_link_planted_at_the_next_segment_is_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let victim = d.path().join("victim");
    std::fs::write(&victim, "keep me").unwrap();
    let dir = d.path().join("fr");
    let (mut r, _) = open(&dir, 16, 256 << 20, "b1");
    std::os::unix::fs::symlink(&victim, dir.join(segment::part_name(0))).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join(segment::part_name(1))).unwrap();
    let mut said = Vec::new();
    for seq in 0..8 {
        said.extend(r.tick(&tick(seq)));
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    assert!(said.iter().any(|l| l.contains("File exists")), "{said:?}");
    assert_eq!(r.status().state, State::Recording, "recording again");
    assert!(!segments(&dir).is_empty());
}

#[test]
fn a_directory_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("open");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = Recorder::open(
        settings(&dir, 16, 1 << 20),
        header("b"),
        Duration::from_secs(1),
    )
    .err()
    .unwrap();
    assert!(e.contains("no one else may write"), "{e}");
    let link = d.path().join("link");
    std::os::unix::fs::symlink(d.path(), &link).unwrap();
    assert!(
        Recorder::open(
            settings(&link, 16, 1 << 20),
            header("b"),
            Duration::from_secs(1)
        )
        .is_err()
    );
}

#[test]
fn a_warning_dumps_by_itself_after_dump_after_at_most_so_many_an_hour() {
    let d = tempfile::tempdir().unwrap();
    let (mut r, _) = open(d.path(), 60, 256 << 20, "b1");
    let fire = |t: &mut Tick, sev: Severity| {
        let f = Finding {
            kind: Kind::PileUp,
            key: "pid 7".into(),
            severity: sev,
            summary: "x".into(),
            facts: Vec::new(),
            cpus: Vec::new(),
            llcs: Vec::new(),
            pids: Vec::new(),
            first_seq: t.snap.seq,
            last_seq: t.snap.seq,
            suggestion: None,
            cost: None,
        };
        t.lines.push(FindingLine {
            state: Fired::Fired,
            seq: t.snap.seq,
            finding: f,
        });
    };
    let mut dumps = Vec::new();
    for seq in 0..40 {
        let mut t = tick(seq);
        if seq == 10 {
            fire(&mut t, Severity::Info);
        }
        if [12, 13, 20, 30].contains(&seq) {
            fire(&mut t, Severity::Warning);
        }
        for l in r.tick(&t) {
            dumps.push((seq, l));
        }
    }
    // Info: nothing. 12 fires (13 while pending: nothing), dumped 3 s later; 20 fires, the
    // second of the hour; 30: past the limit of 2.
    let at: Vec<u64> = dumps.iter().map(|d| d.0).collect();
    assert_eq!(at, vec![15, 23], "{dumps:?}");
    assert!(dumps[0].1.contains("warning-pile_up"), "{}", dumps[0].1);
    assert_eq!(r.status().dumps.get("warning"), Some(&2));
    let names: Vec<String> = std::fs::read_dir(d.path().join("dumps"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2);
    assert!(
        names.iter().all(|n| n.contains("warning-pile_up")),
        "{names:?}"
    );
    // The first holds the history before the finding and the 3 s after.
    let mut first: Vec<_> = names.clone();
    first.sort();
    let got = seqs(&d.path().join("dumps").join(&first[0]));
    assert_eq!((got[0], *got.last().unwrap()), (0, 15));
}

#[test]
fn settings_come_from_the_command_line_then_the_file_then_the_defaults() {
    let file = Section {
        dir: Some("/var/lib/llctop/flight".into()),
        keep: Some("10m".into()),
        max_size: Some("64MiB".into()),
        ..Section::default()
    };
    let plan = Plan {
        keep: Some(Duration::from_secs(60)),
        ..Plan::default()
    };
    let s = plan.resolve(&file).unwrap().unwrap();
    assert_eq!(s.dir, PathBuf::from("/var/lib/llctop/flight"));
    assert_eq!(s.keep, Duration::from_secs(60), "the command line wins");
    assert_eq!(s.max_size, 64 << 20, "then the file");
    assert_eq!(s.dump_after, Duration::from_secs(30), "then the default");
    assert_eq!(s.auto_per_hour, 4);
    assert_eq!(Plan::default().resolve(&Section::default()).unwrap(), None);
    let alone = Plan {
        keep: Some(Duration::from_secs(60)),
        ..Plan::default()
    };
    assert!(
        alone
            .resolve(&Section::default())
            .unwrap_err()
            .contains("need --flight-recorder")
    );
    let bad = Section {
        dir: Some("/x".into()),
        max_size: Some("12".into()),
        ..Section::default()
    };
    assert!(
        Plan::default()
            .resolve(&bad)
            .unwrap_err()
            .contains("256KiB")
    );
    let bad = Section {
        dir: Some("/x".into()),
        keep: Some("soon".into()),
        ..Section::default()
    };
    assert!(
        Plan::default()
            .resolve(&bad)
            .unwrap_err()
            .contains("[flight_recorder] keep")
    );
}
