//! Topology discovery against the generated sysfs fixtures (tests/gen_fixtures.py):
//! the LLCs and nodes llctop forms must equal the ones the generator computed from the
//! machine description, and `llctop topology --json` must have the documented shape.

use std::path::{Path, PathBuf};
use std::process::Command;

use llctop::kroot::KernelRoot;
use llctop::topology::{self, LlcBasis};
use serde_json::Value;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("expected.json").exists())
        .collect();
    v.sort();
    v
}

fn list(v: &Value) -> Vec<u32> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_u64().expect("number") as u32)
        .collect()
}

#[test]
fn every_fixture_groups_like_the_scheduler() {
    let all = fixtures();
    assert!(
        all.len() >= 9,
        "fixtures missing: run tests/gen_fixtures.py"
    );
    for dir in all {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap())
                .unwrap();
        let t =
            topology::discover(&KernelRoot::new(&dir)).unwrap_or_else(|e| panic!("{name}: {e}"));

        let online: Vec<u32> = t.online_cpus().map(|c| c.cpu).collect();
        assert_eq!(online, list(&expected["online"]), "{name}: online CPUs");
        let offline: Vec<u32> = t.cpus.iter().filter(|c| !c.online).map(|c| c.cpu).collect();
        assert_eq!(offline, list(&expected["offline"]), "{name}: offline CPUs");

        let want_llcs: Vec<Vec<u32>> = expected["llcs"]
            .as_array()
            .unwrap()
            .iter()
            .map(list)
            .collect();
        let got_llcs: Vec<Vec<u32>> = t.llcs.iter().map(|l| l.cpus.clone()).collect();
        assert_eq!(got_llcs, want_llcs, "{name}: LLCs");
        for (i, l) in t.llcs.iter().enumerate() {
            assert_eq!(l.id as usize, i, "{name}: LLC ids dense in CPU order");
            assert_eq!(
                l.size_kb,
                expected["llc_size_kb"][i].as_u64(),
                "{name}: llc{i} size"
            );
            // The cache's own id, not its position (resctrl names domains by it).
            assert_eq!(
                l.cache_id.map(u64::from),
                expected["llc_cache_id"][i].as_u64(),
                "{name}: llc{i} cache id"
            );
            for &c in &l.cpus {
                assert_eq!(t.llc_of(c), Some(l.id), "{name}: cpu{c} llc");
                assert_eq!(
                    t.node_of(c),
                    l.node,
                    "{name}: cpu{c} node vs its LLC's node"
                );
            }
        }
        let want_nodes: Vec<Vec<u32>> = expected["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(list)
            .collect();
        let got_nodes: Vec<Vec<u32>> = t.nodes.iter().map(|n| n.cpus.clone()).collect();
        assert_eq!(got_nodes, want_nodes, "{name}: nodes");
        for c in t.cpus.iter().filter(|c| !c.online) {
            assert_eq!(
                (c.llc, c.node, c.core),
                (None, None, None),
                "{name}: offline cpu{}",
                c.cpu
            );
        }
        // SMT siblings share a core; distinct cores have distinct indexes.
        for c in t.online_cpus() {
            for &s in &c.smt_siblings {
                assert_eq!(
                    t.cpu(s).and_then(|x| x.core),
                    c.core,
                    "{name}: cpu{} sibling {s}",
                    c.cpu
                );
            }
        }
    }
}

#[test]
fn snc_split_and_fallbacks_are_labelled() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology");
    let t = topology::discover(&KernelRoot::new(base.join("xeon-8480-2s-snc4"))).unwrap();
    assert_eq!(t.llcs.len(), 8);
    assert!(t.llcs.iter().all(|l| l.basis == LlcBasis::CacheSplitByNode));
    assert_eq!(
        t.llcs[0].cache_cpus.as_ref().map(|c| c.len()),
        Some(112),
        "sysfs L3 spans the socket"
    );
    let t = topology::discover(&KernelRoot::new(base.join("xeon-8480-2s"))).unwrap();
    assert!(
        t.llcs
            .iter()
            .all(|l| l.basis == LlcBasis::Cache && l.cache_cpus.is_none())
    );
    let t = topology::discover(&KernelRoot::new(base.join("arm-no-cache-clusters"))).unwrap();
    assert!(
        t.llcs
            .iter()
            .all(|l| l.basis == LlcBasis::Cluster && l.level.is_none())
    );
    let t = topology::discover(&KernelRoot::new(base.join("arm-no-l3"))).unwrap();
    assert!(t.llcs.iter().all(|l| l.level == Some(2)));
}

#[test]
fn missing_root_names_the_path() {
    let e = topology::discover(&KernelRoot::new("/nonexistent-llctop-root")).unwrap_err();
    assert!(
        e.to_string()
            .contains("/nonexistent-llctop-root/sys/devices/system/cpu"),
        "{e}"
    );
}

#[test]
fn cli_json_has_the_documented_shape() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology/offline-2s-32cpu");
    let out = Command::new(env!("CARGO_BIN_EXE_llctop"))
        .args(["topology", "--json", "--sysroot"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cpu0 = &v["cpus"][0];
    for k in ["cpu", "online", "core", "package", "llc", "node"] {
        assert!(cpu0.get(k).is_some(), "cpus[0] lacks {k}: {cpu0}");
    }
    assert_eq!(
        (
            cpu0["cpu"].as_u64(),
            cpu0["online"].as_bool(),
            cpu0["llc"].as_u64(),
            cpu0["node"].as_u64()
        ),
        (Some(0), Some(true), Some(0), Some(0))
    );
    let off = v["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cpu"] == 3)
        .unwrap();
    assert_eq!(off["online"], Value::Bool(false));
    assert!(off["llc"].is_null() && off["node"].is_null());
    let llc0 = &v["llcs"][0];
    for k in ["id", "cpus", "node", "level", "size_kb"] {
        assert!(llc0.get(k).is_some(), "llcs[0] lacks {k}");
    }
    assert_eq!(llc0["cpus"], serde_json::json!([0, 1, 2, 16, 17, 18]));
    assert_eq!(
        (llc0["level"].as_u64(), llc0["size_kb"].as_u64()),
        (Some(3), Some(16384))
    );
    assert_eq!(v["nodes"][1]["id"].as_u64(), Some(1));
    // the tree names offline CPUs
    let out = Command::new(env!("CARGO_BIN_EXE_llctop"))
        .args(["topology", "--sysroot"])
        .arg(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("offline: cpus 3,10,19"), "{text}");
    assert!(
        text.starts_with("2 nodes · 4 LLCs · 29 CPUs (3 offline)"),
        "{text}"
    );
}
