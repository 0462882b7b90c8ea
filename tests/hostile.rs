//! Reliability II (issue 32): what a hostile or unlucky environment does to llctop.
//! - text output: a recording whose process names, cgroups, knob values, labels, host
//!   and experiment values hold every control character prints none of them raw in
//!   `report`, `report --compare` or `diff`, and no embedded newline starts a line;
//!
//! (the other items have their tests beside this one, each named after what it proves).

mod common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_llctop");

/// Every character a terminal acts on, a bidi override, and a newline that would start
/// a line of its own.
fn evil() -> String {
    let mut s: String = (1u32..0x20)
        .chain([0x7f])
        .chain(0x80..0xa0)
        .filter_map(char::from_u32)
        .collect();
    s.push_str("\u{202e}\x1b]2;PWN\x07\x1b[2J\nFAKE LINE");
    s
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/recordings")
            .join(name),
    )
    .unwrap()
}

/// Every string under a key that comes from outside llctop (a process, the kernel, an
/// operator) gets `evil` in front; the experiment's values and the windows' stay
/// consistent with each other.
fn poison(v: &mut Value, evil: &str) {
    const KEYS: [&str; 11] = [
        "comm",
        "cgroup",
        "old",
        "new",
        "read_back",
        "label",
        "host",
        "kernel",
        "a",
        "b",
        "value",
    ];
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match x {
                    Value::String(s) if KEYS.contains(&k.as_str()) => *s = format!("{evil}{s}"),
                    _ => poison(x, evil),
                }
            }
            // Knob values at the start (`knob_values`): every value poisoned.
            if m.get("type").and_then(Value::as_str) == Some("knob_values") {
                for x in m.values_mut() {
                    if let Value::Object(vals) = x {
                        for val in vals.values_mut() {
                            if let Value::String(s) = val {
                                *s = format!("{evil}{s}");
                            }
                        }
                    }
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| poison(x, evil)),
        _ => {}
    }
}

fn poisoned(name: &str, dir: &Path) -> std::path::PathBuf {
    let e = evil();
    let mut out = String::new();
    for line in fixture(name).lines() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        poison(&mut v, &e);
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
    }
    assert!(
        out.contains("\\u001b]2;PWN"),
        "the recording holds the sequences"
    );
    let p = dir.join(name);
    std::fs::write(&p, out).unwrap();
    p
}

/// Nothing a terminal acts on: no control byte but newline, no C1 control, no bidi
/// override, and no line that a name started.
fn assert_printable(what: &str, out: &[u8]) {
    for (i, &b) in out.iter().enumerate() {
        assert!(
            b == b'\n' || (b >= 0x20 && b != 0x7f),
            "{what}: raw byte {b:#04x} at {i}: {:?}",
            String::from_utf8_lossy(&out[i.saturating_sub(40)..(i + 40).min(out.len())])
        );
    }
    let text = String::from_utf8(out.to_vec()).expect("UTF-8");
    for c in text.chars() {
        assert!(
            !c.is_control() || c == '\n',
            "{what}: raw {:?} in the output",
            c
        );
        assert_ne!(c, '\u{202e}', "{what}: raw bidi override");
    }
    for l in text.lines() {
        assert!(
            !l.trim_start().starts_with("FAKE LINE"),
            "{what}: a name started a line: {l:?}"
        );
    }
}

fn run(args: &[&std::ffi::OsStr]) -> Vec<u8> {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_printable("stderr", &out.stderr);
    out.stdout
}

#[test]
fn text_output_of_a_hostile_recording_escapes_every_control_character() {
    let dir = tempfile::tempdir().unwrap();
    let placement = poisoned("placement-7.2-bpf.jsonl", dir.path());
    let numa = poisoned("numa-6.1-procfs.jsonl", dir.path());
    let ab = poisoned("ab-7.2.jsonl", dir.path());
    let cases: Vec<(&str, Vec<&std::ffi::OsStr>)> = vec![
        (
            "report placement",
            vec!["report".as_ref(), placement.as_os_str()],
        ),
        ("report numa", vec!["report".as_ref(), numa.as_os_str()]),
        ("report ab", vec!["report".as_ref(), ab.as_os_str()]),
        (
            "report --compare",
            vec!["report".as_ref(), "--compare".as_ref(), ab.as_os_str()],
        ),
        (
            "diff",
            vec!["diff".as_ref(), numa.as_os_str(), placement.as_os_str()],
        ),
    ];
    for (what, args) in cases {
        let out = run(&args);
        assert_printable(what, &out);
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.contains("\\x1b]2;PWN\\x07"),
            "{what}: the poisoned strings are shown, escaped:\n{text}"
        );
    }
}
