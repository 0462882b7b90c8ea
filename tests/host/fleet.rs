//! Fleet data: the Parquet export read by readers that share no code with llctop —
//! pyarrow and DuckDB (tests/parquet_check.py compares every cell of every table to the
//! recording's JSON) — over recordings of several machines in one directory; the queries
//! docs/fleet-data.md gives run in DuckDB over them; the schema section of
//! docs/fleet-data.md is the one tables.rs defines.

use std::path::{Path, PathBuf};
use std::process::Command;

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The lab's recordings kept as fixtures: four machines (kernels 6.1 and 7.2, shapes
/// 2s2llc and 2s4llc-smt, procfs and BPF sources, an A/B run with knob changes and windows).
fn fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(manifest().join("tests/fixtures/recordings"))
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    v.sort();
    assert!(v.len() >= 4, "{v:?}");
    v
}

fn export(rec: &Path, dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_llctop"))
        .args(["export", "--parquet"])
        .arg(rec)
        .arg("-o")
        .arg(dir)
        .output()
        .expect("llctop export")
}

/// The row of `metric` in `diff --fleet --json`'s verdict.
fn verdict_row<'a>(v: &'a serde_json::Value, metric: &str) -> &'a serde_json::Value {
    v["verdict"]["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["metric"] == metric))
        .unwrap_or_else(|| panic!("no row {metric} in {v}"))
}

fn python(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new("python3")
        .args(args)
        .output()
        .expect("python3 runs (scripts/deps.sh installs duckdb and pyarrow)")
}

