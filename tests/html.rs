//! `llctop report --html`, `report --compare --html`, `diff --html` opened in a real
//! browser (issue "Pictures"): headless Chromium (Debian `chromium`, scripts/deps.sh)
//! loads each page from disk with the network pointed nowhere and logs every request
//! (its net log): no console message, no request from the page; its DOM has one heatmap
//! row per LLC, one annotation per knob change and per finding, and the A/B dots of each
//! metric equal the windows counted; a screenshot is not blank. The figures the page
//! embeds are held against the text report of the same file.

mod common;

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

/// Headless Chromium with nowhere to go on the network (a proxy that refuses, no names).
const HEADLESS: [&str; 11] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--proxy-server=127.0.0.1:9",
    "--host-resolver-rules=MAP * ~NOTFOUND",
];

fn browse(page: &Path) -> Browsed {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", page.display());
    let run = |what: &[&str]| {
        let out = Command::new(chromium())
            .args(HEADLESS)
            .args([
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
            .split("Busy by LLC (mean over the recording)\n")
            .nth(1)
            .map_or(0, |t| {
                t.lines()
                    .take_while(|l| !l.is_empty())
                    .filter(|l| {
                        l.trim_start()
                            .strip_prefix("llc")
                            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
                    })
                    .count()
            });
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
                .split("\nMigrations by distance")
                .nth(1)
                .unwrap_or_default()
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

/// What a page's rendered text measures in Chromium at 1280 px (a copy of the page with a
/// measuring script: the page itself runs none): every visible text's size in CSS px,
/// and the texts of one chart whose boxes overlap.
fn measure(page: &Path) -> Value {
    const SCRIPT: &str = r#"<script>
window.addEventListener('load', () => {
  const out = {count: 0, small: [], overlaps: []};
  const box = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 ? r : null; };
  document.querySelectorAll('body *').forEach(el => {
    if (el.closest('svg') || ['SCRIPT', 'STYLE', 'TITLE'].includes(el.tagName)) return;
    if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) return;
    if (!box(el)) return;
    const px = parseFloat(getComputedStyle(el).fontSize);
    out.count++;
    if (px < 11) out.small.push({text: el.textContent.trim().slice(0, 50), px});
  });
  document.querySelectorAll('svg').forEach((svg, k) => {
    const vb = svg.viewBox && svg.viewBox.baseVal;
    const scale = vb && vb.width ? svg.getBoundingClientRect().width / vb.width : 1;
    const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim() && box(t));
    texts.forEach(t => {
      const px = parseFloat(t.getAttribute('font-size') || getComputedStyle(t).fontSize) * scale;
      out.count++;
      if (px < 11) out.small.push({text: t.textContent.trim().slice(0, 50), px});
    });
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i].getBoundingClientRect(), b = texts[j].getBoundingClientRect();
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 1 && h > 1) out.overlaps.push({svg: k, a: texts[i].textContent.trim().slice(0, 40), b: texts[j].textContent.trim().slice(0, 40)});
    }
  });
  const pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"#;
    let html = std::fs::read_to_string(page).unwrap();
    // The page's policy forbids scripts: the copy drops it to run the measurement.
    let start = html
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .unwrap();
    let end = start + html[start..].find('>').unwrap() + 1;
    let copy = page.with_extension("measure.html");
    std::fs::write(
        &copy,
        format!("{}{}", &html[..start], &html[end..])
            .replace("</body>", &format!("{SCRIPT}</body>")),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args(HEADLESS)
        .args(["--window-size=1280,1400", "--dump-dom"])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("u").display()
        ))
        .arg(format!("file://{}", copy.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let at = dom
        .find("<pre id=\"measured\">")
        .expect("the measurement ran")
        + 19;
    let end = dom[at..].find("</pre>").unwrap() + at;
    let text = dom[at..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap()
}

/// Every page (report, compare, diff) is readable at a glance in a 1280-px window, as
/// Chromium renders it: no visible text under 11 px, no two texts of a chart on top of
/// each other (an axis title over a tick label), a colour scale on every heatmap, the
/// diff page naming both files, the compare page every caveat its text has.
#[test]
fn pages_are_readable_at_a_glance() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.html");
    let compare = dir.path().join("compare.html");
    let diff = dir.path().join("diff.html");
    let (a, b) = (
        fixture("numa-6.1-procfs.jsonl"),
        fixture("newidle-6.1-procfs.jsonl"),
    );
    llctop(&[
        os("report"),
        os("--html"),
        report.as_os_str(),
        fixture("placement-7.2-bpf.jsonl").as_os_str(),
    ]);
    llctop(&[
        os("report"),
        os("--compare"),
        os("--html"),
        compare.as_os_str(),
        fixture("ab-7.2.jsonl").as_os_str(),
    ]);
    llctop(&[
        os("diff"),
        os("--html"),
        diff.as_os_str(),
        a.as_os_str(),
        b.as_os_str(),
    ]);
    // The fleet's page: eight hosts a side, one metric shifted (a host too short dropped).
    let fleet = dir.path().join("fleet.html");
    let (fa, fb) = (dir.path().join("control"), dir.path().join("canary"));
    for (d, x) in [(&fa, 1.0), (&fb, 1.6)] {
        std::fs::create_dir_all(d).unwrap();
        for i in 0..8 {
            common::fleet_host(d, &format!("host{x}-{i}"), 25, x);
        }
    }
    common::fleet_host(&fb, "short", 6, 1.6);
    llctop(&[
        os("diff"),
        os("--fleet"),
        os("--html"),
        fleet.as_os_str(),
        fa.as_os_str(),
        fb.as_os_str(),
    ]);
    let f = std::fs::read_to_string(&fleet).unwrap();
    assert!(
        f.contains("Holm") && f.contains("host short: too short"),
        "the fleet page's notes"
    );
    let fleet_data = data(&f);
    let xllc = fleet_data["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "migrations.xllc")
        .expect("the shifted metric on the page");
    assert_eq!(xllc["verdict"], "worse");
    assert_eq!(xllc["b"].as_array().unwrap().len(), 8, "a dot per host");
    for page in [&report, &compare, &diff, &fleet] {
        let m = measure(page);
        println!("{}: {} texts measured", page.display(), m["count"]);
        assert!(m["count"].as_u64().unwrap() > 20, "{m}");
        assert_eq!(
            m["small"],
            serde_json::json!([]),
            "{}: text under 11 px",
            page.display()
        );
        assert_eq!(
            m["overlaps"],
            serde_json::json!([]),
            "{}: texts on top of each other",
            page.display()
        );
    }
    let html = std::fs::read_to_string(&report).unwrap();
    assert_eq!(
        html.matches("class=\"colour-scale\"").count(),
        html.matches("class=\"heat-rows\"").count(),
        "a colour scale on every heatmap"
    );
    let d = std::fs::read_to_string(&diff).unwrap();
    assert!(
        d.contains("numa-6.1-procfs.jsonl") && d.contains("newidle-6.1-procfs.jsonl"),
        "the diff page names both files"
    );
    assert!(!d.contains("41383.7995"), "no false precision");
    // Every caveat of the text verdict is on the page.
    let text = llctop(&[
        os("report"),
        os("--compare"),
        fixture("ab-7.2.jsonl").as_os_str(),
    ]);
    let c = std::fs::read_to_string(&compare).unwrap();
    for l in text.lines().filter(|l| {
        l.starts_with("note:")
            || l.starts_with("not counted:")
            || l.starts_with("stopped early")
            || l.starts_with("rq_wait.p50/p99:")
    }) {
        let body = l.split_once(": ").map_or(l, |x| x.1);
        assert!(
            c.contains(&body[..body.len().min(40)]),
            "the page lacks: {l}"
        );
    }
}
