//! Mutation tests (issue "Reliability"): real recordings from the seed lab
//! (tests/fixtures/recordings/) and a real sysfs tree with /proc files, mutated thousands
//! of times by a seeded generator — extreme numbers, wrong types, missing keys, repeated,
//! dropped and shuffled lines, cut and flipped bytes, absurd CPU lists — and read by every
//! consumer (reader, report, findings, diff, replay's views; topology, the procfs source).
//! In the debug build (overflow checks on): no panic, no case over its time limit. A
//! failure prints the seed and the mutation, so it can be replayed.

use crate::common;

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

const RECORDING_CASES: usize = 10_000;
const TREE_CASES: usize = 1_000;
/// Longer than any case takes on a loaded machine; a case past it is a hang.
const CASE_LIMIT: Duration = Duration::from_secs(20);

fn recordings() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let mut v: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("fixture recordings")
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).expect("read"),
            )
        })
        .collect();
    v.sort();
    assert!(v.len() >= 4, "{v:?}");
    v
}

const NUMBERS: &[&str] = &[
    "18446744073709551615",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967295",
    "0",
    "-1",
    "1e308",
    "-1e308",
    "0.5",
    "1.0000001",
    "123456789012345678",
];

/// Every leaf (and container) of `v` as a JSON pointer.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                pointers(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate().take(32) {
                pointers(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// One mutation of a recording's text; returns the text and what was done.
fn mutate(text: &str, rng: &mut ChaCha8Rng) -> (Vec<u8>, String) {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let roll = rng.gen_range(0..100);
    if roll < 12 {
        // One field at an extreme in every line: sums over the recording meet it
        // hundreds of times.
        let keys = [
            "cross_llc",
            "cross_node",
            "cpu_time_ns",
            "rq_wait_ns",
            "count",
            "gained",
            "numa_pages_migrated",
            "ctx_switches",
            "interval_ns",
            "mono_ns",
            "migrations",
            "numa_hint_faults",
            "other_node",
            "seq",
            "cycles",
            "instructions",
        ];
        let k = keys[rng.gen_range(0..keys.len())];
        let n = NUMBERS[rng.gen_range(0..NUMBERS.len())];
        let re = format!("\"{k}\":");
        let out: Vec<String> = lines
            .iter()
            .map(|l| {
                let mut o = String::new();
                let mut rest = l.as_str();
                while let Some(i) = rest.find(&re) {
                    o.push_str(&rest[..i + re.len()]);
                    rest = &rest[i + re.len()..];
                    let end = rest.find([',', '}', ']']).unwrap_or(rest.len());
                    o.push_str(n);
                    rest = &rest[end..];
                }
                o.push_str(rest);
                o
            })
            .collect();
        return (join(&out), format!("every {k} = {n}"));
    }
    if roll < 70 {
        // A value inside one line.
        let i = rng.gen_range(0..lines.len());
        let Ok(mut v) = serde_json::from_str::<Value>(&lines[i]) else {
            return (text.as_bytes().to_vec(), "unparsable line left".into());
        };
        let mut ps = Vec::new();
        pointers(&v, String::new(), &mut ps);
        let p = ps[rng.gen_range(0..ps.len())].clone();
        let what;
        let new: Value = match rng.gen_range(0..8) {
            0..=2 => {
                let n = NUMBERS[rng.gen_range(0..NUMBERS.len())];
                what = format!("{p} = {n}");
                serde_json::from_str(n).unwrap_or(Value::Null)
            }
            3 => {
                what = format!("{p} = null");
                Value::Null
            }
            4 => {
                what = format!("{p} = \"\"/long string");
                Value::String(if rng.gen_bool(0.5) {
                    String::new()
                } else {
                    "x/../\u{0}".repeat(2000)
                })
            }
            5 => {
                what = format!("{p} = [] or {{}}");
                if rng.gen_bool(0.5) {
                    Value::Array(vec![])
                } else {
                    Value::Object(Default::default())
                }
            }
            6 => {
                // Remove the key from its object (or the element from its array).
                what = format!("remove {p}");
                if let Some((parent, key)) = p.rsplit_once('/') {
                    match v.pointer_mut(parent) {
                        Some(Value::Object(m)) => {
                            m.remove(&key.replace("~1", "/").replace("~0", "~"));
                        }
                        Some(Value::Array(a)) => {
                            if let Ok(k) = key.parse::<usize>()
                                && k < a.len()
                            {
                                a.remove(k);
                            }
                        }
                        _ => {}
                    }
                }
                lines[i] = v.to_string();
                return (join(&lines), what);
            }
            _ => {
                // An array grown by repeating its first element.
                what = format!("{p} repeated");
                match v.pointer(&p) {
                    Some(Value::Array(a)) if !a.is_empty() => {
                        Value::Array(vec![a[0].clone(); rng.gen_range(2..300)])
                    }
                    Some(x) => x.clone(),
                    None => Value::Null,
                }
            }
        };
        if p.is_empty() {
            v = new;
        } else if let Some(slot) = v.pointer_mut(&p) {
            *slot = new;
        }
        lines[i] = v.to_string();
        (join(&lines), format!("line {}: {what}", i + 1))
    } else if roll < 85 {
        let i = rng.gen_range(0..lines.len());
        let j = rng.gen_range(0..lines.len());
        match rng.gen_range(0..5) {
            0 => {
                let l = lines[i].clone();
                lines.insert(i, l);
                (join(&lines), format!("line {} repeated", i + 1))
            }
            1 => {
                lines.remove(i);
                (join(&lines), format!("line {} dropped", i + 1))
            }
            2 => {
                lines.swap(i, j);
                (
                    join(&lines),
                    format!("lines {} and {} swapped", i + 1, j + 1),
                )
            }
            3 => {
                lines.insert(i, "{\"type\":\"snapshot\"".into());
                (join(&lines), format!("a cut line before {}", i + 1))
            }
            _ => {
                lines.truncate(i);
                (join(&lines), format!("only {i} lines"))
            }
        }
    } else {
        let mut b = join(&lines);
        let at = rng.gen_range(0..b.len());
        match rng.gen_range(0..3) {
            0 => {
                b.truncate(at);
                (b, format!("cut at byte {at}"))
            }
            1 => {
                b[at] = rng.r#gen();
                (b, format!("byte {at} changed"))
            }
            _ => {
                let junk: Vec<u8> = (0..rng.gen_range(1..64)).map(|_| rng.r#gen()).collect();
                b.splice(at..at, junk);
                (b, format!("bytes inserted at {at}"))
            }
        }
    }
}

fn join(lines: &[String]) -> Vec<u8> {
    let mut s = lines.join("\n");
    s.push('\n');
    s.into_bytes()
}

/// Everything that reads a recording, on one.
fn consume(bytes: &[u8], draw: bool) {
    let Ok(rec) = llctop::record::reader::parse(Path::new("m.jsonl"), Cursor::new(bytes.to_vec()))
    else {
        return;
    };
    let _ = llctop::record::report::render(&rec);
    let _ = llctop::record::diff::render(&rec, &rec);
    if rec.experiment.is_some() {
        let _ = llctop::record::report::compare(&rec, false);
    }
    if draw && !rec.snapshots.is_empty() {
        let n = rec.snapshots.len();
        let mut app = llctop::tui::App::replay(rec, "m", vec![]);
        for pos in [0, n - 1] {
            app.pos = Some(pos);
            for v in llctop::tui::app::ViewId::ALL {
                app.view = v;
                let _ = llctop::tui::render_to_text(&app, 100, 30);
            }
        }
    }
}

thread_local! {
    /// Where the last panic came from in llctop's own code (from its backtrace).
    static WHERE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// A panic hook that keeps quiet and remembers the first llctop frame.
fn quiet_hook() {
    std::panic::set_hook(Box::new(|info| {
        let bt = std::backtrace::Backtrace::force_capture().to_string();
        let at = bt
            .lines()
            .find(|l| l.contains("/src/") && !l.contains("/rustc/") && !l.contains(".cargo"))
            .unwrap_or("")
            .trim()
            .to_string();
        let loc = info.location().map(|l| l.to_string()).unwrap_or_default();
        WHERE.with(|w| *w.borrow_mut() = format!("{loc} via {at}"));
    }));
}

fn last_where() -> String {
    WHERE.with(|w| w.borrow().clone())
}

/// Run `cases` in a worker thread, each under [`CASE_LIMIT`]; panics are caught per case
/// and listed with their mutation.
fn run_cases(
    name: &str,
    cases: usize,
    case: impl Fn(usize, &mut String) + Send + 'static,
) -> Vec<String> {
    let (tx, rx) = mpsc::channel::<(usize, String, Option<String>)>();
    std::thread::spawn(move || {
        for i in 0..cases {
            // The case says what it is before it runs the code under test.
            let mut desc = String::new();
            let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                case(i, &mut desc);
            }));
            let err = res.err().map(|p| {
                let m = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                format!("{m} [{}]", last_where())
            });
            if tx.send((i, desc, err)).is_err() {
                return;
            }
        }
    });
    let mut failures = Vec::new();
    for i in 0..cases {
        match rx.recv_timeout(CASE_LIMIT) {
            Ok((_, _, None)) => {}
            Ok((n, desc, Some(e))) => failures.push(format!("{name} case {n}: {desc}: {e}")),
            Err(_) => panic!("{name} case {i} did not finish in {CASE_LIMIT:?} (a hang)"),
        }
    }
    failures
}