#[test]
fn every_table_of_every_recording_reads_back_cell_for_cell_in_pyarrow_and_duckdb() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    for rec in fixtures() {
        let o = export(&rec, &out);
        assert!(
            o.status.success(),
            "{}: {}",
            rec.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // Each recording against its own rows, all of them in the one directory.
    let script = manifest().join("tests/parquet_check.py");
    for rec in fixtures() {
        let o = python(&[script.as_os_str(), rec.as_os_str(), out.as_os_str()]);
        println!(
            "{}: {}",
            rec.file_name().unwrap().to_string_lossy(),
            String::from_utf8_lossy(&o.stdout)
        );
        assert!(
            o.status.success(),
            "{}: {}",
            rec.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let cells: u64 = summary
            .as_object()
            .unwrap()
            .values()
            .filter_map(|t| t["cells"].as_u64())
            .sum();
        assert!(cells > 1000, "compared {cells} cells");
    }
    // fleet_windows, against DuckDB's sums over the intervals table of the four.
    let o = python(&[script.as_os_str(), "--windows".as_ref(), out.as_os_str()]);
    println!("fleet_windows: {}", String::from_utf8_lossy(&o.stdout));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let w: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(w["values"].as_u64().unwrap() >= 100, "{w}");
}

/// The SQL blocks of docs/fleet-data.md, each run in DuckDB over the fixtures' export
/// (`DIR` replaced by the directory): each must run, and the ones that list the fleet's
/// hosts or runs must list every recording.
#[test]
fn the_documented_queries_run_in_duckdb_over_several_machines() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    for rec in fixtures() {
        assert!(export(&rec, &out).status.success());
    }
    let doc = std::fs::read_to_string(manifest().join("docs/fleet-data.md")).unwrap();
    let queries: Vec<&str> = doc
        .split("```sql\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect();
    assert!(queries.len() >= 3, "{queries:?}");
    let script = "import duckdb, json, sys\n\
        rows = duckdb.sql(sys.argv[1]).fetchall()\n\
        print(json.dumps([[str(c) for c in r] for r in rows]))\n";
    for q in queries {
        let q = q.replace("DIR", &out.display().to_string());
        let o = python(&["-c".as_ref(), script.as_ref(), q.as_ref()]);
        assert!(
            o.status.success(),
            "{q}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let rows: Vec<Vec<String>> = serde_json::from_slice(&o.stdout).unwrap();
        println!(
            "{q}-> {} rows: {:?}",
            rows.len(),
            &rows[..rows.len().min(4)]
        );
        if q.contains("-- one row per recording") {
            assert_eq!(rows.len(), fixtures().len(), "one row per recording: {q}");
        }
    }
}

#[test]
fn docs_schema_is_the_one_the_tables_define() {
    let path = manifest().join("docs/fleet-data.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (start, end) = ("<!-- schema:start -->\n", "<!-- schema:end -->");
    let a = doc.find(start).expect("schema:start marker") + start.len();
    let b = doc.find(end).expect("schema:end marker");
    let want = llctop::fleet::tables::markdown();
    if doc[a..b] != want {
        let fixed = format!("{}{want}{}", &doc[..a], &doc[b..]);
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fleet-data.md");
        std::fs::write(&tmp, fixed).unwrap();
        panic!(
            "docs/fleet-data.md's schema differs from src/fleet/tables.rs: the regenerated page is {} (copy it over)",
            tmp.display()
        );
    }
}

/// A table's directory that is a link, or a file where a directory goes, is refused with
/// its name; nothing is written through it.
#[test]
fn a_link_at_a_tables_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("cpus")).unwrap();
    let o = export(&fixtures()[0], &out);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cpus") && err.contains("not a directory"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// `llctop diff --fleet`: eight canary hosts whose cross-LLC migrations are 60 % higher
/// than eight control hosts' — that metric called worse, the others (the same on every
/// host) not; a file that is no recording and a host too short named and dropped, the
/// rest read; --json carries the same verdict and the hosts' summaries.
#[test]
fn diff_fleet_calls_the_shifted_metric_and_names_what_it_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("control"), dir.path().join("canary"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    for i in 0..8 {
        crate::common::fleet_host(&a, &format!("control{i}"), 25, 1.0);
        crate::common::fleet_host(&b, &format!("canary{i}"), 25, 1.6);
    }
    crate::common::fleet_host(&b, "canary-short", 6, 1.6);
    std::fs::write(b.join("junk.jsonl"), "this is not a recording\n").unwrap();
    let run = |json: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_llctop"));
        c.args(["diff", "--fleet"]).arg(&a).arg(&b);
        if json {
            c.arg("--json");
        }
        let o = c.output().expect("llctop diff --fleet");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let text = run(false);
    println!("{text}");
    let line = |k: &str| {
        text.lines()
            .find(|l| l.starts_with(k))
            .unwrap_or_else(|| panic!("{k}\n{text}"))
            .to_string()
    };
    assert!(line("migrations.xllc").ends_with("worse"), "{text}");
    assert!(line("migrations.smt").ends_with("no difference"), "{text}");
    assert!(
        text.contains("A = 8 hosts") && text.contains("B = 8 hosts"),
        "{text}"
    );
    assert!(text.contains("Holm"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("dropped: B: host canary-short: too short (1 windows")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("dropped: B: ")
            && l.contains("junk.jsonl")
            && l.contains("not")),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_str(&run(true)).unwrap();
    let xllc = verdict_row(&v, "migrations.xllc");
    assert_eq!(xllc["verdict"], "worse");
    assert_eq!(
        (xllc["n_a"].as_u64(), xllc["n_b"].as_u64()),
        (Some(8), Some(8))
    );
    assert!(xllc["p_holm"].as_f64().unwrap() < 0.05);
    let change = xllc["change"].as_f64().unwrap();
    assert!((0.45..0.75).contains(&change), "{change}");
    assert_eq!(v["hosts_b"].as_array().unwrap().len(), 8);
}

/// `llctop diff --fleet` over Parquet exports: the same hosts exported (their
/// `fleet_windows`) give the verdict their recordings give, row for row; in the canary's
/// export directory a `fleet_windows` file of schema version 2 (rewritten by pyarrow), one
/// of another table, a truncated one and a text file are each named in one line and the
/// rest read. The windows' values are DuckDB's own sums over the `intervals` table.
#[test]
fn diff_fleet_reads_parquet_exports_as_it_reads_the_recordings() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("control"), dir.path().join("canary"));
    let (pa, pb) = (dir.path().join("control-pq"), dir.path().join("canary-pq"));
    for d in [&a, &b] {
        std::fs::create_dir_all(d).unwrap();
    }
    for i in 0..8 {
        crate::common::fleet_host(&a, &format!("control{i}"), 25, 1.0);
        crate::common::fleet_host(&b, &format!("canary{i}"), 25, 1.6);
    }
    for (from, to) in [(&a, &pa), (&b, &pb)] {
        for e in std::fs::read_dir(from).unwrap() {
            let o = export(&e.unwrap().path(), to);
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
    }
    let verdict = |x: &Path, y: &Path| -> serde_json::Value {
        let o = Command::new(env!("CARGO_BIN_EXE_llctop"))
            .args(["diff", "--fleet", "--json"])
            .arg(x)
            .arg(y)
            .output()
            .expect("llctop diff --fleet");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let from_json = verdict(&a, &b);
    let from_parquet = verdict(&pa, &pb);
    assert_eq!(
        from_parquet["verdict"]["rows"], from_json["verdict"]["rows"],
        "the same verdict from the export"
    );
    let xllc = verdict_row(&from_parquet, "migrations.xllc");
    assert_eq!(xllc["verdict"], "worse");
    let medians = |v: &serde_json::Value, arm: &str| -> Vec<(String, serde_json::Value)> {
        v[arm]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["host"].as_str().unwrap().to_string(),
                    h["metrics"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(
        medians(&from_parquet, "hosts_b"),
        medians(&from_json, "hosts_b")
    );

    // The windows as DuckDB sums them over the intervals table: migrations per second and
    // busy, per window of 5 snapshots.
    let script = manifest().join("tests/parquet_check.py");
    let o = python(&[script.as_os_str(), "--windows".as_ref(), pb.as_os_str()]);
    println!("{}", String::from_utf8_lossy(&o.stdout));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let checked: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // 8 hosts × 5 windows × (4 distances and busy: the procfs fixture has no causes).
    assert!(
        checked["values"].as_u64().unwrap() >= 8 * 5 * 5,
        "{checked}"
    );

    // Bad files beside the good ones.
    let fw = pb.join("fleet_windows");
    let good = std::fs::read_dir(&fw)
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(fw.join("truncated.parquet"), &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(fw.join("notes.parquet"), "this is not Parquet\n").unwrap();
    let other = std::fs::read_dir(pb.join("intervals"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    std::fs::copy(&other, fw.join("intervals.parquet")).unwrap();
    let old = python(&[
        "-c".as_ref(),
        "import sys, pyarrow.parquet as pq\n\
         t = pq.read_table(sys.argv[1])\n\
         m = {k: v for k, v in pq.read_metadata(sys.argv[1]).metadata.items() if k != b'ARROW:schema'}\n\
         m[b'llctop.schema_version'] = b'2'\n\
         pq.write_table(t.replace_schema_metadata(m), sys.argv[2])"
            .as_ref(),
        good.as_os_str(),
        fw.join("version2.parquet").as_os_str(),
    ]);
    assert!(
        old.status.success(),
        "{}",
        String::from_utf8_lossy(&old.stderr)
    );
    // A recording beside its own export (`export -o .`): one run, read once.
    std::fs::copy(b.join("canary3.jsonl"), pb.join("canary3.jsonl")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_llctop"))
        .args(["diff", "--fleet"])
        .arg(&pa)
        .arg(&pb)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    println!("{text}");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dropped = |file: &str, why: &str| {
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("dropped: B: ") && l.contains(file))
            .collect();
        assert_eq!(lines.len(), 1, "{file}: one line\n{text}");
        assert!(lines[0].contains(why), "{file}: {why}\n{text}");
    };
    dropped("truncated.parquet", "not a Parquet file");
    dropped("notes.parquet", "not a Parquet file");
    dropped("intervals.parquet", "table intervals, not fleet_windows");
    dropped("version2.parquet", "schema version 2;");
    dropped("fleet_windows/canary3-", "already read from");
    assert!(text.contains("B = 8 hosts"), "the rest read\n{text}");
}
