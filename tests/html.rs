//! `llctop report --html`, `report --compare --html`, `diff --html` opened in a real
//! browser (issue "Pictures"): headless Chromium (Debian `chromium`, scripts/deps.sh)
//! loads each page from disk with the network pointed nowhere and logs every request
//! (its net log): no console message, no request from the page; its DOM has one heatmap
//! row per LLC, one annotation per knob change and per finding, and the A/B dots of each
//! metric equal the windows counted; a screenshot is not blank. The figures the page
//! embeds are held against the text report of the same file.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recordings")
        .join(name)
}

fn llctop(args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_llctop"))
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "llctop {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

fn chromium() -> PathBuf {
    ["chromium", "chromium-browser"]
        .iter()
        .find_map(|n| {
            std::env::var("PATH")
                .ok()?
                .split(':')
                .map(|d| Path::new(d).join(n))
                .find(|p| p.is_file())
        })
        .expect("headless Chromium (scripts/deps.sh installs Debian's `chromium`)")
}

/// What the browser made of a page: its DOM, its console, the URLs the page asked the
/// network for (net log: requests whose isolation key is the page's file:// origin, so
/// the browser's own background traffic is not counted), a screenshot's size.
struct Browsed {
    dom: String,
    console: Vec<String>,
    page_requests: Vec<String>,
    screenshot_bytes: u64,
}

fn browse(page: &Path) -> Browsed {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", page.display());
    let run = |what: &[&str]| {
        let out = Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                // The network: nowhere to go.
                "--proxy-server=127.0.0.1:9",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--enable-logging=stderr",
                "--v=0",
                "--window-size=1050,1400",
            ])
            .arg(format!(
                "--user-data-dir={}",
                dir.path().join("u").display()
            ))
            .args(what)
            .arg(&url)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "chromium: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let net = dir.path().join("net.json");
    let out = run(&["--dump-dom", &format!("--log-net-log={}", net.display())]);
    let dom = String::from_utf8_lossy(&out.stdout).to_string();
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    let log: Value = serde_json::from_slice(&std::fs::read(&net).unwrap()).expect("net log");
    let start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .expect("the net log names its event types");
    let page_requests = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"].as_u64() == Some(start))
        .filter(|e| {
            e["params"]["network_isolation_key"]
                .as_str()
                .is_some_and(|k| k.starts_with("file://"))
        })
        .filter_map(|e| e["params"]["url"].as_str())
        .filter(|u| !u.starts_with("file:"))
        .map(str::to_string)
        .collect();
    let png = dir.path().join("shot.png");
    run(&[&format!("--screenshot={}", png.display())]);
    Browsed {
        dom,
        console,
        page_requests,
        screenshot_bytes: std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0),
    }
}

/// The section `id` of a page (up to the next one).
fn section<'a>(dom: &'a str, id: &str) -> &'a str {
    let tag = format!("<section id=\"{id}\">");
    let Some(at) = dom.find(&tag) else {
        panic!("no section {id}");
    };
    let rest = &dom[at..];
    &rest[..rest.find("</section>").unwrap_or(rest.len())]
}

/// The page's embedded figures.
fn data(page: &str) -> Value {
    let tag = "<script type=\"application/json\" id=\"llctop-data\">";
    let at = page.find(tag).expect("the data block") + tag.len();
    let end = page[at..].find("</script>").unwrap() + at;
    serde_json::from_str(&page[at..end]).expect("JSON")
}

fn clean(b: &Browsed) {
    assert!(b.console.is_empty(), "console: {:?}", b.console);
    assert!(
        b.page_requests.is_empty(),
        "the page asked the network for {:?}",
        b.page_requests
    );
    assert!(
        b.screenshot_bytes > 20_000,
        "a screenshot of {} bytes is blank",
        b.screenshot_bytes
    );
}

#[test]
fn the_oracle_sees_a_request_and_a_console_message() {
    // A page that fetches an image and logs: the checks above must catch both.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.html");
    std::fs::write(
        &p,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body><img src=\"http://example.com/x.png\"><script>console.error(\"boom\")</script><p>x</p></body></html>",
    )
    .unwrap();
    let b = browse(&p);
    assert_eq!(b.page_requests, ["http://example.com/x.png"]);
    assert!(
        b.console.iter().any(|l| l.contains("boom")),
        "{:?}",
        b.console
    );
}

