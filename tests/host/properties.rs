//! Property tests (proptest, stable Rust) for every parser that reads what a kernel, a
//! file or a user hands llctop: the cpulist format, sysfs cache sizes, /proc/stat,
//! /proc/schedstat v15–v17, the knob journal, knob values, the recording reader, an
//! experiment's window lines and the config file. Each never panics on any input, and
//! round-trips or keeps its invariants on valid input.

use std::io::Cursor;
use std::path::Path;

use llctop::knobs::{Bit, KnobType};
use proptest::prelude::*;

fn schedstat_fixture(v: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schedstat");
    let name = std::fs::read_dir(&dir)
        .expect("fixtures")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with(v))
        .expect("a fixture of that version");
    std::fs::read_to_string(dir.join(name)).expect("read")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn cpulists_round_trip(set in prop::collection::btree_set(0u32..llctop::cpulist::MAX_CPUS, 0..200)) {
        let v: Vec<u32> = set.into_iter().collect();
        let text = llctop::cpulist::format(&v);
        prop_assert_eq!(llctop::cpulist::parse(&text).expect("a formatted list parses"), v);
    }

    #[test]
    fn cpulist_parse_never_panics_and_stays_bounded(s in "[0-9,:\\- ]{0,40}|\\PC{0,40}") {
        if let Ok(v) = llctop::cpulist::parse(&s) {
            prop_assert!(v.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates");
            prop_assert!(v.iter().all(|&c| c < llctop::cpulist::MAX_CPUS));
        }
    }

    #[test]
    fn cache_sizes_parse_or_say_unknown(n in any::<u64>(), unit in "[KkMmGg]?", junk in "\\PC{0,8}") {
        let _ = llctop::topology::sysfs::parse_size_kb(&junk);
        let got = llctop::topology::sysfs::parse_size_kb(&format!("{n}{unit}"));
        let mult: u64 = match unit.as_str() {
            "M" | "m" => 1024,
            "G" | "g" => 1024 * 1024,
            _ => 1,
        };
        prop_assert_eq!(got, n.checked_mul(mult));
    }

    #[test]
    fn proc_stat_never_panics(lines in prop::collection::vec("(cpu[0-9]{0,2}|ctxt|processes|procs_running|intr|btime|[a-z]{1,6}) [0-9 ]{0,60}", 0..12)) {
        let text = lines.join("\n");
        let _ = llctop::source::procfs::stat::parse(&text);
    }

    #[test]
    fn schedstat_of_any_version_never_panics_when_damaged(
        v in prop::sample::select(vec!["v15", "v16", "v17"]),
        at in any::<prop::sample::Index>(),
        word in "[0-9]{0,22}|-1|[a-z ]{0,6}|",
    ) {
        let text = schedstat_fixture(v);
        prop_assert!(llctop::source::procfs::schedstat::parse(&text).is_ok(), "{v} parses whole");
        let mut words: Vec<&str> = text.split(' ').collect();
        let i = at.index(words.len());
        words[i] = &word;
        let _ = llctop::source::procfs::schedstat::parse(&words.join(" "));
    }

    #[test]
    fn knob_values_validate_without_panicking(input in "\\PC{0,24}", min in -5i64..5, span in 0i64..100) {
        let types = [
            KnobType::Bool,
            KnobType::Feature { name: "TTWU_QUEUE".into() },
            KnobType::Int { min, max: min + span },
            KnobType::Bitmask { bits: vec![Bit { value: 1, name: "normal".into() }, Bit { value: 2, name: "tiering".into() }] },
            KnobType::Enum { choices: vec!["none".into(), "log".into()], numbered: true },
        ];
        for t in &types {
            if let Ok(v) = t.parse_input(&input) {
                // A canonical value is itself valid and stays the same.
                let again = t.parse_input(&v);
                prop_assert_eq!(again, Ok(v.clone()), "{:?}", t);
            }
        }
        let int = KnobType::Int { min, max: min + span };
        for x in [min - 1, min, min + span, min + span + 1] {
            prop_assert_eq!(int.parse_input(&x.to_string()).is_ok(), (min..=min + span).contains(&x));
        }
    }

    #[test]
    fn a_journal_of_any_bytes_is_read_or_refused(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("journal.json");
        std::fs::write(&p, &bytes).expect("write");
        let j = llctop::knobs::journal::Journal::new(&p);
        let _ = j.entries();
    }

    #[test]
    fn the_recording_reader_reads_or_refuses_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600), header in any::<bool>()) {
        let mut b = Vec::new();
        if header {
            b.extend_from_slice(br#"{"format":"llctop-recording","version":1,"llctop_version":"t","host":null,"kernel":null,"start_unix_ns":0,"interval_ns":1000000000,"topology":{"cpus":[],"llcs":[],"nodes":[]},"sources":[]}"#);
            b.push(b'\n');
        }
        b.extend_from_slice(&bytes);
        if let Ok(rec) = llctop::record::reader::parse(Path::new("p.jsonl"), Cursor::new(b)) {
            let _ = llctop::record::report::render(&rec);
        }
    }

    #[test]
    fn window_lines_are_judged_or_refused_and_the_verdict_keeps_its_counts(
        rounds in 0u32..4,
        lines in prop::collection::vec((0u32..10, any::<bool>(), 0u8..3, 0u64..40, 0u64..40, prop::option::of("[a-z ]{0,12}")), 0..12),
    ) {
        use llctop::experiment::{Arm, Experiment, Window, verdict};
        let exp = Experiment {
            knob: "k".into(),
            a: "0".into(),
            b: "1".into(),
            window_ns: 1_000_000_000,
            warmup_ns: 0,
            rounds,
            command: vec![],
            steady: false,
        };
        let windows: Vec<Window> = lines
            .iter()
            .map(|(index, b, value, first, last, why)| Window {
                index: *index,
                arm: if *b { Arm::B } else { Arm::A },
                value: ["0", "1", "2"][*value as usize].into(),
                first_seq: *first,
                last_seq: *last,
                command_secs: None,
                exit_code: None,
                command_pids: vec![(*first as u32) % 5, 3, 1],
                not_counted: why.clone(),
            })
            .collect();
        let snaps: Vec<llctop::snapshot::Snapshot> = (0..40u64)
            .rev()
            .map(|seq| llctop::snapshot::Snapshot {
                seq,
                time: llctop::snapshot::SnapshotTime { interval_ns: 1_000_000_000, ..Default::default() },
                ..Default::default()
            })
            .collect();
        if exp.check_windows(&windows).is_ok() {
            let order = exp.order();
            prop_assert!(windows.len() <= order.len());
            prop_assert!(windows.windows(2).all(|w| w[0].index < w[1].index && w[0].last_seq < w[1].first_seq));
            for w in &windows {
                prop_assert_eq!(w.arm, order[w.index as usize]);
                prop_assert_eq!(w.value.as_str(), exp.value(w.arm));
            }
            let v = verdict::compute(&exp, &windows, &snaps);
            prop_assert_eq!(v.measured(), windows.len());
            prop_assert!(v.windows <= v.planned);
            let _ = verdict::render(&exp, &v);
        }
    }

    #[test]
    fn a_config_file_of_any_text_is_read_or_refused(text in "\\PC{0,200}|(interval|theme|view|top|source) = \"?[a-z0-9]{0,6}\"?\n\\[keys\\]\n[a-z_]{1,8} = \\[\"[A-Za-z]{0,3}\"\\]") {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("config.toml");
        std::fs::write(&p, &text).expect("write");
        let _ = llctop::settings::load(&p, true);
        let _ = llctop::settings::load(&p, false);
    }
}