/// No case failed, or the first of those that did.
fn assert_none(failures: &[String], total: usize, what: &str) {
    assert!(
        failures.is_empty(),
        "{} of {total} {what} panicked, e.g.:\n{}",
        failures.len(),
        failures[..failures.len().min(15)].join("\n")
    );
}

#[test]
fn ten_thousand_mutated_recordings_read_without_a_panic() {
    let recs = recordings();
    // The panics are collected with where they came from.
    quiet_hook();
    let failures = run_cases("recording", RECORDING_CASES, move |i, desc| {
        let mut rng = ChaCha8Rng::seed_from_u64(i as u64);
        let (name, text) = &recs[i % recs.len()];
        let (bytes, what) = mutate(text, &mut rng);
        *desc = format!("{name} seed {i}: {what}");
        consume(&bytes, i % 25 == 0);
    });
    let _ = std::panic::take_hook();
    assert_none(&failures, RECORDING_CASES, "mutated recordings");
}

/// Contents a sysfs or procfs file may be given.
fn file_mutation(orig: &str, rng: &mut ChaCha8Rng) -> (String, String) {
    let pick = [
        "4294967295",
        "0-4294967295",
        "0-100000000",
        "",
        "\n",
        "-1",
        "18446744073709551615K",
        "99999999999999999999",
        "0-3,2-5:0",
        "3-1",
        "garbage \u{0} \u{fffd}",
        "cpu0 1 2 3\ncpu0 1 2 3",
        "version 99",
        "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38",
    ];
    match rng.gen_range(0..3) {
        0 => {
            let p = pick[rng.gen_range(0..pick.len())];
            (format!("{p}\n"), format!("= {p:?}"))
        }
        1 => {
            // A number in the file replaced by an extreme one.
            let mut words: Vec<String> = orig.split(' ').map(str::to_string).collect();
            let i = rng.gen_range(0..words.len());
            let n = NUMBERS[rng.gen_range(0..NUMBERS.len())];
            words[i] = n.into();
            (words.join(" "), format!("word {i} = {n}"))
        }
        _ => {
            let cut = rng.gen_range(0..=orig.len());
            let cut = (0..=cut)
                .rev()
                .find(|&c| orig.is_char_boundary(c))
                .unwrap_or(0);
            (orig[..cut].to_string(), format!("cut at {cut}"))
        }
    }
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn a_thousand_mutated_sysfs_and_procfs_trees_read_without_a_panic() {
    let (dir, root, _) = common::writable_root("qemu-lab-2s2llc");
    let d = dir.path().to_path_buf();
    let schedstat = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/schedstat/v17-debian-6.18.15-2s2llc.txt"),
    )
    .expect("schedstat fixture");
    common::put(&d, "proc/schedstat", &schedstat);
    common::put(
        &d,
        "proc/stat",
        "cpu  100 0 50 1000 5 0 1 0 0 0\ncpu0 25 0 12 250 1 0 0 0 0 0\ncpu1 25 0 12 250 1 0 0 0 0 0\ncpu2 25 0 13 250 1 0 1 0 0 0\ncpu3 25 0 13 250 2 0 0 0 0 0\nctxt 12345\nbtime 1\nprocesses 100\nprocs_running 2\nprocs_blocked 0\n",
    );
    common::put(
        &d,
        "proc/vmstat",
        "numa_hit 10\nnuma_pages_migrated 3\nnuma_hint_faults 4\n",
    );
    let mut files = Vec::new();
    files_under(&d.join("sys/devices/system"), &mut files);
    files.push(d.join("proc/schedstat"));
    files.push(d.join("proc/stat"));
    files.push(d.join("proc/vmstat"));
    let files: Vec<PathBuf> = files
        .into_iter()
        .filter(|p| {
            !p.to_string_lossy().contains("/power/") && !p.to_string_lossy().contains("uevent")
        })
        .collect();
    assert!(files.len() > 50, "{}", files.len());
    quiet_hook();
    let failures = run_cases("tree", TREE_CASES, move |i, desc| {
        let mut rng = ChaCha8Rng::seed_from_u64(1_000_000 + i as u64);
        let f = &files[rng.gen_range(0..files.len())];
        let orig = std::fs::read_to_string(f).unwrap_or_default();
        let (text, what) = file_mutation(&orig, &mut rng);
        *desc = format!(
            "seed {}: {} {what}",
            1_000_000 + i,
            f.strip_prefix(&d).unwrap_or(f).display()
        );
        let _ = std::fs::write(f, &text);
        // The file is put back whatever happens (a panic too).
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if let Ok(topo) = llctop::topology::discover(&root) {
                let _ = llctop::topology::render::tree(&topo);
                let src = llctop::source::procfs::ProcfsSource::new(root.clone(), 8);
                let mut c = llctop::collect::Collector::new(&root, topo, vec![Box::new(src)]);
                c.baseline();
                let _ = c.tick();
            }
        }));
        let _ = std::fs::write(f, &orig);
        if let Err(p) = r {
            std::panic::resume_unwind(p);
        }
    });
    let _ = std::panic::take_hook();
    drop(dir);
    assert_none(&failures, TREE_CASES, "mutated trees");
}