#[test]
fn report_page_draws_every_llc_knob_change_and_finding_and_fetches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for rec in ["ab-7.2.jsonl", "placement-7.2-bpf.jsonl"] {
        let page = dir.path().join(format!("{rec}.html"));
        let said = llctop(&[
            os("report"),
            os("--html"),
            page.as_os_str(),
            fixture(rec).as_os_str(),
        ]);
        assert!(said.starts_with("wrote "), "{said}");
        let text = llctop(&[os("report"), fixture(rec).as_os_str()]);
        let b = browse(&page);
        clean(&b);
        // The text report's own counts.
        let llcs = text
            .lines()
            .filter(|l| l.trim_start().starts_with("llc") && l.contains("cpus "))
            .count();
        let knobs = text
            .split("Knob changes (seconds from the start)\n")
            .nth(1)
            .map_or(0, |t| {
                t.lines().take_while(|l| l.starts_with("    ")).count()
            });
        let findings: usize = text
            .lines()
            .find_map(|l| l.strip_prefix("Findings ("))
            .and_then(|l| l.split([')', ';']).next()?.parse().ok())
            .expect("the findings line");
        println!("{rec}: {llcs} LLCs, {knobs} knob changes, {findings} findings");
        assert!(llcs >= 4);
        for id in ["busy", "wait"] {
            let s = section(&b.dom, id);
            assert_eq!(s.matches("class=\"heat-row\"").count(), llcs, "{id}");
            assert_eq!(s.matches("data-kind=\"knob\"").count(), knobs, "{id}");
            assert_eq!(s.matches("data-kind=\"finding\"").count(), findings, "{id}");
        }
        assert_eq!(
            section(&b.dom, "findings")
                .matches("class=\"finding\"")
                .count(),
            findings
        );
        // The figures the page drew are the text report's: busy per LLC, migrations.
        let d = data(&std::fs::read_to_string(&page).unwrap());
        for l in d["llcs"].as_array().unwrap() {
            let line = text
                .lines()
                .find(|t| t.trim_start().starts_with(&format!("llc{} ", l["id"])))
                .unwrap();
            let shown: f64 = line
                .split_whitespace()
                .nth(1)
                .unwrap()
                .trim_end_matches('%')
                .parse()
                .unwrap();
            let mean = l["mean_busy"].as_f64().unwrap() * 100.0;
            assert!((mean - shown).abs() <= 0.05 + 1e-9, "{line} against {mean}");
        }
        for (name, n) in d["migrations"].as_object().unwrap() {
            if name == "unclassified" {
                continue;
            }
            let line = text
                .lines()
                .find(|t| t.split_whitespace().next() == Some(name))
                .unwrap_or_else(|| panic!("{name} in {text}"));
            assert_eq!(
                line.split_whitespace().nth(1),
                Some(n.to_string().as_str()),
                "{line}"
            );
        }
        assert_eq!(d["knob_changes"], knobs);
        assert_eq!(d["findings"], findings);
    }
}

#[test]
fn compare_page_has_a_dot_per_window_and_the_verdict_of_the_text() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("ab.html");
    let rec = fixture("ab-7.2.jsonl");
    llctop(&[
        os("report"),
        os("--compare"),
        os("--html"),
        page.as_os_str(),
        rec.as_os_str(),
    ]);
    let json: Value = serde_json::from_str(&llctop(&[
        os("report"),
        os("--compare"),
        os("--json"),
        rec.as_os_str(),
    ]))
    .unwrap();
    let b = browse(&page);
    clean(&b);
    let windows = json["verdict"]["windows"].as_u64().unwrap() as usize;
    let rows = json["verdict"]["rows"].as_array().unwrap();
    assert!(windows >= 4 && !rows.is_empty());
    let dots = section(&b.dom, "windows");
    for r in rows {
        let m = r["metric"].as_str().unwrap();
        let tag = format!("<div class=\"ab\" data-metric=\"{m}\"");
        let at = dots.find(&tag).unwrap_or_else(|| panic!("{m}"));
        let div = &dots[at..];
        let div = &div[..div.find("</div>").unwrap()];
        // Each counted window has every metric (a command's metrics aside).
        let n = div.matches("<circle").count();
        assert_eq!(
            n,
            r["n_a"].as_u64().unwrap() as usize + r["n_b"].as_u64().unwrap() as usize,
            "{m}"
        );
        assert_eq!(n, windows, "{m}");
        let verdict = section(&b.dom, "verdict");
        let row = &verdict[verdict.find(&format!("<tr data-metric=\"{m}\"")).unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(
            row.contains(&format!("<td>{}</td>", r["verdict"].as_str().unwrap())),
            "{row}"
        );
    }
}

#[test]
fn diff_page_draws_both_recordings() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("diff.html");
    llctop(&[
        os("diff"),
        os("--html"),
        page.as_os_str(),
        fixture("newidle-6.1-procfs.jsonl").as_os_str(),
        fixture("placement-7.2-bpf.jsonl").as_os_str(),
    ]);
    let b = browse(&page);
    clean(&b);
    for id in ["busy-a", "busy-b"] {
        assert_eq!(
            section(&b.dom, id).matches("class=\"heat-row\"").count(),
            4,
            "{id}"
        );
    }
    let text = llctop(&[
        os("diff"),
        fixture("newidle-6.1-procfs.jsonl").as_os_str(),
        fixture("placement-7.2-bpf.jsonl").as_os_str(),
    ]);
    assert!(!text.is_empty());
    assert!(
        data(&std::fs::read_to_string(&page).unwrap())["figures"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn pages_of_bad_recordings_say_what_they_cannot_draw() {
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(fixture("placement-7.2-bpf.jsonl")).unwrap();
    let lines: Vec<&str> = src.lines().collect();
    let first_snapshot = lines
        .iter()
        .position(|l| l.contains("\"type\":\"snapshot\""))
        .unwrap();
    // Header only; one snapshot; a topology with no LLCs (the header's and the
    // snapshots').
    let no_llcs = {
        let mut h: Value = serde_json::from_str(lines[0]).unwrap();
        h["topology"]["llcs"] = Value::Array(vec![]);
        for c in h["topology"]["cpus"].as_array_mut().unwrap() {
            c["llc"] = Value::Null;
        }
        let mut out = vec![h.to_string()];
        for l in &lines[1..] {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["type"] == "snapshot" {
                v["llcs"] = Value::Array(vec![]);
                v["migrations"] = Value::Null;
            }
            out.push(v.to_string());
        }
        out.join("\n") + "\n"
    };
    let cases = [
        ("empty", lines[0].to_string() + "\n", "holds no snapshot"),
        (
            "one",
            lines[..=first_snapshot].join("\n") + "\n",
            "Busy per LLC",
        ),
        ("no-llcs", no_llcs, "topology has no LLCs"),
    ];
    for (name, text, says) in cases {
        let rec = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&rec, text).unwrap();
        let page = dir.path().join(format!("{name}.html"));
        let out = Command::new(env!("CARGO_BIN_EXE_llctop"))
            .args([
                os("report"),
                os("--html"),
                page.as_os_str(),
                rec.as_os_str(),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(html.contains(says), "{name}: {says}");
        assert!(html.trim_end().ends_with("</html>"), "{name}");
        data(&html);
        let b = browse(&page);
        assert!(b.console.is_empty(), "{name}: {:?}", b.console);
        assert!(b.page_requests.is_empty(), "{name}");
        assert!(b.dom.contains("<h1>"), "{name}");
    }
}

/// A page grows with the recording's time, not with its events: 200,000 markers (the
/// recording's 13 snapshots each followed by some 15,000) make a page the size of one
/// without them (the first 500 listed and drawn, lines a few pixels apart merged, the rest
/// counted); the text report says the same.
#[test]
fn a_page_grows_with_time_not_with_events() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("numa-6.1-procfs.jsonl")).unwrap();
    let mut lines = text.lines();
    let mut out = lines.next().unwrap().to_string() + "\n";
    let mut k = 0u64;
    for l in lines {
        out.push_str(l);
        out.push('\n');
        let v: Value = serde_json::from_str(l).unwrap();
        if v["type"] != "snapshot" {
            continue;
        }
        let (seq, mono) = (
            v["seq"].as_u64().unwrap(),
            v["time"]["mono_ns"].as_u64().unwrap(),
        );
        for j in 0..16_000u64 {
            out.push_str(&format!(
                "{{\"type\":\"marker\",\"after_seq\":{seq},\"unix_ns\":1,\"mono_ns\":{},\"label\":\"m{k}\"}}\n",
                mono + j * 1000
            ));
            k += 1;
        }
    }
    assert!(k >= 200_000);
    let rec = dir.path().join("markers.jsonl");
    std::fs::write(&rec, out).unwrap();
    let plain = dir.path().join("plain.html");
    let page = dir.path().join("markers.html");
    llctop(&[
        os("report"),
        os("--html"),
        plain.as_os_str(),
        fixture("numa-6.1-procfs.jsonl").as_os_str(),
    ]);
    llctop(&[
        os("report"),
        os("--html"),
        page.as_os_str(),
        rec.as_os_str(),
    ]);
    let (a, b) = (
        std::fs::metadata(&plain).unwrap().len(),
        std::fs::metadata(&page).unwrap().len(),
    );
    println!("{k} markers: page {b} bytes, without them {a} bytes");
    assert!(b < 4 * a, "{b} bytes against {a}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(&format!("and {} more markers", k - 500)),
        "said on the page"
    );
    let report = llctop(&[os("report"), rec.as_os_str()]);
    assert!(
        report.contains(&format!("… and {} more markers", k - 500)),
        "{report}"
    );
}
